//! Block pointers: `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)`,
//! `tl.advance(p, offsets)` (or `p.advance(offsets)`), `tl.load(p, boundary_check=,
//! padding_option=)` and `tl.store(p, value, boundary_check=)`.
//!
//! Like a tensor descriptor, a block pointer is a compile-time value ([`BlockPtr`]) whose parts
//! are runtime values: the base pointer and one extent, stride and offset per dimension.
//! `tl.advance` gives a new one with its offsets moved; loops carry the offsets (and the other
//! parts when a loop changes them) in variables, and `if`s merge them (`flatten.rs`,
//! `carry.rs`). A load or store is written out as what it means (`window.rs`): the pointer
//! access of the block at the offsets, masked on the dimensions `boundary_check` names only.
//! Loads fill the masked-off elements with zeros (`padding_option="zero"`, and also when no
//! padding is given, where Triton leaves them undefined) or NaNs (`"nan"`). `order`, the order
//! of the dimensions in memory (a hint to Triton's code generation), changes no value: it is
//! checked and kept.

use super::builtins::Slots;
use super::emit::Ck;
use super::expr::Args;
use super::value::{show_shape, BlockPtr, Val};
use super::window::Window;
use crate::tile::ast::BinaryOp;
use crate::tile::ir::{Elem, Op, Scalar, StmtKind, Type, VarId};
use crate::tile::span::Span;

/// A list argument's entries (a single value is a list of one, as Triton reads it).
fn entries(v: Val) -> Vec<Val> {
    match v {
        Val::Tuple(items) => items,
        other => vec![other],
    }
}

impl Ck<'_> {
    /// `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)`.
    pub fn make_block_ptr(&mut self, a: Args) -> Val {
        let span = a.span;
        let params = &[
            "base",
            "shape",
            "strides",
            "offsets",
            "block_shape",
            "order",
        ];
        let Some(s) = self.bind("make_block_ptr", a, params, 6) else {
            return Val::Poison;
        };
        let at = |i: usize| Self::span_of(&s, i, span);
        let base = match Self::val(&s, 0) {
            Val::Var(b) if !self.ty(b).is_tile() && matches!(self.ty(b).elem, Elem::Ptr(_)) => b,
            other => {
                let msg = format!(
                    "`base` of a block pointer must be a pointer (not a tile of pointers), found {}",
                    self.show(&other)
                );
                return self.error(at(0), msg);
            }
        };
        if self.ty(base).elem == Elem::Ptr(Scalar::I1) {
            return self.error(
                at(0),
                "block pointers to `tl.int1` are not supported (Triton reads them as int8)",
            );
        }
        let block_items = entries(Self::val(&s, 4));
        let rank = block_items.len();
        if rank == 0 {
            return self.error(at(4), "`block_shape` needs at least one dimension");
        }
        if let Some(bad) = block_items.iter().find(|v| !matches!(v, Val::Int(_))) {
            let msg = format!(
                "`block_shape` entries must be compile-time integers (constexprs), found {}",
                self.show(bad)
            );
            return self.error(at(4), msg);
        }
        let Some(block) = self.const_shape(&Val::Tuple(block_items), at(4)) else {
            return Val::Poison;
        };
        let mut lists = Vec::new();
        for (i, what) in [(1, "shape"), (2, "strides"), (3, "offsets"), (5, "order")] {
            let items = entries(Self::val(&s, i));
            if items.len() != rank {
                let msg = format!(
                    "`{what}` has {} entries, but `block_shape` has {rank}: a block pointer takes \
                     one per dimension",
                    items.len()
                );
                return self.error(at(i), msg);
            }
            lists.push(items);
        }
        let mut order = Vec::new();
        for v in &lists[3] {
            match v {
                Val::Int(d) if (0..rank as i64).contains(d) && !order.contains(&(*d as u32)) => {
                    order.push(*d as u32)
                }
                other => {
                    let msg = format!(
                        "`order` must list each dimension from 0 to {} once, as compile-time \
                         integers; found {}",
                        rank - 1,
                        self.show(other)
                    );
                    return self.error(at(5), msg);
                }
            }
        }
        let mut ints = Vec::new();
        for (k, (i, what)) in [(1, "shape"), (2, "strides"), (3, "offsets")]
            .into_iter()
            .enumerate()
        {
            let mut out = Vec::new();
            for v in &lists[k] {
                let Some(x) = self.block_int(v, at(i), what, what != "offsets") else {
                    return Val::Poison;
                };
                out.push(x);
            }
            ints.push(out);
        }
        let [shape, strides, offsets] = <[Vec<Val>; 3]>::try_from(ints).unwrap_or_default();
        Val::BlockPtr(Box::new(BlockPtr {
            base: Val::Var(base),
            shape,
            strides,
            offsets,
            block,
            order,
        }))
    }

    /// One integer of a block pointer: a compile-time int as it is; an integer scalar
    /// converted to int64 (`wide`: shapes and strides, as in Triton) or else to int32 unless it
    /// is 64-bit.
    fn block_int(&mut self, v: &Val, span: Span, what: &str, wide: bool) -> Option<Val> {
        match v {
            Val::Int(_) => Some(v.clone()),
            Val::Bool(b) => Some(Val::Int(i64::from(*b))),
            Val::Var(x)
                if !self.ty(*x).is_tile()
                    && self
                        .scalar_of(*x)
                        .is_some_and(|s| !s.is_float() && s != Scalar::I1) =>
            {
                let s = self.scalar_of(*x).unwrap_or(Scalar::I32);
                let to = if wide || s.size() == 8 {
                    Scalar::I64
                } else {
                    Scalar::I32
                };
                Some(Val::Var(self.cast(*x, to)))
            }
            Val::Poison => None,
            other => {
                let msg = format!(
                    "`{what}` entries must be integer scalars, found {}",
                    self.show(other)
                );
                self.error(span, msg);
                None
            }
        }
    }

    /// `tl.advance(base, offsets)`: the block pointer moved by `offsets`.
    pub fn advance(&mut self, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("advance", a, &["base", "offsets"], 2) else {
            return Val::Poison;
        };
        let Val::BlockPtr(mut bp) = Self::val(&s, 0) else {
            let msg = format!(
                "`tl.advance` moves a block pointer (made by `tl.make_block_ptr`), found {}",
                self.show(&Self::val(&s, 0))
            );
            return self.error(Self::span_of(&s, 0, span), msg);
        };
        let sp = Self::span_of(&s, 1, span);
        let deltas = entries(Self::val(&s, 1));
        if deltas.len() != bp.offsets.len() {
            let msg = format!(
                "`offsets` has {} entries, but the block pointer has {} dimension(s)",
                deltas.len(),
                bp.offsets.len()
            );
            return self.error(sp, msg);
        }
        for (d, delta) in deltas.iter().enumerate() {
            let Some(delta) = self.block_int(delta, sp, "offsets", false) else {
                return Val::Poison;
            };
            let old = std::mem::replace(&mut bp.offsets[d], Val::None);
            bp.offsets[d] = match (old, delta) {
                // Offsets are int32, as in Triton (int64 when a 64-bit one was given).
                (Val::Int(x), Val::Int(y)) => match (i32::try_from(x), i32::try_from(y)) {
                    (Ok(x), Ok(y)) => Val::Int(i64::from(x.wrapping_add(y))),
                    _ => Val::Int(x.wrapping_add(y)),
                },
                (old, Val::Int(0)) => old,
                (old, delta) => self.binary(BinaryOp::Add, old, delta, span),
            };
        }
        Val::BlockPtr(bp)
    }

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
        let Elem::Ptr(pointee) = self.ty_of_base(bp) else {
            return Val::Poison;
        };
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
        let Some((ptr, mask)) = self.block_ptr_window(bp, &checked, span) else {
            return Val::Poison;
        };
        let other = match mask {
            Some(_) => self.as_dtype(&pad, pointee),
            None => None,
        };
        let ty = Type {
            elem: Elem::Scalar(pointee),
            shape: bp.block.clone(),
        };
        Val::Var(self.emit(ty, Op::Load { ptr, mask, other }))
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
        let Elem::Ptr(pointee) = self.ty_of_base(bp) else {
            return Val::None;
        };
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
        let Some((ptr, mask)) = self.block_ptr_window(bp, &checked, span) else {
            return Val::None;
        };
        self.push(StmtKind::Store { ptr, value, mask });
        Val::None
    }

    fn ty_of_base(&self, bp: &BlockPtr) -> Elem {
        match bp.base {
            Val::Var(b) => self.ty(b).elem,
            _ => Elem::Scalar(Scalar::I32),
        }
    }
}
