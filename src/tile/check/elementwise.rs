//! The elementwise built-ins: one-argument math (`tl.exp` and friends), `tl.fma`,
//! `tl.where` and dtype conversion (`.to`, `tl.cast`).

use super::emit::Ck;
use super::expr::Args;
use super::value::{default_dtype, promote, Val};
use crate::tile::ir::{Elem, Op, Scalar, Type, UnOp};
use crate::tile::span::Span;

impl Ck<'_> {
    /// `tl.exp(x)` and friends: floats keep their dtype (fp16/bf16 included), ints become
    /// float32 (`abs` keeps ints as they are).
    pub(super) fn math1(&mut self, op: UnOp, x: Val, span: Span) -> Val {
        let x = match x {
            Val::Var(v) => v,
            Val::Poison => return Val::Poison,
            v if v.is_number() => {
                let s = if op == UnOp::Abs {
                    default_dtype(&v).unwrap_or(Scalar::F32)
                } else {
                    Scalar::F32
                };
                match self.operand_as(&v, s, &[]) {
                    Some(x) => x,
                    None => return Val::Poison,
                }
            }
            other => {
                let msg = format!("this function needs a number, found {}", self.show(&other));
                return self.error(span, msg);
            }
        };
        let Some(s) = self.scalar_of(x) else {
            let msg = format!(
                "this function cannot take {}",
                super::emit::a_type(self.ty(x))
            );
            return self.error(span, msg);
        };
        let keep_int = matches!(op, UnOp::Abs | UnOp::Floor | UnOp::Ceil) && !s.is_float();
        if keep_int && op != UnOp::Abs {
            return Val::Var(x);
        }
        let x = if s.is_float() || keep_int {
            x
        } else {
            self.cast(x, Scalar::F32)
        };
        let ty = self.ty(x).clone();
        Val::Var(self.emit(ty, Op::Unary { op, src: x }))
    }

    pub(super) fn fma(&mut self, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("fma", a, &["x", "y", "z"], 3) else {
            return Val::Poison;
        };
        let (x, y, z) = (Self::val(&s, 0), Self::val(&s, 1), Self::val(&s, 2));
        let (Some(p), Some(q), Some(r)) = (self.operand(&x), self.operand(&y), self.operand(&z))
        else {
            return self.error(span, "`tl.fma` needs numbers");
        };
        let pq = super::value::Operand {
            dtype: promote(p, q),
            weak: p.weak && q.weak,
            fits_i32: true,
        };
        let mut d = promote(pq, r);
        if !d.is_float() {
            d = Scalar::F32;
        }
        let (xs, ys, zs) = (self.shape_of(&x), self.shape_of(&y), self.shape_of(&z));
        let Some(sh) = self.broadcast_shapes(&xs, &ys, span) else {
            return Val::Poison;
        };
        let Some(sh) = self.broadcast_shapes(&sh, &zs, span) else {
            return Val::Poison;
        };
        let (Some(a), Some(b), Some(c)) = (
            self.operand_as(&x, d, &sh),
            self.operand_as(&y, d, &sh),
            self.operand_as(&z, d, &sh),
        ) else {
            return Val::Poison;
        };
        Val::Var(self.emit(
            Type {
                elem: Elem::Scalar(d),
                shape: sh,
            },
            Op::Fma { a, b, c },
        ))
    }

    /// `cond ? a : b`, elementwise (`tl.where`, and a conditional expression on a scalar).
    pub fn select(&mut self, cond: Val, a: Val, b: Val, span: Span) -> Val {
        if cond == Val::Poison || a == Val::Poison || b == Val::Poison {
            return Val::Poison;
        }
        let mut cond = cond;
        if let Some(t) = cond.truthy() {
            if !matches!(cond, Val::Var(_)) {
                let same = match (&a, &b) {
                    (Val::Var(x), Val::Var(y)) => self.ty(*x) == self.ty(*y),
                    _ => false,
                };
                if same {
                    return if t { a } else { b };
                }
                // Triton makes both sides tensors of their promoted dtype whatever the
                // condition: `tl.where(True, 1, 0)` is a runtime int32, not a Python 1.
                match self.operand_as(&Val::Bool(t), Scalar::I1, &[]) {
                    Some(c) => cond = Val::Var(c),
                    None => return Val::Poison,
                }
            }
        }
        let Val::Var(c) = cond else {
            let msg = format!("the condition must be a boolean, found {}", cond.describe());
            return self.error(span, msg);
        };
        if self.scalar_of(c).is_none() {
            return self.error(span, "the condition must be a boolean, not a pointer");
        }
        let c = self.as_bool(c);
        // Pointers may be selected too (same pointer type on both sides).
        let ptr_ty = |ck: &Self, v: &Val| match v {
            Val::Var(x) => match ck.ty(*x).elem {
                Elem::Ptr(p) => Some(p),
                _ => None,
            },
            _ => None,
        };
        let (elem, pa, pb) = match (ptr_ty(self, &a), ptr_ty(self, &b)) {
            (Some(p), Some(q)) if p == q => (Elem::Ptr(p), None, None),
            (None, None) => match (self.operand(&a), self.operand(&b)) {
                (Some(p), Some(q)) => {
                    let d = promote(p, q);
                    (Elem::Scalar(d), Some(d), Some(d))
                }
                _ => {
                    return self.error(
                        span,
                        "`tl.where` needs numbers (or two pointers of one type)",
                    )
                }
            },
            _ => {
                let msg = format!(
                    "`tl.where` cannot choose between {} and {}",
                    self.show(&a),
                    self.show(&b)
                );
                return self.error(span, msg);
            }
        };
        let cs = self.ty(c).shape.clone();
        let (as_, bs) = (self.shape_of(&a), self.shape_of(&b));
        let Some(sh) = self.broadcast_shapes(&cs, &as_, span) else {
            return Val::Poison;
        };
        let Some(sh) = self.broadcast_shapes(&sh, &bs, span) else {
            return Val::Poison;
        };
        let pick = |ck: &mut Self, v: &Val, d: Option<Scalar>| -> Option<crate::tile::ir::VarId> {
            match (v, d) {
                (_, Some(d)) => ck.operand_as(v, d, &sh),
                (Val::Var(x), None) => Some(ck.bcast(*x, &sh)),
                _ => None,
            }
        };
        let (Some(x), Some(y)) = (pick(self, &a, pa), pick(self, &b, pb)) else {
            return Val::Poison;
        };
        let c = self.bcast(c, &sh);
        Val::Var(self.emit(
            Type { elem, shape: sh },
            Op::Where {
                cond: c,
                a: x,
                b: y,
            },
        ))
    }

    /// `p.to(tl.pointer_type(d))`: a pointer to `d` stays as it is; a pointer to another dtype
    /// (a reinterpretation of memory) and a number made a pointer are refused.
    pub fn pointer_cast(&mut self, x: Val, d: Scalar, span: Span) -> Val {
        match &x {
            Val::Poison => Val::Poison,
            Val::Var(v) if self.ty(*v).elem == Elem::Ptr(d) => x,
            Val::Var(v) if matches!(self.ty(*v).elem, Elem::Ptr(_)) => {
                let msg = format!(
                    "casting {} to `tl.pointer_type(tl.{})` reinterprets memory as another dtype, which kwb does not support",
                    super::emit::a_type(self.ty(*v)),
                    d.triton_name()
                );
                self.error(span, msg)
            }
            other => {
                let msg = format!(
                    "cannot convert {} to a pointer (`tl.pointer_type(tl.{})`)",
                    self.show(other),
                    d.triton_name()
                );
                self.error(span, msg)
            }
        }
    }

    /// `x.to(dtype)`: a compile-time number becomes a runtime scalar of that dtype.
    pub fn convert(&mut self, x: Val, d: Scalar, span: Span) -> Val {
        match &x {
            Val::Poison => Val::Poison,
            Val::Var(v) if self.scalar_of(*v).is_some() => Val::Var(self.cast(*v, d)),
            v if v.is_number() => self.operand_as(v, d, &[]).map_or(Val::Poison, Val::Var),
            other => {
                let msg = format!(
                    "cannot convert {} to `tl.{}`",
                    self.show(other),
                    d.triton_name()
                );
                self.error(span, msg)
            }
        }
    }
}
