//! `tl.sort` (the kernel is `sort.py`): sorted lines in every dtype, checked against a sort
//! done here; NaN and `-0.0` where Triton 3.9.0's interpreter puts them; the calls kwb
//! refuses; and the PTX emulator running kwb's CUDA agreeing with the interpreter bit for
//! bit. `sort_triton.rs` compares with Triton's own interpreter.

use super::{buf, emulator_check, errors, flag, int, interp, EmuBuf};
use crate::support::rng::Rng;
use kwb::tile::ir::Scalar;
use kwb::tile::{ConstValue, DType};
use std::cmp::Ordering;

pub(super) const SORT: &str = include_str!("sort.py");

/// A dtype to sort in: loaded from and stored to a buffer of `buf`, with values from
/// `value`; `conv` is what one value becomes on the way (to `dt`, then back to `buf`), and
/// `order` the order `dt` sorts those in.
pub(super) struct Ty {
    pub dt: Scalar,
    pub buf: DType,
    pub value: fn(&mut Rng) -> f64,
    pub conv: fn(f64) -> f64,
    pub order: fn(f64, f64) -> Ordering,
}

fn same(x: f64) -> f64 {
    x
}

fn numeric(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// Small integers: many equal keys.
fn small(r: &mut Rng) -> f64 {
    r.below(41) as f64 - 20.0
}

/// Quarters in [-64, 64]: exact in fp16 and bf16.
fn quarter(r: &mut Rng) -> f64 {
    (r.below(513) as f64 - 256.0) * 0.25
}

fn any_i8(r: &mut Rng) -> f64 {
    r.below(256) as f64 - 128.0
}

fn any_u8(r: &mut Rng) -> f64 {
    r.below(256) as f64
}

fn any_i16(r: &mut Rng) -> f64 {
    f64::from(r.next() as i16)
}

fn any_i32(r: &mut Rng) -> f64 {
    f64::from(r.next() as i32)
}

/// 53-bit integers, exact as `f64`.
fn any_i53(r: &mut Rng) -> f64 {
    (r.next() as i64 >> 11) as f64
}

fn around_u16(r: &mut Rng) -> f64 {
    r.below(80001) as f64 - 40000.0
}

fn sign(r: &mut Rng) -> f64 {
    r.below(3) as f64 - 1.0
}

/// An int32 converted to uint16 (it wraps) and stored back to int32.
fn to_u16(x: f64) -> f64 {
    f64::from(x as i64 as u16)
}

fn to_bool(x: f64) -> f64 {
    f64::from(u8::from(x != 0.0))
}

/// The order of int32 / int64 values converted to uint32 / uint64 (negative ones last).
fn as_u32(a: f64, b: f64) -> Ordering {
    (a as i64 as u32).cmp(&(b as i64 as u32))
}

fn as_u64(a: f64, b: f64) -> Ordering {
    (a as i64 as u64).cmp(&(b as i64 as u64))
}

pub(super) fn types() -> Vec<Ty> {
    use Scalar as S;
    let t = |dt, buf, value, conv, order| Ty {
        dt,
        buf,
        value,
        conv,
        order,
    };
    vec![
        t(S::I32, DType::I32, any_i32, same, numeric),
        t(S::I32, DType::I32, small, same, numeric),
        t(S::F32, DType::F32, quarter, same, numeric),
        t(S::F16, DType::F16, quarter, same, numeric),
        t(S::BF16, DType::BF16, quarter, same, numeric),
        t(S::F64, DType::F64, quarter, same, numeric),
        t(S::I8, DType::I8, any_i8, same, numeric),
        t(S::I16, DType::I16, any_i16, same, numeric),
        t(S::I64, DType::I64, any_i53, same, numeric),
        t(S::U8, DType::U8, any_u8, same, numeric),
        t(S::U16, DType::I32, around_u16, to_u16, numeric),
        t(S::U32, DType::I32, any_i32, same, as_u32),
        t(S::U64, DType::I64, any_i53, same, as_u64),
        t(S::I1, DType::I32, sign, to_bool, numeric),
    ]
}

fn constexprs(
    t: &Ty,
    r: usize,
    n: usize,
    desc: bool,
    form: i64,
) -> Vec<(&'static str, ConstValue)> {
    vec![
        ("R", int(r as i64)),
        ("N", int(n as i64)),
        ("DESC", flag(desc)),
        ("DT", ConstValue::DType(t.dt)),
        ("FORM", int(form)),
    ]
}

/// kwb's interpreter on the `r` x `n` tile `x` (`r` = 1 for the 1-D form 0).
pub(super) fn run(t: &Ty, r: usize, n: usize, desc: bool, form: i64, x: &[f64]) -> Vec<f64> {
    let cx = constexprs(t, r, n, desc, form);
    let args = [buf(t.buf, x), buf(t.buf, &vec![0.0; x.len()])];
    interp(SORT, &cx, 4, &args).unwrap().remove(1)
}

fn expected(t: &Ty, x: &[f64], n: usize, desc: bool) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|line| {
            let mut v: Vec<f64> = line.iter().map(|&a| (t.conv)(a)).collect();
            v.sort_by(|a, b| (t.order)(*a, *b));
            if desc {
                v.reverse();
            }
            v
        })
        .collect()
}

/// Same bits, except that any NaN matches any NaN (a buffer's NaN payload is not kept).
pub(super) fn bits(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && (got.iter().zip(want))
            .all(|(g, w)| (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits())
}

/// The shapes (rows, length, form) the interpreter tests use.
const SHAPES: [(usize, usize, i64); 6] = [
    (1, 2, 0),
    (1, 16, 0),
    (1, 512, 0),
    (4, 8, 1),
    (2, 64, 2),
    (8, 32, 3),
];

#[test]
fn sorts_give_sorted_lines_in_every_dtype() {
    let mut rng = Rng(2026);
    for t in types() {
        for (r, n, form) in SHAPES {
            for desc in [false, true] {
                let x: Vec<f64> = (0..r * n).map(|_| (t.value)(&mut rng)).collect();
                assert_eq!(
                    run(&t, r, n, desc, form, &x),
                    expected(&t, &x, n, desc),
                    "{} {r} x {n}, form {form}, descending {desc}",
                    t.dt.triton_name()
                );
            }
        }
    }
}

/// Expected values from Triton 3.9.0's interpreter (`TRITON_INTERPRET=1`) on the same
/// float32 inputs: a NaN or a pair of zeros of both signs never compares greater, so the
/// compare-and-swap that meets one gives both positions the same value.
#[test]
fn nan_and_signed_zeros_give_tritons_values() {
    let nan = f64::NAN;
    let cases: [(&[f64], bool, &[f64]); 10] = [
        (&[3., nan, 1., 2.], false, &[1., 2., 3., 3.]),
        (&[3., nan, 1., 2.], true, &[3., 3., 2., 1.]),
        (&[nan, 1., 2., 3.], false, &[nan, nan, nan, nan]),
        (&[nan, 1., 2., 3.], true, &[3., 2., 3., 2.]),
        (&[-0., 0., 0., -0.], false, &[-0., -0., -0., -0.]),
        (&[-0., 0., 0., -0.], true, &[-0., -0., -0., -0.]),
        (&[0., -0., 1., -1.], false, &[-1., 0., 0., 1.]),
        (&[0., -0., 1., -1.], true, &[1., 0., 0., -1.]),
        (
            &[5., nan, nan, 1., 0., -0., 2., nan],
            false,
            &[1., 1., 5., 5., 1., 1., 5., 5.],
        ),
        (&[5., nan, nan, 1., 0., -0., 2., nan], true, &[nan; 8]),
    ];
    let f32t = &types()[2];
    for (x, desc, want) in cases {
        let got = run(f32t, 1, x.len(), desc, 0, x);
        assert!(bits(&got, want), "{x:?} descending {desc}: {got:?}");
    }
}

#[test]
fn sorts_kwb_refuses_are_errors_at_the_call() {
    let kernel = |call: &str| {
        format!(
            r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    r = tl.arange(0, 2)[:, None]
    c = tl.arange(0, 2)[None, :]
    x = tl.load(x_ptr + r * 2 + c)
    y = {call}
    tl.store(y_ptr + r * 2 + c, y)
"#
        )
    };
    for (call, want) in [
        ("tl.sort(x, 0)", "sorts along the last dimension only: `dim` must be None or 1 for this tile of 2 dimension(s), found 0"),
        ("tl.sort(x, dim=-1)", "found -1 (Triton refuses negative dimensions here)"),
        ("x.sort(descending=tl.program_id(0) == 0)", "`descending` must be a compile-time bool"),
        ("tl.sort(tl.load(x_ptr))", "`tl.sort` needs a tile, found a scalar float32"),
        ("tl.sort(x_ptr + r)", "`tl.sort` cannot sort pointers"),
        ("tl.sort(x, 1, False, 3)", "`tl.sort` takes at most 3 argument(s)"),
    ] {
        let e = errors(&kernel(call), &[]);
        assert!(e.contains("k.py:10:") && e.contains(want), "{call}: {e}");
    }
}

/// The CUDA path: 1-D lines from a few elements per warp to several per thread, many short
/// and a few long rows, a row longer than the program's threads, a tile in `tl.dot`'s
/// layout, one past 48 KiB (dynamic shared memory), 1 to 8 warps, every dtype.
#[test]
fn sorts_agree_with_the_emulator_bit_for_bit() {
    support_check();
    let cases = emulator_cases();
    for (r, n, form, warps, dt, b, init) in cases {
        for desc in [false, true] {
            check(r, n, form, warps, dt, b, init, desc);
        }
    }
    // The rows of a product of small integers (exact whatever the order of its sums).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.npy");
    let mut rng = Rng(16);
    let x: Vec<f64> = (0..256).map(|_| rng.below(7) as f64 - 3.0).collect();
    kwb::run::host::npy::write(&path, &[256], DType::F64, &x).unwrap();
    let init = format!("{{npy: {}}}", path.display());
    for desc in [false, true] {
        check(16, 16, 4, 4, "float32", "f32", &init, desc);
    }
}

/// NaNs and zeros of both signs, from a `.npy` file: the emulator gives the interpreter's
/// values (which are Triton's, see above) bit for bit.
#[test]
fn nan_and_signed_zeros_agree_with_the_emulator() {
    support_check();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    for (r, n, warps, dt, b) in [
        (1, 256, 2, "float32", "f32"),
        (8, 32, 4, "float16", "f16"),
        (4, 64, 1, "bfloat16", "bf16"),
    ] {
        let x = with_specials(&mut rng, r * n);
        let path = dir.path().join(format!("{dt}.npy"));
        kwb::run::host::npy::write(&path, &[r * n], DType::F64, &x).unwrap();
        let init = format!("{{npy: {}}}", path.display());
        for desc in [false, true] {
            check(r, n, 1, warps, dt, b, &init, desc);
        }
    }
}

fn support_check() {
    crate::support::provision_nvrtc();
}

/// Quarters with about one NaN, one `-0.0` and one `0.0` in eight.
pub(super) fn with_specials(rng: &mut Rng, len: usize) -> Vec<f64> {
    (0..len)
        .map(|_| match rng.below(8) {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            _ => quarter(rng),
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn check(r: usize, n: usize, form: i64, warps: u32, dt: &str, b: &str, init: &str, desc: bool) {
    let cx = format!("R: {r}, N: {n}, DESC: {desc}, DT: tl.{dt}, FORM: {form}");
    let bufs = [
        EmuBuf("x", b, r * n, false, init),
        EmuBuf("y", b, r * n, true, ""),
    ];
    emulator_check(SORT, &cx, warps, &bufs, "x, y", None);
}

/// The generated sort on a GPU (H100/H200) gives the interpreter's values bit for bit: 1-D and
/// 2-D tiles, 1 to 8 warps, both directions, floats and integers of each width.
#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn sorts_on_a_gpu_give_the_interpreters_values() {
    if kwb::run::gpu::open::gpu_or_skip("sorts_on_a_gpu_give_the_interpreters_values").is_none() {
        return;
    }
    // The emulator test's cases that cover each dtype width, both layouts and 2-8 warps.
    let all = emulator_cases();
    let cases = [3, 4, 6, 7, 10, 11, 13, 19].map(|i| all[i]);
    for (r, n, form, warps, dt, b, init) in cases {
        for desc in [false, true] {
            let cx = format!("R: {r}, N: {n}, DESC: {desc}, DT: tl.{dt}, FORM: {form}");
            let bufs = [
                EmuBuf("x", b, r * n, false, init),
                EmuBuf("y", b, r * n, true, ""),
            ];
            crate::gpu_check(SORT, &cx, warps, &bufs, "x, y");
        }
    }
}

/// (rows, length, form, warps, dtype, buffer dtype, init) of the sorts run on the emulator.
type SortCase = (
    usize,
    usize,
    i64,
    u32,
    &'static str,
    &'static str,
    &'static str,
);

fn emulator_cases() -> Vec<SortCase> {
    let floats = "{uniform: [-4, 4]}";
    let ints = "{uniform: [-1000, 1000]}";
    vec![
        (1, 8, 0, 1, "float32", "f32", floats),
        (1, 64, 0, 1, "float32", "f32", floats),
        (1, 256, 0, 2, "float32", "f32", floats),
        (1, 1024, 0, 4, "float32", "f32", floats),
        (1, 2048, 0, 8, "int32", "i32", ints),
        (2, 4, 1, 1, "int32", "i32", ints),
        (16, 64, 2, 4, "float32", "f32", floats),
        (64, 16, 3, 2, "int32", "i32", ints),
        (4, 512, 1, 8, "float32", "f32", floats),
        (128, 64, 2, 8, "float64", "f64", floats),
        (8, 128, 1, 4, "float16", "f16", floats),
        (8, 128, 2, 4, "bfloat16", "bf16", floats),
        (4, 64, 1, 2, "float64", "f64", floats),
        (4, 64, 1, 2, "int8", "i8", "{uniform: [-100, 100]}"),
        (4, 64, 1, 2, "int16", "i16", ints),
        (4, 64, 1, 2, "int64", "i64", ints),
        (4, 64, 1, 2, "uint8", "u8", "{uniform: [0, 255]}"),
        (4, 64, 1, 2, "uint16", "i32", ints),
        (4, 64, 1, 2, "uint32", "i32", ints),
        (4, 64, 1, 2, "uint64", "i64", ints),
        (4, 64, 1, 2, "int1", "i32", "{uniform: [-1, 1]}"),
    ]
}
