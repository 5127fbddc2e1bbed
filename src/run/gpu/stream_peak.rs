//! kwb's own streaming kernels, for a bandwidth peak that well-written kernels do not beat.
//!
//! A device-to-device `cuMemcpy` runs on the copy path the driver picks, and on an H100 it
//! reaches less than a good elementwise kernel does (2,971 GB/s, where v2 and v7 of the add
//! ladder reach 102–103 % of it). So the worker also times its own read+write kernels: 128-bit
//! loads, four in flight per thread, grid-stride over grids sized to the SMs, with and without
//! the streaming cache hint, as a copy (one read per write) and as a triad (two reads per
//! write, the mix of an elementwise add). The best of them, and of the copy, is the peak.
//!
//! The worker has no compiler (it may run on a remote machine), so the kernels travel inside
//! the binary as PTX (`stream_peak.ptx`, compiled from `stream_peak.cu`) and the driver
//! JIT-compiles them for the GPU at hand. The PTX declares ISA 8.0 and `sm_75`, which every
//! CUDA 12+ driver accepts, whatever NVRTC made it.

use super::device::{DevBuf, Event, Module, Stream};
use cudarc::driver::result::{self, DriverError as CuError};
use std::ffi::c_void;

/// The PTX the binary carries (see the module docs).
pub const PTX: &str = include_str!("stream_peak.ptx");
/// Names the kernels' generation in the peak cache key: bump it when the kernels change, so
/// cached peaks measured with the old ones are measured again.
pub const KERNELS_TAG: &str = "stream-v6";
/// Elements of 16 bytes each thread has in flight per step (`UNROLL` in the source).
const UNROLL: u64 = 4;
const THREADS: u32 = 256;
/// Block sizes tried for the one-vector-per-thread kernels: the hand-written ladder launches
/// blocks as small as 64 threads, and on an H200 small blocks of that shape moved a few tenths
/// of a percent more than 256-thread ones, enough to read above a 256-only peak.
const ONE_SHOT_BLOCKS: [u32; 4] = [64, 128, 256, 512];
/// Launches per configuration: warm-up first, then timed ones (the fastest counts).
const WARM: usize = 2;
const TIMED: usize = 10;

/// One measured configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamPeak {
    pub gbps: f64,
    /// e.g. `kwb_peak_triad_cs, 1056 blocks of 256`.
    pub config: String,
}

/// The grids tried for `n` 16-byte vectors: a few blocks per SM (grid-stride), and one pass
/// (a block per `THREADS × UNROLL` vectors, as a one-shot elementwise kernel launches).
pub fn grids(sm_count: u32, n: u64) -> Vec<u32> {
    let one_pass = n
        .div_ceil(u64::from(THREADS) * UNROLL)
        .clamp(1, i32::MAX as u64) as u32;
    let mut g: Vec<u32> = [2u32, 4, 8]
        .iter()
        .map(|per| sm_count.max(1).saturating_mul(*per))
        .filter(|g| *g < one_pass)
        .collect();
    g.push(one_pass);
    g
}

/// Bytes moved by one launch of `entry` over buffers of `bytes` each.
fn moved(entry: &str, bytes: usize) -> f64 {
    let buffers = if entry.contains("triad") { 3.0 } else { 2.0 };
    buffers * bytes as f64
}

/// Times every kernel at every grid over buffers of `bytes` each (a multiple of 16) and
/// returns the fastest, in GB/s of bytes read plus written. With `flush`, every launch starts
/// from the cold L2 kernels are timed from: without it, each launch would start with the last
/// one's output dirty in L2 and pay its write-back, and on an H200 a well-written add timed
/// cold read 0.3% above that peak.
pub fn measure(
    s: &Stream,
    sm_count: u32,
    bytes: usize,
    flush: Option<&crate::run::gpu::flush::L2Flush>,
) -> Result<StreamPeak, CuError> {
    let invalid = CuError(cudarc::driver::sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE);
    let bytes = bytes & !0xff;
    if bytes == 0 {
        return Err(invalid);
    }
    let mut image = PTX.as_bytes().to_vec();
    image.push(0); // the driver reads PTX as a C string
    let module = Module::load(&image)?;
    let bufs = [
        DevBuf::alloc(bytes)?,
        DevBuf::alloc(bytes)?,
        DevBuf::alloc(bytes)?,
    ];
    for b in &bufs {
        s.memset(b, 1)?;
    }
    let n = (bytes / 16) as u64;
    let (start, end) = (Event::new()?, Event::new()?);
    // The kernels' own GPU time where CUPTI is there, the clock kernels are timed with, so a
    // kernel is never measured against a peak that counts launch overhead it does not.
    let trace = crate::run::gpu::cupti::cupti().and_then(|c| c.start()).ok();
    let mut best: Option<StreamPeak> = None;
    for entry in [
        "kwb_peak_copy",
        "kwb_peak_copy_cs",
        "kwb_peak_triad",
        "kwb_peak_triad_cs",
        "kwb_peak_copy1",
        "kwb_peak_triad1",
    ] {
        let func = module.function(entry)?;
        let (mut p0, mut p1, mut p2, mut count) = (bufs[0].ptr, bufs[1].ptr, bufs[2].ptr, n);
        let mut args: Vec<*mut c_void> = if entry.contains("triad") {
            vec![
                &mut p0 as *mut u64 as *mut c_void,
                &mut p1 as *mut u64 as *mut c_void,
                &mut p2 as *mut u64 as *mut c_void,
                &mut count as *mut u64 as *mut c_void,
            ]
        } else {
            vec![
                &mut p0 as *mut u64 as *mut c_void,
                &mut p1 as *mut u64 as *mut c_void,
                &mut count as *mut u64 as *mut c_void,
            ]
        };
        // One vector per thread: exactly one grid covers the buffers, for each block size.
        let shapes: Vec<(u32, u32)> = match entry.ends_with('1') {
            true => ONE_SHOT_BLOCKS
                .iter()
                .map(|&t| {
                    let g = n.div_ceil(u64::from(t)).clamp(1, i32::MAX as u64) as u32;
                    (g, t)
                })
                .collect(),
            false => grids(sm_count, n)
                .into_iter()
                .map(|g| (g, THREADS))
                .collect(),
        };
        for (grid, threads) in shapes {
            let mut times = Vec::with_capacity(TIMED);
            for i in 0..WARM + TIMED {
                if let Some(f) = flush {
                    f.run(s)?;
                }
                start.record(s)?;
                // SAFETY: the arguments match the kernel's parameters (pointers and a u64) and
                // point at live locals; the buffers hold `n` vectors each.
                unsafe {
                    result::launch_kernel(func, (grid, 1, 1), (threads, 1, 1), 0, s.0, &mut args)?;
                }
                end.record(s)?;
                let ms = start.elapsed_ms(&end)?;
                if i >= WARM {
                    times.push(ms);
                }
            }
            s.sync()?;
            if let Some(mut records) = trace.as_ref().and_then(|t| t.collect().ok()) {
                // A flush kernel precedes each launch: in start order, every second record.
                records.sort_by_key(|r| r.start_ns);
                let per = if flush.is_some_and(|f| f.reads()) {
                    2
                } else {
                    1
                };
                let kernel_ms: Vec<f64> = (records.iter().skip(per - 1).step_by(per))
                    .map(|r| r.end_ns.saturating_sub(r.start_ns) as f64 / 1e6)
                    .collect();
                // Every launch of this configuration recorded: its last TIMED are the ones.
                if kernel_ms.len() >= WARM + TIMED {
                    times = kernel_ms[kernel_ms.len() - TIMED..].to_vec();
                }
            }
            // A peak is the best the hardware was seen to do: the fastest timed launch.
            times.sort_by(f64::total_cmp);
            let best_s = times[0] / 1e3;
            let gbps = moved(entry, bytes) / best_s / 1e9;
            if gbps.is_finite() && best.as_ref().is_none_or(|b| gbps > b.gbps) {
                best = Some(StreamPeak {
                    gbps,
                    config: format!("{entry}, {grid} blocks of {threads}"),
                });
            }
        }
    }
    best.ok_or(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_per_sm_multiples_then_one_pass() {
        // 1 GiB of 16-byte vectors on 132 SMs: 264, 528, 1056 blocks, then one pass.
        let n = (1u64 << 30) / 16;
        assert_eq!(grids(132, n), vec![264, 528, 1056, 65536]);
        // A small buffer: one pass only, never an empty grid.
        assert_eq!(grids(132, 1000), vec![1]);
        assert_eq!(grids(0, 0), vec![1]);
    }

    #[test]
    fn the_embedded_ptx_has_every_kernel_and_an_old_enough_isa() {
        for entry in [
            "kwb_peak_copy",
            "kwb_peak_copy_cs",
            "kwb_peak_triad",
            "kwb_peak_triad_cs",
        ] {
            assert!(PTX.contains(&format!(".entry {entry}(")), "{entry}");
        }
        assert!(
            PTX.contains("\n.version 8.0\n"),
            "the PTX must declare ISA 8.0"
        );
        assert!(PTX.contains("\n.target sm_75\n"));
        assert_eq!(moved("kwb_peak_triad", 16), 48.0);
        assert_eq!(moved("kwb_peak_copy_cs", 16), 32.0);
    }

    /// Compiles `stream_peak.cu` with NVRTC: the source must stay compilable, and this is how
    /// the PTX is regenerated (`-- --ignored regenerate_ptx` writes it).
    fn compile() -> Option<String> {
        let nvrtc = crate::compile::nvrtc::nvrtc_or_skip()?;
        // The lowest arch NVRTC 13 targets: the driver JIT-compiles up from it.
        let opts: Vec<String> = (nvrtc
            .base_options(crate::compile::Arch::DEFAULT)
            .into_iter())
        .filter(|o| o != "-lineinfo" && o != "--ptxas-options=-v")
        .map(|o| match o.starts_with("--gpu-architecture=") {
            true => "--gpu-architecture=sm_75".to_string(),
            false => o,
        })
        .collect();
        let out = nvrtc
            .compile("stream_peak.cu", include_str!("stream_peak.cu"), &opts)
            .expect("nvrtc runs");
        assert!(out.ok, "{}", out.log);
        Some(rewrite_isa(&out.ptx))
    }

    /// Declares ISA 8.0 whatever NVRTC wrote, and drops the generator's comment lines.
    fn rewrite_isa(ptx: &str) -> String {
        let mut out = String::from(
            "// Generated from src/run/gpu/stream_peak.cu by `cargo test --lib run::gpu::stream_peak -- \
             --ignored regenerate_ptx`; do not edit.\n",
        );
        for line in ptx.lines() {
            if line.starts_with("//") {
                continue;
            }
            if line.starts_with(".version ") {
                out.push_str(".version 8.0\n");
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    #[test]
    fn the_source_compiles_to_the_same_kernels() {
        let Some(ptx) = compile() else { return };
        for line in PTX.lines().filter(|l| l.starts_with(".visible .entry")) {
            assert!(ptx.contains(line), "{line} is not in a fresh compile");
        }
    }

    #[test]
    #[ignore = "writes src/run/gpu/stream_peak.ptx"]
    fn regenerate_ptx() {
        let ptx = compile().expect("NVRTC is needed to regenerate the PTX");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/run/gpu/stream_peak.ptx");
        std::fs::write(path, ptx).expect("write the PTX");
    }
}
