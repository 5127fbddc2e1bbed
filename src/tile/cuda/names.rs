//! How IR things are spelled in CUDA C++: element types, variable names, literals, and the
//! float conversions of fp16/bf16 (computed in fp32, rounded once), so the rest of the writer
//! never spells a type by hand.

use crate::tile::ir::{Const, Elem, Kernel, Scalar, VarId};

/// The C type of one element of `s` in registers and in memory.
pub fn c_scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::I1 => "bool",
        Scalar::I8 => "signed char",
        Scalar::I16 => "short",
        Scalar::I32 => "int",
        Scalar::I64 => "long long",
        Scalar::U8 => "unsigned char",
        Scalar::U16 => "unsigned short",
        Scalar::U32 => "unsigned",
        Scalar::U64 => "unsigned long long",
        Scalar::F16 => "__half",
        Scalar::BF16 => "__nv_bfloat16",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
    }
}

/// The C type of an element (`float*` for a pointer to fp32).
pub fn c_elem(e: Elem) -> String {
    match e {
        Elem::Scalar(s) => c_scalar(s).to_string(),
        Elem::Ptr(s) => format!("{}*", c_scalar(s)),
    }
}

/// Whether `s` is computed in fp32 and rounded back (fp16, bf16).
pub fn is_half(s: Scalar) -> bool {
    matches!(s, Scalar::F16 | Scalar::BF16)
}

/// `x` (of element type `s`) as the type arithmetic is done in: fp32 for fp16/bf16.
pub fn up(s: Scalar, x: &str) -> String {
    match s {
        Scalar::F16 => format!("__half2float({x})"),
        Scalar::BF16 => format!("__bfloat162float({x})"),
        _ => x.to_string(),
    }
}

/// `x` (computed by [`up`]'s type) rounded once to `s`.
pub fn down(s: Scalar, x: &str) -> String {
    match s {
        Scalar::F16 => format!("__float2half_rn({x})"),
        Scalar::BF16 => format!("__float2bfloat16_rn({x})"),
        _ => x.to_string(),
    }
}

/// A C literal of `value` as type `s`.
pub fn literal(s: Scalar, value: Const) -> String {
    let f = match value {
        Const::Int(i) => i as f64,
        Const::Float(f) => f,
        Const::Bool(b) => f64::from(u8::from(b)),
    };
    match s {
        Scalar::I1 => match value {
            Const::Bool(b) => b.to_string(),
            Const::Int(i) => (i != 0).to_string(),
            Const::Float(x) => (x != 0.0).to_string(),
        },
        Scalar::F32 => f32_literal(f as f32),
        Scalar::F16 | Scalar::BF16 => down(s, &f32_literal(f as f32)),
        Scalar::F64 => f64_literal(f),
        int => {
            let i = match value {
                Const::Int(i) => i,
                Const::Float(x) => x as i64,
                Const::Bool(b) => i64::from(b),
            };
            int_literal(int, i)
        }
    }
}

/// An integer literal of C type `s` (wrapped to its width, as a C conversion would).
pub fn int_literal(s: Scalar, i: i64) -> String {
    match s {
        Scalar::I64 if i == i64::MIN => "(-9223372036854775807LL - 1)".into(),
        Scalar::I64 => format!("{i}LL"),
        Scalar::U64 => format!("{}ULL", i as u64),
        Scalar::I32 if i as i32 == i32::MIN => "(-2147483647 - 1)".into(),
        Scalar::I32 => format!("{}", i as i32),
        Scalar::U32 => format!("{}u", i as u32),
        Scalar::I16 => format!("(short){}", i as i16),
        Scalar::U16 => format!("(unsigned short){}", i as u16),
        Scalar::I8 => format!("(signed char){}", i as i8),
        Scalar::U8 => format!("(unsigned char){}", i as u8),
        Scalar::I1 => (i != 0).to_string(),
        other => literal(other, Const::Float(i as f64)),
    }
}

/// An exact fp32 literal (infinities and NaN through their bits).
pub fn f32_literal(x: f32) -> String {
    if x.is_finite() {
        let s = format!("{x:?}");
        format!("{s}f")
    } else {
        format!("__int_as_float(0x{:08x})", x.to_bits())
    }
}

/// An exact fp64 literal.
pub fn f64_literal(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        format!("__longlong_as_double(0x{:016x}LL)", x.to_bits())
    }
}

/// The C name of every variable: the tile-source name with its id (`x_12`), `t12` for a
/// temporary. Ids make every name unique and keep clear of C keywords and kwb's own `kwb_`.
pub fn var_names(k: &Kernel) -> Vec<String> {
    k.vars
        .iter()
        .enumerate()
        .map(|(i, v)| match &v.name {
            Some(n) => {
                let clean: String = n
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                let clean = clean.trim_matches('_');
                if clean.is_empty() || clean.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("v_{clean}_{i}")
                } else {
                    format!("{clean}_{i}")
                }
            }
            None => format!("t{i}"),
        })
        .collect()
}

/// A C string literal's body for a file path (for `#line`).
pub fn c_string(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push('_'),
            c => out.push(c),
        }
    }
    out
}

/// The element scalar of a variable (the pointee for pointers).
pub fn elem_scalar(k: &Kernel, v: VarId) -> Scalar {
    match k.ty(v).elem {
        Elem::Scalar(s) | Elem::Ptr(s) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_exact_and_typed() {
        assert_eq!(literal(Scalar::F32, Const::Float(0.5)), "0.5f");
        assert_eq!(
            literal(Scalar::F32, Const::Float(f64::NEG_INFINITY)),
            "__int_as_float(0xff800000)"
        );
        assert_eq!(literal(Scalar::I32, Const::Int(-3)), "-3");
        assert_eq!(literal(Scalar::I64, Const::Int(7)), "7LL");
        assert_eq!(
            literal(Scalar::F16, Const::Float(1.0)),
            "__float2half_rn(1.0f)"
        );
        assert_eq!(literal(Scalar::I1, Const::Bool(true)), "true");
        assert_eq!(f32_literal(1e-10), "1e-10f");
    }
}
