//! Elementwise arithmetic as C expressions, with Triton's choices of precision: fp32
//! `exp`/`exp2`/`log`/`log2`/`sin`/`cos`/`sqrt`/`rsqrt` use the approximate hardware
//! instructions, fp32 `/` is `div.full.f32`, `tanh`/`erf` come from the device library, fp64
//! is always precise, and fp16/bf16 are computed in fp32 and rounded once. The `kwb_*`
//! helpers named here are defined in [`PRELUDE`].

use super::names::{c_scalar, down, is_half, up};
use crate::tile::ir::{BinOp, Elem, Scalar, UnOp};

/// The headers a generated file needs: each costs NVRTC time to parse (about 10 ms for
/// `cuda_fp16.h` and 6 ms more for `cuda_bf16.h` on a 2-core machine), so a file includes
/// only those whose types or functions its parts (helpers, kernels) name.
pub fn headers(parts: &[&str]) -> String {
    let names = |needle: &str| parts.iter().any(|p| p.contains(needle));
    let mut out = String::new();
    let bf16 = names("bfloat16") || names("__nv_bfloat");
    // `cuda_bf16.h` needs the half types too.
    if bf16 || names("half") || names("__h") {
        out.push_str("#include <cuda_fp16.h>\n");
    }
    if bf16 {
        out.push_str("#include <cuda_bf16.h>\n");
    }
    out
}

/// Device helpers, by name: a file gets those its code calls (and those they call).
pub const HELPERS: &[(&str, &str)] = &[
    (
        "kwb_ex2",
        r#"static __device__ __forceinline__ float kwb_ex2(float x) { float r; asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
"#,
    ),
    (
        "kwb_lg2",
        r#"static __device__ __forceinline__ float kwb_lg2(float x) { float r; asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
"#,
    ),
    (
        "kwb_exp",
        r#"static __device__ __forceinline__ float kwb_exp(float x) { return kwb_ex2(x * 1.4426950408889634f); }
"#,
    ),
    (
        "kwb_log",
        r#"static __device__ __forceinline__ float kwb_log(float x) { return kwb_lg2(x) * 0.6931471805599453f; }
"#,
    ),
    (
        "kwb_sqrt",
        r#"static __device__ __forceinline__ float kwb_sqrt(float x) { float r; asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
"#,
    ),
    (
        "kwb_rsqrt",
        r#"static __device__ __forceinline__ float kwb_rsqrt(float x) { float r; asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
"#,
    ),
    (
        "kwb_sin",
        r#"static __device__ __forceinline__ float kwb_sin(float x) { float r; asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
"#,
    ),
    (
        "kwb_cos",
        r#"static __device__ __forceinline__ float kwb_cos(float x) { float r; asm("cos.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
"#,
    ),
    // ptxas (seen here in NVRTC 13.0 for sm_90; reported for 12.8 to 13.3 on sm_100) fuses
    // two signed `max.s32` (or `min.s32`) into one three-input VIMNMX3 and drops a negation it
    // had folded into the second operand of the inner one: `max(max(z, -x), y)` runs as `max(z, x, y)`. Each operand goes through an
    // identity `prmt`, so no negation can be folded into the instruction (pytorch/pytorch
    // issue 190973; found here by the GPU differential test, seeds 507942 and 508227).
    (
        "kwb_opaque",
        r#"static __device__ __forceinline__ int kwb_opaque(int a) { asm("prmt.b32 %0, %0, 0, 0x3210;" : "+r"(a)); return a; }
"#,
    ),
    (
        "kwb_smax",
        r#"static __device__ __forceinline__ int kwb_smax(int a, int b) { return max(kwb_opaque(a), kwb_opaque(b)); }
"#,
    ),
    (
        "kwb_smin",
        r#"static __device__ __forceinline__ int kwb_smin(int a, int b) { return min(kwb_opaque(a), kwb_opaque(b)); }
"#,
    ),
    (
        "kwb_div",
        r#"static __device__ __forceinline__ float kwb_div(float a, float b) { float r; asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
"#,
    ),
    (
        "kwb_ld128",
        r#"static __device__ __forceinline__ void kwb_ld128(uint4& r, const void* p, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %5, 0;\n @%%kwb_p ld.global.v4.b32 {%0, %1, %2, %3}, [%4];\n}"
                 : "+r"(r.x), "+r"(r.y), "+r"(r.z), "+r"(r.w) : "l"(p), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_ld64",
        r#"static __device__ __forceinline__ void kwb_ld64(uint2& r, const void* p, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %3, 0;\n @%%kwb_p ld.global.v2.b32 {%0, %1}, [%2];\n}"
                 : "+r"(r.x), "+r"(r.y) : "l"(p), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_ld32",
        r#"static __device__ __forceinline__ void kwb_ld32(unsigned& r, const void* p, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p ld.global.b32 %0, [%1];\n}"
                 : "+r"(r) : "l"(p), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_ld8s",
        r#"static __device__ __forceinline__ void kwb_ld8s(unsigned short& r, const void* p, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p ld.global.b8 %0, [%1];\n}"
                 : "+h"(r) : "l"(p), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_st8s",
        r#"static __device__ __forceinline__ void kwb_st8s(void* p, unsigned short v, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p st.global.b8 [%0], %1;\n}"
                 :: "l"(p), "h"(v), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_ld16s",
        r#"static __device__ __forceinline__ void kwb_ld16s(unsigned short& r, const void* p, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p ld.global.b16 %0, [%1];\n}"
                 : "+h"(r) : "l"(p), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_st16s",
        r#"static __device__ __forceinline__ void kwb_st16s(void* p, unsigned short v, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p st.global.b16 [%0], %1;\n}"
                 :: "l"(p), "h"(v), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_ld64s",
        r#"static __device__ __forceinline__ void kwb_ld64s(unsigned long long& r, const void* p, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p ld.global.b64 %0, [%1];\n}"
                 : "+l"(r) : "l"(p), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_st64s",
        r#"static __device__ __forceinline__ void kwb_st64s(void* p, unsigned long long v, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p st.global.b64 [%0], %1;\n}"
                 :: "l"(p), "l"(v), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_st128",
        r#"static __device__ __forceinline__ void kwb_st128(void* p, uint4 v, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %5, 0;\n @%%kwb_p st.global.v4.b32 [%0], {%1, %2, %3, %4};\n}"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_st64",
        r#"static __device__ __forceinline__ void kwb_st64(void* p, uint2 v, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %3, 0;\n @%%kwb_p st.global.v2.b32 [%0], {%1, %2};\n}"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_st32",
        r#"static __device__ __forceinline__ void kwb_st32(void* p, unsigned v, bool m) {
    asm volatile("{\n .reg .pred %%kwb_p;\n setp.ne.b32 %%kwb_p, %2, 0;\n @%%kwb_p st.global.b32 [%0], %1;\n}"
                 :: "l"(p), "r"(v), "r"((int)m) : "memory");
}
"#,
    ),
    (
        "kwb_atomic_max",
        r#"static __device__ __forceinline__ float kwb_atomic_max(float* p, float v) {
    return v >= 0.0f ? __int_as_float(atomicMax((int*)p, __float_as_int(v)))
                     : __uint_as_float(atomicMin((unsigned*)p, __float_as_uint(v)));
}
"#,
    ),
    (
        "kwb_atomic_min",
        r#"static __device__ __forceinline__ float kwb_atomic_min(float* p, float v) {
    return v >= 0.0f ? __int_as_float(atomicMin((int*)p, __float_as_int(v)))
                     : __uint_as_float(atomicMax((unsigned*)p, __float_as_uint(v)));
}
"#,
    ),
];

/// `op x` for elements of type `s`; Err names what is not supported.
pub fn unary(op: UnOp, s: Scalar, x: &str) -> Result<String, String> {
    if is_half(s) {
        if matches!(op, UnOp::Not) {
            return Err(format!("`~` on {}", s.triton_name()));
        }
        let inner = unary(op, Scalar::F32, &up(s, x))?;
        return Ok(down(s, &inner));
    }
    let t = c_scalar(s);
    let f32 = s == Scalar::F32;
    let f64 = s == Scalar::F64;
    let float_only = |f: &str, d: &str| -> Result<String, String> {
        match (f32, f64) {
            (true, _) => Ok(format!("{f}({x})")),
            (_, true) => Ok(format!("{d}({x})")),
            _ => Err(format!("{op:?} on {}", s.triton_name()).to_lowercase()),
        }
    };
    match op {
        UnOp::Neg if s == Scalar::I1 => Ok(x.to_string()),
        UnOp::Neg => Ok(if s.is_float() {
            format!("-{x}")
        } else if let Some(u) = wrapping(s) {
            format!("({t})(0 - ({u}){x})")
        } else {
            format!("({t})(-{x})")
        }),
        UnOp::Not if s == Scalar::I1 => Ok(format!("!{x}")),
        UnOp::Not if s.is_float() => Err(format!("`~` on {}", s.triton_name())),
        UnOp::Not => Ok(format!("({t})(~{x})")),
        UnOp::Exp => float_only("kwb_exp", "exp"),
        UnOp::Exp2 => float_only("kwb_ex2", "exp2"),
        UnOp::Log => float_only("kwb_log", "log"),
        UnOp::Log2 => float_only("kwb_lg2", "log2"),
        UnOp::Sqrt => float_only("kwb_sqrt", "sqrt"),
        UnOp::Rsqrt => float_only("kwb_rsqrt", "rsqrt"),
        UnOp::Sin => float_only("kwb_sin", "sin"),
        UnOp::Cos => float_only("kwb_cos", "cos"),
        UnOp::Tanh => float_only("tanhf", "tanh"),
        UnOp::Erf => float_only("erff", "erf"),
        UnOp::Floor if s.is_float() => float_only("floorf", "floor"),
        UnOp::Ceil if s.is_float() => float_only("ceilf", "ceil"),
        UnOp::Floor | UnOp::Ceil => Ok(x.to_string()),
        UnOp::Abs if f32 => Ok(format!("fabsf({x})")),
        UnOp::Abs if f64 => Ok(format!("fabs({x})")),
        UnOp::Abs if s.is_unsigned_int() || s == Scalar::I1 => Ok(x.to_string()),
        UnOp::Abs => Ok(match wrapping(s) {
            // |INT_MIN| wraps to INT_MIN, as in Triton.
            Some(u) => format!("({t})({x} < 0 ? 0 - ({u}){x} : ({u}){x})"),
            None => format!("({t})({x} < 0 ? -{x} : {x})"),
        }),
        UnOp::Sigmoid if f32 => Ok(format!("kwb_div(1.0f, 1.0f + kwb_exp(-{x}))")),
        UnOp::Sigmoid if f64 => Ok(format!("(1.0 / (1.0 + exp(-{x})))")),
        UnOp::Sigmoid => Err(format!("sigmoid on {}", s.triton_name())),
        UnOp::Tan => float_only("tanf", "tan"),
        UnOp::Asin => float_only("asinf", "asin"),
        UnOp::Acos => float_only("acosf", "acos"),
        UnOp::Atan => float_only("atanf", "atan"),
        UnOp::Sinh => float_only("sinhf", "sinh"),
        UnOp::Cosh => float_only("coshf", "cosh"),
        UnOp::Asinh => float_only("asinhf", "asinh"),
        UnOp::Acosh => float_only("acoshf", "acosh"),
        UnOp::Atanh => float_only("atanhf", "atanh"),
        UnOp::Erfc => float_only("erfcf", "erfc"),
        UnOp::Erfinv => float_only("erfinvf", "erfinv"),
        UnOp::Log1p => float_only("log1pf", "log1p"),
        UnOp::Expm1 => float_only("expm1f", "expm1"),
        UnOp::Log10 => float_only("log10f", "log10"),
        UnOp::Cbrt => float_only("cbrtf", "cbrt"),
        UnOp::Rint => float_only("rintf", "rint"),
        UnOp::Round => float_only("roundf", "round"),
        UnOp::Trunc => float_only("truncf", "trunc"),
        UnOp::Rcp => float_only("__frcp_rn", "__drcp_rn"),
    }
}

/// The unsigned C type that signed `s` is computed in where it could overflow: 32- and 64-bit
/// ones (narrower ones are computed in `int`, where they cannot overflow).
fn wrapping(s: Scalar) -> Option<&'static str> {
    match s {
        Scalar::I32 => Some("unsigned"),
        Scalar::I64 => Some("unsigned long long"),
        _ => None,
    }
}

/// Signed integers that CUDA's `max`/`min` compute as `max.s32`/`min.s32`.
pub fn narrow_signed(s: Scalar) -> bool {
    matches!(s, Scalar::I8 | Scalar::I16 | Scalar::I32)
}

/// `a op b` for operands of type `s` (comparisons give `bool`).
pub fn binary(op: BinOp, s: Scalar, a: &str, b: &str) -> Result<String, String> {
    use BinOp::*;
    if is_half(s) {
        let (ua, ub) = (up(s, a), up(s, b));
        return match op {
            Eq | Ne | Lt | Le | Gt | Ge => binary(op, Scalar::F32, &ua, &ub),
            _ => Ok(down(s, &binary(op, Scalar::F32, &ua, &ub)?)),
        };
    }
    let t = c_scalar(s);
    let int = !s.is_float();
    let sym = |o: &str| format!("({a} {o} {b})");
    // Triton's integers wrap around (two's complement), but signed overflow is undefined in
    // C++, and NVVM uses that (it folds `(a + a) / 2` to `a`): 32- and 64-bit signed `+ - *
    // <<` are computed on the unsigned type of the same width, whose overflow is defined.
    if let (Some(u), Add | Sub | Mul | Shl) = (wrapping(s), op) {
        let o = match op {
            Add => "+",
            Sub => "-",
            Mul => "*",
            _ => "<<",
        };
        return Ok(format!("({t})(({u}){a} {o} ({u}){b})"));
    }
    let typed = |o: &str| {
        if int {
            format!("({t})({a} {o} {b})")
        } else {
            format!("({a} {o} {b})")
        }
    };
    Ok(match op {
        Add => typed("+"),
        Sub => typed("-"),
        Mul => typed("*"),
        Div if s == Scalar::F32 => format!("kwb_div({a}, {b})"),
        Div => typed("/"),
        Rem if s == Scalar::F32 => format!("fmodf({a}, {b})"),
        Rem if s == Scalar::F64 => format!("fmod({a}, {b})"),
        Rem => typed("%"),
        Min if s == Scalar::F32 => format!("fminf({a}, {b})"),
        Max if s == Scalar::F32 => format!("fmaxf({a}, {b})"),
        Min if s == Scalar::F64 => format!("fmin({a}, {b})"),
        Max if s == Scalar::F64 => format!("fmax({a}, {b})"),
        Min | Max if narrow_signed(s) => {
            let f = if op == Min { "kwb_smin" } else { "kwb_smax" };
            format!("({t}){f}({a}, {b})")
        }
        Min => format!("({a} < {b} ? {a} : {b})"),
        Max => format!("({a} > {b} ? {a} : {b})"),
        MulHi if s.size() == 4 => format!("({t})__umulhi((unsigned){a}, (unsigned){b})"),
        MulHi if s.size() == 8 => {
            format!("({t})__umul64hi((unsigned long long){a}, (unsigned long long){b})")
        }
        MulHi => return Err(format!("umulhi on {}", s.triton_name())),
        BitAnd | BitOr | BitXor | Shl | Shr if !int => {
            return Err(format!("bitwise {op:?} on {}", s.triton_name()).to_lowercase())
        }
        BitAnd => typed("&"),
        BitOr => typed("|"),
        BitXor => typed("^"),
        Shl => typed("<<"),
        Shr => typed(">>"),
        Eq => sym("=="),
        Ne => sym("!="),
        Lt => sym("<"),
        Le => sym("<="),
        Gt => sym(">"),
        Ge => sym(">="),
        Pow | Atan2 | Copysign | Hypot if int => {
            return Err(format!("{op:?} on {}", s.triton_name()).to_lowercase())
        }
        Pow if s == Scalar::F32 => format!("powf({a}, {b})"),
        Atan2 if s == Scalar::F32 => format!("atan2f({a}, {b})"),
        Copysign if s == Scalar::F32 => format!("copysignf({a}, {b})"),
        Hypot if s == Scalar::F32 => format!("hypotf({a}, {b})"),
        Pow => format!("pow({a}, {b})"),
        Atan2 => format!("atan2({a}, {b})"),
        Copysign => format!("copysign({a}, {b})"),
        Hypot => format!("hypot({a}, {b})"),
    })
}

/// fp16/bf16 `+`, `-`, `*` done natively: rounding the exact result once to 11 (8) bits gives
/// the same bits as computing in fp32 and rounding that (fp32 has more than 2p + 2 bits), and
/// the `_rn` forms keep NVCC from contracting them into an fma. Returns the scalar intrinsic
/// and the packed one, with the pair type, its constructor and its two members (plain struct
/// members rather than the header's inline-PTX helpers, which kwb's PTX emulator cannot read).
pub struct Packed {
    pub one: &'static str,
    pub two: &'static str,
    pub pair: &'static str,
    pub make: &'static str,
    pub lo: &'static str,
    pub hi: &'static str,
}

pub fn packed(op: BinOp, s: Scalar) -> Option<Packed> {
    let (one, two) = match op {
        BinOp::Add => ("__hadd_rn", "__hadd2_rn"),
        BinOp::Sub => ("__hsub_rn", "__hsub2_rn"),
        BinOp::Mul => ("__hmul_rn", "__hmul2_rn"),
        _ => return None,
    };
    match s {
        Scalar::F16 => Some(Packed {
            one,
            two,
            pair: "__half2",
            make: "__half2",
            lo: ".x",
            hi: ".y",
        }),
        Scalar::BF16 => Some(Packed {
            one,
            two,
            pair: "__nv_bfloat162",
            make: "__nv_bfloat162",
            lo: ".x",
            hi: ".y",
        }),
        _ => None,
    }
}

/// `a * b + c` rounded once.
pub fn fma(s: Scalar, a: &str, b: &str, c: &str) -> String {
    match s {
        Scalar::F32 => format!("fmaf({a}, {b}, {c})"),
        Scalar::F64 => format!("fma({a}, {b}, {c})"),
        Scalar::F16 | Scalar::BF16 => format!("__hfma({a}, {b}, {c})"),
        other => format!("({})({a} * {b} + {c})", c_scalar(other)),
    }
}

/// `x` (of element `from`) converted to element `to`.
pub fn cast(from: Elem, to: Elem, x: &str) -> String {
    let (f, t) = match (from, to) {
        (Elem::Scalar(f), Elem::Scalar(t)) => (f, t),
        _ => return format!("({})({x})", super::names::c_elem(to)),
    };
    if f == t {
        return x.to_string();
    }
    if t == Scalar::I1 {
        let zero = if f.is_float() { "0.0f" } else { "0" };
        return format!("({} != {zero})", up(f, x));
    }
    match t {
        Scalar::F16 | Scalar::BF16 => {
            let p = if t == Scalar::F16 { "half" } else { "bfloat16" };
            match f {
                Scalar::F64 if t == Scalar::F16 => format!("__double2half({x})"),
                Scalar::F64 => format!("__double2bfloat16({x})"),
                Scalar::I64 => format!("__ll2{p}_rn({x})"),
                Scalar::U64 => format!("__ull2{p}_rn({x})"),
                Scalar::U32 => format!("__uint2{p}_rn({x})"),
                Scalar::I32 | Scalar::I16 | Scalar::I8 | Scalar::U16 | Scalar::U8 => {
                    format!("__int2{p}_rn((int){x})")
                }
                Scalar::I1 => down(t, &format!("({x} ? 1.0f : 0.0f)")),
                _ => down(t, &format!("(float){}", up(f, x))),
            }
        }
        _ => format!("({})({})", c_scalar(t), up(f, x)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_is_computed_in_fp32_and_rounded_once() {
        assert_eq!(
            binary(BinOp::Add, Scalar::F16, "a", "b").unwrap(),
            "__float2half_rn((__half2float(a) + __half2float(b)))"
        );
        assert_eq!(
            binary(BinOp::Lt, Scalar::F16, "a", "b").unwrap(),
            "(__half2float(a) < __half2float(b))"
        );
    }

    #[test]
    fn fp32_math_is_triton_s() {
        assert_eq!(unary(UnOp::Exp, Scalar::F32, "x").unwrap(), "kwb_exp(x)");
        assert_eq!(unary(UnOp::Tanh, Scalar::F32, "x").unwrap(), "tanhf(x)");
        assert_eq!(unary(UnOp::Exp, Scalar::F64, "x").unwrap(), "exp(x)");
        assert_eq!(
            binary(BinOp::Div, Scalar::F32, "a", "b").unwrap(),
            "kwb_div(a, b)"
        );
        assert!(unary(UnOp::Exp, Scalar::I32, "x").is_err());
        assert_eq!(
            cast(Elem::Scalar(Scalar::F32), Elem::Scalar(Scalar::I1), "x"),
            "(x != 0.0f)"
        );
    }
}
