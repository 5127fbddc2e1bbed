//! The GPU side of kwb. The supervisor side plans jobs (`plan`, `params`) and drives an
//! isolated worker process (`supervisor`, `protocol`); the worker (`worker`, `execute`,
//! `program`, `bench`, `device`) owns the GPU, makes inputs (`inputs`, `counter_rng`, `npy`; `devgen` draws them on the GPU), checks outputs
//! (`check`; `redzone` and `canary` for stray writes) and times runs (`stats`). Everything that
//! can fault on a GPU lives in the worker, behind checks that turn a missing driver into an
//! error, not a panic.

pub mod bench;
pub mod canary;
pub mod check;
pub mod counter_rng;
pub mod cpu;
pub mod cupti;
pub mod cupti_locate;
pub mod data;
pub mod devgen;
pub mod device;
pub mod execute;
pub mod flush;
pub mod gpu;
pub mod inputs;
pub mod kernel_span;
pub mod npy;
pub mod params;
pub mod peak;
pub mod plan;
pub mod program;
pub mod protocol;
pub mod redzone;
pub use crate::common::stats;
pub mod stream_peak;
pub mod supervisor;
pub mod worker;
pub mod worker_command;
