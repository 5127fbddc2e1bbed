//! `tl.clamp`, `tl.flip`, `tl.ravel`, `tl.split`, `tl.join`, `tl.interleave`, `tl.swizzle2d`,
//! `propagate_nan=tl.PropagateNan.ALL` and `tl.constexpr(32)` as an expression.

use super::{buf, emulator_agrees, errors, interp, EmuBuf};
use kwb::tile::DType;

const MISC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, i_ptr):
    r = tl.arange(0, 4)[:, None]
    c = tl.arange(0, 8)[None, :]
    x = tl.load(x_ptr + r * 8 + c)                      # [4, 8]
    o = 0
    tl.store(y_ptr + o + r * 8 + c, tl.clamp(x, -2.0, 3.0)); o += 32
    tl.store(y_ptr + o + r * 8 + c, tl.clamp(x, -2.0, 3.0, propagate_nan=tl.PropagateNan.ALL)); o += 32
    tl.store(y_ptr + o + r * 8 + c, tl.flip(x)); o += 32
    tl.store(y_ptr + o + r * 8 + c, tl.flip(x, 0)); o += 32
    tl.store(y_ptr + o + tl.arange(0, 32), tl.ravel(x)); o += 32
    a, b = tl.split(tl.reshape(x, [4, 4, 2]))
    tl.store(y_ptr + o + r * 4 + tl.arange(0, 4)[None, :], a); o += 16
    tl.store(y_ptr + o + r * 4 + tl.arange(0, 4)[None, :], b); o += 16
    j = tl.join(a, b)
    tl.store(y_ptr + o + tl.arange(0, 32), tl.reshape(j, [32])); o += 32
    il = tl.interleave(b, a)
    tl.store(y_ptr + o + r * 8 + c, il); o += 32
    mx = tl.maximum(x, 0.5, propagate_nan=tl.PropagateNan.ALL)
    tl.store(y_ptr + o + r * 8 + c, mx); o += 32
    s0, s1 = tl.split(tl.join(tl.load(x_ptr + 1), tl.load(x_ptr + 2)))
    tl.store(y_ptr + o, s0 + tl.constexpr(32) * s1)
    ii = tl.arange(0, 4)[:, None]
    jj = tl.arange(0, 4)[None, :]
    ni, nj = tl.swizzle2d(ii, jj, 4, 4, 2)
    tl.store(i_ptr + ii * 4 + jj, ni * 4 + nj)
    ni, nj = tl.swizzle2d(ii, jj, 3, 4, 2)
    tl.store(i_ptr + 16 + ii * 4 + jj, ni * 4 + nj)
"#;

const N: f64 = f64::NAN;

/// Equal values, NaN equal to NaN, and zeros of the same sign.
fn same(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
        })
}

/// Expected values from Triton 3.9.0's interpreter (`TRITON_INTERPRET=1`) on
/// x = -6.0, -5.5, ..., 9.5 with x[5] = NaN and x[13] = -0.0.
#[test]
fn rearrangements_and_clamps_give_tritons_values() {
    let mut x: Vec<f64> = (0..32).map(|i| f64::from(i) * 0.5 - 6.0).collect();
    x[5] = f64::NAN;
    x[13] = -0.0;
    let args = [
        buf(DType::F32, &x),
        buf(DType::F32, &[0.0; 289]),
        buf(DType::I32, &[0.0; 32]),
    ];
    let out = interp(MISC, &[], 4, &args).unwrap();
    let want: [&[f64]; 9] = [
        &[
            -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -1.5, -1.0, -0.5, 0.0, -0.0, 1.0,
            1.5, 2.0, 2.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0,
        ],
        &[
            -2.0, -2.0, -2.0, -2.0, -2.0, N, -2.0, -2.0, -2.0, -1.5, -1.0, -0.5, 0.0, -0.0, 1.0,
            1.5, 2.0, 2.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0,
        ],
        &[
            -2.5, -3.0, N, -4.0, -4.5, -5.0, -5.5, -6.0, 1.5, 1.0, -0.0, 0.0, -0.5, -1.0, -1.5,
            -2.0, 5.5, 5.0, 4.5, 4.0, 3.5, 3.0, 2.5, 2.0, 9.5, 9.0, 8.5, 8.0, 7.5, 7.0, 6.5, 6.0,
        ],
        &[
            6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, -2.0,
            -1.5, -1.0, -0.5, 0.0, -0.0, 1.0, 1.5, -6.0, -5.5, -5.0, -4.5, -4.0, N, -3.0, -2.5,
        ],
        &[
            -6.0, -5.5, -5.0, -4.5, -4.0, N, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, -0.0, 1.0,
            1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5,
        ],
        &[
            -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
            -5.5, -4.5, N, -2.5, -1.5, -0.5, -0.0, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5,
        ],
        &[
            -6.0, -5.5, -5.0, -4.5, -4.0, N, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, -0.0, 1.0,
            1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5,
        ],
        &[
            -5.5, -6.0, -4.5, -5.0, N, -4.0, -2.5, -3.0, -1.5, -2.0, -0.5, -1.0, -0.0, 0.0, 1.5,
            1.0, 2.5, 2.0, 3.5, 3.0, 4.5, 4.0, 5.5, 5.0, 6.5, 6.0, 7.5, 7.0, 8.5, 8.0, 9.5, 9.0,
        ],
        &[
            0.5, 0.5, 0.5, 0.5, 0.5, N, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0, 1.5, 2.0, 2.5,
            3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5,
        ],
    ];
    let names = [
        "clamp",
        "clamp ALL",
        "flip",
        "flip(x, 0)",
        "ravel",
        "split a + b",
        "join",
        "interleave",
        "maximum ALL",
    ];
    for (i, w) in want.iter().enumerate() {
        let got = &out[1][32 * i..32 * i + 32];
        assert!(same(got, w), "{}: {got:?}", names[i]);
    }
    // s0 + tl.constexpr(32) * s1 of x[1] and x[2], through join and split.
    assert_eq!(out[1][288], -165.5);
    let swizzled = [
        0., 4., 1., 5., 2., 6., 3., 7., 8., 12., 9., 13., 10., 14., 11., 15., 0., 4., 1., 5., 2.,
        6., 3., 7., 8., 9., 10., 11., 12., 13., 14., 15.,
    ];
    assert_eq!(out[2], swizzled);
}

#[test]
fn rearrangements_and_clamps_agree_with_the_emulator() {
    for warps in [1, 4] {
        let bufs = [
            EmuBuf("x", "f32", 32, false, "{uniform: [-8, 10]}"),
            EmuBuf("y", "f32", 289, true, ""),
            EmuBuf("i", "i32", 32, true, ""),
        ];
        emulator_agrees(MISC, "", warps, &bufs, (0.0, 0.0));
    }
}

const FLIPS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, DIM: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    tl.store(y_ptr + r * C + c, x.flip(DIM))
"#;

#[test]
fn flips_of_larger_tiles_agree_with_the_emulator() {
    for (r, c, dim, warps) in [(64, 32, 0, 4), (64, 32, 1, 4), (2, 1024, -1, 8)] {
        let cx = format!("R: {r}, C: {c}, DIM: {dim}");
        let bufs = [
            EmuBuf("x", "f32", r * c, false, "{uniform: [-8, 10]}"),
            EmuBuf("y", "f32", r * c, true, ""),
        ];
        emulator_agrees(FLIPS, &cx, warps, &bufs, (0.0, 0.0));
    }
}

#[test]
fn misuses_are_errors_at_the_call() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    a, b = tl.split(x)
    j = tl.join(1.5, 2.5)
    c = tl.clamp(x, 0.0, 1.0, propagate_nan=True)
    i = tl.join(x, x.to(tl.int32))
"#;
    let e = errors(src, &[]);
    for (line, what) in [
        (8, "whose last dimension is 2"),
        (9, "needs tensors of numbers"),
        (10, "`propagate_nan` must be"),
        (11, "one dtype"),
    ] {
        assert!(
            e.contains(&format!("k.py:{line}:")) && e.contains(what),
            "{line}: {e}"
        );
    }
}
