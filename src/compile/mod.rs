//! The compiler front half: find NVRTC, compile kernel versions to CUBIN and PTX, read back what
//! the compiler produced (ptxas' log and the CUBIN's own records), and work out occupancy.
//! Pure: no UI, no GPU.

pub use crate::common::arch;
pub mod cache;
pub mod crosscheck;
pub mod cubin;
pub mod includes;
pub mod locate;
pub mod nvrtc;
pub mod nvrtc_log;
pub mod occupancy;
pub mod pipeline;
pub mod provision;
pub mod ptxas_log;
pub mod tile_version;

pub use arch::Arch;
pub use cache::Cache;
pub use pipeline::{CompiledVersion, Compiler, KernelResources};
