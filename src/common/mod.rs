//! The types every layer shares, below all of them: the GPU architectures (`Arch`, their
//! limits) and timing statistics. Nothing here imports another kwb module, so the layers
//! above (workspace, compile, run, report) import it and never each other in a circle
//! (`scripts/import_cycles.py` checks this in CI).

pub mod arch;
pub mod gpu_spec;
pub mod stats;
