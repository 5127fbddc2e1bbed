//! What a job needs, split by side:
//!
//! - [`plan`]: turning a version at a size into a [`protocol::RunJob`], and reading a kernel's
//!   parameters from its PTX. Runs in the supervisor; touches no device.
//! - [`host`]: a job's host data, shared by every backend: seeded inputs, `.npy` files, the
//!   reference computed on the host, and the output checks. Touches no device.
//! - [`protocol`]: the framed messages between the supervisor and a worker.
//! - [`supervisor`]: starts and drives an isolated worker process (locally, over ssh or through
//!   any command) and survives its faults.
//! - [`gpu`]: the worker, which owns the GPU: opening it, loading programs, running, checking
//!   and timing them (CUPTI), cold-L2 flushes, red zones and the device-side input draws.
//!   Everything that can fault on a GPU lives here, behind checks that turn a missing driver
//!   into an error, not a panic.
//! - [`cpu`]: the CPU backends, kwb's PTX emulator and tile interpreter, on the same jobs.
//!
//! Imports point down: `gpu` and `cpu` use `host`, `plan` and `protocol`; `supervisor` uses
//! only `protocol`; `host` and `plan` use `protocol`.

pub mod cpu;
pub mod gpu;
pub mod host;
pub mod plan;
pub mod protocol;
pub mod supervisor;
pub use crate::common::stats;
