//! The proof that a load's wrapped rows never reach memory.
//!
//! Triton's matmul wraps its row indices (`offs_am = (pid_m * BM + arange(BM)) % M`) so the
//! A tile needs no row mask: the rows past `M` read real rows again, and their results are
//! never stored. A TMA copy cannot wrap; it reads zeros there instead. The two differ only in
//! those rows, so the copy may replace the load when every value computed from them is
//! stored under a mask that leaves the same rows out:
//!
//! - the load is read only as a `tl.dot` operand whose wrapped axis is an axis of the product
//!   (A's rows, B's columns; never the reduced K);
//! - what depends on the product keeps each element in place: copies, casts, elementwise
//!   arithmetic, and the accumulator of later dots;
//! - every store of such a value has a mask with the conjunct `start + i < extent` along that
//!   axis, with the load's own start and extent (`offs_cm[:, None] < M`).
//!
//! Any other use (a reduction, a reshape, a store without that conjunct) and there is no proof.

use super::affine::{Forms, Lin};
use super::masks;
use super::places::Places;
use crate::tile::ir::{self, Op, StmtKind, VarId};
use std::collections::HashSet;

/// A load's axis whose indices wrap at `extent` from `start`.
#[derive(Debug, Clone)]
pub struct Wrapped {
    pub axis: usize,
    pub start: Lin,
    pub extent: VarId,
}

/// Whether the positions of load `dst` past `w.extent` along `w.axis` only reach stores that
/// leave them out.
pub fn unstored(p: &Places, dst: VarId, w: &Wrapped) -> bool {
    let mut stmts = Vec::new();
    ir::visit(&p.k.body, &mut |s| stmts.push(s));
    // The product's axis the wrapped one becomes: A's rows are its rows, B's columns its columns.
    let mut tainted: HashSet<VarId> = HashSet::new();
    for s in &stmts {
        if !s.kind.reads().contains(&dst) {
            continue;
        }
        match &s.kind {
            StmtKind::Assign {
                dst: d,
                op: Op::Dot { a, b, acc, .. },
            } if a != b && *acc != Some(dst) => {
                let role_axis = if *a == dst { 0 } else { 1 };
                if role_axis != w.axis {
                    return false;
                }
                tainted.insert(*d);
            }
            _ => return false,
        }
    }
    // Everything computed from the product, element by element.
    loop {
        let before = tainted.len();
        for s in &stmts {
            let reads = s.kind.reads();
            if !reads.iter().any(|r| tainted.contains(r)) {
                continue;
            }
            match &s.kind {
                StmtKind::Assign { dst: d, op } => {
                    let in_place = match op {
                        Op::Copy(_) | Op::Cast(_) | Op::Unary { .. } => true,
                        Op::Binary { .. } | Op::Fma { .. } | Op::Where { .. } => {
                            let shape = &p.k.ty(*d).shape;
                            reads.iter().all(|r| &p.k.ty(*r).shape == shape)
                        }
                        Op::Dot { a, b, acc, .. } => {
                            acc.is_some_and(|c| tainted.contains(&c))
                                && !tainted.contains(a)
                                && !tainted.contains(b)
                        }
                        _ => false,
                    };
                    if !in_place {
                        return false;
                    }
                    tainted.insert(*d);
                }
                StmtKind::Store { ptr, value, mask } => {
                    let only_value =
                        !tainted.contains(ptr) && !mask.is_some_and(|m| tainted.contains(&m));
                    if !only_value || !tainted.contains(value) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        if tainted.len() == before {
            break;
        }
    }
    // Each store of such a value leaves the wrapped positions out.
    let mut f = Forms::new(p.k, |v| p.scope_anywhere(v));
    stmts.iter().all(|s| match &s.kind {
        StmtKind::Store { value, mask, .. } if tainted.contains(value) => mask.is_some_and(|m| {
            masks::conjuncts(p, &mut f, m, 0).iter().any(|b| {
                b.axis == w.axis && b.start == w.start && b.limit.as_atom() == Some(w.extent)
            })
        }),
        _ => true,
    })
}
