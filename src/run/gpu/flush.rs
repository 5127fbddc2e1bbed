//! The cold-L2 flush between timed runs. A kernel reads a buffer twice the L2 size through L2,
//! so when the timed kernel starts, L2 holds only clean lines of other data, as after Nsight
//! Compute's `--cache-control all`. A memset (the fallback, when the kernel cannot be loaded)
//! leaves up to an L2 of dirty lines instead, whose write-back the timed kernel pays: on an
//! H200 that read a 16Mi add 10-17% slower than Nsight Compute did.

use super::device::{DevBuf, Module, Stream};
use cudarc::driver::result::{self, DriverError as CuError};
use cudarc::driver::sys;
use std::ffi::c_void;

const THREADS: u32 = 256;

pub struct L2Flush {
    buffer: DevBuf,
    sink: DevBuf,
    /// The read kernel, with its module kept alive; `None`: memset instead.
    kernel: Option<(Module, sys::CUfunction)>,
    grid: u32,
    flip: std::cell::Cell<u8>,
}

impl L2Flush {
    /// A flush for an L2 of `l2_bytes` on a device of `sm_count` multiprocessors.
    pub fn new(l2_bytes: u64, sm_count: u32) -> Result<L2Flush, CuError> {
        let bytes = ((2 * l2_bytes as usize).max(1 << 20) + 15) & !15;
        let buffer = DevBuf::alloc(bytes)?;
        let sink = DevBuf::alloc(16)?;
        let mut image = crate::run::gpu::stream_peak::PTX.as_bytes().to_vec();
        image.push(0);
        let kernel = Module::load(&image)
            .and_then(|m| m.function("kwb_flush_read").map(|f| (m, f)))
            .ok();
        Ok(L2Flush {
            buffer,
            sink,
            kernel,
            grid: sm_count.max(1).saturating_mul(4),
            flip: std::cell::Cell::new(0),
        })
    }

    /// Fills the buffer once (never with zeros, so the read kernel's guard never fires).
    pub fn prepare(&self, s: &Stream) -> Result<(), CuError> {
        s.memset(&self.buffer, 0x5a)
    }

    /// Enqueues one flush on `s`.
    pub fn run(&self, s: &Stream) -> Result<(), CuError> {
        let Some((_, func)) = &self.kernel else {
            self.flip.set(self.flip.get().wrapping_add(1));
            return s.memset(&self.buffer, self.flip.get());
        };
        let (mut src, mut n, mut sink) = (
            self.buffer.ptr,
            (self.buffer.bytes / 16) as u64,
            self.sink.ptr,
        );
        let mut args: Vec<*mut c_void> = vec![
            &mut src as *mut u64 as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
            &mut sink as *mut u64 as *mut c_void,
        ];
        // SAFETY: the arguments match kwb_flush_read's parameters (a pointer, a u64 count of
        // 16-byte vectors in that buffer, a pointer to 16 bytes) and point at live locals.
        unsafe {
            result::launch_kernel(*func, (self.grid, 1, 1), (THREADS, 1, 1), 0, s.0, &mut args)
        }
    }

    /// Whether the read kernel is used (false: the memset fallback).
    pub fn reads(&self) -> bool {
        self.kernel.is_some()
    }
}
