//! Owned CUDA driver resources for the worker: device memory, a module, a stream, timing
//! events and a captured graph, each freed on drop. Calls go through cudarc's thin `result`
//! layer so kwb controls every flag (timing events, non-blocking streams) itself.

use super::canary::GuardLayout;
use cudarc::driver::result::{self, DriverError as CuError};
use cudarc::driver::sys;
use std::ffi::{c_void, CString};

/// A driver error as the user should read it: the error's name, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
pub fn error_name(e: &CuError) -> String {
    e.error_name()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0))
}

/// Errors after which the context cannot be used again (the driver's "sticky" errors).
pub fn is_sticky(e: &CuError) -> bool {
    use sys::cudaError_enum::*;
    matches!(
        e.0,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_UNKNOWN
            | CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// Device memory, freed on drop. A guarded buffer sits inside a larger allocation between two
/// red zones filled with a canary (see [`crate::run::gpu::canary`]); `ptr` is its first element either way.
pub struct DevBuf {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
    base: sys::CUdeviceptr,
    guards: Option<GuardLayout>,
}

impl DevBuf {
    pub fn alloc(bytes: usize) -> Result<DevBuf, CuError> {
        // A zero-byte buffer still gets a distinct, valid pointer.
        // SAFETY: cuMemAlloc with a non-zero size; the memory is freed once, by `Drop`.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }?;
        Ok(DevBuf {
            ptr,
            bytes,
            base: ptr,
            guards: None,
        })
    }

    /// `bytes` of device memory between two red zones of at least `guard` bytes, each filled
    /// with the canary. The data stays 256-byte aligned.
    pub fn alloc_guarded(bytes: usize, guard: usize) -> Result<DevBuf, CuError> {
        let layout = GuardLayout::new(bytes, guard);
        // SAFETY: cuMemAlloc with a non-zero size; the memory is freed once, by `Drop`.
        let base = unsafe { result::malloc_sync(layout.total().max(1)) }?;
        let buf = DevBuf {
            ptr: base + layout.data_offset() as u64,
            bytes,
            base,
            guards: Some(layout),
        };
        for (at, canary) in [
            (0, layout.before_pattern()),
            (layout.after_offset(), layout.after_pattern()),
        ] {
            if !canary.is_empty() {
                // SAFETY: each red zone lies inside the allocation: [0, data_offset) and
                // [after_offset, after_offset + after_len), whose end is `layout.total()`.
                unsafe { result::memcpy_htod_sync(buf.base + at as u64, &canary) }?;
            }
        }
        Ok(buf)
    }

    /// The red zones' layout, for a guarded buffer.
    pub fn guards(&self) -> Option<GuardLayout> {
        self.guards
    }

    /// Reads both red zones back: (before, after); empty for an unguarded buffer.
    pub fn read_guards(&self) -> Result<(Vec<u8>, Vec<u8>), CuError> {
        let Some(layout) = self.guards else {
            return Ok((Vec::new(), Vec::new()));
        };
        let read = |at: usize, len: usize| {
            let mut out = vec![0u8; len];
            if len > 0 {
                // SAFETY: `out` holds `len` bytes, and [at, at + len) is one of the red zones,
                // inside the allocation of `layout.total()` bytes.
                unsafe { result::memcpy_dtoh_sync(&mut out, self.base + at as u64) }?;
            }
            Ok(out)
        };
        Ok((
            read(0, layout.data_offset())?,
            read(layout.after_offset(), layout.after_len())?,
        ))
    }

    pub fn upload(&self, data: &[u8]) -> Result<(), CuError> {
        assert!(
            data.len() <= self.bytes.max(1),
            "upload larger than the buffer"
        );
        // SAFETY: `data.len()` fits the allocation at `self.ptr` (asserted just above; an empty
        // buffer's allocation still has one byte).
        unsafe { result::memcpy_htod_sync(self.ptr, data) }
    }

    pub fn download(&self) -> Result<Vec<u8>, CuError> {
        let mut out = vec![0u8; self.bytes];
        // SAFETY: `out` and the buffer at `self.ptr` both hold `self.bytes` bytes.
        unsafe { result::memcpy_dtoh_sync(&mut out, self.ptr) }?;
        Ok(out)
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: `base` came from cuMemAlloc and is freed only here, once. cuMemFree waits
        // for work still using it (the driver documents it as synchronous in this use).
        unsafe {
            let _ = result::free_sync(self.base);
        }
    }
}

/// A stream of our own (non-blocking, so nothing else serialises with it).
pub struct Stream(pub sys::CUstream);

impl Stream {
    pub fn new() -> Result<Stream, CuError> {
        result::stream::create(result::stream::StreamKind::NonBlocking).map(Stream)
    }

    pub fn sync(&self) -> Result<(), CuError> {
        // SAFETY: `self.0` is a live stream, created in `new` and destroyed only on drop.
        unsafe { result::stream::synchronize(self.0) }
    }

    /// Fills `buf` with `value` asynchronously: used to evict L2 between samples.
    pub fn memset(&self, buf: &DevBuf, value: u8) -> Result<(), CuError> {
        // SAFETY: `buf.bytes` bytes at `buf.ptr` are `buf`'s own; freeing `buf` later waits
        // for this fill (cuMemFree is synchronous), and the stream is live.
        unsafe { result::memset_d8_async(buf.ptr, value, buf.bytes, self.0) }
    }

    /// Device-to-device copy, asynchronously.
    pub fn copy(&self, dst: &DevBuf, src: &DevBuf, bytes: usize) -> Result<(), CuError> {
        // SAFETY: device-side only: a `bytes` past either buffer's end is an error the driver
        // reports (or a fault on the device), never a host memory access; both buffers outlive
        // the copy (cuMemFree is synchronous) and the stream is live.
        unsafe { result::memcpy_dtod_async(dst.ptr, src.ptr, bytes, self.0) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream was created in `new` and is destroyed only here, once.
        unsafe {
            let _ = result::stream::destroy(self.0);
        }
    }
}

/// A timing event. cudarc's default event flags disable timing, so kwb creates its own.
pub struct Event(sys::CUevent);

impl Event {
    pub fn new() -> Result<Event, CuError> {
        result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).map(Event)
    }

    pub fn record(&self, s: &Stream) -> Result<(), CuError> {
        // SAFETY: the event and the stream are live (each destroyed only on its drop).
        unsafe { result::event::record(self.0, s.0) }
    }

    /// Milliseconds from `self` to `end`, waiting for `end` first.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f64, CuError> {
        // SAFETY: both events are live (each destroyed only on its drop).
        unsafe {
            result::event::synchronize(end.0)?;
            result::event::elapsed(self.0, end.0).map(f64::from)
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event was created in `new` and is destroyed only here, once.
        unsafe {
            let _ = result::event::destroy(self.0);
        }
    }
}

/// A loaded CUBIN and the functions it was asked for.
pub struct Module {
    module: sys::CUmodule,
}

impl Module {
    pub fn load(cubin: &[u8]) -> Result<Module, CuError> {
        // The driver reads the ELF image from memory; keep it aligned and alive for the call.
        let image: Vec<u64> = cubin
            .chunks(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect();
        // SAFETY: `image` is a live, 8-byte aligned copy of the CUBIN for the whole call; the
        // driver checks the ELF image it reads and returns an error for a bad one.
        let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }?;
        Ok(Module { module })
    }

    pub fn function(&self, name: &str) -> Result<sys::CUfunction, CuError> {
        let c = CString::new(name)
            .map_err(|_| CuError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE))?;
        // SAFETY: the module is live (unloaded only on drop) and `c` is a NUL-terminated name.
        unsafe { result::module::get_function(self.module, c) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module was loaded in `load` and is unloaded only here, once.
        unsafe {
            let _ = result::module::unload(self.module);
        }
    }
}

/// An instantiated CUDA graph.
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

impl Graph {
    /// Captures whatever `body` enqueues on `s` into a graph.
    pub fn capture(
        s: &Stream,
        body: impl FnOnce() -> Result<(), CuError>,
    ) -> Result<Graph, CuError> {
        // SAFETY: the stream is live; capture is thread-local, and ended below on every path.
        unsafe {
            result::stream::begin_capture(
                s.0,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )?;
        }
        let enqueued = body();
        // SAFETY: ends the capture begun above on the same live stream.
        let graph = unsafe { result::stream::end_capture(s.0) }?;
        enqueued?;
        // SAFETY: `graph` is the graph the capture just produced.
        let exec = unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) };
        match exec {
            Ok(exec) => Ok(Graph { graph, exec }),
            Err(e) => {
                // SAFETY: the graph failed to instantiate, is owned by nothing else, and is
                // destroyed once, here.
                unsafe {
                    let _ = result::graph::destroy(graph);
                }
                Err(e)
            }
        }
    }

    pub fn launch(&self, s: &Stream) -> Result<(), CuError> {
        // SAFETY: the executable graph and the stream are live (each destroyed on its drop).
        unsafe { result::graph::launch(self.exec, s.0) }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both were made in `capture` and are destroyed only here, once.
        unsafe {
            let _ = result::graph::exec_destroy(self.exec);
            let _ = result::graph::destroy(self.graph);
        }
    }
}
