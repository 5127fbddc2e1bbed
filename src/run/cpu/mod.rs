//! The CPU backend: a job the GPU worker would run (the same [`RunJob`], planned the same way)
//! run instead by kwb's PTX emulator or by the tile language's interpreter. Inputs, the
//! poisoned outputs, the reference and the checks are the GPU path's own ([`super::data`],
//! [`super::check`]); what the CPU adds is findings (out-of-bounds, races, uninitialised reads,
//! divergent barriers), located by thread and source line. There is no timing.

mod emulate;
mod interpret;
pub mod memory;

use crate::expr::Tensor;
use crate::report::{Backend, CheckSummary, Finding};
use crate::run::host::check::check;
use crate::run::host::data::{
    data_key, host_reference, make_inputs, outputs, summarize_checks, tolerance,
};
use crate::run::protocol::{BufferSpec, Program, RunJob};
use std::collections::HashMap;
use std::sync::Arc;

/// What a version runs as on the CPU.
#[derive(Clone)]
pub enum CpuCode {
    /// Its PTX, decoded once, for the emulator.
    Ptx(Arc<crate::emu::Module>),
    /// Its checked tile IR, by kernel name, for the interpreter.
    Tile(Vec<Arc<crate::tile::ir::Kernel>>),
}

impl CpuCode {
    pub fn backend(&self) -> Backend {
        match self {
            CpuCode::Ptx(_) => Backend::Emulator,
            CpuCode::Tile(_) => Backend::Interpreter,
        }
    }
}

/// The default wall-clock limit of one launch on the CPU (ms): a launch the GPU runs in
/// microseconds can take seconds in the emulator, so it is longer than the GPU's.
pub const CPU_WATCHDOG_MS: u64 = 120_000;

/// Per-run limits.
#[derive(Debug, Clone)]
pub struct CpuOptions {
    /// Worker threads for CTAs (0: every core).
    pub threads: usize,
    /// Findings kept per run; the rest are counted.
    pub max_findings: usize,
    /// Set to stop the run: its work is no longer wanted ([`CpuOutcome::cancelled`]).
    pub cancel: Option<crate::watchdog::CancelFlag>,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            threads: 0,
            max_findings: 32,
            cancel: None,
        }
    }
}

/// What one CPU job came to.
#[derive(Debug, Clone, Default)]
pub struct CpuOutcome {
    pub check: Option<CheckSummary>,
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
    /// The run could not be carried out (an unsupported instruction, a bad launch).
    pub error: Option<String>,
    /// The run was not started, and why (it needs more host memory than kwb allows itself).
    pub skipped: Option<String>,
    /// A launch ran past the job's watchdog, as the GPU worker's timeout: the message.
    pub timed_out: Option<String>,
    /// The run was stopped through [`CpuOptions::cancel`]; nothing else in it counts.
    pub cancelled: bool,
    /// Lane-instructions (emulator) or tile operations (interpreter) executed.
    pub work: u64,
}

/// Why a run stopped before its end.
#[derive(Debug)]
pub(super) enum Stop {
    /// The run could not be carried out.
    Error(String),
    /// A launch ran past the job's watchdog (`RunJob::bench.watchdog_ms`).
    Timeout(String),
    /// The run was cancelled.
    Cancelled,
}

impl From<String> for Stop {
    fn from(e: String) -> Stop {
        Stop::Error(e)
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Error(e) | Stop::Timeout(e) => f.write_str(e),
            Stop::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// The outputs a run produced, and what it found on the way.
struct Ran {
    outputs: Vec<Vec<u8>>,
    findings: Vec<Finding>,
    notes: Vec<String>,
    work: u64,
}

/// Runs `program` (compiled as `code`: `job`'s own program, or its reference version's) on
/// `job`'s buffers (name → starting bytes); returns the final bytes of each buffer named in
/// `want`. Each launch may run the job's `watchdog_ms` of wall-clock time (0: no limit), as a
/// launch on the GPU.
fn run_program(
    code: &CpuCode,
    program: &Program,
    job: &RunJob,
    start: &HashMap<String, Vec<u8>>,
    want: &[&BufferSpec],
    opts: &CpuOptions,
) -> Result<Ran, Stop> {
    let (specs, watchdog_ms) = (&job.buffers, job.bench.watchdog_ms);
    let watchdog = (watchdog_ms > 0).then_some(watchdog_ms);
    match code {
        CpuCode::Ptx(m) => emulate::run(m, program, specs, start, want, opts, watchdog),
        CpuCode::Tile(k) => interpret::run(k, program, specs, start, want, watchdog, opts),
    }
}

/// Every buffer's contents before the run: generated inputs, outputs poisoned or initialised.
fn starting_bytes(
    data: &crate::run::host::data::Data,
    outs: &[&BufferSpec],
) -> HashMap<String, Vec<u8>> {
    let mut start: HashMap<String, Vec<u8>> = data
        .inputs
        .iter()
        .map(|(k, (bytes, _))| (k.clone(), bytes.clone()))
        .collect();
    for b in outs {
        start.insert(b.name.clone(), data.start_of(b));
    }
    start
}

/// Checks `job` on the CPU. `code` runs the version, `reference` the reference version (when
/// the workspace's reference is another version).
pub fn run_job(
    job: &RunJob,
    code: &CpuCode,
    reference: Option<&CpuCode>,
    opts: &CpuOptions,
) -> CpuOutcome {
    let mut out = CpuOutcome::default();
    // Before any buffer is allocated: a failed allocation would abort the process.
    match memory::host_limit().map(|limit| memory::shortfall(job, &limit)) {
        Ok(None) => {}
        Ok(Some(why)) => {
            out.skipped = Some(why);
            return out;
        }
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    }
    let data = match make_inputs(job, data_key(job)) {
        Ok(d) => d,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let outs = outputs(job);
    let start = starting_bytes(&data, &outs);
    let ran = match run_program(code, &job.program, job, &start, &outs, opts) {
        Ok(r) => r,
        Err(Stop::Timeout(e)) => {
            out.timed_out = Some(e);
            return out;
        }
        Err(Stop::Cancelled) => {
            out.cancelled = true;
            return out;
        }
        Err(Stop::Error(e)) => {
            out.error = Some(e);
            return out;
        }
    };
    out.findings = ran.findings;
    out.notes = ran.notes;
    out.work = ran.work;
    let host = data.tensors();
    let expected = match host_reference(job, &outs, &host) {
        Some(r) => r,
        None => reference_version(job, reference, &start, &outs, opts),
    };
    match expected {
        Ok(Some(expected)) => {
            let reports: Vec<_> = outs
                .iter()
                .zip(&ran.outputs)
                .zip(&expected)
                .map(|((b, bytes), want)| {
                    let tol = tolerance(job, b);
                    (
                        b.name.clone(),
                        check(bytes, b.dtype, &b.shape, &want.data, tol),
                    )
                })
                .collect();
            out.check = Some(summarize_checks(&reports));
        }
        Ok(None) => {}
        Err(e) => out.error = Some(e),
    }
    out
}

/// The reference version's outputs, from its own run on the same inputs.
fn reference_version(
    job: &RunJob,
    code: Option<&CpuCode>,
    start: &HashMap<String, Vec<u8>>,
    outs: &[&BufferSpec],
    opts: &CpuOptions,
) -> Result<Option<Vec<Tensor>>, String> {
    let crate::run::protocol::ReferenceSpec::Version { name, program } = &job.reference else {
        return Ok(None);
    };
    let code = code.ok_or_else(|| format!("reference version `{name}` did not compile"))?;
    let ran = run_program(code, program, job, start, outs, opts)
        .map_err(|e| format!("reference version `{name}`: {e}"))?;
    Ok(Some(
        outs.iter()
            .zip(ran.outputs)
            .map(|(b, bytes)| Tensor {
                shape: b.shape.clone(),
                data: crate::run::host::inputs::decode(b.dtype, &bytes),
            })
            .collect(),
    ))
}

/// What a CPU run of `job` leaves in each output, decoded, in output order: for differential
/// tests, which hold a GPU run against it.
pub fn run_outputs(job: &RunJob, code: &CpuCode, opts: &CpuOptions) -> Result<Vec<Tensor>, String> {
    let data = make_inputs(job, data_key(job))?;
    let outs = outputs(job);
    let start = starting_bytes(&data, &outs);
    let ran =
        run_program(code, &job.program, job, &start, &outs, opts).map_err(|e| e.to_string())?;
    if let Some(f) = ran.findings.first() {
        return Err(f.to_string());
    }
    Ok(outs
        .iter()
        .zip(ran.outputs)
        .map(|(b, bytes)| Tensor {
            shape: b.shape.clone(),
            data: crate::run::host::inputs::decode(b.dtype, &bytes),
        })
        .collect())
}
