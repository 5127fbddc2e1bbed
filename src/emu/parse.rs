//! Reading PTX text into a [`Module`]: directives, entries with their parameters, register
//! declarations (`%r<12>` ranges and the named registers of inline-asm scopes), shared and
//! local variables, `.loc`/`.file`, labels, predicates, vector and address operands. Every
//! instruction is decoded here, once; a problem is a [`PtxError`] with line and column.

use super::decode::opcode;
use super::inst::*;
use super::{Entry, Module, ParamType, PtxError, Symbol, SymbolKind};
use std::collections::HashMap;

struct Scope {
    names: HashMap<String, u32>,
    /// Declared `%r<N>`-style prefixes: (prefix, count).
    ranges: Vec<(String, u32)>,
    /// Labels of a nested scope (an inline-asm `{ }` block): seen only inside it, so each
    /// copy of an inlined block has its own.
    labels: HashMap<String, u32>,
}

struct EntryBuilder {
    entry: Entry,
    scopes: Vec<Scope>,
    labels: HashMap<String, u32>,
    /// Branches waiting for their label: (instruction, argument index, label, line, depth of
    /// the innermost scope whose labels may still resolve it).
    fixups: Vec<(usize, usize, String, u32, usize)>,
    sym_index: HashMap<String, u32>,
}

impl EntryBuilder {
    /// An entry named `name` with `params` laid out as the `.param` space holds them: each at
    /// the next multiple of its alignment.
    fn new(name: String, params: Vec<ParamType>) -> EntryBuilder {
        let mut entry = Entry {
            name,
            ..Entry::default()
        };
        let mut offset = 0u32;
        for p in params {
            let align = p.align.max(1);
            offset = offset.div_ceil(align) * align;
            entry.param_offsets.push(offset);
            offset += p.size;
            entry.params.push(p);
        }
        EntryBuilder {
            entry,
            scopes: Vec::new(),
            labels: HashMap::new(),
            fixups: Vec::new(),
            sym_index: HashMap::new(),
        }
    }

    /// Defines `label` at the next instruction, in the innermost scope.
    fn label(&mut self, label: &str) {
        let at = self.entry.insts.len() as u32;
        match self.scopes.len() {
            0 | 1 => self.labels.insert(label.to_string(), at),
            _ => self
                .scopes
                .last_mut()
                .and_then(|s| s.labels.insert(label.to_string(), at)),
        };
    }

    /// Closes the innermost scope: the branches inside it to its labels are resolved, the
    /// others are left to the enclosing scopes.
    fn close_scope(&mut self) {
        let depth = self.scopes.len();
        let Some(scope) = self.scopes.pop() else {
            return;
        };
        if depth <= 1 {
            return;
        }
        let insts = &mut self.entry.insts;
        self.fixups.retain_mut(|(i, a, name, _, d)| {
            if *d < depth {
                return true;
            }
            match scope.labels.get(name.as_str()) {
                Some(&pc) => {
                    insts[*i].args[*a] = Operand::Label(pc);
                    false
                }
                None => {
                    *d = depth - 1;
                    true
                }
            }
        });
    }

    fn reg(&mut self, name: &str) -> Option<u32> {
        for s in self.scopes.iter().rev() {
            if let Some(&r) = s.names.get(name) {
                return Some(r);
            }
        }
        // A register of a declared range (`%r<73>` declares %r0..%r72).
        let (prefix, digits) = split_digits(name);
        if digits.is_empty() {
            return None;
        }
        let n: u32 = digits.parse().ok()?;
        let depth = self
            .scopes
            .iter()
            .rposition(|s| s.ranges.iter().any(|(p, c)| p == prefix && n < *c))?;
        let r = self.entry.nregs;
        self.entry.nregs += 1;
        self.scopes[depth].names.insert(name.to_string(), r);
        Some(r)
    }
}

fn split_digits(name: &str) -> (&str, &str) {
    let cut = name
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map_or(name.len(), |(i, _)| i);
    (&name[..cut], &name[cut..])
}

/// Strips `//` and `/* */` comments, keeping line numbers.
fn strip_comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut s = String::new();
        let b = line.as_bytes();
        let mut i = 0;
        let mut in_str = false;
        while i < b.len() {
            if in_block {
                if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    in_block = false;
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            if b[i] == b'"' {
                in_str = !in_str;
            }
            if !in_str && b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
                break;
            }
            if !in_str && b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                in_block = true;
                i += 2;
                continue;
            }
            s.push(b[i] as char);
            i += 1;
        }
        out.push(s);
    }
    out
}

/// Splits a line into statements at `;`, `{` and `}` that are not inside an operand's braces.
/// Scope braces come back as their own statement.
fn statements(line: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    let mut depth = 0;
    for (i, c) in line.char_indices() {
        match c {
            '{' if cur.trim().is_empty() => {
                out.push((i, "{".to_string()));
                cur.clear();
                start = i + 1;
            }
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' if depth > 0 => {
                depth -= 1;
                cur.push(c);
            }
            '}' => {
                if !cur.trim().is_empty() {
                    out.push((start, std::mem::take(&mut cur)));
                }
                out.push((i, "}".to_string()));
                cur.clear();
                start = i + 1;
            }
            ';' if depth == 0 => {
                out.push((start, std::mem::take(&mut cur)));
                start = i + 1;
            }
            _ => {
                if cur.is_empty() {
                    start = i;
                }
                cur.push(c)
            }
        }
    }
    if !cur.trim().is_empty() {
        out.push((start, cur));
    }
    out
}

pub fn parse(text: &str) -> Result<Module, Vec<PtxError>> {
    let lines = strip_comments(text);
    let mut errors = Vec::new();
    let mut module = Module::default();
    let mut cur: Option<EntryBuilder> = None;
    let mut loc: Option<(u32, u32)> = None;
    // An entry's header (name and parameters) spans lines until `)`.
    let mut header: Option<(String, u32)> = None;
    let mut skipping_func = 0i32;
    let err = |line: usize, col: usize, message: String| PtxError {
        line: line as u32 + 1,
        column: col as u32 + 1,
        message,
    };
    for (ln, raw) in lines.iter().enumerate() {
        if let Some((h, _)) = &mut header {
            h.push(' ');
            h.push_str(raw);
            if raw.contains(')') {
                let (h, hl) = header.take().unwrap_or_default();
                match entry_header(&h) {
                    Ok((name, params)) => cur = Some(EntryBuilder::new(name, params)),
                    Err(m) => errors.push(err(hl as usize, 0, m)),
                }
            }
            continue;
        }
        for (col, stmt) in statements(raw) {
            let t = stmt.trim();
            if t.is_empty() {
                continue;
            }
            if t.starts_with(".section") && cur.is_none() {
                // Debug sections (`.section .debug_str { … }`): nothing to run.
                skipping_func = 1;
                continue;
            }
            if skipping_func > 0 {
                // A `.func` body: kwb's kernels inline everything; a call is reported where used.
                if t == "{" {
                    skipping_func += 1;
                } else if t == "}" {
                    skipping_func -= 1;
                    if skipping_func == 1 {
                        skipping_func = 0;
                    }
                }
                continue;
            }
            if t.starts_with(".version")
                || t.starts_with(".target")
                || t.starts_with(".address_size")
                || t.starts_with(".pragma")
                || t.starts_with(".maxntid")
                || t.starts_with(".reqntid")
                || t.starts_with(".minnctapersm")
                || t.starts_with(".maxnreg")
                || t.starts_with(".maxclusterrank")
                || t.starts_with(".reqnctapercluster")
                || t.starts_with(".explicitcluster")
                || t.starts_with("@@")
            {
                continue;
            }
            if t.starts_with(".file") {
                let mut it = t.split_whitespace().skip(1);
                let idx = it.next().and_then(|n| n.parse::<u32>().ok());
                let path = t.split('"').nth(1);
                if let (Some(i), Some(p)) = (idx, path) {
                    module.files.insert(i, p.to_string());
                }
                continue;
            }
            if t.starts_with(".loc") {
                let nums: Vec<u32> = t
                    .split(|c: char| c.is_whitespace() || c == ',')
                    .skip(1)
                    .take(2)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if let [f, l] = nums[..] {
                    loc = Some((f, l));
                }
                continue;
            }
            if (t.contains(".entry") || t.contains(".func")) && cur.is_none() {
                if t.contains(".func") {
                    skipping_func = 1;
                    if t.contains('{') {
                        skipping_func = 2;
                    }
                    continue;
                }
                if t.contains(')') || !t.contains('(') {
                    match entry_header(t) {
                        Ok((name, params)) => cur = Some(EntryBuilder::new(name, params)),
                        Err(m) => errors.push(err(ln, col, m)),
                    }
                } else {
                    header = Some((t.to_string(), ln as u32));
                }
                continue;
            }
            let Some(b) = cur.as_mut() else {
                if t.starts_with(".shared") || t.starts_with(".global") || t.starts_with(".const") {
                    match variable(t) {
                        Ok(sym) => module.globals.push(sym),
                        Err(m) => errors.push(err(ln, col, m)),
                    }
                } else if t.starts_with(".extern") || t.starts_with(".weak") {
                    if let Ok(sym) = variable(t.trim_start_matches(".extern").trim()) {
                        module.globals.push(sym);
                    }
                } else if t == "{" || t == "}" {
                    // stray braces at module level
                } else if !t.starts_with(".visible") && !t.starts_with(".common") {
                    errors.push(err(ln, col, format!("unexpected `{t}` outside a kernel")));
                }
                continue;
            };
            if t == "{" {
                b.scopes.push(Scope {
                    names: HashMap::new(),
                    ranges: Vec::new(),
                    labels: HashMap::new(),
                });
                continue;
            }
            if t == "}" {
                b.close_scope();
                if b.scopes.is_empty() {
                    let done = cur.take().expect("inside an entry");
                    match finish(done, &module) {
                        Ok(e) => module.entries.push(e),
                        Err(mut es) => errors.append(&mut es),
                    }
                }
                continue;
            }
            if b.scopes.is_empty() {
                errors.push(err(
                    ln,
                    col,
                    format!("expected `{{` to open the kernel body, found `{t}`"),
                ));
                continue;
            }
            if t.starts_with(".reg") {
                declare_regs(b, t);
                continue;
            }
            if t.starts_with(".shared")
                || t.starts_with(".local")
                || t.starts_with(".global")
                || t.starts_with(".const")
                || t.starts_with(".extern")
            {
                match variable(t.trim_start_matches(".extern").trim()) {
                    Ok(sym) => {
                        b.sym_index
                            .insert(sym.name.clone(), b.entry.symbols.len() as u32);
                        b.entry.symbols.push(sym);
                    }
                    Err(m) => errors.push(err(ln, col, m)),
                }
                continue;
            }
            if let Some(label) = t.strip_suffix(':') {
                b.label(label.trim());
                continue;
            }
            // A label followed by an instruction on the same line.
            let t = match t.split_once(':') {
                Some((l, rest))
                    if !l.contains(' ') && !l.contains('[') && !rest.starts_with(':') =>
                {
                    b.label(l.trim());
                    rest.trim()
                }
                _ => t,
            };
            if t.starts_with('.') {
                continue; // other directives inside a body (.pragma, .loc forms) change nothing
            }
            match instruction(b, t, ln as u32 + 1, loc, &module) {
                Ok(inst) => b.entry.insts.push(inst),
                Err(m) => errors.push(err(ln, col, m)),
            }
        }
    }
    if let Some(b) = cur {
        errors.push(PtxError {
            line: lines.len() as u32,
            column: 1,
            message: format!("kernel `{}` is not closed with `}}`", b.entry.name),
        });
    }
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(errors)
    }
}

fn entry_header(h: &str) -> Result<(String, Vec<ParamType>), String> {
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
fn variable(t: &str) -> Result<Symbol, String> {
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

fn declare_regs(b: &mut EntryBuilder, t: &str) {
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

fn parse_int(s: &str) -> Option<u64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let s = s.trim_end_matches('U');
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = s.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()?
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|c| c.is_ascii_digit()) {
        u64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<u64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// `0f3F800000` (f32 bits), `0d3FF0000000000000` (f64 bits), or a decimal float.
fn parse_float_bits(s: &str, ty: Ty) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0f").or_else(|| s.strip_prefix("0F")) {
        let bits = u32::from_str_radix(h, 16).ok()?;
        return Some(if ty == Ty::F64 {
            f64::from(f32::from_bits(bits)).to_bits()
        } else {
            u64::from(bits)
        });
    }
    if let Some(h) = s.strip_prefix("0d").or_else(|| s.strip_prefix("0D")) {
        let bits = u64::from_str_radix(h, 16).ok()?;
        return Some(if ty == Ty::F64 {
            bits
        } else {
            u64::from((f64::from_bits(bits) as f32).to_bits())
        });
    }
    let v: f64 = s.parse().ok()?;
    Some(if ty == Ty::F64 {
        v.to_bits()
    } else {
        u64::from((v as f32).to_bits())
    })
}

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

/// Splits operands at top-level commas.
fn split_operands(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

fn operand(b: &mut EntryBuilder, s: &str, ty: Ty, module: &Module) -> Result<Operand, String> {
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

fn param_index(b: &EntryBuilder, name: &str) -> Option<u32> {
    let suffix = name.rsplit("_param_").next()?;
    if !name.contains("_param_") {
        return None;
    }
    let i: u32 = suffix.parse().ok()?;
    (i < b.entry.params.len() as u32).then_some(i)
}

fn symbol(b: &mut EntryBuilder, name: &str, module: &Module) -> Option<u32> {
    if let Some(&i) = b.sym_index.get(name) {
        return Some(i);
    }
    let g = module.globals.iter().find(|g| g.name == name)?.clone();
    let i = b.entry.symbols.len() as u32;
    b.sym_index.insert(name.to_string(), i);
    b.entry.symbols.push(g);
    Some(i)
}

fn instruction(
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

/// Resolves labels and lays out shared and local memory.
fn finish(mut b: EntryBuilder, module: &Module) -> Result<Entry, Vec<PtxError>> {
    let mut errors = Vec::new();
    for (i, a, name, line, _) in std::mem::take(&mut b.fixups) {
        match b.labels.get(&name) {
            Some(&pc) => b.entry.insts[i].args[a] = Operand::Label(pc),
            None => errors.push(PtxError {
                line,
                column: 1,
                message: format!("unknown label or name `{name}`"),
            }),
        }
    }
    let (mut shared, mut local) = (0u32, 0u32);
    for s in &mut b.entry.symbols {
        let at = match s.kind {
            SymbolKind::Shared if !s.dynamic => &mut shared,
            SymbolKind::Local => &mut local,
            _ => continue,
        };
        *at = at.div_ceil(s.align.max(1)) * s.align.max(1);
        s.offset = *at;
        *at += s.size;
    }
    // Dynamic shared memory starts after the static, 16-byte aligned.
    let dyn_start = shared.div_ceil(16) * 16;
    for s in &mut b.entry.symbols {
        if s.kind == SymbolKind::Shared && s.dynamic {
            s.offset = dyn_start;
        }
    }
    b.entry.static_shared = dyn_start;
    b.entry.local_bytes = local;
    let _ = module;
    if errors.is_empty() {
        Ok(b.entry)
    } else {
        Err(errors)
    }
}
