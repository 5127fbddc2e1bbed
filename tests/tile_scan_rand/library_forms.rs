//! Forms found in library kernels (flag-gems): block pointers to `tl.int1` (Triton reads and
//! writes them as int8), a dtype's predicates and widths (`x.dtype.is_floating()`,
//! `dtype.value.int_bitwidth`), and `tl.max(..., return_indices=True)`. Expected values are
//! worked out by hand from Triton's rules; the emulator runs kwb's CUDA to the same values.

use super::{buf, int, interp, EmuBuf};
use kwb::tile::DType;

const BOOL_BLOCKS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pa = tl.make_block_ptr(a_ptr, (n,), (1,), (0,), (BLOCK,), order=(0,))
    pb = tl.make_block_ptr(b_ptr, (n,), (1,), (0,), (BLOCK,), order=(0,))
    a = tl.load(pa, boundary_check=(0,)).to(a_ptr.type.element_ty)
    b = tl.load(pb, boundary_check=(0,))
    po = tl.make_block_ptr(out_ptr, (n,), (1,), (0,), (BLOCK,), order=(0,))
    o = (a != 0) ^ (b.to(tl.float32) > 0.5)
    tl.store(po, o.to(po.type.element_ty), boundary_check=(0,))
"#;

#[test]
fn block_pointers_to_bools_read_and_write_bytes() {
    let a = [1., 0., 1., 0., 1., 1., 0., 0.];
    let b = [0., 0., 1., 1., 0., 1., 0., 1.];
    let args = [
        buf(DType::Bool, &a),
        buf(DType::Bool, &b),
        buf(DType::Bool, &[0.0; 8]),
        super::A::Int(6),
    ];
    let out = interp(BOOL_BLOCKS, &[("BLOCK", int(8))], 1, &args).unwrap();
    // a xor b for the first 6; the last two lie outside the tensor and stay as they were.
    assert_eq!(out[2], [1., 0., 0., 1., 1., 0., 0., 0.]);
}

#[test]
fn bool_block_pointers_agree_with_the_emulator() {
    let bufs = [
        EmuBuf("a", "bool", 64, true, "{uniform: [0, 1]}"),
        EmuBuf("b", "bool", 64, true, "{uniform: [0, 1]}"),
        EmuBuf("out", "bool", 64, true, "zeros"),
    ];
    super::emulator_case(
        BOOL_BLOCKS,
        "BLOCK: 64",
        2,
        &bufs,
        "a, b, out, 50",
        (0.0, 0.0),
    );
}

const DTYPE_ATTRS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def lowest(dtype: tl.constexpr):
    d = dtype.value
    if d.is_floating():
        v: tl.constexpr = float("-inf")
        return v
    if d.is_int_signed():
        w: tl.constexpr = d.int_bitwidth
        return -1 * 2 ** (w - 1)
    return 0

@triton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    m, i = tl.max(x, 0, return_indices=True)
    lo, j = tl.min(x, axis=0, return_indices=True, keep_dims=True)
    tl.store(out_ptr, m.to(tl.float32))
    tl.store(out_ptr + 1, i.to(tl.float32))
    tl.store(out_ptr + 2 + tl.arange(0, 1), lo.to(tl.float32))
    tl.store(out_ptr + 3 + tl.arange(0, 1), j.to(tl.float32))
    tl.store(out_ptr + 4, tl.full((), lowest(x.dtype), x.dtype).to(tl.float32))
    tl.store(out_ptr + 5, x.dtype.primitive_bitwidth)
    tl.store(out_ptr + 6, x.dtype.is_fp16() + 2 * x.dtype.is_int() + 4 * x.dtype.is_int_unsigned())
    # A tile's `.type` is a block type: not itself a dtype, its `.scalar` is.
    if x.type.scalar.is_int() & (not x.type.is_int()) & x.type.is_block():
        tl.store(out_ptr + 7, x.type.shape[0])
    else:
        tl.store(out_ptr + 7, -1)
"#;

#[test]
fn dtype_attributes_and_indices_of_extremes() {
    let x = [3., -2., 7., 7., -2., 0., 5., 1.];
    for (d, lowest, bits, flags) in [
        (DType::F16, f64::NEG_INFINITY, 16., 1.),
        (DType::F32, f64::NEG_INFINITY, 32., 0.),
        (DType::I8, -128., 8., 2.),
        (DType::I32, -2147483648., 32., 2.),
    ] {
        let args = [buf(d, &x), buf(DType::F32, &[0.0; 8])];
        let out = interp(DTYPE_ATTRS, &[("BLOCK", int(8))], 1, &args).unwrap();
        // The first index of each extreme, as Triton's tie-break-left.
        let ints = if d.is_float() { -1. } else { 8. };
        assert_eq!(
            out[1],
            [7., 2., -2., 1., lowest, bits, flags, ints],
            "{d:?}"
        );
    }
}

#[test]
fn dtype_attributes_agree_with_the_emulator() {
    for dtype in ["f32", "i32"] {
        let bufs = [
            EmuBuf("x", dtype, 32, true, "{uniform: [-9, 9]}"),
            EmuBuf("out", "f32", 8, true, "zeros"),
        ];
        // Bit for bit: the lowest float is -inf, which a tolerance cannot compare.
        super::emulator_check(DTYPE_ATTRS, "BLOCK: 32", 1, &bufs, "x, out", None);
    }
}

const DIV_LOGIC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    q = tl.fdiv(x, y)
    both = (x > 0).to(tl.int1).logical_and(y > 1)
    either = (x > 0).logical_or(y > 1)
    tl.store(out_ptr + offs, q + both.to(tl.float32) * 10 + either.to(tl.float32) * 100)
"#;

/// `tl.fdiv` is Triton's `/`; `.logical_and`/`.logical_or` take bools.
#[test]
fn fdiv_and_logical_methods() {
    let args = [
        buf(DType::F32, &[1., -2., 3., -4.]),
        buf(DType::F32, &[2., 4., 0.5, 8.]),
        buf(DType::F32, &[0.0; 4]),
    ];
    let out = interp(DIV_LOGIC, &[("BLOCK", int(4))], 1, &args).unwrap();
    assert_eq!(out[2], [110.5, 99.5, 106., 99.5]);
    let bufs = [
        EmuBuf("x", "f32", 64, true, "{uniform: [-4, 4]}"),
        EmuBuf("y", "f32", 64, true, "{uniform: [0.5, 3]}"),
        EmuBuf("out", "f32", 64, true, "zeros"),
    ];
    super::emulator_check(DIV_LOGIC, "BLOCK: 64", 2, &bufs, "x, y, out", None);
    let ints = DIV_LOGIC.replace("tl.fdiv(x, y)", "tl.fdiv(x.to(tl.int32), y)");
    let e = interp(&ints, &[("BLOCK", int(4))], 1, &args).unwrap_err();
    assert!(
        e.contains("both operands of `tl.fdiv` must be floats"),
        "{e}"
    );
    let bytes = DIV_LOGIC.replace("(x > 0).logical_or", "(x > 0).to(tl.int8).logical_or");
    let e = interp(&bytes, &[("BLOCK", int(4))], 1, &args).unwrap_err();
    assert!(
        e.contains("`.logical_or` needs bools (int1) on both sides"),
        "{e}"
    );
}

const MATH_CONSTANTS: &str = r#"
import math
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(x > math.e, x * math.pi, -math.inf))
"#;

/// Python's `math` constants fold inside a kernel, as any global does in Triton; its
/// functions are an error that says so.
#[test]
fn math_constants_fold() {
    let args = [buf(DType::F32, &[1., 3.]), buf(DType::F32, &[0.0; 2])];
    let out = interp(MATH_CONSTANTS, &[("BLOCK", int(2))], 1, &args).unwrap();
    assert_eq!(
        out[1],
        [f64::NEG_INFINITY, f64::from(3.0f32 * std::f32::consts::PI)]
    );
    let sqrt = MATH_CONSTANTS.replace("x * math.pi", "x * math.sqrt(2.0)");
    let e = interp(&sqrt, &[("BLOCK", int(2))], 1, &args).unwrap_err();
    assert!(e.contains("only the constants of Python's `math`"), "{e}");
}
