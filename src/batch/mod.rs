//! `kwb batch`: the engine run headless for CI. Compile every version, run each (version,
//! size) in the isolated GPU worker (check, then benchmark), and hand the results to a report
//! format. The same events could feed the TUI; here they feed a progress line and a report.

use crate::compile::{Arch, CompiledVersion};
use crate::engine::GpuBackend;
use crate::report::{self, BatchReport, Mode, RunResult, Status};
use crate::run::protocol::{BenchMode, BenchSpec, Phase};
use crate::run::stats::StopRule;
use crate::run::supervisor::WorkerCommand;
use crate::workspace::Workspace;
use std::io::{IsTerminal, Write};

mod cpu;
mod drive;
pub mod merge;
mod shard;
mod sweep;
pub use crate::engine::CpuEngine;
pub use cpu::run_cpu;
pub use shard::Shard;
pub use sweep::split_names;

/// Everything `kwb batch` can be told besides the workspace.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    pub sizes: Vec<String>,
    pub versions: Vec<String>,
    pub mode: BenchMode,
    pub device: u32,
    pub check: bool,
    pub warmup_ms: f64,
    pub stop: StopRule,
    /// Per-launch watchdog; `None`: [`crate::run::supervisor::GPU_WATCHDOG_MS`] on a GPU,
    /// [`crate::run::cpu::CPU_WATCHDOG_MS`] on the CPU.
    pub watchdog_ms: Option<u64>,
    pub seed: Option<u64>,
    pub cache: bool,
    /// Red-zone bytes around every buffer (`None`: the worker's default; 0: off).
    pub guard_bytes: Option<u64>,
    /// Run on the CPU (`--cpu`): the emulator and the tile interpreter, no timing.
    pub cpu: bool,
    /// Run only this shard of the jobs (`--shard K/N`).
    pub shard: Option<Shard>,
    /// Several GPUs (`--devices`), one worker each; `None`: `device` alone.
    pub devices: Option<Devices>,
}

pub use crate::engine::Devices;

/// Why a batch could not run at all (as opposed to a version failing).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("{0}")]
    Usage(String),
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    #[error("{0}")]
    Compile(String),
}

/// The outcome of a batch: the report and whether any version failed to compile.
pub struct BatchOutcome {
    pub report: BatchReport,
    pub compile_errors: bool,
    /// The errors of every version that does not compile, for stderr (the report carries
    /// only each one's first).
    pub compile_diagnostics: Vec<crate::diag::Diagnostic>,
}

/// The errors of the versions that do not compile, each once; a sweep configuration that
/// does not compile is skipped, not an error (`config_failures`).
pub(crate) fn compile_diagnostics(
    compiled: &[std::sync::Arc<CompiledVersion>],
    config_failures: &[bool],
) -> Vec<crate::diag::Diagnostic> {
    let mut out: Vec<crate::diag::Diagnostic> = Vec::new();
    for (c, skip) in compiled.iter().zip(config_failures) {
        if c.ok || *skip {
            continue;
        }
        for d in c.errors() {
            if !out.contains(d) {
                out.push(d.clone());
            }
        }
    }
    out
}

/// Keeps only the sizes and versions asked for, or says which names do not exist.
pub fn select(ws: &mut Workspace, opts: &BatchOptions) -> Result<(), BatchError> {
    // A swept version's name stands for all its configurations.
    let mut version_names: Vec<String> = ws.sweeps.iter().map(|s| s.parent.clone()).collect();
    version_names.extend(ws.versions.iter().map(|v| v.name.clone()));
    for (asked, known, what) in [
        (
            &opts.sizes,
            ws.sizes.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            "size",
        ),
        (&opts.versions, version_names, "version"),
    ] {
        if let Some(bad) = asked.iter().find(|a| !known.contains(a)) {
            return Err(BatchError::Usage(format!(
                "no {what} `{bad}`; {what}s: {}",
                known.join(", ")
            )));
        }
    }
    if !opts.sizes.is_empty() {
        ws.sizes.retain(|s| opts.sizes.contains(&s.name));
    } else {
        let keep = if opts.cpu {
            ws.cpu_sizes()
        } else {
            ws.gpu_sizes()
        };
        ws.sizes = keep.into_iter().map(|i| ws.sizes[i].clone()).collect();
    }
    if !opts.versions.is_empty() {
        // The reference version runs inside every job, so it need not be selected itself.
        ws.versions.retain(|v| {
            opts.versions.contains(&v.name) || opts.versions.iter().any(|a| a == v.family())
        });
        let kept: Vec<String> = ws.versions.iter().map(|v| v.name.clone()).collect();
        ws.sweeps.retain_mut(|s| {
            s.configs.retain(|c| kept.contains(c));
            !s.configs.is_empty()
        });
    }
    Ok(())
}

pub fn run(
    ws: &Workspace,
    opts: &BatchOptions,
    worker: WorkerCommand,
) -> Result<BatchOutcome, BatchError> {
    // Several local workers make each size's host reference once between them; the folder
    // lives until the run ends.
    let (worker, _shared) = crate::engine::gpus::share_references(worker, opts.devices.as_ref());
    let (first, rest) = start_first_gpu(&worker, opts)?;
    let device = first.device().clone();
    let arch = Arch::parse(&device.arch)
        .map_err(|e| BatchError::NoGpu(format!("{}: {e}", device.name)))?;
    // The other GPUs open while the workspace compiles, and join the run as they come.
    let late = (!rest.is_empty()).then(|| {
        let (worker, device) = (worker.clone(), device.clone());
        std::thread::spawn(move || join_gpus(&worker, &device, &rest))
    });
    let arch = Arch::for_gpu(arch, ws.arch);
    let bench = BenchSpec {
        check: opts.check,
        benchmark: true,
        mode: opts.mode,
        warmup_ms: opts.warmup_ms,
        stop: opts.stop.clone(),
        watchdog_ms: opts
            .watchdog_ms
            .unwrap_or(crate::run::supervisor::GPU_WATCHDOG_MS),
        rtol: None,
        atol: None,
        guard_bytes: opts.guard_bytes,
    };
    let order = if opts.devices.is_some() {
        crate::engine::Order::Largest
    } else {
        crate::engine::Order::Plan
    };
    let (results, compiled) = drive::drive(
        ws,
        opts,
        arch,
        bench,
        (crate::engine::Target::Gpu, order),
        (vec![Box::new(first)], late),
    )?;
    Ok(BatchOutcome {
        report: new_report(
            ws,
            opts,
            Some(device),
            match opts.mode {
                BenchMode::Cold => Mode::Cold,
                BenchMode::Hot => Mode::Hot,
                BenchMode::Graph => Mode::Graph,
            },
            results,
            None,
        ),
        compile_errors: compiled.compile_errors,
        compile_diagnostics: compiled.diagnostics,
    })
}

/// The first GPU asked for, open in its worker, and the ordinals of the others: `--devices
/// all` means every other GPU the first's machine shows.
fn start_first_gpu(
    worker: &WorkerCommand,
    opts: &BatchOptions,
) -> Result<(GpuBackend, Vec<u32>), BatchError> {
    use crate::engine::gpus::open_gpu;
    let Some(devices) = &opts.devices else {
        let gpu = open_gpu(worker, opts.device).map_err(BatchError::NoGpu)?;
        return Ok((gpu, Vec::new()));
    };
    let first = open_gpu(worker, devices.first()).map_err(BatchError::NoGpu)?;
    let rest = devices.rest(first.device());
    Ok((first, rest))
}

/// Opens the GPUs after the first; one left out is named on stderr, and the others run the jobs.
fn join_gpus(
    worker: &WorkerCommand,
    first: &report::DeviceInfo,
    rest: &[u32],
) -> Vec<Box<dyn crate::engine::Backend>> {
    let (joined, left_out) = crate::engine::gpus::open_more(worker, first, rest);
    for why in left_out {
        eprintln!("kwb: {why}; the other GPUs run the jobs");
    }
    (joined.into_iter())
        .map(|(_, g)| Box::new(g) as Box<dyn crate::engine::Backend>)
        .collect()
}

/// A report of `results` for workspace `ws`, stamped now; a shard's carries its mark.
pub(crate) fn new_report(
    ws: &Workspace,
    opts: &BatchOptions,
    device: Option<report::DeviceInfo>,
    mode: Mode,
    mut results: Vec<RunResult>,
    backend: Option<report::Backend>,
) -> BatchReport {
    let sweeps = report::sweep::summarize(&mut results);
    if let Some(peak) = device.as_ref().and_then(|d| d.tensor_peak_tflops()) {
        for r in &mut results {
            r.pct_of_tensor_peak = r.gflops.map(|g| g / 1e3 / peak * 100.0);
        }
    }
    BatchReport {
        schema: report::SCHEMA,
        kwb_version: env!("CARGO_PKG_VERSION").into(),
        workspace: ws.path.display().to_string(),
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        device,
        mode,
        results,
        backend,
        sweeps,
        shard: opts.shard.map(|s| {
            s.mark(
                ws.sizes.iter().map(|x| x.name.clone()).collect(),
                ws.versions.iter().map(|x| x.name.clone()).collect(),
            )
        }),
    }
}

/// A one-line progress display on stderr, drawn only when stderr is a terminal.
pub(crate) struct ProgressLine {
    on: bool,
    done: usize,
    total: usize,
    label: String,
}

impl ProgressLine {
    pub(crate) fn new(total: usize) -> Self {
        ProgressLine {
            on: std::io::stderr().is_terminal(),
            done: 0,
            total,
            label: String::new(),
        }
    }

    pub(crate) fn start(&mut self, version: &str, size: &str) {
        self.done += 1;
        self.label = format!("{version} @ {size}");
        self.draw("compiled");
    }

    pub(crate) fn phase(&mut self, p: Phase) {
        let word = match p {
            Phase::Preparing => "preparing",
            Phase::Checking => "checking",
            Phase::Benchmarking => "benchmarking",
        };
        self.draw(word);
    }

    pub(crate) fn draw(&self, word: &str) {
        if !self.on {
            return;
        }
        let width = 24;
        let filled = width * self.done.saturating_sub(1) / self.total.max(1);
        let bar: String = "#".repeat(filled) + &"-".repeat(width - filled);
        let mut e = std::io::stderr();
        let _ = write!(
            e,
            "\r\x1b[2K[{bar}] {}/{} {} {word}",
            self.done, self.total, self.label
        );
        let _ = e.flush();
    }

    pub(crate) fn finish(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// The documented exit code for a finished batch: a compile error (3) outranks a failed check
/// (1; crashes and timeouts count as failed checks), which outranks a regression (2).
pub fn exit_code(outcome: &BatchOutcome, regressions: usize) -> i32 {
    let failed = outcome.report.results.iter().any(|r| {
        matches!(
            r.status,
            Status::CheckFailed | Status::Crashed | Status::Timeout | Status::Error
        )
    });
    if outcome.compile_errors {
        crate::exit::COMPILE_ERROR
    } else if failed {
        crate::exit::CHECK_FAILED
    } else if regressions > 0 {
        crate::exit::REGRESSION
    } else {
        crate::exit::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(statuses: &[Status], compile_errors: bool) -> BatchOutcome {
        BatchOutcome {
            report: BatchReport {
                schema: report::SCHEMA,
                kwb_version: "test".into(),
                workspace: "w.yaml".into(),
                created_unix_s: 0,
                device: None,
                mode: Mode::Cold,
                backend: None,
                sweeps: Vec::new(),
                shard: None,
                results: statuses
                    .iter()
                    .map(|s| RunResult::new("v", "n", *s))
                    .collect(),
            },
            compile_errors,
            compile_diagnostics: Vec::new(),
        }
    }

    #[test]
    fn exit_codes_rank_compile_errors_then_failures_then_regressions() {
        use crate::exit::*;
        assert_eq!(
            exit_code(&outcome(&[Status::Ok, Status::Skipped], false), 0),
            OK
        );
        assert_eq!(exit_code(&outcome(&[Status::Ok], false), 1), REGRESSION);
        for failing in [
            Status::CheckFailed,
            Status::Crashed,
            Status::Timeout,
            Status::Error,
        ] {
            assert_eq!(
                exit_code(&outcome(&[Status::Ok, failing], false), 1),
                CHECK_FAILED
            );
        }
        assert_eq!(
            exit_code(&outcome(&[Status::CheckFailed], true), 1),
            COMPILE_ERROR
        );
    }
}
