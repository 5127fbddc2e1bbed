//! Uniform splats: a tile that is a scalar splatted to a shape (`tl.full`, the scalar side of
//! `offs < n` or `ptr + offs`) holds the same value in every register. Written as an array it
//! costs NVRTC an unrolled copy loop and the array's registers to track, for nothing: in
//! elementwise-add's odd specialisation, dropping its four such arrays took about 4 ms off the
//! front end. The writer instead declares no array for such a tile and reads the scalar
//! wherever an element of the tile is read ([`Writer::at`](super::writer::Writer::at)).
//!
//! That is exact where, at every read of the tile, the scalar still holds the value it had at
//! the splat, and where every reader goes through `at`. So a splat is uniform when:
//! - the tile is assigned only there, and every statement that reads it comes after it in the
//!   same statement list (nested in those statements included): each read follows that run
//!   of the splat in the same run of the list;
//! - nothing in the list after it assigns the scalar (nor loops over it as a loop variable);
//! - every reader is an elementwise op, a load, a store or an atomic on tiles. Layout changes,
//!   reductions and dots read their operands as arrays (or through shared memory) and keep them.
//!
//! A software-pipelined loop writes its address slice ahead of the rest; a tile the rest reads
//! from the slice is assigned again there (with the scalar it reads), so the reads still follow
//! the splat they see (`pipeline.rs`).

use crate::tile::ir::{Kernel, Op, Stmt, StmtKind, VarId};
use std::collections::HashMap;

/// The uniform splats of `k`: each tile with the scalar it holds. `defs`: how many times each
/// variable is assigned, and its op when that is once.
pub fn uniform_splats(
    k: &Kernel,
    defs: &HashMap<VarId, (u32, Option<Op>)>,
) -> HashMap<VarId, VarId> {
    let candidates: HashMap<VarId, VarId> = defs
        .iter()
        .filter_map(|(t, (n, op))| match op {
            // Same element type: reading the scalar converts nothing the array would have.
            Some(Op::Splat(s))
                if *n == 1
                    && k.ty(*t).is_tile()
                    && !k.ty(*s).is_tile()
                    && k.ty(*t).elem == k.ty(*s).elem =>
            {
                Some((*t, *s))
            }
            _ => None,
        })
        .collect();
    if candidates.is_empty() {
        return HashMap::new();
    }
    // Reads of each candidate, and the candidates some reader needs as an array.
    let mut reads: HashMap<VarId, usize> = HashMap::new();
    let mut needed: Vec<VarId> = Vec::new();
    super::layout::visit(&k.body, &mut |s| {
        for v in read_vars(&s.kind) {
            if candidates.contains_key(&v) {
                *reads.entry(v).or_insert(0) += 1;
                if !reads_by_element(k, &s.kind) {
                    needed.push(v);
                }
            }
        }
    });
    let mut out = HashMap::new();
    let mut check = |list: &[Stmt], i: usize, t: VarId, s: VarId| {
        let rest = &list[i + 1..];
        let mut local = 0;
        let mut reassigned = false;
        super::layout::visit(rest, &mut |x| {
            local += read_vars(&x.kind).iter().filter(|v| **v == t).count();
            reassigned |= match &x.kind {
                StmtKind::Assign { dst, .. } => *dst == s,
                StmtKind::For { var, .. } => *var == s,
                _ => false,
            };
        });
        if !reassigned && !needed.contains(&t) && local == reads.get(&t).copied().unwrap_or(0) {
            out.insert(t, s);
        }
    };
    walk(&k.body, &mut |list, i| {
        if let StmtKind::Assign { dst, .. } = &list[i].kind {
            if let Some(&s) = candidates.get(dst) {
                check(list, i, *dst, s);
            }
        }
    });
    out
}

/// Calls `f(list, i)` for every statement `list[i]` of every statement list, nested ones too.
fn walk(list: &[Stmt], f: &mut dyn FnMut(&[Stmt], usize)) {
    for (i, s) in list.iter().enumerate() {
        f(list, i);
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                walk(then, f);
                walk(otherwise, f);
            }
            StmtKind::For { body, .. } => walk(body, f),
            StmtKind::While {
                cond_body, body, ..
            } => {
                walk(cond_body, f);
                walk(body, f);
            }
            _ => {}
        }
    }
}

/// The variables a statement reads (not in nested statements), once per operand.
fn read_vars(s: &StmtKind) -> Vec<VarId> {
    let mut v = super::stmt_vars(s);
    if let StmtKind::Assign { .. } = s {
        v.remove(0);
    }
    v
}

/// Whether the writer reads every tile operand of `s` one element at a time (`Writer::at`).
fn reads_by_element(k: &Kernel, s: &StmtKind) -> bool {
    match s {
        StmtKind::Assign { dst, op } => {
            k.ty(*dst).is_tile()
                && matches!(
                    op,
                    Op::Copy(_)
                        | Op::Hint { .. }
                        | Op::Cast(_)
                        | Op::Binary { .. }
                        | Op::Unary { .. }
                        | Op::Fma { .. }
                        | Op::Where { .. }
                        | Op::PtrAdd { .. }
                        | Op::Load { .. }
                        | Op::Atomic { .. }
                )
        }
        StmtKind::Store { ptr, .. } => k.ty(*ptr).is_tile(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::ir::{BinOp, Const, Elem, Scalar, Type, Var};
    use crate::tile::span::Loc;

    fn var(k: &mut Kernel, shape: &[u32]) -> VarId {
        k.vars.push(Var {
            ty: Type {
                elem: Elem::Scalar(Scalar::I32),
                shape: shape.to_vec(),
            },
            name: None,
        });
        VarId(k.vars.len() as u32 - 1)
    }

    fn assign(dst: VarId, op: Op) -> Stmt {
        Stmt {
            kind: StmtKind::Assign { dst, op },
            loc: Loc::default(),
        }
    }

    fn uniform_of(k: &Kernel) -> HashMap<VarId, VarId> {
        let mut defs: HashMap<VarId, (u32, Option<Op>)> = HashMap::new();
        super::super::layout::visit(&k.body, &mut |s| {
            if let StmtKind::Assign { dst, op } = &s.kind {
                let c = defs.entry(*dst).or_insert((0, None));
                c.0 += 1;
                c.1 = (c.0 == 1).then(|| op.clone());
            }
        });
        uniform_splats(k, &defs)
    }

    /// `s = 1; t = splat(s); [s = 2;] x = t + t; [r = sum(t)]`.
    fn kernel(reassign: bool, reduce: bool) -> (Kernel, VarId, VarId) {
        let mut k = Kernel::empty();
        let (s, t, x, r) = (
            var(&mut k, &[]),
            var(&mut k, &[64]),
            var(&mut k, &[64]),
            var(&mut k, &[]),
        );
        k.body.push(assign(s, Op::Const(Const::Int(1))));
        k.body.push(assign(t, Op::Splat(s)));
        if reassign {
            k.body.push(assign(s, Op::Const(Const::Int(2))));
        }
        let add = Op::Binary {
            op: BinOp::Add,
            lhs: t,
            rhs: t,
        };
        k.body.push(assign(x, add));
        if reduce {
            let sum = Op::Reduce {
                op: crate::tile::ir::ReduceOp::Sum,
                src: t,
                axis: None,
            };
            k.body.push(assign(r, sum));
        }
        (k, t, s)
    }

    #[test]
    fn a_splat_read_by_elementwise_ops_is_its_scalar() {
        let (k, t, s) = kernel(false, false);
        assert_eq!(uniform_of(&k).get(&t), Some(&s));
    }

    #[test]
    fn a_splat_whose_scalar_changes_before_a_read_keeps_its_array() {
        let (k, t, _) = kernel(true, false);
        assert!(!uniform_of(&k).contains_key(&t));
    }

    #[test]
    fn a_splat_a_reduction_reads_keeps_its_array() {
        let (k, t, _) = kernel(false, true);
        assert!(!uniform_of(&k).contains_key(&t));
    }
}
