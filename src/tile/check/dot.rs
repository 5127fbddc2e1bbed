//! `tl.dot` and the `@` operator: the matrix product of two rank-2 tiles. The checker holds
//! the whole contract here (rank, matching K, sizes, input dtypes, the accumulator's type, the
//! precision options), so the IR's [`Op::Dot`] is always well formed for the backends.

use super::emit::Ck;
use super::expr::Args;
use super::value::{show_type, Val};
use crate::tile::ir::{DotPrecision, Elem, Op, Scalar, Type, VarId};
use crate::tile::span::Span;

/// The smallest M, N and K a dot takes (one tensor-core tile, as Triton requires).
const MIN_DIM: u32 = 16;

/// What `tl.dot` was asked for, besides its operands.
pub(super) struct DotOptions {
    pub acc: Option<(Val, Span)>,
    /// The explicit `out_dtype`, if given.
    pub out_dtype: Option<(Scalar, Span)>,
    pub precision: DotPrecision,
}

impl Ck<'_> {
    /// `tl.dot(input, other, acc=None, input_precision=None, allow_tf32=None,
    /// max_num_imprecise_acc=None, out_dtype=tl.float32)`.
    pub fn dot_call(&mut self, a: Args) -> Val {
        let span = a.span;
        let params = [
            "input",
            "other",
            "acc",
            "input_precision",
            "allow_tf32",
            "max_num_imprecise_acc",
            "out_dtype",
        ];
        let Some(s) = self.bind("dot", a, &params, 2) else {
            return Val::Poison;
        };
        let given = |i: usize| s.get(i).is_some_and(|x| x.is_some());
        let acc = match Self::val(&s, 2) {
            Val::None => None,
            v => Some((v, Self::span_of(&s, 2, span))),
        };
        let out_dtype = match Self::val(&s, 6) {
            Val::None => None,
            Val::DType(d) => Some((d, Self::span_of(&s, 6, span))),
            other => {
                let msg = format!(
                    "`out_dtype` must be a dtype such as `tl.float32`, found {}",
                    self.show(&other)
                );
                return self.error(Self::span_of(&s, 6, span), msg);
            }
        };
        let precision = if given(3) && given(4) {
            return self.error(
                Self::span_of(&s, 4, span),
                "give `input_precision` or `allow_tf32`, not both",
            );
        } else {
            match (Self::val(&s, 3), Self::val(&s, 4)) {
                (Val::Str(p), _) => match p.as_str() {
                    "ieee" => DotPrecision::Ieee,
                    "tf32" | "tf32x3" => DotPrecision::Tf32,
                    other => {
                        let msg = format!(
                            "`input_precision` must be \"ieee\", \"tf32\" or \"tf32x3\", found {other:?}"
                        );
                        return self.error(Self::span_of(&s, 3, span), msg);
                    }
                },
                (Val::None, Val::None) => DotPrecision::Ieee,
                (Val::None, v) if v.truthy().is_some() && !matches!(v, Val::Str(_)) => {
                    if v.truthy() == Some(true) {
                        DotPrecision::Tf32
                    } else {
                        DotPrecision::Ieee
                    }
                }
                (Val::None, v) => {
                    let msg = format!(
                        "`allow_tf32` must be a compile-time bool, found {}",
                        self.show(&v)
                    );
                    return self.error(Self::span_of(&s, 4, span), msg);
                }
                (v, _) => {
                    let msg = format!(
                        "`input_precision` must be a string such as \"ieee\" or \"tf32\", found {}",
                        self.show(&v)
                    );
                    return self.error(Self::span_of(&s, 3, span), msg);
                }
            }
        };
        match Self::val(&s, 5) {
            Val::None | Val::Int(_) => {}
            other => {
                let msg = format!(
                    "`max_num_imprecise_acc` must be a compile-time integer or None, found {}",
                    self.show(&other)
                );
                return self.error(Self::span_of(&s, 5, span), msg);
            }
        }
        let lhs = (Self::val(&s, 0), Self::span_of(&s, 0, span));
        let rhs = (Self::val(&s, 1), Self::span_of(&s, 1, span));
        let opts = DotOptions {
            acc,
            out_dtype,
            precision,
        };
        self.dot(lhs, rhs, opts, span)
    }

    /// A rank-2 tile operand of a dot, with its dtype and shape.
    fn dot_operand(&mut self, v: &Val, span: Span, which: &str) -> Option<(VarId, Scalar)> {
        let x = match v {
            Val::Var(x) => *x,
            Val::Poison => return None,
            other => {
                let msg = format!(
                    "`tl.dot` needs a 2-D tile as its {which}, found {}",
                    self.show(other)
                );
                self.error(span, msg);
                return None;
            }
        };
        let ty = self.ty(x).clone();
        let Elem::Scalar(d) = ty.elem else {
            let msg = format!(
                "`tl.dot` multiplies numbers, but its {which} is {}",
                super::emit::a_type(&ty)
            );
            self.error(span, msg);
            return None;
        };
        if ty.shape.len() != 2 {
            let msg = match ty.shape.len() {
                0 => format!(
                    "`tl.dot` needs a 2-D tile as its {which}, found a scalar {}",
                    d.triton_name()
                ),
                3 => format!(
                    "`tl.dot` of 3-D (batched) tiles is not supported; its {which} is {}",
                    show_type(&ty)
                ),
                _ => format!(
                    "`tl.dot` needs a 2-D tile as its {which}, found {}",
                    show_type(&ty)
                ),
            };
            self.error(span, msg);
            return None;
        }
        if !matches!(d, Scalar::F16 | Scalar::BF16 | Scalar::F32 | Scalar::I8) {
            let msg = format!(
                "`tl.dot` takes float16, bfloat16, float32 or int8 tiles; its {which} is {}",
                show_type(&ty)
            );
            self.error(span, msg);
            return None;
        }
        Some((x, d))
    }

    /// Checks and emits `a @ b (+ acc)`.
    pub(super) fn dot(
        &mut self,
        (av, asp): (Val, Span),
        (bv, bsp): (Val, Span),
        opts: DotOptions,
        span: Span,
    ) -> Val {
        let Some((a, ad)) = self.dot_operand(&av, asp, "first operand") else {
            return Val::Poison;
        };
        let Some((b, bd)) = self.dot_operand(&bv, bsp, "second operand") else {
            return Val::Poison;
        };
        let (ash, bsh) = (self.ty(a).shape.clone(), self.ty(b).shape.clone());
        if ad != bd {
            let msg = format!(
                "`tl.dot` needs operands of one dtype, found {} and {} (convert one with `.to(...)`)",
                show_type(self.ty(a)),
                show_type(self.ty(b))
            );
            return self.error(span, msg);
        }
        let (m, k, k2, n) = (ash[0], ash[1], bsh[0], bsh[1]);
        if k != k2 {
            let msg = format!(
                "`tl.dot` of {} and {}: the first operand's columns ({k}) must equal the second's rows ({k2})",
                show_type(self.ty(a)),
                show_type(self.ty(b))
            );
            return self.error(span, msg);
        }
        for (what, d, sp) in [("M", m, asp), ("K", k, asp), ("N", n, bsp)] {
            if d < MIN_DIM || !d.is_power_of_two() {
                let msg = format!(
                    "`tl.dot` needs M, N and K to be powers of two of at least {MIN_DIM}; here {what} is {d} ({} @ {})",
                    show_type(self.ty(a)),
                    show_type(self.ty(b))
                );
                return self.error(sp, msg);
            }
        }
        let acc_ty = match &opts.acc {
            Some((Val::Var(c), _)) => Some(self.ty(*c).clone()),
            Some((Val::Poison, _)) => return Val::Poison,
            Some((other, sp)) => {
                let msg = format!(
                    "`acc` must be a [{m}, {n}] tile (e.g. `tl.zeros(({m}, {n}), dtype=tl.float32)`), found {}",
                    self.show(other)
                );
                return self.error(*sp, msg);
            }
            None => None,
        };
        // The result's dtype: `out_dtype`, else the accumulator's, else fp32.
        let acc_dtype = acc_ty.as_ref().and_then(|t| match t.elem {
            Elem::Scalar(s) => Some(s),
            Elem::Ptr(_) => None,
        });
        let (out, out_span) = match (opts.out_dtype, acc_dtype) {
            // An int8 dot gives int32 whatever `out_dtype` says, as Triton's does.
            _ if ad == Scalar::I8 => (Scalar::I32, span),
            (Some((d, sp)), _) => (d, sp),
            (None, Some(d)) => (d, opts.acc.as_ref().map_or(span, |a| a.1)),
            (None, None) => (Scalar::F32, span),
        };
        let allowed =
            ad == Scalar::I8 || out == Scalar::F32 || (out == Scalar::F16 && ad == Scalar::F16);
        if !allowed {
            let msg = if ad == Scalar::F16 {
                format!(
                    "a dot of float16 tiles accumulates in float32 or float16, not {}",
                    out.triton_name()
                )
            } else {
                format!(
                    "a dot of {} tiles accumulates in float32, not {}",
                    ad.triton_name(),
                    out.triton_name()
                )
            };
            return self.error(out_span, msg);
        }
        let ty = Type {
            elem: Elem::Scalar(out),
            shape: vec![m, n],
        };
        let acc = match (acc_ty, &opts.acc) {
            (Some(t), Some((Val::Var(c), sp))) => {
                if t != ty {
                    let msg = format!(
                        "`acc` is {} but this dot gives {}; an accumulator has the result's shape and dtype (`out_dtype`)",
                        show_type(&t),
                        show_type(&ty)
                    );
                    return self.error(*sp, msg);
                }
                Some(*c)
            }
            _ => None,
        };
        let precision = if ad == Scalar::F32 {
            opts.precision
        } else {
            DotPrecision::Ieee
        };
        Val::Var(self.emit(
            ty,
            Op::Dot {
                a,
                b,
                acc,
                precision,
            },
        ))
    }
}
