//! The CUDA writer: typed IR → CUDA C++. (Written by the back-end work; this stub keeps the
//! crate building until then.)
use super::ir;

/// CUDA C++ for `kernels`: one `extern "C" __global__` function each.
pub fn write(_kernels: &[ir::Kernel]) -> String {
    String::new()
}
