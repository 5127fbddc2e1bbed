//! The engine under `kwb batch` and `kwb watch`: one planner turns versions × sizes into runs
//! ([`plan`]), one scheduler orders them with the latest save winning ([`schedule`],
//! [`latest`]), and one seam runs them on a GPU or the CPU ([`backend`]), one thread per
//! backend ([`pool`]). The two front ends differ only in what they submit and where the
//! events go.

pub mod backend;
pub mod gpus;
pub mod latest;
pub mod plan;
pub mod pool;
pub mod schedule;

pub use backend::{cpu_code, Backend, CpuBackend, CpuEngine, GpuBackend, Ran};
pub use gpus::Devices;
pub use plan::{plan_runs, PlannedRun, Planning, RunCode};
pub use pool::{Event, Pool, Sink};
pub use schedule::{Focus, Order, Request, Target};
