//! Calls of `@triton.jit` helpers: a runtime value passed where the helper annotates its
//! parameter `tl.constexpr` is bound as it is, as Triton binds it (tutorial 06 passes its
//! runtime `N_CTX` to `_attn_fwd_inner`'s constexpr `N_CTX`).

use super::{buf, interp, EmuBuf};
use kwb::tile::DType;

const CALL: &str = r#"
import triton
import triton.language as tl

@triton.jit
def total(x_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    return tl.sum(acc, axis=0)

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.store(y_ptr, total(x_ptr, n, BLOCK))
    tl.store(y_ptr + 1, total(x_ptr, 5, BLOCK))
"#;

#[test]
fn a_runtime_value_binds_to_a_helpers_constexpr_parameter() {
    let x: Vec<f64> = (0..40).map(f64::from).collect();
    let args = [
        buf(DType::F32, &x),
        buf(DType::F32, &[0.0; 2]),
        super::A::Int(37),
    ];
    let out = interp(CALL, &[("BLOCK", super::int(16))], 1, &args).unwrap();
    // 0 + 1 + ... + 36 and 0 + ... + 4: Triton 3.9.0's interpreter gives the same.
    assert_eq!(out[1], vec![666.0, 10.0]);
    let bufs = [
        EmuBuf("x", "f32", 64, false, "{uniform: [-4, 4]}"),
        EmuBuf("y", "f32", 2, true, ""),
    ];
    super::emulator_case(CALL, "BLOCK: 16", 1, &bufs, "x, y, 50", (1e-6, 1e-6));
}
