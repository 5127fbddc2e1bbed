//! The backend seam: what runs a planned job. The GPU backend drives the isolated worker
//! process through the supervisor; the CPU backend runs the job in kwb's PTX emulator or the
//! tile interpreter. Both fill the same [`RunResult`], so `batch`, `watch` and the reports read
//! one outcome type.

use super::plan::PlannedRun;
use crate::compile::CompiledVersion;
use crate::report::{DeviceInfo, RunResult, Status};
use crate::run::cpu::{run_job, CpuCode, CpuOptions, CpuOutcome};
use crate::run::protocol::{Phase, RunJob};
use crate::run::supervisor::{JobResult, Supervisor};
use crate::watchdog::CancelFlag;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How a job ended, besides what it wrote into its result.
pub enum Ran {
    /// The result is filled in; the timed samples, if it was timed (µs).
    Done { samples: Vec<f64> },
    /// The job was cancelled (its version was saved again); the result means nothing.
    Cancelled,
}

/// Something that runs jobs: one GPU (through its worker), or the CPU.
pub trait Backend: Send {
    /// What the user sees it called: "GPU 0 (NVIDIA H200)", "CPU".
    fn label(&self) -> String;

    /// Which runs it takes.
    fn target(&self) -> super::schedule::Target;

    /// Runs `job` (planned as `run`), filling `result`. `phase` hears its progress; once
    /// `cancel` is set, the job may stop early with [`Ran::Cancelled`].
    fn run(
        &mut self,
        run: &PlannedRun,
        job: &RunJob,
        result: &mut RunResult,
        phase: &mut dyn FnMut(Phase),
        cancel: &CancelFlag,
    ) -> Ran;

    /// False once the backend cannot take jobs until [`Backend::recover`] succeeds (its
    /// remote worker's connection is gone).
    fn connected(&self) -> bool {
        true
    }

    /// Whether [`Backend::recover`] can wait for the backend to come back (a user is there to
    /// reconnect it). Without, a lost job is reported as it ended and the next job tries again.
    fn recovers(&self) -> bool {
        false
    }

    /// Waits until the backend can run jobs again; false when it never will.
    fn recover(&mut self) -> bool {
        false
    }

    /// Ends the backend's work cleanly (a GPU worker is asked to exit).
    fn shutdown(self: Box<Self>) {}
}

/// Brings a lost worker back (true), or gives up (false).
pub type Recovery = Box<dyn FnMut(&mut Supervisor) -> bool + Send>;

/// One GPU, through its worker process.
pub struct GpuBackend {
    sup: Supervisor,
    device: DeviceInfo,
    ordinal: u32,
    peak: Option<f64>,
    /// How to get the worker back after the connection is lost, when a user is there to ask.
    recovery: Option<Recovery>,
}

impl GpuBackend {
    /// The GPU `ordinal` of the worker `sup` drives.
    pub fn new(sup: Supervisor, ordinal: u32, device: DeviceInfo) -> GpuBackend {
        let peak = device.peak().0;
        GpuBackend {
            sup,
            device,
            ordinal,
            peak,
            recovery: None,
        }
    }

    /// How to reconnect once the worker's connection is lost (watch asks the user).
    pub fn with_recovery(mut self, recover: Recovery) -> GpuBackend {
        self.recovery = Some(recover);
        self
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }
}

impl Backend for GpuBackend {
    fn label(&self) -> String {
        format!("GPU {} ({})", self.ordinal, self.device.name)
    }

    fn target(&self) -> super::schedule::Target {
        super::schedule::Target::Gpu
    }

    fn run(
        &mut self,
        _run: &PlannedRun,
        job: &RunJob,
        result: &mut RunResult,
        phase: &mut dyn FnMut(Phase),
        cancel: &CancelFlag,
    ) -> Ran {
        let cancelled = || cancel.load(Ordering::Relaxed);
        result.gpu = Some(self.ordinal);
        let outcome = self.sup.run_cancellable(job, phase, &cancelled);
        if outcome == JobResult::Cancelled {
            return Ran::Cancelled;
        }
        let samples = match &outcome {
            JobResult::Done(o) => o.samples_us.clone(),
            _ => Vec::new(),
        };
        fill_gpu(result, outcome, self.peak);
        if !self.sup.connected() && self.recovery.is_some() {
            let why = result.message.take().unwrap_or_default();
            result.status = Status::Crashed;
            result.message = Some(format!(
                "connection to the worker lost: {why}\npress c to reconnect and resume"
            ));
        }
        Ran::Done { samples }
    }

    fn connected(&self) -> bool {
        self.sup.connected()
    }

    fn recovers(&self) -> bool {
        self.recovery.is_some()
    }

    fn recover(&mut self) -> bool {
        match &mut self.recovery {
            Some(recover) => recover(&mut self.sup),
            None => false,
        }
    }

    fn shutdown(self: Box<Self>) {
        self.sup.shutdown();
    }
}

/// Turns what the supervisor reports for a job into the result's status, message, check and
/// timing.
pub fn fill_gpu(r: &mut RunResult, outcome: JobResult, peak: Option<f64>) {
    match outcome {
        JobResult::Done(o) => {
            if let Some(e) = o.error {
                r.status = Status::Skipped;
                r.message = Some(e);
            } else if o.check.as_ref().is_some_and(|c| !c.passed) {
                r.status = Status::CheckFailed;
                r.message = o.check.as_ref().and_then(|c| c.failure.clone());
            }
            r.check = o.check;
            if let (Some(t), Some(stop)) = (o.timing, o.stop) {
                r.set_timing(t, stop, peak);
            }
        }
        JobResult::Crashed { error } => {
            r.status = Status::Crashed;
            r.message = Some(error);
        }
        JobResult::Timeout { silent_ms } => {
            r.status = Status::Timeout;
            r.message = Some(format!(
                "no progress for {:.1} s; the worker was killed",
                silent_ms as f64 / 1e3
            ));
        }
        JobResult::Failed { message } => {
            r.status = Status::Error;
            r.message = Some(message);
        }
        JobResult::Cancelled => {
            r.status = Status::Skipped;
            r.message = Some("cancelled: superseded by a newer save".into());
        }
    }
}

/// Which engine runs tile-language versions on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuEngine {
    /// Tile versions in the interpreter (the language's semantics), CUDA in the emulator.
    #[default]
    Auto,
    /// Every version's PTX in the emulator, tile versions' generated code included.
    Emulator,
}

/// The CPU: the PTX emulator and the tile interpreter. Each compile's code is decoded once.
pub struct CpuBackend {
    engine: CpuEngine,
    threads: usize,
    /// Decoded code by compile (its address), holding the compile so the address stays its.
    codes: HashMap<usize, (Arc<CompiledVersion>, Result<CpuCode, String>)>,
}

impl CpuBackend {
    /// `threads` for each launch's CTAs (0: every core).
    pub fn new(engine: CpuEngine, threads: usize) -> CpuBackend {
        CpuBackend {
            engine,
            threads,
            codes: HashMap::new(),
        }
    }

    /// The code of `whole`'s compile for `size`, decoded once.
    fn code(&mut self, whole: &Arc<CompiledVersion>, size: &str) -> Result<CpuCode, String> {
        let c = whole.for_size(size);
        let key = c as *const CompiledVersion as usize;
        if self.codes.len() > 256 {
            self.codes.clear();
        }
        let engine = self.engine;
        self.codes
            .entry(key)
            .or_insert_with(|| (whole.clone(), cpu_code(c, engine)))
            .1
            .clone()
    }
}

impl Backend for CpuBackend {
    fn label(&self) -> String {
        "CPU".into()
    }

    fn target(&self) -> super::schedule::Target {
        super::schedule::Target::Cpu
    }

    fn run(
        &mut self,
        run: &PlannedRun,
        job: &RunJob,
        result: &mut RunResult,
        phase: &mut dyn FnMut(Phase),
        cancel: &CancelFlag,
    ) -> Ran {
        let Some(code) = &run.code else {
            result.status = Status::Error;
            result.message = Some("nothing to run on the CPU".into());
            return Ran::Done {
                samples: Vec::new(),
            };
        };
        let size = result.size.clone();
        let own = match self.code(&code.version, &size) {
            Ok(c) => c,
            Err(e) => {
                result.status = Status::Error;
                result.message = Some(e);
                return Ran::Done {
                    samples: Vec::new(),
                };
            }
        };
        let reference = code
            .reference
            .as_ref()
            .and_then(|r| self.code(r, &size).ok());
        phase(Phase::Checking);
        let opts = CpuOptions {
            threads: self.threads,
            cancel: Some(cancel.clone()),
            ..CpuOptions::default()
        };
        let outcome = run_job(job, &own, reference.as_ref(), &opts);
        if outcome.cancelled {
            return Ran::Cancelled;
        }
        result.backend = Some(own.backend());
        fill_cpu(result, outcome);
        Ran::Done {
            samples: Vec::new(),
        }
    }
}

/// The CPU code of one compile: the PTX decoded, or the tile IR.
pub fn cpu_code(c: &CompiledVersion, engine: CpuEngine) -> Result<CpuCode, String> {
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

/// A CPU result's status: an error that stopped the run, then findings, then the check.
pub fn fill_cpu(r: &mut RunResult, outcome: CpuOutcome) {
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
