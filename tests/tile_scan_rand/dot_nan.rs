//! A float `tl.dot` whose product meets 0 * inf gives NaN there, as the tensor cores do: the
//! interpreter, the oracle every engine is held to, must not skip zero operands.

use super::{buf, interp};
use kwb::tile::DType;

const DOT: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(a_ptr, b_ptr, y_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(y_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))
"#;

#[test]
fn zero_times_infinity_in_a_dot_is_nan() {
    // a is all zeros; b is ones with one infinity, at row 3, column 5.
    let a = vec![0.0; 256];
    let mut b = vec![1.0; 256];
    b[3 * 16 + 5] = f64::INFINITY;
    let args = [
        buf(DType::F16, &a),
        buf(DType::F16, &b),
        buf(DType::F32, &[0.0; 256]),
    ];
    let out = interp(DOT, &[], 4, &args).unwrap();
    for (i, v) in out[2].iter().enumerate() {
        if i % 16 == 5 {
            assert!(v.is_nan(), "column 5 meets 0 * inf: {v} at {i}");
        } else {
            assert_eq!(*v, 0.0, "at {i}");
        }
    }
}
