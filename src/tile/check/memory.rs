//! Built-ins that create tiles or touch global memory: `tl.arange`, `tl.zeros`/`tl.full`,
//! `tl.load`, `tl.store` and the atomics. Masks become I1 of the access's shape; `other` and
//! stored values are broadcast to it and converted to the pointee dtype.

use super::builtins::MAX_NUMEL;
use super::emit::Ck;
use super::expr::Args;
use super::value::{show_shape, show_type, Val};
use crate::tile::ir::{AtomicOp, Elem, Op, Scalar, StmtKind, Type, VarId};
use crate::tile::span::Span;

impl Ck<'_> {
    pub fn arange(&mut self, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("arange", a, &["start", "end"], 2) else {
            return Val::Poison;
        };
        let (s0, s1) = (Self::span_of(&s, 0, span), Self::span_of(&s, 1, span));
        let (Some(start), Some(end)) = (
            self.const_int(&Self::val(&s, 0), s0, "`tl.arange`'s start"),
            self.const_int(&Self::val(&s, 1), s1, "`tl.arange`'s end"),
        ) else {
            return Val::Poison;
        };
        let n = end.wrapping_sub(start);
        if end <= start {
            return self.error(
                span,
                format!(
                    "`tl.arange({start}, {end})` is empty; its end must be greater than its start"
                ),
            );
        }
        if !(n as u64).is_power_of_two() {
            return self.error(
                span,
                format!(
                    "`tl.arange({start}, {end})` has {n} elements, which is not a power of two; round the bound up (e.g. with `triton.next_power_of_2`) and mask the tail"
                ),
            );
        }
        if n as u64 > MAX_NUMEL {
            return self.error(span, format!("`tl.arange({start}, {end})` has {n} elements; a tile holds at most {MAX_NUMEL}"));
        }
        let ty = Type {
            elem: Elem::Scalar(Scalar::I32),
            shape: vec![n as u32],
        };
        Val::Var(self.emit(ty, Op::Arange { start, end }))
    }

    /// A compile-time shape: an int, or a tuple/list of ints, each a power of two.
    pub fn const_shape(&mut self, v: &Val, span: Span) -> Option<Vec<u32>> {
        let items = match v {
            Val::Tuple(t) => t.clone(),
            Val::Poison => return None,
            other => vec![other.clone()],
        };
        let mut shape = Vec::new();
        let mut numel: u64 = 1;
        for it in &items {
            let d = self.const_int(it, span, "a shape's dimension")?;
            let ok = d > 0 && (d as u64).is_power_of_two() && d as u64 <= MAX_NUMEL;
            if !ok {
                self.error(
                    span,
                    format!("a tile's dimensions must be powers of two, found {d}"),
                );
                return None;
            }
            numel = numel.saturating_mul(d as u64);
            shape.push(d as u32);
        }
        if numel > MAX_NUMEL {
            self.error(
                span,
                format!(
                    "a tile of shape {} has {numel} elements; at most {MAX_NUMEL} are allowed",
                    show_shape(&shape)
                ),
            );
            return None;
        }
        Some(shape)
    }

    fn dtype_arg(&mut self, v: &Val, span: Span) -> Option<Scalar> {
        match v {
            Val::DType(d) => Some(*d),
            Val::Poison => None,
            other => {
                let msg = format!(
                    "expected a dtype such as `tl.float32`, found {}",
                    self.show(other)
                );
                self.error(span, msg);
                None
            }
        }
    }

    /// `tl.zeros(shape, dtype)`, `tl.full(shape, value, dtype)`, `tl.zeros_like(x)`.
    pub fn full(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let (shape, value, dtype) = match name {
            "zeros_like" => {
                let Some(s) = self.bind(name, a, &["input", "dtype"], 1) else {
                    return Val::Poison;
                };
                let Val::Var(x) = Self::val(&s, 0) else {
                    return self.error(span, "`tl.zeros_like` needs a tile");
                };
                let ty = self.ty(x).clone();
                let d = match (Self::val(&s, 1), ty.elem) {
                    (Val::DType(d), _) | (Val::None, Elem::Scalar(d)) => d,
                    _ => {
                        return self.error(span, "`tl.zeros_like` needs a numeric tile or a dtype")
                    }
                };
                (ty.shape, Val::Int(0), d)
            }
            _ => {
                let params: &[&str] = if name == "zeros" {
                    &["shape", "dtype"]
                } else {
                    &["shape", "value", "dtype"]
                };
                let Some(s) = self.bind(name, a, params, params.len()) else {
                    return Val::Poison;
                };
                let Some(shape) = self.const_shape(&Self::val(&s, 0), Self::span_of(&s, 0, span))
                else {
                    return Val::Poison;
                };
                let di = params.len() - 1;
                let Some(d) = self.dtype_arg(&Self::val(&s, di), Self::span_of(&s, di, span))
                else {
                    return Val::Poison;
                };
                let v = if name == "zeros" {
                    Val::Int(0)
                } else {
                    Self::val(&s, 1)
                };
                (shape, v, d)
            }
        };
        if let Val::Var(x) = &value {
            if self.ty(*x).is_tile() || self.scalar_of(*x).is_none() {
                let msg = format!(
                    "`tl.full` needs a scalar value, found {}",
                    super::emit::a_type(self.ty(*x))
                );
                return self.error(span, msg);
            }
        }
        match self.operand_as(&value, dtype, &shape) {
            Some(v) => Val::Var(v),
            None => {
                let msg = format!("`tl.full` needs a number, found {}", self.show(&value));
                self.error(span, msg)
            }
        }
    }

    /// The pointer argument of a memory access.
    fn pointer(&mut self, v: &Val, span: Span, what: &str) -> Option<(VarId, Scalar)> {
        match v {
            Val::Var(x) => match self.ty(*x).elem {
                Elem::Ptr(p) => Some((*x, p)),
                _ => {
                    let msg = format!(
                        "`{what}` needs a pointer, found {}",
                        super::emit::a_type(self.ty(*x))
                    );
                    self.error(span, msg);
                    None
                }
            },
            Val::Poison => None,
            other => {
                let msg = format!("`{what}` needs a pointer, found {}", self.show(other));
                self.error(span, msg);
                None
            }
        }
    }

    /// A mask: `None`, or an I1 value; the access's shape grows to the mask's when it is larger.
    fn mask(&mut self, v: &Val, span: Span, shape: &mut Vec<u32>) -> Result<Option<VarId>, ()> {
        match v {
            Val::None => Ok(None),
            Val::Poison => Err(()),
            Val::Bool(true) => Ok(None),
            other => {
                let ms = self.shape_of(other);
                let Some(sh) = self.broadcast_shapes(shape, &ms, span) else {
                    return Err(());
                };
                *shape = sh;
                match self.as_dtype(other, Scalar::I1) {
                    Some(m) => Ok(Some(m)),
                    None => {
                        let msg = format!("a mask must be a boolean, found {}", self.show(other));
                        self.error(span, msg);
                        Err(())
                    }
                }
            }
        }
    }

    pub fn load(&mut self, a: Args) -> Val {
        let span = a.span;
        let params = &[
            "pointer",
            "mask",
            "other",
            "boundary_check",
            "padding_option",
            "cache_modifier",
            "eviction_policy",
            "volatile",
        ];
        let Some(s) = self.bind("load", a, params, 1) else {
            return Val::Poison;
        };
        if let Val::BlockPtr(bp) = Self::val(&s, 0) {
            return self.block_ptr_load(&bp, &s, span);
        }
        if !self.block_ptr_only(&s, &[(3, "boundary_check"), (4, "padding_option")], span) {
            return Val::Poison;
        }
        let Some((ptr, pointee)) =
            self.pointer(&Self::val(&s, 0), Self::span_of(&s, 0, span), "tl.load")
        else {
            return Val::Poison;
        };
        let mut shape = self.ty(ptr).shape.clone();
        let Ok(mask) = self.mask(&Self::val(&s, 1), Self::span_of(&s, 1, span), &mut shape) else {
            return Val::Poison;
        };
        let other_v = Self::val(&s, 2);
        let os = self.shape_of(&other_v);
        let other_span = Self::span_of(&s, 2, span);
        if other_v != Val::None {
            let Some(sh) = self.broadcast_shapes(&shape, &os, other_span) else {
                return Val::Poison;
            };
            if sh != shape {
                let msg = format!(
                    "`other` of shape {} is larger than the loaded {}",
                    show_shape(&os),
                    show_shape(&shape)
                );
                return self.error(other_span, msg);
            }
        }
        let ptr = self.bcast(ptr, &shape);
        let mask = mask.map(|m| self.bcast(m, &shape));
        let other = match &other_v {
            Val::None => None,
            Val::Poison => return Val::Poison,
            v => match self.as_dtype(v, pointee) {
                Some(o) => {
                    let o = if self.ty(o).is_tile() {
                        self.bcast(o, &shape)
                    } else {
                        o
                    };
                    Some(o)
                }
                None => {
                    let msg = format!("`other` must be a number, found {}", self.show(v));
                    return self.error(other_span, msg);
                }
            },
        };
        let ty = Type {
            elem: Elem::Scalar(pointee),
            shape,
        };
        Val::Var(self.emit(ty, Op::Load { ptr, mask, other }))
    }

    /// The value stored (or combined atomically): broadcast to `shape`, converted to `pointee`.
    pub(super) fn stored_value(
        &mut self,
        v: &Val,
        pointee: Scalar,
        shape: &[u32],
        span: Span,
        what: &str,
    ) -> Option<VarId> {
        if let Val::Var(x) = v {
            let ty = self.ty(*x).clone();
            match ty.elem {
                Elem::Ptr(_) => {
                    self.error(
                        span,
                        format!("`{what}` cannot store a pointer ({})", show_type(&ty)),
                    );
                    return None;
                }
                Elem::Scalar(d) if d.is_float() && !pointee.is_float() => {
                    self.error(
                        span,
                        format!(
                            "`{what}` of a {} value through a pointer to {}: a float cannot be stored in an integer buffer; convert it first with `.to(tl.{})`",
                            d.triton_name(),
                            pointee.triton_name(),
                            pointee.triton_name()
                        ),
                    );
                    return None;
                }
                _ => {}
            }
        }
        if matches!(v, Val::Float(_)) && !pointee.is_float() {
            self.error(
                span,
                format!(
                    "`{what}` of a float through a pointer to {}",
                    pointee.triton_name()
                ),
            );
            return None;
        }
        let vs = self.shape_of(v);
        let ok = super::emit::broadcast(&vs, shape).is_some_and(|b| b == shape);
        if !ok {
            self.error(
                span,
                format!(
                    "cannot broadcast {} with {}: the value does not fit the pointers' shape",
                    show_shape(&vs),
                    show_shape(shape)
                ),
            );
            return None;
        }
        match self.operand_as(v, pointee, shape) {
            Some(x) => Some(x),
            None => {
                if *v != Val::Poison {
                    let msg = format!("`{what}` needs a number to store, found {}", self.show(v));
                    self.error(span, msg);
                }
                None
            }
        }
    }

    pub fn store(&mut self, a: Args) -> Val {
        let span = a.span;
        let params = &[
            "pointer",
            "value",
            "mask",
            "boundary_check",
            "cache_modifier",
            "eviction_policy",
        ];
        let Some(s) = self.bind("store", a, params, 2) else {
            return Val::None;
        };
        if let Val::BlockPtr(bp) = Self::val(&s, 0) {
            return self.block_ptr_store(&bp, &s, span);
        }
        if !self.block_ptr_only(&s, &[(3, "boundary_check")], span) {
            return Val::None;
        }
        let Some((ptr, pointee)) =
            self.pointer(&Self::val(&s, 0), Self::span_of(&s, 0, span), "tl.store")
        else {
            return Val::None;
        };
        let mut shape = self.ty(ptr).shape.clone();
        let Ok(mask) = self.mask(&Self::val(&s, 2), Self::span_of(&s, 2, span), &mut shape) else {
            return Val::None;
        };
        let Some(value) = self.stored_value(
            &Self::val(&s, 1),
            pointee,
            &shape,
            Self::span_of(&s, 1, span),
            "tl.store",
        ) else {
            return Val::None;
        };
        let ptr = self.bcast(ptr, &shape);
        let mask = mask.map(|m| self.bcast(m, &shape));
        self.push(StmtKind::Store { ptr, value, mask });
        Val::None
    }

    pub fn atomic(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let cas = name == "atomic_cas";
        let params: &[&str] = if cas {
            &["pointer", "cmp", "val", "sem", "scope"]
        } else {
            &["pointer", "val", "mask", "sem", "scope"]
        };
        let required = if cas { 3 } else { 2 };
        let Some(s) = self.bind(name, a, params, required) else {
            return Val::Poison;
        };
        let shown = format!("tl.{name}");
        let Some((ptr, pointee)) =
            self.pointer(&Self::val(&s, 0), Self::span_of(&s, 0, span), &shown)
        else {
            return Val::Poison;
        };
        if matches!(name, "atomic_cas" | "atomic_xchg") && !matches!(pointee.size(), 4 | 8) {
            let msg = format!(
                "`{shown}` of {} is not supported (32- and 64-bit elements are)",
                pointee.triton_name()
            );
            return self.error(Self::span_of(&s, 0, span), msg);
        }
        let mut shape = self.ty(ptr).shape.clone();
        let mask_at = if cas { None } else { Some(2) };
        let mask = match mask_at {
            Some(i) => match self.mask(&Self::val(&s, i), Self::span_of(&s, i, span), &mut shape) {
                Ok(m) => m,
                Err(()) => return Val::Poison,
            },
            None => None,
        };
        let val_at = if cas { 2 } else { 1 };
        let Some(value) = self.stored_value(
            &Self::val(&s, val_at),
            pointee,
            &shape,
            Self::span_of(&s, val_at, span),
            &shown,
        ) else {
            return Val::Poison;
        };
        let cmp = if cas {
            let Some(c) = self.stored_value(
                &Self::val(&s, 1),
                pointee,
                &shape,
                Self::span_of(&s, 1, span),
                &shown,
            ) else {
                return Val::Poison;
            };
            Some(c)
        } else {
            None
        };
        let ptr = self.bcast(ptr, &shape);
        let mask = mask.map(|m| self.bcast(m, &shape));
        let op = match name {
            "atomic_add" => AtomicOp::Add,
            "atomic_max" => AtomicOp::Max,
            "atomic_xchg" => AtomicOp::Xchg,
            "atomic_cas" => AtomicOp::Cas,
            _ => AtomicOp::Min,
        };
        let ty = Type {
            elem: Elem::Scalar(pointee),
            shape,
        };
        Val::Var(self.emit(
            ty,
            Op::Atomic {
                op,
                ptr,
                value,
                mask,
                cmp,
            },
        ))
    }
}
