//! Loads and stores through block pointers (`block_ptr.rs`): `tl.load(p, boundary_check=,
//! padding_option=)` and `tl.store(p, value, boundary_check=)`, each the masked pointer access
//! of the block (`window.rs`) with only the dimensions `boundary_check` lists masked. A load
//! that means exactly a tensor descriptor's (both dimensions checked, zeros outside) is also
//! recorded as one, so that the CUDA writer may copy it with TMA; and `boundary_check` and
//! `padding_option` given with other pointers are errors, as in Triton.

use super::block_ptr::entries;
use super::builtins::Slots;
use super::emit::Ck;
use super::value::{show_shape, BlockPtr, Val};
use super::window::Window;
use crate::tile::ir::{self, Const, Elem, Op, Scalar, StmtKind, Type, VarId};
use crate::tile::span::Span;

impl Ck<'_> {
    /// The dimensions `boundary_check` names (an int or a list of them), as one flag each.
    fn boundary_check(&mut self, v: &Val, span: Span, rank: usize) -> Option<Vec<bool>> {
        let mut checked = vec![false; rank];
        let items = match v {
            Val::None => Vec::new(),
            // Triton tests the argument's truth first: a bare 0 checks nothing.
            Val::Int(0) | Val::Bool(false) => {
                let msg = "`boundary_check=0` checks no dimension (Triton reads a bare 0 as \
                           false); write `boundary_check=(0,)` to check dimension 0";
                self.warning(span, msg);
                Vec::new()
            }
            other => entries(other.clone()),
        };
        for it in items {
            let d = match it {
                Val::Int(d) => d,
                other => {
                    let msg = format!(
                        "`boundary_check` lists dimensions as compile-time integers, found {}",
                        self.show(&other)
                    );
                    self.error(span, msg);
                    return None;
                }
            };
            let Some(slot) = usize::try_from(d).ok().and_then(|i| checked.get_mut(i)) else {
                let msg = format!(
                    "`boundary_check` names dimension {d}, but the block pointer has {rank} \
                     dimension(s) (0 to {})",
                    rank - 1
                );
                self.error(span, msg);
                return None;
            };
            if *slot {
                self.error(span, format!("`boundary_check` names dimension {d} twice"));
                return None;
            }
            *slot = true;
        }
        Some(checked)
    }

    /// The pointers and mask of `bp`'s block with `checked` dimensions masked.
    fn block_ptr_window(
        &mut self,
        bp: &BlockPtr,
        checked: &[bool],
        span: Span,
    ) -> Option<(VarId, Option<VarId>)> {
        let Val::Var(base) = bp.base else {
            return None;
        };
        let w = Window {
            base,
            shape: &bp.shape,
            strides: &bp.strides,
            offsets: &bp.offsets,
            block: &bp.block,
            checked,
        };
        self.window(&w, span)
    }

    /// `tl.load(bp, ...)` of a block pointer (`s`: `tl.load`'s bound arguments).
    pub(super) fn block_ptr_load(&mut self, bp: &BlockPtr, s: &Slots, span: Span) -> Val {
        for (i, what) in [(1, "mask"), (2, "other")] {
            if Self::val(s, i) != Val::None {
                let msg = format!(
                    "`{what}` cannot be given with a block pointer: its `boundary_check` says \
                     which dimensions are masked, and `padding_option` what they read"
                );
                return self.error(Self::span_of(s, i, span), msg);
            }
        }
        let rank = bp.block.len();
        let Some(checked) = self.boundary_check(&Self::val(s, 3), Self::span_of(s, 3, span), rank)
        else {
            return Val::Poison;
        };
        let Elem::Ptr(stored) = self.ty_of_base(bp) else {
            return Val::Poison;
        };
        let pointee = as_seen(stored);
        let pad_span = Self::span_of(s, 4, span);
        let pad = match Self::val(s, 4) {
            Val::None => Val::Int(0),
            Val::Str(p) if p.is_empty() || p == "zero" => Val::Int(0),
            Val::Str(p) if p == "nan" && pointee.is_float() => Val::Float(f64::NAN),
            Val::Str(p) if p == "nan" => {
                let msg = format!(
                    "`padding_option=\"nan\"` needs a block pointer to floats, but this one points \
                     to {}",
                    pointee.triton_name()
                );
                return self.error(pad_span, msg);
            }
            other => {
                let msg = format!(
                    "`padding_option` must be \"zero\", \"nan\" or \"\", found {}",
                    self.show(&other)
                );
                return self.error(pad_span, msg);
            }
        };
        let tma = match pad {
            Val::Int(0) => self.as_descriptor(bp, &checked),
            _ => None,
        };
        let Some((ptr, mask)) = self.block_ptr_window(bp, &checked, span) else {
            return Val::Poison;
        };
        let other = match mask {
            Some(_) => self.as_dtype(&pad, stored),
            None => None,
        };
        let ty = Type {
            elem: Elem::Scalar(stored),
            shape: bp.block.clone(),
        };
        let dst = self.emit(ty, Op::Load { ptr, mask, other });
        if stored != pointee {
            // Bytes of a bool buffer read as int8: 0 or 1, as Triton reads them.
            return Val::Var(self.cast(dst, pointee));
        }
        if let Some((desc, offsets)) = tma {
            self.descriptors.push(desc);
            self.desc_loads.push(ir::DescLoad {
                dst,
                desc: self.descriptors.len() - 1,
                offsets,
            });
        }
        Val::Var(dst)
    }

    /// A load of `bp` that means exactly a tensor descriptor's `.load` (two dimensions, both
    /// checked, zeros outside, contiguous rows, int32 offsets, a block TMA can copy): the
    /// descriptor and the load's offsets, so that the load is recorded as one
    /// ([`ir::DescLoad`]) and the CUDA writer may copy it with TMA as it copies descriptor
    /// loads (`cuda/tma.rs` decides; the masked load stays as it is for every other backend).
    fn as_descriptor(
        &mut self,
        bp: &BlockPtr,
        checked: &[bool],
    ) -> Option<(ir::Descriptor, Vec<VarId>)> {
        let Val::Var(base) = bp.base else {
            return None;
        };
        let Elem::Ptr(p) = self.ty(base).elem else {
            return None;
        };
        let fits = bp.block.len() == 2
            && checked.iter().all(|c| *c)
            && bp.strides[1] == Val::Int(1)
            && bp.block.iter().all(|&b| b <= 256)
            && u64::from(bp.block[1]) * u64::from(p.size()) >= 16;
        let i32_offsets = bp.offsets.iter().all(|o| match o {
            Val::Int(i) => i32::try_from(*i).is_ok(),
            Val::Var(x) => self.scalar_of(*x) == Some(Scalar::I32),
            _ => false,
        });
        if !fits || !i32_offsets {
            return None;
        }
        let mut ints = |list: &[Val]| -> Option<Vec<VarId>> {
            list.iter().map(|v| self.prelude_int(v)).collect()
        };
        let (offsets, shape, strides) = (ints(&bp.offsets)?, ints(&bp.shape)?, ints(&bp.strides)?);
        let desc = ir::Descriptor {
            base,
            shape,
            strides,
            block: bp.block.clone(),
        };
        Some((desc, offsets))
    }

    /// `tl.store(bp, value, ...)` of a block pointer (`s`: `tl.store`'s bound arguments).
    pub(super) fn block_ptr_store(&mut self, bp: &BlockPtr, s: &Slots, span: Span) -> Val {
        if Self::val(s, 2) != Val::None {
            return self.error(
                Self::span_of(s, 2, span),
                "`mask` cannot be given with a block pointer: its `boundary_check` says which \
                 dimensions are masked",
            );
        }
        let rank = bp.block.len();
        let Some(checked) = self.boundary_check(&Self::val(s, 3), Self::span_of(s, 3, span), rank)
        else {
            return Val::None;
        };
        let Elem::Ptr(stored) = self.ty_of_base(bp) else {
            return Val::None;
        };
        let pointee = as_seen(stored);
        let value = Self::val(s, 1);
        let value_span = Self::span_of(s, 1, span);
        if let Val::Var(x) = &value {
            let ty = self.ty(*x).clone();
            if ty.is_tile() && ty.shape != bp.block {
                let msg = format!(
                    "the stored value's shape {} is not the block pointer's block {}",
                    show_shape(&ty.shape),
                    show_shape(&bp.block)
                );
                self.error(value_span, msg);
                return Val::None;
            }
            if ty.elem != Elem::Scalar(pointee) {
                let msg = format!(
                    "a block pointer to {p} stores {p} values, found {}; convert it with \
                     `.to(tl.{p})` (Triton does not convert it either)",
                    self.show(&value),
                    p = pointee.triton_name()
                );
                self.error(value_span, msg);
                return Val::None;
            }
        }
        let Some(value) = self.stored_value(&value, pointee, &bp.block, value_span, "tl.store")
        else {
            return Val::None;
        };
        // int8 values into a bool buffer: stored as bools (nonzero is 1). Triton writes the
        // byte itself; the two differ only for bytes other than 0 and 1, which torch reads as
        // True either way.
        let value = if stored != pointee {
            self.cast(value, stored)
        } else {
            value
        };
        let Some((ptr, mask)) = self.block_ptr_window(bp, &checked, span) else {
            return Val::None;
        };
        self.push(StmtKind::Store { ptr, value, mask });
        Val::None
    }

    /// The pointee as the block pointer's user sees it (`.type.element_ty`, loads, stores).
    pub(super) fn block_ptr_pointee(&self, bp: &BlockPtr) -> Option<Scalar> {
        match self.ty_of_base(bp) {
            Elem::Ptr(s) => Some(as_seen(s)),
            Elem::Scalar(_) => None,
        }
    }

    fn ty_of_base(&self, bp: &BlockPtr) -> Elem {
        match bp.base {
            Val::Var(b) => self.ty(b).elem,
            _ => Elem::Scalar(Scalar::I32),
        }
    }

    /// Whether the arguments that only a block pointer takes (`boundary_check`,
    /// `padding_option`) are absent or empty, as Triton requires of other pointers.
    pub(super) fn block_ptr_only(
        &mut self,
        s: &Slots,
        which: &[(usize, &str)],
        span: Span,
    ) -> bool {
        for &(i, what) in which {
            let given = match Self::val(s, i) {
                Val::None => false,
                Val::Tuple(t) => !t.is_empty(),
                Val::Str(p) => !p.is_empty(),
                _ => true,
            };
            if given {
                let msg = format!(
                    "`{what}` applies to block pointers (`tl.make_block_ptr`) only; a pointer \
                     or tile of pointers is masked with `mask=` and `other=`"
                );
                self.error(Self::span_of(s, i, span), msg);
                return false;
            }
        }
        true
    }

    /// An integer as a scalar variable: a variable as it is, a compile-time int as a constant
    /// of the kernel's prelude (int32, or int64 when it needs it).
    fn prelude_int(&mut self, v: &Val) -> Option<VarId> {
        match v {
            Val::Var(x) => Some(*x),
            Val::Int(i) => {
                let s = if i32::try_from(*i).is_ok() {
                    Scalar::I32
                } else {
                    Scalar::I64
                };
                let dst = self.new_var(Type::scalar(s), None);
                let op = Op::Const(Const::Int(*i));
                let loc = self.loc;
                self.prelude.push(ir::Stmt {
                    kind: StmtKind::Assign { dst, op },
                    loc,
                });
                Some(dst)
            }
            _ => None,
        }
    }
}

/// Triton's block pointers to `tl.int1` are block pointers to `tl.int8`.
fn as_seen(stored: Scalar) -> Scalar {
    if stored == Scalar::I1 {
        Scalar::I8
    } else {
        stored
    }
}
