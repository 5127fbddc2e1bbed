//! A job's host data, shared by the GPU worker and the CPU backends: seeded inputs
//! ([`inputs`], with [`counter_rng`]'s counter-based draws), `.npy` files ([`npy`]), the
//! reference and the starting contents of each output ([`data`]), and the output checks
//! ([`check`]). Nothing here touches a device.

pub mod check;
pub mod counter_rng;
pub mod data;
pub mod inputs;
pub mod npy;
pub mod shared;
