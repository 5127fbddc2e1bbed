//! One instruction statement: its guard predicate, its opcode decoded once (by
//! `decode::opcode`), and its operands, with the branches to labels not yet seen left for the
//! builder to resolve.

use super::builder::EntryBuilder;
use super::lex::split_operands;
use super::operand::operand;
use crate::emu::decode::opcode;
use crate::emu::inst::*;
use crate::emu::Module;

pub(super) fn instruction(
    b: &mut EntryBuilder,
    t: &str,
    line: u32,
    loc: Option<(u32, u32)>,
    module: &Module,
) -> Result<Inst, String> {
    let (guard, rest) = match t.strip_prefix('@') {
        Some(r) => {
            let (g, rest) = r
                .split_once(char::is_whitespace)
                .ok_or("a guard with no instruction")?;
            let (neg, g) = match g.strip_prefix('!') {
                Some(g) => (true, g),
                None => (false, g),
            };
            let reg = b.reg(g).ok_or_else(|| format!("unknown predicate `{g}`"))?;
            (Some((reg, neg)), rest.trim())
        }
        None => (None, t),
    };
    let (op_text, args_text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (op, ty, mods) = opcode(op_text).map_err(|w| format!("unsupported instruction {w}"))?;
    let mut args = Vec::new();
    for (i, a) in split_operands(args_text).into_iter().enumerate() {
        // `setp` may write two predicates: `%p1|%p2`.
        let a = if i == 0 {
            a.split('|').next().unwrap_or(a)
        } else {
            a
        };
        // `!%p` as a source predicate.
        let (not, a) = match a.strip_prefix('!') {
            Some(p) => (true, p.trim_start()),
            None => (false, a),
        };
        // The type immediates are read in: `cvt`'s source, else the instruction's.
        let imm_ty = if op == Op::Cvt && i > 0 {
            mods.src_ty.unwrap_or(ty)
        } else {
            ty
        };
        let o = match operand(b, a, imm_ty, module)? {
            Operand::Reg(r) if not => Operand::NotPred(r),
            o => o,
        };
        if let Operand::Label(_) = o {
            let depth = b.scopes.len();
            b.fixups
                .push((b.entry.insts.len(), args.len(), a.to_string(), line, depth));
        }
        args.push(o);
    }
    if op == Op::Bra && args.is_empty() {
        return Err("`bra` without a target".into());
    }
    Ok(Inst {
        op,
        ty,
        mods,
        guard,
        args,
        line,
        loc,
        text: op_text.into(),
    })
}
