//! Block pointers (the kernel is `block_ptr.py`, one case per value of `CASE`): loads with
//! `boundary_check` on both dimensions, on one, with `padding_option="nan"`, through a
//! transposed (`order=(0, 1)`) view, a store at a ragged edge, a matmul advancing two block
//! pointers (and again with the accumulator in the dot, which sm_90 copies with TMA), a 1-D
//! block pointer in a `while` loop, a 3-D one, block pointers through `@triton.jit` helpers and a runtime
//! `if`, and a tuple carried around a loop; the misuses kwb refuses; and the PTX emulator
//! running kwb's CUDA agreeing with the interpreter.
//!
//! The expected values come from Triton's interpreter (`TRITON_INTERPRET=1`), but from Triton
//! 3.5.1's: Triton 3.9.0 has removed block pointers (its `tl.make_block_ptr` raises
//! `NotImplementedError`). 3.5.1's interpreter was run with one line changed for numpy 2
//! (`tensor.__index__` reads a one-element array's item, so `range(K)` of a runtime `K` runs).

use super::{buf, emulator_case, errors, interp, EmuBuf, A};
use kwb::tile::{ArgKind, ConstValue, DType, Extent, KernelRequest, Target};

pub(super) const BLOCK_PTR: &str = include_str!("block_ptr.py");

const N: f64 = f64::NAN;

/// x = -7.0, -6.5, ..., 24.5.
fn xs() -> Vec<f64> {
    (0..64).map(|i| f64::from(i) * 0.5 - 7.0).collect()
}

/// Kernel `k` of `block_ptr.py` in the interpreter: `y` afterwards.
fn run(case: i64, mnk: [i64; 3], blocks: [i64; 3], x: A, w: A, y: A) -> Vec<f64> {
    let c = |v| ConstValue::Int(v);
    let cx = [
        ("CASE", c(case)),
        ("BM", c(blocks[0])),
        ("BN", c(blocks[1])),
        ("BK", c(blocks[2])),
    ];
    let args = [x, w, y, A::Int(mnk[0]), A::Int(mnk[1]), A::Int(mnk[2])];
    let out = interp(BLOCK_PTR, &cx, 4, &args).unwrap_or_else(|e| panic!("case {case}: {e}"));
    out[2].clone()
}

/// Equal values, NaN equal to NaN.
fn same(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && (got.iter().zip(want)).all(|(g, w)| (g.is_nan() && w.is_nan()) || g == w)
}

/// (case, [M, N, K], [BM, BN, BK], elements of y, y's initial value, Triton's y afterwards).
type Expect = (i64, [i64; 3], [i64; 3], usize, f64, &'static [f64]);

/// Values from Triton 3.5.1's interpreter (see the top of the file) with x = `xs()`.
const EXPECTED: &[Expect] = &[
    // Both dimensions checked at the ragged corner, zeros; then from row -1 (dims listed (1, 0)).
    (
        0,
        [6, 7, 0],
        [4, 4, 1],
        32,
        0.0,
        &[
            9.0, 9.5, 10.0, 0.0, 12.5, 13.0, 13.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 0.0, 0.0, 0.0, -6.5, -6.0, -5.5, -5.0, -3.0, -2.5, -2.0, -1.5, 0.5, 1.0, 1.5, 2.0,
        ],
    ),
    // Columns checked, rows not: rows 6 and 7 are read from memory.
    (
        1,
        [6, 5, 0],
        [4, 8, 1],
        32,
        0.0,
        &[
            10.0, 10.5, 11.0, 0.0, 0.0, 0.0, 0.0, 0.0, 14.0, 14.5, 15.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            18.0, 18.5, 19.0, 0.0, 0.0, 0.0, 0.0, 0.0, 22.0, 22.5, 23.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        ],
    ),
    // padding_option="nan".
    (
        2,
        [6, 7, 0],
        [4, 4, 1],
        16,
        0.0,
        &[
            9.0, 9.5, 10.0, N, 12.5, 13.0, 13.5, N, N, N, N, N, N, N, N, N,
        ],
    ),
    // The transposed view, order=(0, 1).
    (
        3,
        [6, 7, 0],
        [8, 4, 1],
        32,
        0.0,
        &[
            -6.5, -3.0, 0.5, 4.0, -6.0, -2.5, 1.0, 4.5, -5.5, -2.0, 1.5, 5.0, -5.0, -1.5, 2.0, 5.5,
            -4.5, -1.0, 2.5, 6.0, -4.0, -0.5, 3.0, 6.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        ],
    ),
    // Stores at the ragged corner of a 6 x 5 tensor in an 8 x 8 buffer of -1: only the 2 x 3
    // cells inside change (and the 2 x 2 block of 7.0 at the origin).
    (
        4,
        [6, 5, 0],
        [4, 8, 1],
        64,
        -1.0,
        &[
            7.0, 7.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 7.0, 7.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -7.0, -6.5, -6.0, -1.0, -1.0, -1.0, -1.0, -1.0, -3.0,
            -2.5, -2.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
        ],
    ),
    // 1-D: 21 elements doubled, then the sums of the three blocks of 8 (read unchecked, so the
    // last runs 3 elements past N = 21, as Triton's `boundary_check=0` checks nothing).
    (
        6,
        [0, 21, 0],
        [8, 1, 1],
        29,
        0.0,
        &[
            -14.0, -13.0, -12.0, -11.0, -10.0, -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0,
            -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -9.0, -7.5, -6.0, -4.5, -3.0, -1.5, 0.0, 1.5,
        ],
    ),
    // Through helpers; the runtime `if` takes its first branch (M = 6 > 5) ...
    (
        7,
        [6, 7, 0],
        [4, 8, 1],
        32,
        0.0,
        &[
            -18.5, -16.5, -15.0, -10.0, -9.0, -4.5, -4.0, 0.0, -4.5, -6.0, -4.5, -3.0, -2.0, -1.0,
            -0.5, 0.0, 9.5, 4.5, 6.0, 4.0, 5.0, 2.5, 3.0, 0.0, 23.5, 15.0, 16.5, 11.0, 12.0, 6.0,
            6.5, 0.0,
        ],
    ),
    // ... or its second (M = 5).
    (
        7,
        [5, 7, 0],
        [4, 8, 1],
        32,
        0.0,
        &[
            -22.5, -20.5, -15.0, -10.0, -9.0, -4.5, -4.0, 0.0, -8.5, -6.5, -4.5, -3.0, -2.0, -1.0,
            -0.5, 0.0, 5.5, 7.5, 6.0, 4.0, 5.0, 2.5, 3.0, 0.0, 19.5, 21.5, 16.5, 11.0, 12.0, 6.0,
            6.5, 0.0,
        ],
    ),
    // Three dimensions: x as 2 x 3 x 5, dimensions 1 and 2 checked (the sum over dimension 0),
    // then moved one along dimension 0, all checked (the max with the zeros past it).
    (
        10,
        [3, 5, 0],
        [4, 8, 1],
        64,
        0.0,
        &[
            0.5, 1.5, 2.5, 0.0, 0.0, 0.0, 0.0, 0.0, 5.5, 6.5, 7.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 4.5,
            5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 6.5, 7.0, 7.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        ],
    ),
    // A tuple carried around a loop of K = 3, and a block pointer re-made with a new base.
    (
        8,
        [6, 7, 3],
        [1, 8, 1],
        24,
        0.0,
        &[
            3.375, 3.4375, 3.5, 3.5625, 3.625, 3.6875, 3.75, 3.8125, -45.5, 4.0, 0.0, 0.0, 0.0,
            0.0, 0.0, 0.0, -10.5, -9.0, -7.5, -6.0, -4.5, -3.0, -1.5, 0.0,
        ],
    ),
];

#[test]
fn block_pointer_loads_and_stores_give_tritons_values() {
    for &(case, mnk, blocks, len, init, want) in EXPECTED {
        let x = buf(DType::F32, &xs());
        let y = buf(DType::F32, &vec![init; len]);
        let got = run(case, mnk, blocks, x, buf(DType::F32, &[0.0]), y);
        assert!(same(&got, want), "case {case} {mnk:?}: {got:?}");
    }
}

/// The matmul's inputs: A is 20 x 40, B is 40 x 24 (fp16, multiples of 1/32 and 1/8, so every
/// product and sum is exact in fp32).
fn matmul_inputs() -> (Vec<f64>, Vec<f64>) {
    let a = (0..20 * 40).map(|i| f64::from((i * 7) % 11 - 5) * 0.25);
    let b = (0..40 * 24).map(|i| f64::from((i * 5) % 13 - 6) * 0.125);
    (a.collect(), b.collect())
}

/// Triton 3.5.1's interpreter gives exactly A @ B for this case (its largest difference from
/// torch's float32 product of the same inputs is 0.0); the first row, as it printed it, is
/// checked too.
#[test]
fn a_matmul_advancing_two_block_pointers_gives_tritons_values() {
    let (a, b) = matmul_inputs();
    let y = buf(DType::F32, &[0.0; 20 * 24]);
    let got = run(
        5,
        [20, 24, 40],
        [32, 32, 16],
        buf(DType::F16, &a),
        buf(DType::F16, &b),
        y,
    );
    let row0 = [
        0.375, -0.125, -2.25, 1.3125, 1.21875, -0.5, -1.0, -0.6875, 0.03125, 2.375, -2.1875, -0.25,
        1.6875, 0.375, -0.125, -2.25, 1.3125, 1.21875, -0.5, -1.0, -0.6875, 0.03125, 2.375,
        -2.1875,
    ];
    assert_eq!(got[..24], row0);
    // Case 9 is the same matmul with the accumulator in the dot (Triton's interpreter: A @ B
    // exactly too).
    let y = buf(DType::F32, &[0.0; 20 * 24]);
    let (x, w) = (buf(DType::F16, &a), buf(DType::F16, &b));
    let in_dot = run(9, [20, 24, 40], [32, 32, 16], x, w, y);
    for i in 0..20 {
        for j in 0..24 {
            let want: f64 = (0..40).map(|k| a[i * 40 + k] * b[k * 24 + j]).sum();
            assert_eq!(got[i * 24 + j], want, "C[{i}][{j}]");
            assert_eq!(in_dot[i * 24 + j], want, "case 9: C[{i}][{j}]");
        }
    }
}

/// On sm_90 the loads of case 9 (both dimensions checked, zeros outside, rows 16-byte
/// aligned) are copied by TMA into the wgmma loop's rings, as tensor descriptors' are.
#[test]
fn a_block_pointer_matmul_copies_with_tma_on_sm90() {
    let int = ArgKind::Int {
        fits_i32: true,
        divisibility: 8,
        non_negative: true,
        one: false,
    };
    let c = |v| ConstValue::Int(v);
    let req = KernelRequest {
        name: "k".into(),
        args: vec![
            ArgKind::Pointer(DType::F16),
            ArgKind::Pointer(DType::F16),
            ArgKind::Pointer(DType::F32),
            int.clone(),
            int.clone(),
            int,
        ],
        constexprs: vec![
            ("CASE".into(), c(9)),
            ("BM".into(), c(128)),
            ("BN".into(), c(128)),
            ("BK".into(), c(64)),
        ],
        num_warps: 8,
        sums: Default::default(),
    };
    let path = std::path::Path::new("block_ptr.py");
    let out = kwb::tile::compile_for(path, BLOCK_PTR, &[req], Target::sm(90));
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    assert!(
        out.cuda.contains("copied by TMA into rings"),
        "{}",
        out.cuda
    );
    assert!(!out.cuda.contains("kwb_cp16("), "no cp.async left");
    let (_, maps) = &out.tensor_maps[0];
    // x and w (parameters 0 and 1), extents innermost first: K x M and N x K.
    assert_eq!(maps.len(), 2);
    assert_eq!((maps[0].base, maps[1].base), (0, 1));
    assert_eq!(maps[0].dims, vec![Extent::Arg(5), Extent::Arg(3)]);
    assert_eq!(maps[1].dims, vec![Extent::Arg(4), Extent::Arg(5)]);
}

/// The emulator cases: (constexprs, warps, x, w, y (elements, dtype, init), launch arguments).
type EmuCase = (String, u32, [EmuBuf<'static>; 3], String);

fn emulator_cases() -> Vec<EmuCase> {
    let f32_in = |n| EmuBuf("x", "f32", n, false, "{uniform: [-8, 10]}");
    let w = |d, n| EmuBuf("w", d, n, false, "{uniform: [-1, 1]}");
    let y = |n| EmuBuf("y", "f32", n, true, "{uniform: [-3, 3]}");
    let mut v = Vec::new();
    for &(case, [m, n, k], [bm, bn, bk], len, _, _) in EXPECTED {
        let cx = format!("CASE: {case}, BM: {bm}, BN: {bn}, BK: {bk}");
        let bufs = [f32_in(64), w("f32", 1), y(len)];
        v.push((cx, 4, bufs, format!("x, w, y, {m}, {n}, {k}")));
    }
    // Case 9 copied by TMA into wgmma's rings: M = K = 136 and N = 24 (rows 16-byte aligned,
    // no extent a multiple of its block).
    let bufs = [
        EmuBuf("x", "f16", 136 * 136, false, "{uniform: [-1, 1]}"),
        w("f16", 136 * 24),
        y(136 * 24),
    ];
    let cx = "CASE: 9, BM: 128, BN: 128, BK: 64".to_string();
    v.push((cx, 8, bufs, "x, w, y, 136, 24, 136".to_string()));
    // The matmul at K = N = 40 (neither a multiple of its block), fp16 inputs.
    let bufs = [
        EmuBuf("x", "f16", 800, false, "{uniform: [-1, 1]}"),
        w("f16", 1600),
        y(800),
    ];
    let cx = "CASE: 5, BM: 32, BN: 64, BK: 16".to_string();
    v.push((cx, 4, bufs, "x, w, y, 20, 40, 40".to_string()));
    v
}

#[test]
fn block_pointers_agree_with_the_emulator() {
    for (cx, warps, bufs, args) in emulator_cases() {
        emulator_case(BLOCK_PTR, &cx, warps, &bufs, &args, (1e-5, 1e-5));
    }
}

/// The matmul with block pointers on a GPU (H100/H200) agrees with the interpreter.
#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn a_block_pointer_matmul_on_a_gpu_gives_the_interpreters_values() {
    let name = "a_block_pointer_matmul_on_a_gpu_gives_the_interpreters_values";
    if kwb::run::gpu::open::gpu_or_skip(name).is_none() {
        return;
    }
    // Case 5 (cp.async; x and y both 20 x 40), then case 9 (TMA; x and y both 136 x 24).
    let mut cases = emulator_cases();
    let (cx, warps, bufs, args) = cases.pop().unwrap();
    crate::gpu_check_within(BLOCK_PTR, &cx, warps, &bufs, &args, (1e-5, 1e-5));
    let (cx, warps, bufs, args) = cases.pop().unwrap();
    let [x, w, y] = bufs;
    let x = EmuBuf(x.0, x.1, 136 * 24, x.3, x.4);
    let args = args.replace("136, 24, 136", "136, 24, 24");
    crate::gpu_check_within(BLOCK_PTR, &cx, warps, &[x, w, y], &args, (1e-5, 1e-5));
}

#[test]
fn misuses_of_block_pointers_are_errors_at_the_argument() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    n = tl.program_id(0)
    a = tl.make_block_ptr(x_ptr, (4, 4), (4, 1, 1), (0, 0), (4, 4), (1, 0))
    b = tl.make_block_ptr(x_ptr, (4, 4), (4, 1), (0, 0), (4, n), (1, 0))
    p = tl.make_block_ptr(x_ptr, (4, 4), (4, 1), (0, 0), (4, 4), (1, 0))
    c = tl.load(p, boundary_check=(0, 2))
    d = tl.load(p, boundary_check=(0, 1), padding_option="one")
    e = tl.load(p + 1)
    f = tl.advance(p, (1, ))
    g = tl.load(p, mask=n > 0)
    h = tl.load(x_ptr + tl.arange(0, 4), boundary_check=(0, ))
    tl.store(p, tl.zeros((4, 4), tl.float16))
    q = tl.make_block_ptr(x_ptr, (4, 4), (4, 1), (0, 0), (4, 4), (1, 1))
"#;
    let e = errors(src, &[]);
    for (line, col, what) in [
        (8, 42, "`strides` has 3 entries, but `block_shape` has 2"),
        (9, 58, "`block_shape` entries must be compile-time integers"),
        (
            11,
            35,
            "`boundary_check` names dimension 2, but the block pointer has 2 dimension(s)",
        ),
        (
            12,
            58,
            "`padding_option` must be \"zero\", \"nan\" or \"\", found the string \"one\"",
        ),
        (13, 17, "`+` on a block pointer"),
        (
            14,
            23,
            "`offsets` has 1 entries, but the block pointer has 2",
        ),
        (15, 25, "`mask` cannot be given with a block pointer"),
        (16, 57, "`boundary_check` applies to block pointers"),
        (
            17,
            17,
            "a block pointer to float32 stores float32 values, found a float16[4, 4]",
        ),
        (18, 66, "`order` must list each dimension from 0 to 1 once"),
    ] {
        assert!(
            e.contains(&format!("k.py:{line}:{col}: error: {what}")),
            "{line}:{col} {what}\n{e}"
        );
    }
}
