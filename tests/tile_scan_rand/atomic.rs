//! `tl.atomic_xchg` and `tl.atomic_cas`, with `sem=` and `scope=` accepted.

use super::{buf, emulator_agrees, int, interp, EmuBuf};
use kwb::tile::DType;

const ATOMICS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, i_ptr, old_ptr, lock_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    even = offs % 2 == 0
    old = tl.atomic_xchg(x_ptr + offs, offs * 10, mask=even, sem="acq_rel", scope="gpu")
    tl.store(old_ptr + offs, old.to(tl.float32), mask=even)
    prev = tl.atomic_cas(i_ptr + offs, offs, offs + 100, sem="relaxed")
    tl.store(old_ptr + BLOCK + offs, prev.to(tl.float32))
    got = tl.atomic_cas(lock_ptr, 0, 1)
    again = tl.atomic_cas(lock_ptr, 0, 1)
    released = tl.atomic_xchg(lock_ptr, 0)
    tl.store(old_ptr + 2 * BLOCK, got.to(tl.float32))
    tl.store(old_ptr + 2 * BLOCK + 1, again.to(tl.float32))
    tl.store(old_ptr + 2 * BLOCK + 2, released.to(tl.float32))
"#;

fn run(d: DType) -> Vec<Vec<f64>> {
    let x: Vec<f64> = (1..=8).map(f64::from).collect();
    let i = [0., 5., 2., 7., 4., 9., 6., 11.];
    let args = [
        buf(d, &x),
        buf(d, &i),
        buf(DType::F32, &[-1.0; 19]),
        buf(DType::I32, &[0.0]),
    ];
    interp(ATOMICS, &[("BLOCK", int(8))], 1, &args).unwrap()
}

/// Expected values from Triton 3.9.0's interpreter with int32 `x` and `i` (its interpreter
/// refuses a float exchange; the float run below is the same numbers, worked out by hand).
#[test]
fn exchange_and_compare_and_swap_give_tritons_values() {
    for d in [DType::I32, DType::F32] {
        let out = run(d);
        assert_eq!(out[0], [0., 2., 20., 4., 40., 6., 60., 8.], "{d:?}");
        assert_eq!(out[1], [100., 5., 102., 7., 104., 9., 106., 11.], "{d:?}");
        let old = [
            1., -1., 3., -1., 5., -1., 7., -1., 0., 5., 2., 7., 4., 9., 6., 11., 0., 1., 1.,
        ];
        assert_eq!(out[2], old, "{d:?}");
        assert_eq!(out[3], [0.], "{d:?}");
    }
}

#[test]
fn atomics_agree_with_the_emulator() {
    for (dtype, warps, block) in [("i32", 1, 8), ("f32", 2, 64), ("f64", 4, 256)] {
        let bufs = [
            EmuBuf("x", dtype, block, true, "arange"),
            EmuBuf("i", dtype, block, true, "{uniform: [0, 4]}"),
            EmuBuf("old", "f32", 2 * block + 3, true, ""),
            EmuBuf("lock", "i32", 1, true, "zeros"),
        ];
        let cx = format!("BLOCK: {block}");
        emulator_agrees(ATOMICS, &cx, warps, &bufs, (0.0, 0.0));
    }
}

#[test]
fn sixteen_bit_exchanges_are_errors() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(h_ptr, y_ptr):
    tl.atomic_xchg(y_ptr + tl.arange(0, 4), 1.0)
    tl.atomic_cas(h_ptr + tl.arange(0, 4), 1.0, 2.0)
"#;
    let args = [buf(DType::F16, &[0.0; 4]), buf(DType::F32, &[0.0; 4])];
    let e = interp(src, &[], 1, &args).unwrap_err();
    assert!(
        e.contains("k.py:8:") && e.contains("`tl.atomic_cas` of float16 is not supported"),
        "{e}"
    );
    assert!(!e.contains("k.py:7:"), "{e}");
}
