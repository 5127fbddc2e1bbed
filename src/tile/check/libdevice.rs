//! libdevice's math beyond `tl`'s: `libdevice.asin(x)`, `libdevice.pow(x, y)`,
//! `libdevice.isnan(x)` and the rest, reached as `tl.extra.cuda.libdevice.*`,
//! `triton.language.extra.libdevice.*` or imported by name. As in Triton, where each is an
//! extern function of float32 and float64 only, other dtypes (fp16, bf16, integers) are an
//! error rather than a silent conversion; compile-time numbers become float32.

use super::emit::Ck;
use super::expr::Args;
use super::value::{promote, Val};
use crate::tile::ir::{BinOp, Op, Scalar, UnOp};
use crate::tile::span::Span;

/// `libdevice.<name>` → the built-in's canonical name (messages show `libdevice.<name>`).
pub(super) const NAMES: &[(&str, &str)] = &[
    ("tan", "ld.tan"),
    ("asin", "ld.asin"),
    ("acos", "ld.acos"),
    ("atan", "ld.atan"),
    ("sinh", "ld.sinh"),
    ("cosh", "ld.cosh"),
    ("asinh", "ld.asinh"),
    ("acosh", "ld.acosh"),
    ("atanh", "ld.atanh"),
    ("erfc", "ld.erfc"),
    ("erfinv", "ld.erfinv"),
    ("log1p", "ld.log1p"),
    ("expm1", "ld.expm1"),
    ("log10", "ld.log10"),
    ("cbrt", "ld.cbrt"),
    ("rint", "ld.rint"),
    ("nearbyint", "ld.rint"),
    ("round", "ld.round"),
    ("trunc", "ld.trunc"),
    ("rcp_rn", "ld.rcp_rn"),
    ("pow", "ld.pow"),
    ("atan2", "ld.atan2"),
    ("copysign", "ld.copysign"),
    ("hypot", "ld.hypot"),
    ("fmod", "ld.fmod"),
    ("isnan", "ld.isnan"),
    ("isinf", "ld.isinf"),
];

const UNARY: &[(&str, UnOp)] = &[
    ("ld.tan", UnOp::Tan),
    ("ld.asin", UnOp::Asin),
    ("ld.acos", UnOp::Acos),
    ("ld.atan", UnOp::Atan),
    ("ld.sinh", UnOp::Sinh),
    ("ld.cosh", UnOp::Cosh),
    ("ld.asinh", UnOp::Asinh),
    ("ld.acosh", UnOp::Acosh),
    ("ld.atanh", UnOp::Atanh),
    ("ld.erfc", UnOp::Erfc),
    ("ld.erfinv", UnOp::Erfinv),
    ("ld.log1p", UnOp::Log1p),
    ("ld.expm1", UnOp::Expm1),
    ("ld.log10", UnOp::Log10),
    ("ld.cbrt", UnOp::Cbrt),
    ("ld.rint", UnOp::Rint),
    ("ld.round", UnOp::Round),
    ("ld.trunc", UnOp::Trunc),
    ("ld.rcp_rn", UnOp::Rcp),
];

const BINARY: &[(&str, BinOp)] = &[
    ("ld.pow", BinOp::Pow),
    ("ld.atan2", BinOp::Atan2),
    ("ld.copysign", BinOp::Copysign),
    ("ld.hypot", BinOp::Hypot),
    // C's fmod, as `%` of floats.
    ("ld.fmod", BinOp::Rem),
];

impl Ck<'_> {
    /// A libdevice function of [`NAMES`]; `None` when `name` is not one.
    pub(super) fn libdevice(&mut self, name: &str, a: Args) -> Option<Val> {
        let span = a.span;
        if let Some((_, op)) = UNARY.iter().find(|(n, _)| *n == name) {
            let s = self.bind(name, a, &["arg0"], 1)?;
            let x = Self::val(&s, 0);
            let x = self.float_operand(name, x, Self::span_of(&s, 0, span))?;
            let ty = self.ty(x).clone();
            return Some(Val::Var(self.emit(ty, Op::Unary { op: *op, src: x })));
        }
        if let Some((_, op)) = BINARY.iter().find(|(n, _)| *n == name) {
            let s = self.bind(name, a, &["arg0", "arg1"], 2)?;
            let (x, y) = (Self::val(&s, 0), Self::val(&s, 1));
            let (Some(p), Some(q)) = (self.operand(&x), self.operand(&y)) else {
                let msg = format!("`{}` needs two numbers", shown(name));
                return Some(self.error(span, msg));
            };
            let d = if p.weak && q.weak {
                Scalar::F32
            } else {
                promote(p, q)
            };
            if !matches!(d, Scalar::F32 | Scalar::F64) {
                return Some(self.error(span, wrong_dtype(name, d)));
            }
            return Some(self.emit_binary(*op, &x, &y, d, d, span));
        }
        if name == "ld.isnan" || name == "ld.isinf" {
            let s = self.bind(name, a, &["arg0"], 1)?;
            let x = Self::val(&s, 0);
            let x = self.float_operand(name, x, Self::span_of(&s, 0, span))?;
            let d = self.scalar_of(x)?;
            // NaN is the one value unequal to itself; the infinities the ones whose magnitude
            // is +inf.
            return Some(if name == "ld.isnan" {
                self.emit_binary(BinOp::Ne, &Val::Var(x), &Val::Var(x), d, Scalar::I1, span)
            } else {
                let ty = self.ty(x).clone();
                let m = self.emit(
                    ty,
                    Op::Unary {
                        op: UnOp::Abs,
                        src: x,
                    },
                );
                let inf = Val::Float(f64::INFINITY);
                self.emit_binary(BinOp::Eq, &Val::Var(m), &inf, d, Scalar::I1, span)
            });
        }
        None
    }

    /// `x` as a float32/float64 runtime value; an error (and `None`) for other dtypes.
    fn float_operand(&mut self, name: &str, x: Val, span: Span) -> Option<crate::tile::ir::VarId> {
        match x {
            Val::Var(v) => match self.scalar_of(v) {
                Some(Scalar::F32 | Scalar::F64) => Some(v),
                Some(d) => {
                    self.error(span, wrong_dtype(name, d));
                    None
                }
                None => {
                    let msg = format!(
                        "`{}` cannot take {}",
                        shown(name),
                        super::emit::a_type(self.ty(v))
                    );
                    self.error(span, msg);
                    None
                }
            },
            Val::Poison => None,
            v if v.is_number() => self.operand_as(&v, Scalar::F32, &[]),
            other => {
                let msg = format!(
                    "`{}` needs a number, found {}",
                    shown(name),
                    self.show(&other)
                );
                self.error(span, msg);
                None
            }
        }
    }
}

fn shown(name: &str) -> String {
    format!("libdevice.{}", name.trim_start_matches("ld."))
}

fn wrong_dtype(name: &str, d: Scalar) -> String {
    format!(
        "`{}` takes float32 or float64 (Triton's libdevice has no {} version); convert first, e.g. `x.to(tl.float32)`",
        shown(name),
        d.triton_name()
    )
}
