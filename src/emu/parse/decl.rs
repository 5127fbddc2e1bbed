//! Declarations: an entry's header and its parameters, shared, local, global and constant
//! variables (with their initialisers), and `.reg` declarations of registers and ranges.

use super::builder::EntryBuilder;
use super::lex::{parse_float_bits, parse_int};
use crate::emu::inst::Ty;
use crate::emu::{ParamType, Symbol, SymbolKind};

pub(super) fn entry_header(h: &str) -> Result<(String, Vec<ParamType>), String> {
    let kw = if h.contains(".entry") {
        ".entry"
    } else {
        ".func"
    };
    let after = h
        .split(kw)
        .nth(1)
        .ok_or("expected `.entry NAME(...)`")?
        .trim();
    let (name, rest) = after.split_once('(').unwrap_or((after, ""));
    let name = name.trim().to_string();
    if name.is_empty() {
        return Err("an `.entry` without a name".into());
    }
    let inside = rest.split(')').next().unwrap_or("");
    let mut params = Vec::new();
    for p in inside.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        params.push(param(p)?);
    }
    Ok((name, params))
}

fn param(p: &str) -> Result<ParamType, String> {
    // `.param .u64 name`, `.param .align 8 .b8 name[16]`, `.param .u64 .ptr .global .align 16 name`
    let toks: Vec<&str> = p.split_whitespace().collect();
    let mut align = 0u32;
    let mut ty = None;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t == ".align" {
            align = toks.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(1);
            i += 2;
            continue;
        }
        if let Some(x) = t.strip_prefix('.').and_then(Ty::parse) {
            ty = Some(x);
        }
        i += 1;
    }
    let ty = ty.ok_or_else(|| format!("parameter `{p}` has no type"))?;
    let name = toks.last().copied().unwrap_or_default();
    let count: u32 = match name.split_once('[') {
        Some((_, n)) => n.trim_end_matches(']').parse().unwrap_or(1),
        None => 1,
    };
    let size = ty.bytes() * count;
    Ok(ParamType {
        ty,
        size,
        align: if align > 0 { align } else { ty.bytes() },
    })
}

/// `.shared .align 4 .b8 name[1024];`, `.extern .shared .align 16 .b8 smem[];`,
/// `.global .align 4 .u32 counter = 0;`
pub(super) fn variable(t: &str) -> Result<Symbol, String> {
    let (decl, init) = match t.split_once('=') {
        Some((d, i)) => (d.trim(), Some(i.trim())),
        None => (t, None),
    };
    let toks: Vec<&str> = decl.split_whitespace().collect();
    let kind = match toks.first().copied() {
        Some(".shared") => SymbolKind::Shared,
        Some(".local") => SymbolKind::Local,
        Some(".global") => SymbolKind::Global,
        Some(".const") => SymbolKind::Const,
        _ => return Err(format!("unsupported declaration `{t}`")),
    };
    let mut align = 1u32;
    let mut ty = Ty::B8;
    let mut i = 1;
    while i < toks.len() {
        if toks[i] == ".align" {
            align = toks.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(1);
            i += 2;
            continue;
        }
        if let Some(x) = toks[i].strip_prefix('.').and_then(Ty::parse) {
            ty = x;
        }
        i += 1;
    }
    let last = toks.last().copied().unwrap_or_default();
    let (name, count, unsized_) = match last.split_once('[') {
        Some((n, c)) => {
            let c = c.trim_end_matches(']');
            if c.is_empty() {
                (n, 0, true)
            } else {
                (
                    n,
                    c.parse::<u32>()
                        .map_err(|_| format!("bad array size in `{t}`"))?,
                    false,
                )
            }
        }
        None => (last, 1, false),
    };
    let mut data = Vec::new();
    if let Some(init) = init {
        for v in init.trim_matches(|c| c == '{' || c == '}').split(',') {
            let v = v.trim();
            let bits = parse_int(v)
                .or_else(|| parse_float_bits(v, ty))
                .unwrap_or(0);
            data.extend_from_slice(&bits.to_le_bytes()[..ty.bytes() as usize]);
        }
    }
    Ok(Symbol {
        name: name.to_string(),
        kind,
        size: ty.bytes() * count,
        align: align.max(ty.bytes()),
        dynamic: unsized_,
        init: data,
        offset: 0,
    })
}

pub(super) fn declare_regs(b: &mut EntryBuilder, t: &str) {
    // `.reg .b32 %r<73>;` or `.reg .f16 low, high;` or `.reg .pred p;`
    let rest = t.trim_start_matches(".reg").trim();
    let rest = rest
        .split_once(char::is_whitespace)
        .map_or("", |(_, names)| names)
        .trim();
    let scope = b.scopes.last_mut().expect("inside a scope");
    for name in rest.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some((p, n)) = name.split_once('<') {
            let count = n.trim_end_matches('>').trim().parse().unwrap_or(0);
            scope.ranges.push((p.trim().to_string(), count));
        } else {
            let r = b.entry.nregs;
            b.entry.nregs += 1;
            scope.names.insert(name.to_string(), r);
        }
    }
}
