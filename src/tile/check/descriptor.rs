//! Tensor descriptors: `tl.make_tensor_descriptor(base, shape, strides, block_shape)` and
//! `desc.load([o0, o1])`, Triton's way of asking for the tensor-memory accelerator (TMA).
//!
//! A descriptor is a compile-time value (like a tuple) that names a row-major 2-D tensor: its
//! base pointer, its shape and its strides (the last one 1), and the block a load reads. A
//! load is written out here as what it means, a masked pointer load of the block at the
//! offsets, with zeros outside the tensor:
//!
//! ```text
//! rows = o0 + arange(0, B0);  cols = o1 + arange(0, B1)
//! load(base + rows[:, None] * s0 + cols[None, :],
//!      mask = 0 <= rows[:, None] < d0  &  0 <= cols[None, :] < d1, other = 0)
//! ```
//!
//! (written out by `window.rs`, in 64-bit arithmetic, as block pointers' loads are too), so
//! the interpreter, the PTX emulator and every GPU run it as it is; the load is also
//! recorded ([`ir::DescLoad`]) so that the CUDA writer may copy it with TMA instead.

use super::emit::Ck;
use super::expr::Args;
use super::value::Val;
use super::window::Window;
use crate::tile::ir::{self, Elem, Op, Scalar, StmtKind, Type, VarId};
use crate::tile::span::Span;

/// Descriptors kwb compiles: two dimensions, as Triton's matmuls use them.
const RANK: usize = 2;

impl Ck<'_> {
    /// `tl.make_tensor_descriptor(base, shape, strides, block_shape)`.
    pub fn make_tensor_descriptor(&mut self, a: Args) -> Val {
        let span = a.span;
        let params = &["base", "shape", "strides", "block_shape", "padding_option"];
        let Some(s) = self.bind("make_tensor_descriptor", a, params, 4) else {
            return Val::Poison;
        };
        let base_span = Self::span_of(&s, 0, span);
        let base = match Self::val(&s, 0) {
            Val::Var(b) if !self.ty(b).is_tile() && matches!(self.ty(b).elem, Elem::Ptr(_)) => b,
            Val::Poison => return Val::Poison,
            other => {
                let msg = format!(
                    "`base` of a tensor descriptor must be a pointer, found {}",
                    self.show(&other)
                );
                return self.error(base_span, msg);
            }
        };
        match Self::val(&s, 4) {
            Val::None => {}
            Val::Str(p) if p == "zero" => {}
            other => {
                let msg = format!(
                    "kwb's tensor descriptors pad with zeros only (`padding_option=\"zero\"`), found {}",
                    other.describe()
                );
                return self.error(Self::span_of(&s, 4, span), msg);
            }
        }
        let mut lists = Vec::new();
        for (i, what) in [(1, "shape"), (2, "strides"), (3, "block_shape")] {
            let sp = Self::span_of(&s, i, span);
            match Self::val(&s, i) {
                Val::Tuple(items) if items.len() == RANK => lists.push((items, sp)),
                Val::Poison => return Val::Poison,
                Val::Tuple(items) => {
                    let msg = format!(
                        "`{what}` has {} entries; kwb compiles two-dimensional tensor descriptors",
                        items.len()
                    );
                    return self.error(sp, msg);
                }
                other => {
                    let msg = format!("`{what}` must be a list, found {}", other.describe());
                    return self.error(sp, msg);
                }
            }
        }
        let Ok([(shape_items, shape_span), (stride_items, stride_span), (block_items, block_span)]) =
            <[_; 3]>::try_from(lists)
        else {
            return Val::Poison;
        };
        let mut block = Vec::new();
        for b in &block_items {
            match b {
                Val::Int(v) if (1..=256).contains(v) && v.count_ones() == 1 => {
                    block.push(*v as u32)
                }
                other => {
                    let msg = format!(
                        "`block_shape` entries must be compile-time powers of two from 1 to 256 \
                         (a TMA box), found {}",
                        other.describe()
                    );
                    return self.error(block_span, msg);
                }
            }
        }
        if stride_items.last() != Some(&Val::Int(1)) {
            return self.error(
                stride_span,
                "the last stride of a tensor descriptor must be the constant 1 (TMA copies \
                 contiguous rows)",
            );
        }
        let Elem::Ptr(pointee) = self.ty(base).elem else {
            return Val::Poison;
        };
        if u64::from(block[RANK - 1]) * u64::from(pointee.size()) < 16 {
            let msg = format!(
                "the last block dimension must span at least 16 bytes, but {} elements of {} \
                 are {} bytes",
                block[RANK - 1],
                pointee.triton_name(),
                block[RANK - 1] * pointee.size()
            );
            return self.error(block_span, msg);
        }
        let Some(shape) = self.int_scalars(&shape_items, shape_span, "shape") else {
            return Val::Poison;
        };
        let Some(strides) = self.int_scalars(&stride_items, stride_span, "strides") else {
            return Val::Poison;
        };
        self.descriptors.push(ir::Descriptor {
            base,
            shape,
            strides,
            block,
        });
        Val::Desc(self.descriptors.len() - 1)
    }

    /// Each entry as an integer scalar variable (a compile-time int becomes a constant).
    pub(super) fn int_scalars(
        &mut self,
        items: &[Val],
        span: Span,
        what: &str,
    ) -> Option<Vec<VarId>> {
        let mut out = Vec::new();
        for v in items {
            let x = match v {
                Val::Int(i) => {
                    let s = if i32::try_from(*i).is_ok() {
                        Scalar::I32
                    } else {
                        Scalar::I64
                    };
                    self.as_dtype(v, s)?
                }
                Val::Var(x)
                    if !self.ty(*x).is_tile()
                        && matches!(self.ty(*x).elem, Elem::Scalar(s) if s.is_signed_int() || s.is_unsigned_int()) =>
                {
                    *x
                }
                other => {
                    let msg = format!(
                        "`{what}` entries must be integer scalars, found {}",
                        self.show(other)
                    );
                    self.error(span, msg);
                    return None;
                }
            };
            out.push(x);
        }
        Some(out)
    }

    /// The offsets argument of `desc.load` / `desc.store`: one integer scalar per dimension.
    fn desc_offsets(&mut self, v: Val, sp: Span) -> Option<Vec<VarId>> {
        let offsets = match v {
            Val::Tuple(items) if items.len() == RANK => items,
            Val::Poison => return None,
            Val::Tuple(items) => {
                let msg = format!(
                    "`offsets` has {} entries, but the descriptor has {RANK} dimensions",
                    items.len()
                );
                self.error(sp, msg);
                return None;
            }
            other => {
                let msg = format!(
                    "`offsets` must be a list of {RANK} integers, found {}",
                    other.describe()
                );
                self.error(sp, msg);
                return None;
            }
        };
        self.int_scalars(&offsets, sp, "offsets")
    }

    /// The pointers of descriptor `d`'s block at `offs`, and the mask of those inside the
    /// tensor (`window.rs`): `base + rows[:, None] * s0 + cols[None, :]`,
    /// `0 <= rows < d0 & 0 <= cols < d1`.
    fn desc_block(&mut self, d: usize, offs: &[VarId], span: Span) -> Option<(VarId, VarId)> {
        let desc = self.descriptors[d].clone();
        let var = |v: &[VarId]| v.iter().map(|x| Val::Var(*x)).collect::<Vec<Val>>();
        let mut strides = var(&desc.strides);
        // The last stride is the constant 1 (`make_tensor_descriptor` checks it).
        strides[RANK - 1] = Val::Int(1);
        let w = Window {
            base: desc.base,
            shape: &var(&desc.shape),
            strides: &strides,
            offsets: &var(offs),
            block: &desc.block,
            checked: &[true; RANK],
        };
        match self.window(&w, span)? {
            (ptr, Some(mask)) => Some((ptr, mask)),
            (_, None) => None,
        }
    }

    /// `desc.load(offsets)`: the block at `offsets`, zeros outside the tensor.
    pub fn desc_load(&mut self, d: usize, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("load", a, &["offsets"], 1) else {
            return Val::Poison;
        };
        let sp = Self::span_of(&s, 0, span);
        let Some(offs) = self.desc_offsets(Self::val(&s, 0), sp) else {
            return Val::Poison;
        };
        let Some((ptr, mask)) = self.desc_block(d, &offs, span) else {
            return Val::Poison;
        };
        let Elem::Ptr(pointee) = self.ty(ptr).elem else {
            return Val::Poison;
        };
        let Some(other) = self.as_dtype(&Val::Int(0), pointee) else {
            return Val::Poison;
        };
        let ty = Type {
            elem: Elem::Scalar(pointee),
            shape: self.descriptors[d].block.clone(),
        };
        let dst = self.emit(
            ty,
            Op::Load {
                ptr,
                mask: Some(mask),
                other: Some(other),
            },
        );
        self.desc_loads.push(ir::DescLoad {
            dst,
            desc: d,
            offsets: offs,
        });
        Val::Var(dst)
    }

    /// `desc.store(offsets, value)`: the block at `offsets`, the elements outside the tensor
    /// left alone (a masked store; kwb does not copy it with TMA yet).
    pub fn desc_store(&mut self, d: usize, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("store", a, &["offsets", "value"], 2) else {
            return Val::None;
        };
        let sp = Self::span_of(&s, 0, span);
        let Some(offs) = self.desc_offsets(Self::val(&s, 0), sp) else {
            return Val::None;
        };
        let Some((ptr, mask)) = self.desc_block(d, &offs, span) else {
            return Val::None;
        };
        let Elem::Ptr(pointee) = self.ty(ptr).elem else {
            return Val::None;
        };
        let block = self.descriptors[d].block.clone();
        let value_span = Self::span_of(&s, 1, span);
        let Some(value) =
            self.stored_value(&Self::val(&s, 1), pointee, &block, value_span, "desc.store")
        else {
            return Val::None;
        };
        self.push(StmtKind::Store {
            ptr,
            value,
            mask: Some(mask),
        });
        Val::None
    }
}
