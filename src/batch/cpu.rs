//! `kwb batch --cpu`: the batch engine with the CPU as its backend. Every version is compiled
//! as for the GPU (NVRTC needs no GPU) and planned the same way; then CUDA versions run in the
//! PTX emulator and tile versions in the tile interpreter (or, with `--cpu-engine emulator`,
//! their generated PTX in the emulator too). Checks are the GPU path's; findings (out-of-bounds,
//! races, uninitialised reads, divergent barriers) fail a version; there is no timing.

use super::{new_report, BatchError, BatchOptions, BatchOutcome};
use crate::compile::Arch;
use crate::engine::{CpuBackend, CpuEngine};
use crate::report::{Backend, Mode};
use crate::run::protocol::{BenchMode, BenchSpec};
use crate::workspace::Workspace;

/// The arch a CPU run compiles for: `--arch`, else the workspace's, else sm_90.
fn cpu_arch(ws: &Workspace, asked: Option<Arch>) -> Arch {
    asked.or(ws.arch).unwrap_or(Arch::DEFAULT)
}

pub fn run_cpu(
    ws: &Workspace,
    opts: &BatchOptions,
    engine: CpuEngine,
    arch: Option<Arch>,
) -> Result<BatchOutcome, BatchError> {
    let arch = cpu_arch(ws, arch);
    // A `KWB_CPU_MEMORY` that says no number of bytes is bad usage, said once, up front.
    crate::run::cpu::memory::host_limit().map_err(BatchError::Usage)?;
    let bench = BenchSpec {
        check: true,
        benchmark: false,
        mode: BenchMode::Cold,
        warmup_ms: 0.0,
        stop: opts.stop.clone(),
        watchdog_ms: opts.watchdog_ms.unwrap_or(crate::run::cpu::CPU_WATCHDOG_MS),
        rtol: None,
        atol: None,
        guard_bytes: None,
    };
    let backend = CpuBackend::new(engine, 0);
    let (results, compiled) = super::drive::drive(
        ws,
        opts,
        arch,
        bench,
        (crate::engine::Target::Cpu, crate::engine::Order::Plan),
        (vec![Box::new(backend)], None),
    )?;
    Ok(BatchOutcome {
        report: new_report(ws, opts, None, Mode::Cold, results, Some(Backend::Emulator)),
        compile_errors: compiled.compile_errors,
        compile_diagnostics: compiled.diagnostics,
    })
}
