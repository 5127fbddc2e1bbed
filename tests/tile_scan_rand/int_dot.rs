//! `tl.dot` of int8 tiles: int32 results (whatever `out_dtype` says, as Triton's), exact
//! products, sums that wrap at 32 bits. liger-kernel's `mm_int8int2` matmul is written so.

use super::{buf, emulator_check, errors, interp, EmuBuf};
use kwb::tile::DType;

const DOT: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(a_ptr, b_ptr, c_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    acc = tl.load(c_ptr + rm * N + rn)
    y = tl.dot(a, b, acc)
    y += tl.dot(a, b, out_dtype=tl.float32)
    tl.store(y_ptr + rm * N + rn, y)
"#;

/// Deterministic int8 values over the whole range, -128 and 127 included.
fn int8s(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| f64::from(((i * 2654435761 + seed * 40503) % 256) as i32 - 128))
        .collect()
}

/// `2 * a @ b + acc` in exact integers, wrapped to int32 (the wrap of a sum is the sum of the
/// wraps, so the order does not matter).
fn expected(a: &[f64], b: &[f64], c: &[f64], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut y = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = c[i * n + j] as i64;
            for kk in 0..k {
                s += 2 * (a[i * k + kk] as i64) * (b[kk * n + j] as i64);
            }
            y[i * n + j] = f64::from(s as i32);
        }
    }
    y
}

#[test]
fn int8_dots_give_exact_int32_sums_that_wrap() {
    let (m, n, k) = (16, 16, 64);
    let (a, b) = (int8s(m * k, 1), int8s(k * n, 2));
    // Accumulators near both ends of int32, so that some sums wrap.
    let c: Vec<f64> = (0..m * n)
        .map(|i| match i % 3 {
            0 => f64::from(i32::MAX - 1000),
            1 => f64::from(i32::MIN + 1000),
            _ => f64::from(i as i32 - 100),
        })
        .collect();
    let args = [
        buf(DType::I8, &a),
        buf(DType::I8, &b),
        buf(DType::I32, &c),
        buf(DType::I32, &vec![0.0; m * n]),
    ];
    let cx = [
        ("M", super::int(16)),
        ("N", super::int(16)),
        ("K", super::int(64)),
    ];
    let out = interp(DOT, &cx, 4, &args).unwrap();
    let want = expected(&a, &b, &c, (m, n, k));
    assert_eq!(out[3], want);
    let wrapped = (0..m * n).filter(|&i| {
        let exact: i64 = (c[i] as i64)
            + (0..k)
                .map(|kk| 2 * (a[(i / n) * k + kk] as i64) * (b[kk * n + i % n] as i64))
                .sum::<i64>();
        i32::try_from(exact).is_err()
    });
    assert!(wrapped.count() > 0, "the case must make some sums wrap");
}

/// The buffers of `DOT` at M x N x K: int8 operands over their whole range, int32
/// accumulators near both ends of int32 (so that sums wrap), and the output.
fn operands(m: usize, n: usize, k: usize) -> [EmuBuf<'static>; 4] {
    [
        EmuBuf("a", "i8", m * k, false, "{uniform: [-128, 128]}"),
        EmuBuf("b", "i8", k * n, false, "{uniform: [-128, 128]}"),
        EmuBuf(
            "c",
            "i32",
            m * n,
            false,
            "{uniform: [-2147483000, 2147483000]}",
        ),
        EmuBuf("y", "i32", m * n, true, ""),
    ]
}

#[test]
fn int8_dots_agree_with_the_emulator_bit_for_bit() {
    for (m, n, k, warps) in [(16, 16, 32, 1), (32, 64, 64, 4), (64, 32, 128, 8)] {
        let cx = format!("M: {m}, N: {n}, K: {k}");
        let bufs = operands(m, n, k);
        emulator_check(DOT, &cx, warps, &bufs, "a, b, c, y", None);
    }
}

#[test]
fn int8_dot_misuses_are_errors_at_the_call() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    r = tl.arange(0, 16)
    a = tl.load(x_ptr + r[:, None] * 16 + r[None, :]).to(tl.int8)
    f = tl.load(x_ptr + r[:, None] * 16 + r[None, :]).to(tl.float16)
    u = tl.load(x_ptr + r[:, None] * 16 + r[None, :]).to(tl.int16)
    mixed = tl.dot(a, f)
    wide = tl.dot(u, u)
    acc = tl.dot(a, a, tl.zeros((16, 16), dtype=tl.float32))
"#;
    let e = errors(src, &[]);
    assert!(
        e.contains("k.py:11:") && e.contains("operands of one dtype"),
        "{e}"
    );
    assert!(
        e.contains("k.py:12:") && e.contains("float16, bfloat16, float32 or int8"),
        "{e}"
    );
    assert!(
        e.contains("k.py:13:") && e.contains("`acc` is float32[16, 16]"),
        "{e}"
    );
}

/// On a GPU (H100/H200), the int8 dot gives the interpreter's int32 values bit for bit.
#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn int8_dots_on_a_gpu_give_the_interpreters_values() {
    for (m, n, k, warps) in [(16, 16, 32, 1), (64, 64, 128, 4)] {
        let cx = format!("M: {m}, N: {n}, K: {k}");
        // `gpu_check` wants an input `x` of the output's shape (its placeholder reference).
        let [a, b, c, y] = operands(m, n, k);
        let bufs = [
            a,
            b,
            c,
            EmuBuf("x", "i32", m * n, false, "{constant: 0}"),
            y,
        ];
        crate::gpu_check(DOT, &cx, warps, &bufs, "a, b, c, y");
    }
}
