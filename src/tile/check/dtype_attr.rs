//! The attributes of a dtype, as Triton's `tl.dtype` has them: the predicates (`is_fp16()`,
//! `is_floating()`, `is_int_signed()`, …) and the widths (`primitive_bitwidth`,
//! `int_bitwidth`, `fp_mantissa_width`), all known at compile time. Triton counts `int1`
//! among the unsigned integers, and the 8-bit floats among the floating types but not the
//! standard ones.

use super::value::Val;
use crate::tile::ir::{Elem, Scalar};

/// What a dtype is, for its attributes: a scalar, an 8-bit float by name, or a pointer.
#[derive(Clone, Copy)]
enum Kind {
    Scalar(Scalar),
    Fp8(&'static str),
    Ptr,
    /// A block type (a tile's `.type`): Triton's predicates on it are false but `is_block()`.
    Block,
}

fn kind(v: &Val) -> Option<Kind> {
    match v {
        Val::DType(s) => Some(Kind::Scalar(*s)),
        Val::Fp8(n) => Some(Kind::Fp8(n)),
        Val::PtrType(_) => Some(Kind::Ptr),
        Val::BlockType(..) => Some(Kind::Block),
        _ => None,
    }
}

/// The predicates a dtype answers, called with no arguments (`dt.is_fp16()`).
pub(super) const PREDICATES: &[&str] = &[
    "is_fp8",
    "is_fp8e4nv",
    "is_fp8e4b8",
    "is_fp8e4b15",
    "is_fp8e5",
    "is_fp8e5b16",
    "is_fp16",
    "is_bf16",
    "is_fp32",
    "is_fp64",
    "is_int1",
    "is_int8",
    "is_int16",
    "is_int32",
    "is_int64",
    "is_uint8",
    "is_uint16",
    "is_uint32",
    "is_uint64",
    "is_floating",
    "is_standard_floating",
    "is_int_signed",
    "is_int_unsigned",
    "is_int",
    "is_bool",
    "is_ptr",
    "is_block",
    "is_const",
    "is_void",
    "is_dtype",
];

/// `dt.attr` for a dtype `dt`: a width, or the predicate bound to call. `None` when `v` is
/// not a dtype or has no such attribute.
pub(super) fn attr(v: &Val, attr: &str) -> Option<Val> {
    let k = kind(v)?;
    if let Val::BlockType(elem, shape) = v {
        let element = match elem {
            Elem::Scalar(s) => Val::DType(*s),
            Elem::Ptr(s) => Val::PtrType(*s),
        };
        return match attr {
            "scalar" | "element_ty" => Some(element),
            "shape" => Some(Val::Tuple(
                shape.iter().map(|&d| Val::Int(i64::from(d))).collect(),
            )),
            _ => (PREDICATES.iter())
                .find(|&&q| q == attr)
                .map(|&q| Val::Bound(Box::new(v.clone()), q)),
        };
    }
    if let Some(&p) = PREDICATES.iter().find(|&&p| p == attr) {
        return Some(Val::Bound(Box::new(v.clone()), p));
    }
    let bits = |k: Kind| match k {
        Kind::Scalar(Scalar::I1) => 1,
        Kind::Scalar(s) => 8 * i64::from(s.size()),
        Kind::Fp8(_) => 8,
        Kind::Ptr | Kind::Block => 64,
    };
    match (attr, k) {
        ("primitive_bitwidth", k) => Some(Val::Int(bits(k))),
        ("int_bitwidth", Kind::Scalar(s)) if !s.is_float() => Some(Val::Int(bits(k))),
        ("fp_mantissa_width", Kind::Scalar(s)) if s.is_float() => Some(Val::Int(match s {
            Scalar::F16 => 10,
            Scalar::BF16 => 7,
            Scalar::F32 => 23,
            _ => 52,
        })),
        ("fp_mantissa_width", Kind::Fp8(n)) => Some(Val::Int(if n.contains("e5") { 2 } else { 3 })),
        // A constexpr's `.value` (`dtype.value` where `dtype: tl.constexpr`), and the scalar
        // type of a scalar type.
        ("value" | "scalar", _) => Some(v.clone()),
        ("name", Kind::Scalar(s)) => Some(Val::Str(s.triton_name().to_string())),
        _ => None,
    }
}

/// The value of predicate `name` (one of [`PREDICATES`]) for the dtype `v`.
pub(super) fn predicate(v: &Val, name: &str) -> Option<bool> {
    let k = kind(v)?;
    if matches!(k, Kind::Block) {
        return Some(name == "is_block");
    }
    let fp8 = |want: &str| matches!(k, Kind::Fp8(n) if n == want);
    let is = |s: Scalar| matches!(k, Kind::Scalar(x) if x == s);
    let signed = matches!(k, Kind::Scalar(s) if s.is_signed_int());
    let unsigned = matches!(k, Kind::Scalar(s) if s.is_unsigned_int() || s == Scalar::I1);
    let standard = matches!(k, Kind::Scalar(s) if s.is_float());
    Some(match name {
        "is_fp8" => matches!(k, Kind::Fp8(_)),
        "is_fp8e4nv" => fp8("float8e4nv"),
        "is_fp8e4b8" => fp8("float8e4b8"),
        "is_fp8e4b15" => fp8("float8e4b15"),
        "is_fp8e5" => fp8("float8e5"),
        "is_fp8e5b16" => fp8("float8e5b16"),
        "is_fp16" => is(Scalar::F16),
        "is_bf16" => is(Scalar::BF16),
        "is_fp32" => is(Scalar::F32),
        "is_fp64" => is(Scalar::F64),
        "is_int1" | "is_bool" => is(Scalar::I1),
        "is_int8" => is(Scalar::I8),
        "is_int16" => is(Scalar::I16),
        "is_int32" => is(Scalar::I32),
        "is_int64" => is(Scalar::I64),
        "is_uint8" => is(Scalar::U8),
        "is_uint16" => is(Scalar::U16),
        "is_uint32" => is(Scalar::U32),
        "is_uint64" => is(Scalar::U64),
        "is_floating" => standard || matches!(k, Kind::Fp8(_)),
        "is_standard_floating" => standard,
        "is_int_signed" => signed,
        "is_int_unsigned" => unsigned,
        "is_int" => signed || unsigned,
        "is_ptr" => matches!(k, Kind::Ptr),
        "is_dtype" => true,
        "is_block" | "is_const" | "is_void" => false,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(v: Val, name: &str) -> bool {
        predicate(&v, name).unwrap()
    }

    #[test]
    fn predicates_follow_tritons_classes() {
        assert!(ask(Val::DType(Scalar::I1), "is_int_unsigned"));
        assert!(!ask(Val::DType(Scalar::I1), "is_int_signed"));
        assert!(ask(Val::DType(Scalar::I1), "is_bool"));
        assert!(ask(Val::DType(Scalar::I8), "is_int_signed"));
        assert!(ask(Val::DType(Scalar::U8), "is_int"));
        assert!(ask(Val::DType(Scalar::BF16), "is_floating"));
        assert!(ask(Val::DType(Scalar::BF16), "is_bf16"));
        assert!(!ask(Val::DType(Scalar::BF16), "is_fp16"));
        assert!(ask(Val::Fp8("float8e5"), "is_floating"));
        assert!(!ask(Val::Fp8("float8e5"), "is_standard_floating"));
        assert!(ask(Val::PtrType(Scalar::F32), "is_ptr"));
        assert!(!ask(Val::DType(Scalar::F32), "is_ptr"));
        assert_eq!(predicate(&Val::Int(3), "is_fp16"), None);
    }

    #[test]
    fn widths_are_tritons() {
        let w = |v: Val, a: &str| attr(&v, a);
        assert_eq!(
            w(Val::DType(Scalar::I1), "primitive_bitwidth"),
            Some(Val::Int(1))
        );
        assert_eq!(
            w(Val::DType(Scalar::BF16), "primitive_bitwidth"),
            Some(Val::Int(16))
        );
        assert_eq!(
            w(Val::DType(Scalar::I64), "int_bitwidth"),
            Some(Val::Int(64))
        );
        assert_eq!(w(Val::DType(Scalar::F32), "int_bitwidth"), None);
        assert_eq!(
            w(Val::DType(Scalar::BF16), "fp_mantissa_width"),
            Some(Val::Int(7))
        );
        assert_eq!(
            w(Val::Fp8("float8e4nv"), "fp_mantissa_width"),
            Some(Val::Int(3))
        );
        assert_eq!(
            w(Val::DType(Scalar::F16), "value"),
            Some(Val::DType(Scalar::F16))
        );
        assert_eq!(
            w(Val::DType(Scalar::F16), "is_fp16"),
            Some(Val::Bound(Box::new(Val::DType(Scalar::F16)), "is_fp16"))
        );
    }
}
