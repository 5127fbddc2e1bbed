//! The checker: AST + request → typed IR. (Written by the front-end work; this stub keeps the
//! crate building until then.)
use super::{ir, KernelRequest, KernelSignature};
use crate::diag::Diagnostic;
use std::path::Path;

/// Checks and specialises each requested kernel of `source`; the kernels come back in request
/// order, with every diagnostic (errors and warnings) found on the way.
pub fn check(
    path: &Path,
    _source: &str,
    _requests: &[KernelRequest],
) -> (Vec<ir::Kernel>, Vec<Diagnostic>) {
    (
        Vec::new(),
        vec![Diagnostic::error("the tile checker is not written yet").in_file(path)],
    )
}

/// The `@triton.jit` kernels of `source` and their parameters.
pub fn signatures(path: &Path, _source: &str) -> Result<Vec<KernelSignature>, Vec<Diagnostic>> {
    Err(vec![Diagnostic::error(
        "the tile parser is not written yet",
    )
    .in_file(path)])
}
