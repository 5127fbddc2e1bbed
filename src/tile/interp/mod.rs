//! The tile interpreter: the IR run on the CPU, program by program. (Written by the back-end
//! work; this stub keeps the crate building until then.)
use super::{ir, InterpArg, InterpBuffer};

/// What a run did: `ops` counts element operations, a measure of work.
pub struct InterpStats {
    pub ops: u64,
}

/// An error that stopped a run: an out-of-bounds access, or an operation the interpreter
/// cannot do, with the program and the tile source line.
pub struct InterpError {
    pub program: [u32; 3],
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl InterpError {
    pub fn kind(&self) -> &'static str {
        "out-of-bounds"
    }
}

/// Runs `kernel` over `grid` programs on `buffers`.
pub fn run(
    _kernel: &ir::Kernel,
    _grid: [u32; 3],
    _args: &[InterpArg],
    _buffers: &mut [InterpBuffer],
) -> Result<InterpStats, InterpError> {
    Err(InterpError {
        program: [0; 3],
        message: "the tile interpreter is not written yet".into(),
        file: None,
        line: None,
    })
}
