//! The GPU side of kwb: finding a usable GPU and talking to the CUDA driver through cudarc,
//! plus the measurement machinery (statistics and the stopping rule). Everything that can fault
//! on a GPU belongs here, behind checks that turn a missing driver into an error, not a panic.

pub mod gpu;
pub mod protocol;
pub mod stats;
