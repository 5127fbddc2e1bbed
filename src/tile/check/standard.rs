//! Functions of Triton's standard library that are other built-ins put together:
//! `tl.clamp(x, min, max, propagate_nan)`, `tl.swizzle2d(i, j, size_i, size_j, size_g)`, and
//! `propagate_nan=tl.PropagateNan.ALL` for `tl.maximum`/`tl.minimum`. Each follows the
//! operations Triton's `semantic.py`/`standard.py` write, so promotion, compile-time folding
//! and integer rounding are those of the same expression written in a kernel.

use super::emit::Ck;
use super::expr::{Arg, Args};
use super::value::{promote, promote_strong, Operand, Val};
use crate::tile::ast::{BinaryOp, CmpOp};
use crate::tile::ir::BinOp;
use crate::tile::span::Span;

/// `tl.PropagateNan.ALL`, as Triton numbers it (`NONE` is 0).
pub(super) const PROPAGATE_ALL: i64 = 0xFFFF;

impl Ck<'_> {
    /// Whether a `propagate_nan=` argument asks for NaNs to propagate; `None` after an error.
    pub(super) fn propagate_nan(&mut self, v: &Val, span: Span) -> Option<bool> {
        match v {
            Val::None | Val::Int(0) => Some(false),
            Val::Int(PROPAGATE_ALL) => Some(true),
            Val::Poison => None,
            other => {
                let msg = format!(
                    "`propagate_nan` must be `tl.PropagateNan.NONE` or `tl.PropagateNan.ALL`, found {}",
                    self.show(other)
                );
                self.error(span, msg);
                None
            }
        }
    }

    /// `tl.maximum(x, y, propagate_nan)` / `tl.minimum`. Not folded when both are numbers:
    /// Triton makes them tensors, so the result is a runtime scalar (`tl.minimum(3, 3) // -4`
    /// truncates, as on tensors, to 0).
    pub fn min_max_call(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind(name, a, &["x", "y", "propagate_nan"], 2) else {
            return Val::Poison;
        };
        let Some(nan) = self.propagate_nan(&Self::val(&s, 2), Self::span_of(&s, 2, span)) else {
            return Val::Poison;
        };
        let op = if name == "maximum" {
            BinOp::Max
        } else {
            BinOp::Min
        };
        self.min_max(op, Self::val(&s, 0), Self::val(&s, 1), nan, span)
    }

    /// `tl.maximum`/`tl.minimum` of `x` and `y`; with `nan`, a NaN operand gives NaN.
    pub(super) fn min_max(&mut self, op: BinOp, x: Val, y: Val, nan: bool, span: Span) -> Val {
        let (Some(p), Some(q)) = (self.operand(&x), self.operand(&y)) else {
            let name = if op == BinOp::Max {
                "maximum"
            } else {
                "minimum"
            };
            return self.error(span, format!("`tl.{name}` needs numbers"));
        };
        let d = promote(p, q);
        let m = self.emit_binary(op, &x, &y, d, d, span);
        if !nan || !d.is_float() {
            return m;
        }
        // fminf/fmaxf give the other operand for a NaN: put the NaN back.
        let y_nan = self.compare(CmpOp::Ne, y.clone(), y.clone(), span);
        let m = self.select(y_nan, y, m, span);
        let x_nan = self.compare(CmpOp::Ne, x.clone(), x.clone(), span);
        self.select(x_nan, x, m, span)
    }

    /// `tl.clamp(x, min, max, propagate_nan)`: `minimum(maximum(x, min), max)`; for floats a
    /// NaN `x` gives `min` (as `fmaxf` does), or itself with `PropagateNan.ALL`.
    pub fn clamp(&mut self, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("clamp", a, &["x", "min", "max", "propagate_nan"], 3) else {
            return Val::Poison;
        };
        let Some(nan) = self.propagate_nan(&Self::val(&s, 3), Self::span_of(&s, 3, span)) else {
            return Val::Poison;
        };
        let (x, lo, hi) = (Self::val(&s, 0), Self::val(&s, 1), Self::val(&s, 2));
        let all = [&x, &lo, &hi].map(|v| self.operand(v));
        let [Some(p), Some(q), Some(r)] = all else {
            return self.error(span, "`tl.clamp` needs numbers");
        };
        if x.is_number() && lo.is_number() && hi.is_number() {
            return self.error(
                span,
                "`tl.clamp` needs a tensor; Triton refuses three numbers",
            );
        }
        // Triton promotes the tensors together and the numbers together, then the two.
        let ops = [p, q, r];
        let strong = (ops.iter().filter(|o| !o.weak))
            .map(|o| o.dtype)
            .reduce(promote_strong);
        let weak = ops
            .iter()
            .filter(|o| o.weak)
            .copied()
            .reduce(|a, b| Operand {
                dtype: promote_strong(a.dtype, b.dtype),
                weak: true,
                fits_i32: a.fits_i32 && b.fits_i32,
            });
        let d = match (strong, weak) {
            (Some(s), Some(w)) => {
                let s = Operand {
                    dtype: s,
                    weak: false,
                    fits_i32: true,
                };
                promote(s, w)
            }
            (Some(s), None) => s,
            (_, Some(w)) => w.dtype,
            (None, None) => return Val::Poison,
        };
        let conv = |ck: &mut Self, v: Val| ck.convert(v, d, span);
        let (x, lo, hi) = (conv(self, x), conv(self, lo), conv(self, hi));
        let m = self.min_max(BinOp::Max, x.clone(), lo, false, span);
        let m = self.min_max(BinOp::Min, m, hi, false, span);
        if !nan || !d.is_float() {
            return m;
        }
        let x_nan = self.compare(CmpOp::Ne, x.clone(), x.clone(), span);
        self.select(x_nan, x, m, span)
    }

    /// `tl.swizzle2d(i, j, size_i, size_j, size_g)`, step by step as Triton's `standard.py`.
    pub fn swizzle2d(&mut self, a: Args) -> Val {
        let span = a.span;
        let params = ["i", "j", "size_i", "size_j", "size_g"];
        let Some(s) = self.bind("swizzle2d", a, &params, 5) else {
            return Val::Poison;
        };
        let [i, j, size_i, size_j, size_g] = [0, 1, 2, 3, 4].map(|k| Self::val(&s, k));
        let ij = self.binary(BinaryOp::Mul, i, size_j.clone(), span);
        let ij = self.binary(BinaryOp::Add, ij, j, span);
        let size_gj = self.binary(BinaryOp::Mul, size_g.clone(), size_j, span);
        let group_id = self.binary(BinaryOp::FloorDiv, ij.clone(), size_gj.clone(), span);
        let off_i = self.binary(BinaryOp::Mul, group_id, size_g.clone(), span);
        let rows = self.binary(BinaryOp::Sub, size_i, off_i.clone(), span);
        let args = Args {
            pos: vec![Arg { val: rows, span }, Arg { val: size_g, span }],
            kw: Vec::new(),
            span,
        };
        let size_g = self.builtin("minimum", args);
        let ij = self.binary(BinaryOp::Mod, ij, size_gj, span);
        let r = self.binary(BinaryOp::Mod, ij.clone(), size_g.clone(), span);
        let new_i = self.binary(BinaryOp::Add, off_i, r, span);
        let new_j = self.binary(BinaryOp::FloorDiv, ij, size_g, span);
        Val::Tuple(vec![new_i, new_j])
    }
}
