//! Opening a GPU through the CUDA driver (cudarc, dynamically loaded): probe for a driver and a
//! device without panicking, read the device's facts, and load CUBINs.

use crate::compile::Arch;
use crate::report::DeviceInfo;
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule};
use std::sync::Arc;

/// Why no GPU can be used, in words a user can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoGpu {
    #[error("no CUDA driver: libcuda.so.1 could not be loaded (is the NVIDIA driver installed?)")]
    NoDriver,
    #[error("the CUDA driver failed to initialise: {0}")]
    Init(String),
    #[error("the CUDA driver sees no GPU")]
    NoDevice,
    #[error("GPU {ordinal} does not exist; the driver sees {count}")]
    BadOrdinal { ordinal: usize, count: usize },
}

/// A CUDA driver call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{call}: {error}")]
pub struct DriverError {
    pub call: &'static str,
    pub error: String,
}

impl DriverError {
    pub fn new(call: &'static str, e: impl std::fmt::Debug) -> Self {
        DriverError {
            call,
            error: format!("{e:?}"),
        }
    }
}

/// An open GPU: a context on one device.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub ordinal: usize,
}

/// Checks that a driver and device exist, without creating a context.
pub fn probe(ordinal: usize) -> Result<usize, NoGpu> {
    // SAFETY: only tries to dlopen the driver by its usual names.
    if !unsafe { sys::is_culib_present() } {
        return Err(NoGpu::NoDriver);
    }
    cudarc::driver::result::init().map_err(|e| NoGpu::Init(format!("{e:?}")))?;
    let count = CudaContext::device_count().map_err(|e| NoGpu::Init(format!("{e:?}")))?;
    let count = usize::try_from(count).unwrap_or(0);
    if count == 0 {
        return Err(NoGpu::NoDevice);
    }
    if ordinal >= count {
        return Err(NoGpu::BadOrdinal { ordinal, count });
    }
    Ok(count)
}

impl Gpu {
    pub fn open(ordinal: usize) -> Result<Gpu, NoGpu> {
        probe(ordinal)?;
        let ctx = CudaContext::new(ordinal).map_err(|e| NoGpu::Init(format!("{e:?}")))?;
        Ok(Gpu { ctx, ordinal })
    }

    fn attr(&self, a: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        self.ctx
            .attribute(a)
            .map_err(|e| DriverError::new("cuDeviceGetAttribute", e))
    }

    /// The device's compute capability as an arch kwb knows, if it knows it.
    pub fn arch(&self) -> Result<Option<Arch>, DriverError> {
        let (major, minor) = self
            .ctx
            .compute_capability()
            .map_err(|e| DriverError::new("cuDeviceGetAttribute", e))?;
        Ok(Arch::parse(&format!("sm_{major}{minor}")).ok())
    }

    /// Name, arch, SM count, L2, memory, clocks and the theoretical bandwidth (2 × memory
    /// clock × bus width); the measured copy peak is filled in by the worker.
    pub fn facts(&self) -> Result<DeviceInfo, DriverError> {
        use sys::CUdevice_attribute::*;
        let (major, minor) = self
            .ctx
            .compute_capability()
            .map_err(|e| DriverError::new("cuDeviceGetAttribute", e))?;
        let mem_clock = self.attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as u32;
        let bus = self.attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32;
        let mut driver_version = 0;
        // SAFETY: plain out-parameter.
        let _ = unsafe { sys::cuDriverGetVersion(&mut driver_version) };
        Ok(DeviceInfo {
            name: self
                .ctx
                .name()
                .map_err(|e| DriverError::new("cuDeviceGetName", e))?,
            arch: format!("sm_{major}{minor}"),
            sm_count: self.attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: self.attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            memory_bytes: self
                .ctx
                .total_mem()
                .map_err(|e| DriverError::new("cuDeviceTotalMem", e))?
                as u64,
            sm_clock_khz: self.attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32,
            memory_clock_khz: mem_clock,
            theoretical_bandwidth_gbps: 2.0 * f64::from(mem_clock) * 1e3 * f64::from(bus)
                / 8.0
                / 1e9,
            measured_copy_gbps: None,
            stream_kernel_gbps: None,
            driver_version,
            visible_gpus: CudaContext::device_count()
                .ok()
                .and_then(|n| u32::try_from(n).ok()),
        })
    }

    /// Loads a CUBIN (never PTX: a driver older than NVRTC would refuse it).
    pub fn load_cubin(&self, cubin: &[u8]) -> Result<Arc<CudaModule>, DriverError> {
        self.ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.to_vec()))
            .map_err(|e| DriverError::new("cuModuleLoadData", e))
    }
}

/// The driver's own view of a loaded kernel, for checking ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverKernelAttrs {
    pub registers: u32,
    pub static_shared_bytes: u32,
    pub local_bytes: u32,
    pub max_threads_per_block: u32,
}

pub fn kernel_attrs(f: &CudaFunction) -> Result<DriverKernelAttrs, DriverError> {
    use sys::CUfunction_attribute_enum::*;
    let get = |a| {
        f.get_attribute(a)
            .map_err(|e| DriverError::new("cuFuncGetAttribute", e))
    };
    Ok(DriverKernelAttrs {
        registers: get(CU_FUNC_ATTRIBUTE_NUM_REGS)? as u32,
        static_shared_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)? as u32,
        local_bytes: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)? as u32,
        max_threads_per_block: get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
    })
}

/// What `cuOccupancyMaxActiveBlocksPerMultiprocessor` says.
pub fn driver_occupancy(
    f: &CudaFunction,
    block: u32,
    dynamic_shared: usize,
) -> Result<u32, DriverError> {
    f.occupancy_max_active_blocks_per_multiprocessor(block, dynamic_shared, None)
        .map_err(|e| DriverError::new("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))
}

/// For tests: `Ok(gpu)`, or print why there is none and return `None` (panics instead when
/// `KWB_REQUIRE_GPU=1`, so a GPU machine can't silently skip). Tests that call it are also
/// `#[ignore]`d, so a plain `cargo test` with no GPU lists them as ignored rather than passed;
/// the GPU bundle runs them with `--include-ignored`.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match Gpu::open(0) {
        Ok(g) => Some(g),
        Err(e) => {
            if std::env::var("KWB_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: KWB_REQUIRE_GPU=1 but no GPU: {e}");
            }
            // Straight to the stream, past the test harness's capture, so the reason shows.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped {test}: no GPU ({e})");
            None
        }
    }
}
