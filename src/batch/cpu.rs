//! `kwb batch --cpu`: the batch engine with the CPU as its backend. Every version is compiled
//! as for the GPU (NVRTC needs no GPU) and planned the same way; then CUDA versions run in the
//! PTX emulator and tile versions in the tile interpreter (or, with `--cpu-engine emulator`,
//! their generated PTX in the emulator too). Checks are the GPU path's; findings (out-of-bounds,
//! races, uninitialised reads, divergent barriers) fail a version; there is no timing.

use super::{
    fresh_seed, new_report, size_seed, BatchError, BatchOptions, BatchOutcome, ProgressLine,
};
use crate::compile::{Arch, Cache, CompiledVersion, Compiler};
use crate::report::{Backend, Mode, RunResult, Status};
use crate::run::cpu::{run_job, CpuCode, CpuOptions, CpuOutcome};
use crate::run::plan::{plan_job, work, PlanOptions};
use crate::run::protocol::{BenchMode, BenchSpec};
use crate::workspace::Workspace;
use std::collections::HashMap;
use std::sync::Arc;

/// Which engine runs tile-language versions on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuEngine {
    /// Tile versions in the interpreter (the language's semantics), CUDA in the emulator.
    #[default]
    Auto,
    /// Every version's PTX in the emulator, tile versions' generated code included.
    Emulator,
}

/// The CPU code of one compile, made once: the PTX decoded, or the tile IR.
pub(crate) fn cpu_code(c: &CompiledVersion, engine: CpuEngine) -> Result<CpuCode, String> {
    if !c.tile_kernels.is_empty() && engine == CpuEngine::Auto {
        return Ok(CpuCode::Tile(c.tile_kernels.clone()));
    }
    crate::emu::Module::parse(&c.ptx)
        .map(|m| CpuCode::Ptx(Arc::new(m)))
        .map_err(|errors| {
            let first = errors
                .first()
                .map_or_else(|| "unknown error".to_string(), |e| e.to_string());
            format!(
                "the emulator cannot read this PTX ({} problem{}); first: {first}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            )
        })
}

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
    let cache = if opts.cache {
        Cache::default_location()
    } else {
        Cache::disabled()
    };
    let compiler = Compiler::new(arch, cache).map_err(|e| BatchError::Compile(e.to_string()))?;
    let compiled = compiler.compile_workspace(ws);
    let config_failures = super::sweep::config_compile_failures(ws, &compiled);
    let compile_errors = compiled
        .iter()
        .zip(&config_failures)
        .any(|(c, skip)| !c.ok && !skip);
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
    let seed0 = opts.seed.unwrap_or_else(fresh_seed);
    let mut progress = ProgressLine::new(ws.sizes.len() * ws.versions.len());
    let mut codes: HashMap<*const CompiledVersion, Result<CpuCode, String>> = HashMap::new();
    let mut code_of = |c: &CompiledVersion| {
        codes
            .entry(c as *const _)
            .or_insert_with(|| cpu_code(c, engine))
            .clone()
    };
    let mut results = Vec::new();
    let mut id = 0u64;
    for (size_index, size) in ws.sizes.iter().enumerate() {
        let plan = PlanOptions {
            seed: size_seed(seed0, size_index),
            bench: bench.clone(),
        };
        for ((v, c), config_failure) in ws.versions.iter().zip(&compiled).zip(&config_failures) {
            id += 1;
            progress.start(&v.name, &size.name);
            let r = super::sweep::new_result(ws, v, size);
            let (mut r, c, reference) =
                match super::for_size(ws, &compiled, c, r, *config_failure, &size.name) {
                    Ok(x) => x,
                    Err(failed) => {
                        results.push(*failed);
                        continue;
                    }
                };
            (r.bytes, r.flops) = work(ws, v, size).unwrap_or((None, None));
            let job = match plan_job(ws, v, c, size, arch.spec(), reference, id, &plan) {
                Ok(j) => j,
                Err(e) => {
                    results.push(super::sweep::plan_failure(r, v, e.to_string()));
                    continue;
                }
            };
            let code = match code_of(c) {
                Ok(code) => code,
                Err(e) => {
                    r.status = Status::Error;
                    r.message = Some(e);
                    results.push(r);
                    continue;
                }
            };
            let ref_code = reference.and_then(|(_, rc)| code_of(rc).ok());
            progress.draw(match code.backend() {
                Backend::Interpreter => "interpreting",
                _ => "emulating",
            });
            let outcome = run_job(&job, &code, ref_code.as_ref(), &CpuOptions::default());
            r.backend = Some(code.backend());
            fill(&mut r, outcome);
            results.push(r);
        }
    }
    progress.finish();
    Ok(BatchOutcome {
        report: new_report(ws, None, Mode::Cold, results, Some(Backend::Emulator)),
        compile_errors,
        compile_diagnostics: super::compile_diagnostics(&compiled, &config_failures),
    })
}

/// A CPU result's status: an error that stopped the run, then findings, then the check.
pub(crate) fn fill(r: &mut RunResult, outcome: CpuOutcome) {
    let CpuOutcome {
        check,
        findings,
        notes,
        error,
        skipped,
        timed_out,
        ..
    } = outcome;
    if let Some(why) = skipped {
        r.status = Status::Skipped;
        r.message = Some(why);
    } else if let Some(why) = timed_out {
        r.status = Status::Timeout;
        r.message = Some(why);
    } else if let Some(e) = error {
        r.status = Status::Error;
        r.message = Some(e);
    } else if let Some(f) = findings.first() {
        r.status = Status::CheckFailed;
        r.message = Some(if findings.len() > 1 {
            format!("{f} (and {} more findings)", findings.len() - 1)
        } else {
            f.to_string()
        });
    } else if check.as_ref().is_some_and(|c| !c.passed) {
        r.status = Status::CheckFailed;
        r.message = check.as_ref().and_then(|c| c.failure.clone());
    }
    r.check = check;
    r.findings = findings;
    r.notes = notes;
}
