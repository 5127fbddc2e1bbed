//! A mask's conjuncts as index bounds: `offs_k[None, :] < K - k * BLOCK_K` is "the index along
//! axis 1, from `0`, stays below `K - k * BLOCK_K`". The load proof reads its mask this way,
//! and the store proof its stores' masks.

use super::affine::{Form, Forms, Lin, Scope};
use super::places::Places;
use crate::tile::ir::{BinOp, Op, VarId};

/// One conjunct of a mask: `start + i < limit` at position `i` of `axis`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub axis: usize,
    pub start: Lin,
    pub limit: Lin,
}

/// The conjuncts of mask `m` that are index bounds (`index < scalar`, `scalar > index`, and
/// `<=`/`>=` as `<`/`>` one further); other conjuncts are left out, so a caller that needs
/// every conjunct compares the count with [`conjunct_count`].
pub fn conjuncts<'k, F>(p: &Places<'k>, f: &mut Forms<'k, F>, m: VarId, depth: u32) -> Vec<Bound>
where
    F: Fn(VarId) -> Scope<'k>,
{
    if depth > 32 {
        return Vec::new();
    }
    let Some((_, op)) = p.single(m) else {
        return Vec::new();
    };
    match op {
        Op::Broadcast(x) | Op::Copy(x) => conjuncts(p, f, *x, depth + 1),
        Op::Binary {
            op: BinOp::BitAnd,
            lhs,
            rhs,
        } => {
            let mut v = conjuncts(p, f, *lhs, depth + 1);
            v.extend(conjuncts(p, f, *rhs, depth + 1));
            v
        }
        Op::Binary { op, lhs, rhs } => bound(f, *op, *lhs, *rhs).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// How many conjuncts mask `m` has (leaves of its `&`s).
pub fn conjunct_count(p: &Places, m: VarId, depth: u32) -> usize {
    match p.single(m) {
        _ if depth > 32 => usize::MAX,
        Some((_, Op::Broadcast(x) | Op::Copy(x))) => conjunct_count(p, *x, depth + 1),
        Some((
            _,
            Op::Binary {
                op: BinOp::BitAnd,
                lhs,
                rhs,
            },
        )) => conjunct_count(p, *lhs, depth + 1).saturating_add(conjunct_count(p, *rhs, depth + 1)),
        _ => 1,
    }
}

fn bound<'k, F>(f: &mut Forms<'k, F>, op: BinOp, lhs: VarId, rhs: VarId) -> Option<Bound>
where
    F: Fn(VarId) -> Scope<'k>,
{
    let (idx, lim, extra) = match op {
        BinOp::Lt => (lhs, rhs, 0),
        BinOp::Le => (lhs, rhs, 1),
        BinOp::Gt => (rhs, lhs, 0),
        BinOp::Ge => (rhs, lhs, 1),
        _ => return None,
    };
    let Form::Int(i) = f.form(idx)? else {
        return None;
    };
    let limit = f.lin(lim)?.add(&Lin::konst(extra))?;
    match i.dims.as_slice() {
        [d] if d.wrap.is_none() && d.mul == Lin::konst(1) && i.scalar == Lin::konst(0) => {
            Some(Bound {
                axis: d.axis,
                start: d.start.clone(),
                limit,
            })
        }
        _ => None,
    }
}
