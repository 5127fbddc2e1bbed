//! One operand of an instruction: registers (named, ranged or special), predicates, vectors,
//! `[base+offset]` addresses and tensor operands, immediates, symbols, parameters and labels.

use super::builder::{param_index, symbol, EntryBuilder};
use super::lex::{parse_float_bits, parse_int, split_operands};
use crate::emu::inst::*;
use crate::emu::Module;

fn special(s: &str) -> Option<Sreg> {
    let dim = |d: &str| match d {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    let (base, d) = s.split_once('.').unwrap_or((s, ""));
    Some(match base {
        "%tid" => Sreg::Tid(dim(d)?),
        "%ntid" => Sreg::Ntid(dim(d)?),
        "%ctaid" => Sreg::Ctaid(dim(d)?),
        "%nctaid" => Sreg::Nctaid(dim(d)?),
        "%laneid" => Sreg::LaneId,
        "%warpid" => Sreg::WarpId,
        "%nwarpid" => Sreg::NWarpId,
        "%clock" => Sreg::Clock,
        "%clock64" => Sreg::Clock64,
        "%lanemask_eq" => Sreg::LaneMaskEq,
        "%lanemask_lt" => Sreg::LaneMaskLt,
        "%lanemask_le" => Sreg::LaneMaskLe,
        "%lanemask_gt" => Sreg::LaneMaskGt,
        "%lanemask_ge" => Sreg::LaneMaskGe,
        "%smid" => Sreg::SmId,
        "%globaltimer" | "%globaltimer_lo" => Sreg::GlobalTimer,
        "%dynamic_smem_size" => Sreg::DynSmemSize,
        _ => return None,
    })
}

pub(super) fn operand(
    b: &mut EntryBuilder,
    s: &str,
    ty: Ty,
    module: &Module,
) -> Result<Operand, String> {
    let s = s.trim();
    if let Some(inner) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        return split_operands(inner)
            .into_iter()
            .map(|x| operand(b, x, ty, module))
            .collect::<Result<Vec<_>, _>>()
            .map(Operand::Vec);
    }
    if s == "_" {
        return Ok(Operand::Sink);
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        // A tensor operand, `[map, {c0, c1}]`: the map's address, then the coordinates.
        let parts = split_operands(inner);
        if parts.len() > 1 {
            let mut v = vec![operand(b, &format!("[{}]", parts[0]), ty, module)?];
            for p in &parts[1..] {
                v.push(operand(b, p, ty, module)?);
            }
            return Ok(Operand::Vec(v));
        }
        let split = inner
            .find('+')
            .or_else(|| inner.rfind('-').filter(|&i| i > 0));
        let (base, off) = match split {
            Some(i) => {
                let (b0, o) = inner.split_at(i);
                let o = o.trim_start_matches('+');
                (
                    b0.trim(),
                    parse_int(o.trim())
                        .map(|v| v as i64)
                        .ok_or_else(|| format!("bad address offset in `{s}`"))?,
                )
            }
            None => (inner.trim(), 0),
        };
        if let Some(v) = parse_int(base) {
            return Ok(Operand::Addr(Base::Abs, v as i64 + off));
        }
        if base.starts_with('%') {
            let r = b
                .reg(base)
                .ok_or_else(|| format!("unknown register `{base}`"))?;
            return Ok(Operand::Addr(Base::Reg(r), off));
        }
        if let Some(i) = param_index(b, base) {
            return Ok(Operand::Addr(Base::Param(i), off));
        }
        if let Some(i) = symbol(b, base, module) {
            return Ok(Operand::Addr(Base::Sym(i), off));
        }
        return Err(format!("unknown name `{base}` in an address"));
    }
    if s.starts_with('%') {
        if let Some(sr) = special(s) {
            return Ok(Operand::Special(sr));
        }
        return b
            .reg(s)
            .map(Operand::Reg)
            .ok_or_else(|| format!("unknown register `{s}`"));
    }
    // A register named without `%`, as inline asm declares them (`.reg .pred p;`).
    if let Some(r) = b.reg(s) {
        return Ok(Operand::Reg(r));
    }
    if s.starts_with("0f") || s.starts_with("0F") || s.starts_with("0d") || s.starts_with("0D") {
        return parse_float_bits(s, ty)
            .map(Operand::Imm)
            .ok_or_else(|| format!("bad number `{s}`"));
    }
    if let Some(v) = parse_int(s) {
        return Ok(Operand::Imm(v));
    }
    if let Ok(v) = s.parse::<f64>() {
        return Ok(Operand::FImm(v));
    }
    if let Some(i) = symbol(b, s, module) {
        return Ok(Operand::Sym(i));
    }
    if let Some(i) = param_index(b, s) {
        return Ok(Operand::Addr(Base::Param(i), 0));
    }
    // A label (resolved when the kernel is complete).
    Ok(Operand::Label(u32::MAX))
}
