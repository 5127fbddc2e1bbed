//! An entry under construction: its nested scopes of registers and labels, the branches
//! waiting for their labels, the symbols it names, and the finishing pass that resolves the
//! labels and lays out shared and local memory.

use super::lex::split_digits;
use crate::emu::inst::*;
use crate::emu::{Entry, Module, ParamType, PtxError, SymbolKind};
use std::collections::HashMap;

pub(super) struct Scope {
    pub(super) names: HashMap<String, u32>,
    /// Declared `%r<N>`-style prefixes: (prefix, count).
    pub(super) ranges: Vec<(String, u32)>,
    /// Labels of a nested scope (an inline-asm `{ }` block): seen only inside it, so each
    /// copy of an inlined block has its own.
    pub(super) labels: HashMap<String, u32>,
}

pub(super) struct EntryBuilder {
    pub(super) entry: Entry,
    pub(super) scopes: Vec<Scope>,
    pub(super) labels: HashMap<String, u32>,
    /// Branches waiting for their label: (instruction, argument index, label, line, depth of
    /// the innermost scope whose labels may still resolve it).
    pub(super) fixups: Vec<(usize, usize, String, u32, usize)>,
    pub(super) sym_index: HashMap<String, u32>,
}

impl EntryBuilder {
    /// An entry named `name` with `params` laid out as the `.param` space holds them: each at
    /// the next multiple of its alignment.
    pub(super) fn new(name: String, params: Vec<ParamType>) -> EntryBuilder {
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
    pub(super) fn label(&mut self, label: &str) {
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
    pub(super) fn close_scope(&mut self) {
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

    pub(super) fn reg(&mut self, name: &str) -> Option<u32> {
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

pub(super) fn param_index(b: &EntryBuilder, name: &str) -> Option<u32> {
    let suffix = name.rsplit("_param_").next()?;
    if !name.contains("_param_") {
        return None;
    }
    let i: u32 = suffix.parse().ok()?;
    (i < b.entry.params.len() as u32).then_some(i)
}

pub(super) fn symbol(b: &mut EntryBuilder, name: &str, module: &Module) -> Option<u32> {
    if let Some(&i) = b.sym_index.get(name) {
        return Some(i);
    }
    let g = module.globals.iter().find(|g| g.name == name)?.clone();
    let i = b.entry.symbols.len() as u32;
    b.sym_index.insert(name.to_string(), i);
    b.entry.symbols.push(g);
    Some(i)
}

/// Resolves labels and lays out shared and local memory.
pub(super) fn finish(mut b: EntryBuilder, module: &Module) -> Result<Entry, Vec<PtxError>> {
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
