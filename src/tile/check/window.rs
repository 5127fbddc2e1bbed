//! The pointers and the bounds mask of one block of a strided tensor: what a tensor
//! descriptor's `desc.load` (`descriptor.rs`) and a block pointer's `tl.load` (`block_ptr.rs`)
//! both mean. For the block of shape `[B0, B1, ...]` whose first element is at `offsets` in the
//! tensor of `shape` and `strides` (in elements) at `base`:
//!
//! ```text
//! idx_d = offset_d + arange(0, B_d)            (int64, laid along dimension d)
//! ptrs  = base + idx_0 * stride_0 + idx_1 * stride_1 + ...
//! mask  = AND over the checked d of  0 <= idx_d < shape_d
//! ```
//!
//! The arithmetic is 64-bit, as in Triton's lowering of block pointers (its shapes and strides
//! are int64) and in its interpreter, so a block deep into a large tensor never wraps. A
//! stride that is the constant 1 is not multiplied, so a contiguous dimension stays visibly
//! contiguous to the CUDA writer's axis analysis (and its loads can be vectors).

use super::emit::Ck;
use super::value::{show_type, Val};
use crate::tile::ast::{BinaryOp, CmpOp};
use crate::tile::ir::{Elem, Op, Scalar, Type, VarId};
use crate::tile::span::Span;

/// One block of a strided tensor. `shape`, `strides` and `offsets` hold one integer per
/// dimension (a compile-time int or an integer scalar variable); `checked[d]` says whether
/// dimension `d`'s bounds are masked.
pub(super) struct Window<'v> {
    pub base: VarId,
    pub shape: &'v [Val],
    pub strides: &'v [Val],
    pub offsets: &'v [Val],
    pub block: &'v [u32],
    pub checked: &'v [bool],
}

impl Ck<'_> {
    /// The pointer tile of window `w` (of `w.block`'s shape) and its mask, `None` when no
    /// dimension is checked.
    pub(super) fn window(&mut self, w: &Window, span: Span) -> Option<(VarId, Option<VarId>)> {
        let rank = w.block.len();
        let mut offset: Option<Val> = None;
        let mut mask: Option<Val> = None;
        for dim in 0..rank {
            let idx = self.window_index(w.offsets[dim].clone(), w.block, dim, span)?;
            let term = match &w.strides[dim] {
                Val::Int(1) => idx.clone(),
                Val::Int(s) => self.binary(BinaryOp::Mul, idx.clone(), Val::Int(*s), span),
                v => {
                    let s = Val::Var(self.as_dtype(v, Scalar::I64)?);
                    self.binary(BinaryOp::Mul, idx.clone(), s, span)
                }
            };
            offset = Some(match offset {
                None => term,
                Some(o) => self.binary(BinaryOp::Add, o, term, span),
            });
            if w.checked[dim] {
                let extent = match &w.shape[dim] {
                    Val::Int(e) => Val::Int(*e),
                    v => Val::Var(self.as_dtype(v, Scalar::I64)?),
                };
                let lo = self.compare(CmpOp::Ge, idx.clone(), Val::Int(0), span);
                let hi = self.compare(CmpOp::Lt, idx, extent, span);
                let both = self.binary(BinaryOp::BitAnd, lo, hi, span);
                mask = Some(match mask {
                    None => both,
                    Some(m) => self.binary(BinaryOp::BitAnd, m, both, span),
                });
            }
        }
        let ptr = self.binary(BinaryOp::Add, Val::Var(w.base), offset?, span);
        let Val::Var(ptr) = ptr else {
            return None;
        };
        let fits =
            super::emit::broadcast(&self.ty(ptr).shape, w.block).is_some_and(|b| b == w.block);
        if !fits || !matches!(self.ty(ptr).elem, Elem::Ptr(_)) {
            let msg = format!(
                "internal: a block's pointers are {}",
                show_type(self.ty(ptr))
            );
            self.error(span, msg);
            return None;
        }
        let ptr = self.bcast(ptr, w.block);
        let mask = match mask {
            None => None,
            Some(Val::Var(m)) => Some(self.bcast(m, w.block)),
            Some(_) => return None,
        };
        Some((ptr, mask))
    }

    /// `offset + arange(0, block[dim])` in int64, shaped `[1, .., block[dim], .., 1]`.
    fn window_index(&mut self, offset: Val, block: &[u32], dim: usize, span: Span) -> Option<Val> {
        let n = block[dim];
        let ar = self.emit(
            Type {
                elem: Elem::Scalar(Scalar::I32),
                shape: vec![n],
            },
            Op::Arange {
                start: 0,
                end: i64::from(n),
            },
        );
        let ar = Val::Var(self.cast(ar, Scalar::I64));
        let idx = match offset {
            Val::Int(o) => self.binary(BinaryOp::Add, ar, Val::Int(o), span),
            v => {
                let o = Val::Var(self.as_dtype(&v, Scalar::I64)?);
                self.binary(BinaryOp::Add, o, ar, span)
            }
        };
        let Val::Var(mut cur) = idx else {
            return None;
        };
        // Dimensions of 1 before `dim`, then after it.
        for axis in (0..block.len()).filter(|&a| a != dim) {
            let mut shape = self.ty(cur).shape.clone();
            shape.insert(axis, 1);
            let ty = Type {
                elem: self.ty(cur).elem,
                shape,
            };
            cur = self.emit(
                ty,
                Op::ExpandDims {
                    src: cur,
                    axis: axis as u32,
                },
            );
        }
        Some(Val::Var(cur))
    }
}
