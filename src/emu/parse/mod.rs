//! Reading PTX text into a [`Module`]: directives, entries with their parameters, register
//! declarations (`%r<12>` ranges and the named registers of inline-asm scopes), shared and
//! local variables, `.loc`/`.file`, labels, predicates, vector and address operands. Every
//! instruction is decoded here, once; a problem is a [`PtxError`] with line and column.
//!
//! This file holds the statement loop ([`parse`]) that routes each statement to its parser.
//! [`lex`] splits text into lines and statements and reads literals; [`builder`] is an entry
//! under construction (scopes, registers, labels, symbols, layout); [`decl`] reads
//! declarations (entry headers, parameters, variables, `.reg`); [`operand`] reads one operand;
//! [`instruction`] reads one instruction statement.

mod builder;
mod decl;
mod instruction;
mod lex;
mod operand;

use super::{Module, PtxError};
use builder::{finish, EntryBuilder, Scope};
use decl::{declare_regs, entry_header, variable};
use instruction::instruction;
use lex::{statements, strip_comments};
use std::collections::HashMap;

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
