//! `tl.cumsum`, `tl.cumprod`, `tl.associative_scan` and `tl.reduce` with a combine function.

use super::{buf, emulator_agrees, errors, flag, int, interp, EmuBuf};
use kwb::tile::DType;

const SCANS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def last_nonzero(a, b):
    return tl.where(b != 0, b, a)

@triton.jit
def k(x_ptr, y_ptr, BLOCK: tl.constexpr, OP: tl.constexpr, REV: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == 0:
        y = tl.cumsum(x, 0, reverse=REV)
    elif OP == 1:
        y = tl.cumprod(x, axis=0, reverse=REV)
    elif OP == 2:
        y = tl.associative_scan(x.to(tl.int32), 0, last_nonzero, reverse=REV)
    elif OP == 3:
        y = x.to(tl.int8).cumsum(0)
        tl.static_assert(y.dtype == tl.int32)
    else:
        y = (x != 0).cumsum()
        tl.static_assert(y.dtype == tl.uint32)
    tl.store(y_ptr + offs, y)
"#;

fn scan1(op: i64, rev: bool, x: &[f64]) -> Vec<f64> {
    let cx = [
        ("BLOCK", int(x.len() as i64)),
        ("OP", int(op)),
        ("REV", flag(rev)),
    ];
    let bufs = [buf(DType::F32, x), buf(DType::F32, &vec![0.0; x.len()])];
    interp(SCANS, &cx, 4, &bufs).unwrap().remove(1)
}

/// Expected values from Triton 3.9.0's interpreter (`TRITON_INTERPRET=1`) running the same
/// kernels on the same inputs.
#[test]
fn one_dimensional_scans_give_tritons_values() {
    let x: Vec<f64> = (1..=8).map(f64::from).collect();
    assert_eq!(scan1(0, false, &x), [1., 3., 6., 10., 15., 21., 28., 36.]);
    assert_eq!(scan1(0, true, &x), [36., 35., 33., 30., 26., 21., 15., 8.]);
    assert_eq!(
        scan1(1, false, &x),
        [1., 2., 6., 24., 120., 720., 5040., 40320.]
    );
    assert_eq!(
        scan1(1, true, &x),
        [40320., 40320., 20160., 6720., 1680., 336., 56., 8.]
    );
    // A combine that is associative but not commutative: the order of its arguments shows.
    let z = [0., 3., 0., 0., 5., 0., 7., 0.];
    assert_eq!(scan1(2, false, &z), [0., 3., 3., 3., 5., 5., 7., 7.]);
    assert_eq!(scan1(2, true, &z), [3., 3., 5., 5., 5., 7., 7., 0.]);
    // int8 accumulates in int32 (Triton: 100, 200, ..., 800), a bool cumsum in uint32.
    assert_eq!(
        scan1(3, false, &[100.0; 8]),
        [100., 200., 300., 400., 500., 600., 700., 800.]
    );
    let b = [1., 0., 1., 1., 0., 1., 1., 1.];
    assert_eq!(scan1(4, false, &b), [1., 1., 2., 3., 3., 4., 5., 6.]);
}

/// Triton 3.9.0's interpreter: `tl.sum` of an all-false mask minus 1 is 4294967295, since
/// the sum of `int1` is `uint32`.
#[test]
fn sums_of_booleans_are_unsigned() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    s = tl.sum(x > 100.0)
    tl.static_assert(s.dtype == tl.uint32)
    tl.store(y_ptr, (s - 1).to(tl.float64))
"#;
    let args = [buf(DType::F32, &[0., 1., 2., 3.]), buf(DType::F64, &[0.0])];
    let out = interp(src, &[], 1, &args).unwrap();
    assert_eq!(out[1], [4294967295.0]);
}

const SCANS_2D: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr, REV: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    y = x.cumsum(AXIS, reverse=REV)
    tl.store(y_ptr + r * C + c, y)
"#;

/// Expected values from Triton 3.9.0's interpreter on x = [[0, 1, 2, 3], [4, 5, 6, 7]].
#[test]
fn two_dimensional_scans_along_either_axis_give_tritons_values() {
    let x: Vec<f64> = (0..8).map(f64::from).collect();
    let run = |axis: i64, rev: bool| {
        let cx = [
            ("R", int(2)),
            ("C", int(4)),
            ("AXIS", int(axis)),
            ("REV", flag(rev)),
        ];
        let bufs = [buf(DType::F32, &x), buf(DType::F32, &[0.0; 8])];
        interp(SCANS_2D, &cx, 1, &bufs).unwrap().remove(1)
    };
    assert_eq!(run(0, false), [0., 1., 2., 3., 4., 6., 8., 10.]);
    assert_eq!(run(0, true), [4., 6., 8., 10., 4., 5., 6., 7.]);
    assert_eq!(run(1, false), [0., 1., 3., 6., 4., 9., 15., 22.]);
    assert_eq!(run(1, true), [6., 6., 5., 3., 22., 18., 13., 7.]);
    // A negative axis counts from the end.
    assert_eq!(run(-1, false), run(1, false));
}

const REDUCES: &str = r#"
import triton
import triton.language as tl

@triton.jit
def maxfn(a, b):
    return tl.maximum(a, b)

@triton.jit
def last_nonzero(a, b):
    return tl.where(b != 0, b, a)

@triton.jit
def k(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    m = tl.reduce(x, 1, maxfn)
    tl.store(y_ptr + tl.arange(0, R), m)
    kept = tl.reduce(x, 0, last_nonzero, keep_dims=True)
    tl.static_assert(kept.shape[0] == 1)
    tl.store(z_ptr + c, kept)
    t = x.reduce(None, maxfn)
    tl.store(z_ptr + C, t)
"#;

/// Expected values from Triton 3.9.0's interpreter on the 4 × 4 tile below.
#[test]
fn reductions_with_a_combine_function_give_tritons_values() {
    let x = [
        0., 3., 0., 1., 4., 0., 2., 0., 0., 0., 9., 0., 1., 2., 0., 0.,
    ];
    let bufs = [
        buf(DType::I32, &x),
        buf(DType::I32, &[0.0; 4]),
        buf(DType::I32, &[0.0; 5]),
    ];
    let out = interp(REDUCES, &[("R", int(4)), ("C", int(4))], 2, &bufs).unwrap();
    assert_eq!(out[1], [3., 4., 9., 2.]);
    assert_eq!(out[2], [1., 2., 9., 1., 9.]);
}

#[test]
fn scans_kwb_does_not_support_are_errors_at_the_call() {
    let arity = r#"
import triton
import triton.language as tl

@triton.jit
def pair(a, b, c, d):
    return a + c

@triton.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    s, t = tl.associative_scan((x, x), 0, pair)
    tl.store(y_ptr + tl.arange(0, 4), s)
"#;
    let e = errors(arity, &[]);
    assert!(
        e.contains("k.py:12:")
            && e.contains("returns 1 value(s), but `tl.associative_scan` combines 2"),
        "{e}"
    );
    let looped = r#"
import triton
import triton.language as tl

@triton.jit
def twice(a, b):
    s = a
    for i in range(2):
        s = s + b
    return s

@triton.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(y_ptr + tl.arange(0, 4), tl.associative_scan(x, 0, twice))
"#;
    let e = errors(looped, &[]);
    assert!(e.contains("k.py:15:") && e.contains("runtime loop"), "{e}");
    let not_jit = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(y_ptr + tl.arange(0, 4), tl.associative_scan(x, 0, tl.maximum))
"#;
    let e = errors(not_jit, &[]);
    assert!(
        e.contains("k.py:8:") && e.contains("`@triton.jit` function"),
        "{e}"
    );
}

/// Every path of the CUDA scan: runs of one element or several, lines inside one thread,
/// inside one warp's segment, and across warps; forward and reversed; 1 to 8 warps.
#[test]
fn one_dimensional_scans_agree_with_the_emulator() {
    for (block, warps) in [(8, 1), (64, 1), (256, 2), (1024, 4), (2048, 8), (32, 8)] {
        for (op, rev) in [(0, false), (0, true), (2, true), (3, false)] {
            let cx = format!(
                "BLOCK: {block}, OP: {op}, REV: {}",
                if rev { "true" } else { "false" }
            );
            let init = "{uniform: [-4, 4]}";
            let bufs = [
                EmuBuf("x", "f32", block, false, init),
                EmuBuf("y", "f32", block, true, ""),
            ];
            emulator_agrees(SCANS, &cx, warps, &bufs, (1e-4, 1e-4));
        }
    }
    // fp16 adds in fp16 at every step, in another order on each side: a looser tolerance.
    let bufs = [
        EmuBuf("x", "f16", 256, false, "{uniform: [-1, 1]}"),
        EmuBuf("y", "f16", 256, true, ""),
    ];
    emulator_agrees(
        SCANS,
        "BLOCK: 256, OP: 0, REV: false",
        2,
        &bufs,
        (1e-2, 5e-2),
    );
    // cumprod of numbers near 1, so that the product stays finite.
    let bufs = [
        EmuBuf("x", "f32", 256, false, "{uniform: [0.9, 1.1]}"),
        EmuBuf("y", "f32", 256, true, ""),
    ];
    emulator_agrees(
        SCANS,
        "BLOCK: 256, OP: 1, REV: true",
        4,
        &bufs,
        (1e-4, 1e-5),
    );
}

#[test]
fn two_dimensional_scans_agree_with_the_emulator() {
    for (r, c, warps) in [
        (2, 4, 1),
        (16, 64, 4),
        (64, 16, 2),
        (128, 32, 4),
        (4, 512, 8),
    ] {
        for (axis, rev) in [(0, false), (1, false), (0, true), (1, true)] {
            let cx = format!(
                "R: {r}, C: {c}, AXIS: {axis}, REV: {}",
                if rev { "true" } else { "false" }
            );
            let bufs = [
                EmuBuf("x", "f32", r * c, false, "{uniform: [-4, 4]}"),
                EmuBuf("y", "f32", r * c, true, ""),
            ];
            emulator_agrees(SCANS_2D, &cx, warps, &bufs, (1e-4, 1e-4));
        }
    }
}

#[test]
fn reductions_with_a_combine_function_agree_with_the_emulator() {
    for (r, c, warps) in [(4, 4, 2), (64, 32, 4), (8, 256, 8), (128, 2, 1)] {
        let cx = format!("R: {r}, C: {c}");
        let bufs = [
            EmuBuf("x", "i32", r * c, false, "{uniform: [-3, 3]}"),
            EmuBuf("y", "i32", r, true, ""),
            EmuBuf("z", "i32", c + 1, true, ""),
        ];
        emulator_agrees(REDUCES, &cx, warps, &bufs, (0.0, 0.0));
    }
}

const TUPLES: &str = r#"
import triton
import triton.language as tl

@triton.jit
def argmax_combine(v0, i0, v1, i1):
    take = (v1 > v0) | ((v1 == v0) & (i1 < i0))
    return tl.where(take, v1, v0), tl.where(take, i1, i0)

@triton.jit
def affine(a0, b0, a1, b1):
    # composition of x -> a*x + b maps: associative, not commutative
    return a1 * a0, a1 * b0 + b1

@triton.jit
def k(v_ptr, a_ptr, b_ptr, out_ptr, iout_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    v = tl.load(v_ptr + r * C + c)
    idx = (r * 0 + c).to(tl.int32)
    mv, mi = tl.reduce((v, idx), 1, argmax_combine)
    tl.store(out_ptr + tl.arange(0, R), mv)
    tl.store(iout_ptr + tl.arange(0, R), mi)
    a = tl.load(a_ptr + r * C + c)
    b = tl.load(b_ptr + r * C + c)
    sa, sb = tl.associative_scan((a, b), 1, affine)
    tl.store(out_ptr + R + r * C + c, sa)
    tl.store(out_ptr + R + R * C + r * C + c, sb)
    ra, rb = tl.associative_scan((a, b), 0, affine, reverse=True)
    tl.store(out_ptr + R + 2 * R * C + r * C + c, rb)
"#;

/// Expected values from Triton 3.9.0's interpreter: an argmax written as a reduction of
/// (value, index) pairs, and scans of affine maps (associative, not commutative).
#[test]
fn scans_and_reductions_of_tuples_give_tritons_values() {
    let v = [1., 5., 5., 2., 7., 0., 7., 9.];
    let a = [1., 2., 1., 3., 2., 1., 1., 2.];
    let b = [1., 0., 2., 1., 0., 3., 1., 1.];
    let args = [
        buf(DType::F32, &v),
        buf(DType::F32, &a),
        buf(DType::F32, &b),
        buf(DType::F32, &[0.0; 26]),
        buf(DType::I32, &[0.0; 2]),
    ];
    let out = interp(TUPLES, &[("R", int(2)), ("C", int(4))], 2, &args).unwrap();
    let want = [
        5., 9., 1., 2., 2., 6., 2., 2., 2., 4., 1., 2., 4., 13., 0., 3., 4., 9., 1., 6., 3., 4.,
        0., 3., 1., 1.,
    ];
    assert_eq!(out[3], want);
    assert_eq!(out[4], [1., 3.]);
}

#[test]
fn scans_and_reductions_of_tuples_agree_with_the_emulator() {
    for (r, c, warps) in [(2, 4, 1), (16, 64, 4), (4, 1024, 8)] {
        let n = r * c;
        let bufs = [
            EmuBuf("v", "f32", n, false, "{uniform: [-4, 4]}"),
            EmuBuf("a", "f32", n, false, "{uniform: [0.9, 1.1]}"),
            EmuBuf("b", "f32", n, false, "{uniform: [-1, 1]}"),
            EmuBuf("out", "f32", r + 3 * n, true, ""),
            EmuBuf("iout", "i32", r, true, ""),
        ];
        let cx = format!("R: {r}, C: {c}");
        emulator_agrees(TUPLES, &cx, warps, &bufs, (1e-4, 1e-4));
    }
}
