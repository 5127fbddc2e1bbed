//! Smaller variants of a program, for reducing a mismatch in the manner of C-Reduce: each
//! variant removes one statement (at any depth, helpers included), keeps one branch of an
//! `if`, or replaces one expression by one of its operands. Many variants are not valid
//! Triton (a name read before it is assigned, an operand of another dtype); the reducer keeps
//! only those that still mismatch, so Triton's own checks filter them.

use super::{Program, E, S};

/// Names every generated kernel reads (the program id, offsets, masks and the loads): removing
/// their assignments can only make programs Triton rejects, so they are not tried.
const KEPT: [&str; 14] = [
    "pid", "offs", "mask", "rows", "cols", "m2", "x", "h", "i", "w", "wrow", "zf", "zh", "zi",
];

/// Every one-step-smaller variant of `p`: statement removals first (they shrink most), then
/// branch choices, then expression replacements.
pub fn smaller(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    let statements = count(p, stmts);
    for k in 0..statements {
        out.extend(edit(p, k, Edit::Remove));
    }
    for k in 0..statements {
        out.extend(edit(p, k, Edit::KeepThen));
        out.extend(edit(p, k, Edit::KeepElse));
    }
    let exprs = count(p, |b| b.iter().map(exprs_in).sum());
    for k in 0..exprs {
        for child in 0..4 {
            out.extend(replace_expr(p, k, child));
        }
    }
    out
}

fn kept(s: &S) -> bool {
    matches!(s, S::Assign(v, _) if KEPT.contains(&v.as_str()))
}

#[derive(Clone, Copy)]
enum Edit {
    Remove,
    KeepThen,
    KeepElse,
}

/// Bodies in a fixed order: helpers', then the kernel's.
fn bodies_mut(p: &mut Program) -> Vec<&mut Vec<S>> {
    let mut v: Vec<&mut Vec<S>> = p.helpers.iter_mut().map(|h| &mut h.2).collect();
    v.push(&mut p.body);
    v
}

fn count(p: &Program, f: impl Fn(&[S]) -> usize) -> usize {
    p.helpers.iter().map(|h| f(&h.2)).sum::<usize>() + f(&p.body)
}

/// Statements in `b`, nested ones included.
fn stmts(b: &[S]) -> usize {
    b.iter()
        .map(|s| {
            1 + match s {
                S::If(_, t, e) => stmts(t) + stmts(e),
                S::For(_, _, b) | S::While(_, b) => stmts(b),
                _ => 0,
            }
        })
        .sum()
}

/// Applies `what` to the `k`-th statement (pre-order); None when it does not apply there.
fn edit(p: &Program, k: usize, what: Edit) -> Option<Program> {
    let mut q = p.clone();
    let mut n = k;
    let mut changed = None;
    for b in bodies_mut(&mut q) {
        if changed.is_some() {
            break;
        }
        changed = edit_in(b, &mut n, what);
    }
    changed.filter(|&c| c).map(|_| q)
}

/// Some(true): edited; Some(false): reached but the edit does not apply; None: not reached.
fn edit_in(b: &mut Vec<S>, n: &mut usize, what: Edit) -> Option<bool> {
    for idx in 0..b.len() {
        if *n == 0 {
            let s = &b[idx];
            return Some(match (what, s) {
                (Edit::Remove, s) if kept(s) => false,
                (Edit::Remove, _) => {
                    b.remove(idx);
                    true
                }
                (Edit::KeepThen, S::If(_, t, _)) | (Edit::KeepElse, S::If(_, _, t)) => {
                    let keep = t.clone();
                    b.splice(idx..=idx, keep);
                    true
                }
                _ => false,
            });
        }
        *n -= 1;
        let inner = match &mut b[idx] {
            S::If(_, t, e) => edit_in(t, n, what).or_else(|| edit_in(e, n, what)),
            S::For(_, _, body) | S::While(_, body) => edit_in(body, n, what),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
    }
    None
}

/// The expressions a statement holds directly (not those of nested statements).
fn top_exprs(s: &mut S) -> Vec<&mut E> {
    match s {
        S::Assign(_, e) | S::AugAdd(_, e) | S::Expr(e) => vec![e],
        S::If(c, _, _) | S::While(c, _) => vec![c],
        S::For(_, it, _) => vec![it],
        S::Return => Vec::new(),
    }
}

/// The operands the reducer may descend into or promote. A memory access keeps its pointer and
/// mask (a smaller offset expression can point out of bounds, which Triton's interpreter runs
/// without a word); only a stored value is fair game.
fn children(e: &mut E) -> Vec<&mut E> {
    match e {
        E::Atom(_) => Vec::new(),
        E::Call(f, args, kwargs) => {
            if f == "tl.load" {
                Vec::new()
            } else if f == "tl.store" || f.starts_with("tl.atomic") {
                args.iter_mut().skip(1).take(1).collect()
            } else {
                args.iter_mut()
                    .chain(kwargs.iter_mut().map(|(_, v)| v))
                    .collect()
            }
        }
        E::Bin(_, l, r) => vec![l.as_mut(), r.as_mut()],
        E::Neg(x) | E::Method(x, _, _) | E::Index(x, _) => vec![x.as_mut()],
        E::IfExp(c, x, y) => vec![x.as_mut(), y.as_mut(), c.as_mut()],
    }
}

fn nodes(e: &E) -> usize {
    let mut e = e.clone();
    1 + children(&mut e)
        .into_iter()
        .map(|c| nodes(c))
        .sum::<usize>()
}

/// Expression nodes in `s`, nested statements' included, in the order [`replace_expr`] counts.
fn exprs_in(s: &S) -> usize {
    match s {
        s if kept(s) => 0,
        S::Assign(_, e) | S::AugAdd(_, e) | S::Expr(e) => nodes(e),
        S::If(c, t, e) => nodes(c) + t.iter().chain(e).map(exprs_in).sum::<usize>(),
        S::For(_, c, b) | S::While(c, b) => nodes(c) + b.iter().map(exprs_in).sum::<usize>(),
        S::Return => 0,
    }
}

/// The program with its `k`-th expression node (pre-order) replaced by its `child`-th operand.
fn replace_expr(p: &Program, k: usize, child: usize) -> Option<Program> {
    let mut q = p.clone();
    let mut n = k;
    for b in bodies_mut(&mut q) {
        match replace_in_body(b, &mut n, child) {
            Some(true) => return Some(q),
            Some(false) => return None,
            None => {}
        }
    }
    None
}

fn replace_in_body(b: &mut [S], n: &mut usize, child: usize) -> Option<bool> {
    for s in b {
        // The masks and loads every program relies on stay as they are: a load without its
        // mask reads out of bounds, which Triton's interpreter does not survive.
        let own = if kept(s) { Vec::new() } else { top_exprs(s) };
        for e in own {
            if let Some(r) = replace_in_expr(e, n, child) {
                return Some(r);
            }
        }
        let inner = match s {
            S::If(_, t, e) => replace_in_body(t, n, child).or_else(|| replace_in_body(e, n, child)),
            S::For(_, _, body) | S::While(_, body) => replace_in_body(body, n, child),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
    }
    None
}

fn replace_in_expr(e: &mut E, n: &mut usize, child: usize) -> Option<bool> {
    if *n == 0 {
        let replacement = children(e).get(child).map(|c| (**c).clone());
        return Some(replacement.map(|r| *e = r).is_some());
    }
    *n -= 1;
    for c in children(e) {
        if let Some(r) = replace_in_expr(c, n, child) {
            return Some(r);
        }
    }
    None
}
