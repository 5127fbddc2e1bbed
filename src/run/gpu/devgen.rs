//! Inputs drawn on the GPU: the worker fills a buffer with the very bits the host draws for it
//! ([`crate::run::host::counter_rng`]), with one kernel launch instead of a copy from the host. At 256Mi
//! fp16 the two inputs are 1 GiB that no longer cross PCIe for every job.
//!
//! The worker has no compiler (it may run on a remote machine), so the kernel travels inside the
//! binary as PTX (`devgen.ptx`, compiled from `devgen.cu.in` with the constants filled in and
//! multiply-add contraction off) and the driver JIT-compiles it. Before the worker trusts it,
//! [`DeviceGen::load`] draws every dtype and draw kind on the device and compares the bytes with
//! the host's; on any difference the worker keeps uploading, and says why. After a checked run,
//! [`DeviceGen::first_difference`] draws each input again beside what the device holds, so a
//! kernel that wrote into an input is caught without downloading the inputs.

use super::device::{DevBuf, Module, Stream};
use crate::run::host::counter_rng::{key_of, Recipe};
use crate::run::host::data::buffer_seed;
use crate::run::host::inputs::{generate, recipe};
use crate::run::protocol::{BufferSpec, RunJob};
use crate::workspace::{DType, Init};
use cudarc::driver::result::{self, DriverError as CuError};
use cudarc::driver::sys;
use std::ffi::c_void;

/// The PTX the binary carries (see the module docs).
pub const PTX: &str = include_str!("devgen.ptx");
const THREADS: u32 = 256;

/// What one buffer holds: `elems` elements of `dtype`, drawn by `recipe` from `seed`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    pub dtype: DType,
    pub elems: usize,
    pub recipe: Recipe,
    pub seed: u64,
}

impl Draw {
    /// The draw of buffer `b` of `job`, when its init is drawn (not read from a file) and the
    /// draw kernel knows its dtype; the host draws the others.
    pub fn of(job: &RunJob, b: &BufferSpec) -> Option<Draw> {
        dtype_code(b.dtype)?;
        Some(Draw {
            dtype: b.dtype,
            elems: b.shape.iter().product(),
            recipe: recipe(b.dtype, &b.init).ok().flatten()?,
            seed: buffer_seed(job, b),
        })
    }
}

/// The draw kernel, loaded and checked against the host.
pub struct DeviceGen {
    _module: Module,
    gen: sys::CUfunction,
    verify: sys::CUfunction,
    grid: u32,
}

/// Whether the draw kernel makes buffers of `dtype` (the others are drawn on the host).
pub fn draws_on_device(dtype: DType) -> bool {
    dtype_code(dtype).is_some()
}

/// The kernel's number for a dtype (see `kwb_store` in `devgen.cu.in`); `None` for the ones
/// it does not draw (the narrow and 64-bit integers, bool), which the host draws and uploads.
fn dtype_code(d: DType) -> Option<u32> {
    Some(match d {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
        DType::I32 => 3,
        DType::F64 => 4,
        DType::I64 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => return None,
    })
}

impl DeviceGen {
    /// Loads the kernel and checks it against the host's draws; `Err` says why the worker
    /// uploads inputs instead.
    pub fn load(s: &Stream, sm_count: u32) -> Result<DeviceGen, String> {
        let mut image = PTX.as_bytes().to_vec();
        image.push(0);
        let module = Module::load(&image).map_err(|e| format!("cannot load its PTX: {e:?}"))?;
        let function = |name: &str| {
            module
                .function(name)
                .map_err(|e| format!("no {name} in its PTX: {e:?}"))
        };
        let (gen, verify) = (function("kwb_gen")?, function("kwb_verify")?);
        let gen = DeviceGen {
            _module: module,
            gen,
            verify,
            grid: sm_count.max(1).saturating_mul(8),
        };
        gen.self_check(s)?;
        Ok(gen)
    }

    /// Enqueues `draw` into `buf`.
    pub fn fill(&self, s: &Stream, buf: &DevBuf, draw: &Draw) -> Result<(), CuError> {
        self.launch(self.gen, s, buf, draw, None)
    }

    /// The first element of `buf` that no longer holds its `draw` (a kernel wrote over it), or
    /// `None`; compared on the device, so an unharmed input is never downloaded.
    pub fn first_difference(
        &self,
        s: &Stream,
        buf: &DevBuf,
        draw: &Draw,
    ) -> Result<Option<u64>, CuError> {
        let first = DevBuf::alloc(8)?;
        first.upload(&u64::MAX.to_le_bytes())?;
        self.launch(self.verify, s, buf, draw, Some(first.ptr))?;
        s.sync()?;
        let got = u64::from_le_bytes(first.download()?.try_into().unwrap_or([0xff; 8]));
        Ok((got != u64::MAX).then_some(got))
    }

    fn launch(
        &self,
        func: sys::CUfunction,
        s: &Stream,
        buf: &DevBuf,
        draw: &Draw,
        first: Option<sys::CUdeviceptr>,
    ) -> Result<(), CuError> {
        if draw.elems == 0 {
            return Ok(());
        }
        let r = &draw.recipe;
        let (mut ptr, mut n, mut dt, mut kind, mut key) = (
            buf.ptr,
            draw.elems as u64,
            dtype_code(draw.dtype).unwrap_or(u32::MAX),
            r.kind as u32,
            key_of(draw.seed),
        );
        let (mut p0, mut p1, mut lo, mut hi) = (r.p0, r.p1, r.lo, r.hi);
        let mut first = first.unwrap_or(0);
        let mut args: Vec<*mut c_void> = vec![
            &mut ptr as *mut u64 as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
            &mut dt as *mut u32 as *mut c_void,
            &mut kind as *mut u32 as *mut c_void,
            &mut key as *mut u64 as *mut c_void,
            &mut p0 as *mut f64 as *mut c_void,
            &mut p1 as *mut f64 as *mut c_void,
            &mut lo as *mut f64 as *mut c_void,
            &mut hi as *mut f64 as *mut c_void,
        ];
        if func == self.verify {
            args.push(&mut first as *mut u64 as *mut c_void);
        }
        let grid = (draw.elems as u64)
            .div_ceil(u64::from(THREADS))
            .clamp(1, u64::from(self.grid)) as u32;
        // SAFETY: the arguments match kwb_gen's (and kwb_verify's, with `first`, a pointer to
        // a u64) parameters: a pointer to `elems` elements of `dtype`, u64, u32, u32, u64, four
        // doubles; they point at live locals.
        unsafe { result::launch_kernel(func, (grid, 1, 1), (THREADS, 1, 1), 0, s.0, &mut args) }
    }

    /// Draws 70,001 elements of every dtype by every kind (the bounds of uniform draws
    /// included) on the device, compares them with the host's bytes, and checks that the
    /// device-side comparison finds no difference in them and finds one planted.
    fn self_check(&self, s: &Stream) -> Result<(), String> {
        const N: usize = 70_001;
        let inits = [
            Init::Randn {
                mean: 0.25,
                std: 3.0,
            },
            Init::Uniform {
                low: -2.0,
                high: 5.0,
            },
            Init::Uniform {
                low: 1000.0,
                high: 1001.0,
            },
            Init::Arange,
            Init::Constant { value: 0.1 },
        ];
        for (dtype, code) in DType::ALL
            .into_iter()
            .filter_map(|d| Some((d, dtype_code(d)?)))
        {
            for init in &inits {
                let seed = 0x5EED ^ u64::from(code);
                let host = generate(dtype, N, init, &[N], seed).map_err(|e| e.to_string())?;
                let draw = Draw {
                    dtype,
                    elems: N,
                    recipe: recipe(dtype, init)
                        .map_err(|e| e.to_string())?
                        .ok_or("an init without a recipe")?,
                    seed,
                };
                let (dev, unharmed, planted) = (|| {
                    let buf = DevBuf::alloc(host.bytes.len())?;
                    self.fill(s, &buf, &draw)?;
                    s.sync()?;
                    let dev = buf.download()?;
                    let unharmed = self.first_difference(s, &buf, &draw)?;
                    // An element overwritten with its neighbour's bits (never the same here:
                    // the draws at 4999 and 5000 differ for every recipe but the constant).
                    let w = dtype.size() as usize;
                    let mut harmed = dev.clone();
                    harmed.copy_within(4999 * w..5000 * w, 5000 * w);
                    buf.upload(&harmed)?;
                    let planted = self.first_difference(s, &buf, &draw)?;
                    let changed = harmed != dev;
                    Ok::<_, CuError>((dev, unharmed, changed.then_some(planted)))
                })()
                .map_err(|e| format!("drawing on the device failed: {e:?}"))?;
                if unharmed.is_some() || planted.is_some_and(|p| p != Some(5000)) {
                    return Err(format!(
                        "its {dtype} {init:?} comparison is wrong: {unharmed:?} on the draw, \
                         {planted:?} with element 5000 changed"
                    ));
                }
                if let Some(i) = (0..N).find(|&i| {
                    let w = dtype.size() as usize;
                    dev[i * w..(i + 1) * w] != host.bytes[i * w..(i + 1) * w]
                }) {
                    return Err(format!(
                        "its {dtype} {init:?} draw differs from the host's at element {i}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Gives input `b` its starting bytes: drawn on the GPU when `gen` can draw them (the very
/// bits `bytes` holds), else uploaded.
pub fn start_input(
    gen: Option<&DeviceGen>,
    s: &Stream,
    job: &RunJob,
    b: &BufferSpec,
    buf: &DevBuf,
    bytes: &[u8],
) -> Result<(), CuError> {
    match gen.zip(Draw::of(job, b)) {
        Some((gen, draw)) => gen.fill(s, buf, &draw),
        None => buf.upload(bytes),
    }
}

/// Whether input `b` was drawn on the device and still holds its draw, every element (false
/// when it was uploaded, or when a kernel wrote over it).
pub fn unharmed_draw(
    gen: Option<&DeviceGen>,
    s: &Stream,
    job: &RunJob,
    b: &BufferSpec,
    buf: &DevBuf,
) -> Result<bool, CuError> {
    match gen.zip(Draw::of(job, b)) {
        Some((gen, draw)) => Ok(gen.first_difference(s, buf, &draw)?.is_none()),
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line under the PTX's first that names the source it was compiled from.
    fn source_line() -> String {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(crate::run::host::counter_rng::cuda_source().as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("// source sha256 {hex}")
    }

    /// Compiles the device source with NVRTC as the embedded PTX is made: `--fmad=false`, the
    /// lowest arch NVRTC 13 targets (the driver JIT-compiles up from it), ISA 8.0.
    fn compile() -> Option<String> {
        let nvrtc = crate::compile::nvrtc::nvrtc_or_skip()?;
        let opts: Vec<String> = ["--gpu-architecture=sm_75", "--fmad=false", "--std=c++17"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let source = crate::run::host::counter_rng::cuda_source();
        let out = nvrtc
            .compile("devgen.cu", &source, &opts)
            .expect("nvrtc runs");
        assert!(out.ok, "{}", out.log);
        let mut ptx = format!(
            "// Generated from src/run/host/devgen.cu.in (constants from src/run/host/counter_rng.rs) by \
             `cargo test --lib run::gpu::devgen::tests::regenerate_ptx -- --ignored`; do not edit.\n{}\n",
            source_line()
        );
        for line in out.ptx.lines().filter(|l| !l.starts_with("//")) {
            ptx += if line.starts_with(".version ") {
                ".version 8.0"
            } else {
                line
            };
            ptx.push('\n');
        }
        Some(ptx)
    }

    #[test]
    fn the_embedded_ptx_is_compiled_from_the_current_source() {
        assert!(PTX.contains(".entry kwb_gen("));
        assert!(PTX.contains("\n.version 8.0\n") && PTX.contains("\n.target sm_75\n"));
        // Contraction off: no fused multiply-add anywhere.
        assert!(!PTX.contains("fma."), "the PTX has a fused multiply-add");
        assert_eq!(
            PTX.lines().nth(1),
            Some(source_line().as_str()),
            "devgen.ptx is stale: cargo test --lib run::gpu::devgen::tests::regenerate_ptx -- --ignored"
        );
        let Some(ptx) = compile() else { return };
        let entry = |p: &str| p.lines().find(|l| l.contains(".entry")).map(String::from);
        assert_eq!(entry(&ptx), entry(PTX));
    }

    #[test]
    #[ignore = "writes src/run/gpu/devgen.ptx"]
    fn regenerate_ptx() {
        let ptx = compile().expect("NVRTC is needed to regenerate the PTX");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/run/gpu/devgen.ptx");
        std::fs::write(path, ptx).expect("write the PTX");
    }

    #[test]
    fn every_init_but_npy_has_a_recipe_the_device_can_draw() {
        use crate::run::host::counter_rng::Kind;
        let kinds = [Kind::Randn, Kind::Arange, Kind::Constant];
        for (init, kind) in [Init::DEFAULT, Init::Arange, Init::Constant { value: 1.0 }]
            .into_iter()
            .zip(kinds)
        {
            assert_eq!(recipe(DType::F16, &init).unwrap().unwrap().kind, kind);
        }
        let npy = Init::Npy {
            path: "x.npy".into(),
        };
        assert!(recipe(DType::F32, &npy).unwrap().is_none());
    }
}
