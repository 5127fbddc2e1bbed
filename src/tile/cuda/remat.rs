//! Rematerialisation: a layout change of a tile that is a cheap function of indices and
//! scalars (`tl.arange`, splats, integer and pointer arithmetic, comparisons, broadcasts) is
//! computed again in the destination's layout instead of going through shared memory. This is
//! what makes the masks and pointer tiles of 2-D kernels (`offs_k[None, :] < K - k * BLOCK_K`
//! broadcast over the rows of a tile) cost a few integer ops per register rather than two
//! barriers.

use super::math;
use super::relayout::{Idx, IndexMap};
use super::writer::Writer;
use crate::tile::ir::{Elem, Op, VarId};

/// The comment that marks a rematerialised layout change in the generated code.
pub const MARK: &str = "// recomputed in this layout";

/// The most IR nodes one rematerialised element may take.
const BUDGET: u32 = 24;

impl Writer<'_> {
    /// A C expression for element `g` of `v`, when `v` can be recomputed from its definition:
    /// every tile in it assigned exactly once, every scalar assigned at most once (or a
    /// parameter or loop variable), only integer, boolean and pointer values.
    pub fn remat(&self, v: VarId, g: &Idx) -> Option<String> {
        let mut budget = BUDGET;
        self.remat_in(v, g, &mut budget)
    }

    /// Register `e` of `v` recomputed where it is used, by its index [`Idx::named`] (which the
    /// caller defines), when `v` rematerialises in its own layout. A matmul's epilogue stores
    /// this way, so that its 64-bit pointers and masks never all sit in registers at once
    /// beside the accumulator.
    pub fn inline_remat(&self, v: VarId) -> Option<String> {
        if !self.k.ty(v).is_tile() {
            return None;
        }
        self.remat(v, &Idx::named(&self.layout(v)))
    }

    /// Register `e` (a C expression) of `v` when `v` is a conversion of a tile in the same
    /// layout, assigned since `v` was: the conversion, done where the value is used. Only
    /// outside loops, where what was written before has run before.
    pub fn inline_cast(&self, v: VarId, e: &str) -> Option<String> {
        let since = |x: &VarId| {
            let at = |y: &VarId| self.assigned_at.get(y).copied().unwrap_or(0);
            at(x) < at(&v)
        };
        match self.defs.get(&v) {
            Some((1, Some(Op::Cast(x))))
                if self.loop_depth == 0
                    && since(x)
                    && self.k.ty(v).is_tile()
                    && self.k.ty(*x).is_tile()
                    && self.layout(*x) == self.layout(v) =>
            {
                Some(math::cast(
                    self.k.ty(*x).elem,
                    self.k.ty(v).elem,
                    &self.at(*x, e),
                ))
            }
            _ => None,
        }
    }

    fn remat_in(&self, v: VarId, g: &Idx, budget: &mut u32) -> Option<String> {
        *budget = budget.checked_sub(1)?;
        let ty = self.k.ty(v);
        if let Elem::Scalar(s) = ty.elem {
            if s.is_float() {
                return None;
            }
        }
        let (count, op) = self.defs.get(&v).cloned().unwrap_or((0, None));
        if !ty.is_tile() {
            return (count <= 1).then(|| self.name(v).to_string());
        }
        if count != 1 {
            return None;
        }
        let op = op?;
        let sub = |x: VarId, idx: &Idx, b: &mut u32| self.remat_in(x, idx, b);
        Some(match &op {
            Op::Arange { start, .. } => {
                let g = g.flat();
                if *start == 0 {
                    format!("({g})")
                } else {
                    format!("({start} + ({g}))")
                }
            }
            Op::Splat(s) => sub(*s, g, budget)?,
            Op::Copy(x) | Op::Hint { src: x, .. } => sub(*x, g, budget)?,
            // Row-major order is kept: the flat index carries over.
            Op::Reshape(x) | Op::ExpandDims { src: x, .. } => {
                sub(*x, &Idx::Flat(g.flat()), budget)?
            }
            Op::Broadcast(x) | Op::Permute { src: x, .. } => {
                let map = IndexMap::new(&ty.shape, &self.k.ty(*x).shape, &op);
                sub(*x, &Idx::Flat(format!("({})", map.expr_idx(g))), budget)?
            }
            Op::Cast(x) => {
                let inner = sub(*x, g, budget)?;
                math::cast(self.k.ty(*x).elem, ty.elem, &inner)
            }
            Op::Binary { op: b, lhs, rhs } => {
                let s = match self.k.ty(*lhs).elem {
                    Elem::Scalar(s) => s,
                    Elem::Ptr(_) => return None,
                };
                let (l, r) = (sub(*lhs, g, budget)?, sub(*rhs, g, budget)?);
                math::binary(*b, s, &l, &r).ok()?
            }
            Op::PtrAdd { ptr, offset } => {
                let (p, o) = (sub(*ptr, g, budget)?, sub(*offset, g, budget)?);
                format!("({p} + {o})")
            }
            _ => return None,
        })
    }
}
