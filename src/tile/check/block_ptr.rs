//! Block pointers: `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)`,
//! `tl.advance(p, offsets)` (or `p.advance(offsets)`), `tl.load(p, boundary_check=,
//! padding_option=)` and `tl.store(p, value, boundary_check=)`.
//!
//! Like a tensor descriptor, a block pointer is a compile-time value ([`BlockPtr`]) whose parts
//! are runtime values: the base pointer and one extent, stride and offset per dimension.
//! `tl.advance` gives a new one with its offsets moved; loops carry the offsets (and the other
//! parts when a loop changes them) in variables, and `if`s merge them (`flatten.rs`,
//! `carry.rs`). A load or store (`block_ptr_access.rs`) is written out as what it means
//! (`window.rs`): the pointer access of the block at the offsets, masked on the dimensions
//! `boundary_check` names only.
//! Loads fill the masked-off elements with zeros (`padding_option="zero"`, and also when no
//! padding is given, where Triton leaves them undefined) or NaNs (`"nan"`). `order`, the order
//! of the dimensions in memory (a hint to Triton's code generation), changes no value: it is
//! checked and kept.

use super::emit::Ck;
use super::expr::Args;
use super::value::{BlockPtr, Val};
use crate::tile::ast::BinaryOp;
use crate::tile::ir::{Elem, Scalar};
use crate::tile::span::Span;

/// A list argument's entries (a single value is a list of one, as Triton reads it).
pub(super) fn entries(v: Val) -> Vec<Val> {
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
        // As Triton, a block pointer to `tl.int1` is one to `tl.int8`: bools are stored as
        // bytes, so its loads give int8 and its `.type.element_ty` is int8
        // (`block_ptr_access.rs` converts at the loads and stores).
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

    /// One integer of a block pointer: a compile-time int as it is; an integer scalar as it is
    /// (`keep`: shapes and strides, which loads widen to int64) or else converted to int32
    /// unless it is 64-bit (offsets, int32 in Triton).
    fn block_int(&mut self, v: &Val, span: Span, what: &str, keep: bool) -> Option<Val> {
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
                if keep {
                    return Some(v.clone());
                }
                let to = if s.size() == 8 {
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
}
