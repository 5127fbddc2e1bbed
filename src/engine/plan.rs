//! One function plans runs, for `kwb batch` (every version at every size) and `kwb watch` (the
//! version just compiled, at the sizes its backend takes): each (version, size) becomes a
//! [`PlannedRun`], a job for any backend, or a result that is already final (the version did
//! not compile, its launch cannot be planned).

use crate::compile::occupancy::ArchSpec;
use crate::compile::CompiledVersion;
use crate::report::{RunResult, Status, SweepMark};
use crate::run::plan::{plan_job, work, PlanOptions};
use crate::run::protocol::{BenchSpec, RunJob};
use crate::run::stats::StopRule;
use crate::workspace::{ProblemSize, Reference, Version, Workspace};
use std::sync::Arc;

/// One version at one size: what to run, and the result so far.
#[derive(Clone)]
pub struct PlannedRun {
    /// Indices into the workspace's versions and sizes.
    pub version: usize,
    pub size: usize,
    /// The result's names, sweep mark and work (bytes, FLOPs); final when there is no job.
    pub result: RunResult,
    /// The job any backend runs; `None` when `result` already says why nothing runs.
    pub job: Option<RunJob>,
    /// The compiles the CPU backends run (the GPU's job carries its CUBIN).
    pub code: Option<RunCode>,
    /// A quick look (a few samples), refined by the full run planned after it.
    pub provisional: bool,
}

/// A version's compile and its reference's, whole: [`CompiledVersion::for_size`] picks the
/// specialisation.
#[derive(Clone)]
pub struct RunCode {
    pub version: Arc<CompiledVersion>,
    pub reference: Option<Arc<CompiledVersion>>,
}

/// What a plan is for: the target, the inputs' seed and the benchmark settings.
pub struct Planning<'a> {
    pub ws: &'a Workspace,
    pub arch: &'a ArchSpec,
    /// Each size's inputs come from [`size_seed`] of this.
    pub seed: u64,
    pub bench: BenchSpec,
    /// Plan a quick look at this size (an index) before its full run.
    pub quick_look_at: Option<usize>,
}

/// The quick look's stop rule: a handful of samples, tens of milliseconds at most.
pub const QUICK_LOOK: StopRule = StopRule {
    min_samples: 3,
    min_time_s: 0.0,
    max_time_s: 0.03,
    target_rel_std_error: 0.02,
    max_samples: 64,
};

/// The runs of version `version` (compiled as `compiled`) at `sizes`, in that order. A
/// `config_failure` is a sweep configuration whose compile failed where its siblings' did
/// not: skipped, not an error.
pub fn plan_runs(
    p: &Planning,
    version: usize,
    compiled: &Arc<CompiledVersion>,
    reference: Option<&Arc<CompiledVersion>>,
    sizes: &[usize],
    config_failure: bool,
) -> Vec<PlannedRun> {
    let ws = p.ws;
    let v = &ws.versions[version];
    let reference_version = reference_index(ws).map(|i| &ws.versions[i]);
    let mut out = Vec::new();
    for &size_index in sizes {
        let size = &ws.sizes[size_index];
        let mut r = new_result(ws, v, size);
        (r.bytes, r.flops) = work(ws, v, size).unwrap_or((None, None));
        let mut run = PlannedRun {
            version,
            size: size_index,
            result: r,
            job: None,
            code: None,
            provisional: false,
        };
        if !compiled.ok {
            run.result = if config_failure {
                skipped_compile(run.result, compiled)
            } else {
                compile_failure(run.result, compiled)
            };
            out.push(run);
            continue;
        }
        let opts = PlanOptions {
            seed: size_seed(p.seed, size_index),
            bench: p.bench.clone(),
        };
        let c = compiled.for_size(&size.name);
        let r = reference_version.zip(reference.map(|rc| rc.for_size(&size.name)));
        match plan_job(ws, v, c, size, p.arch, r, 0, &opts) {
            Ok(job) => {
                run.job = Some(job);
                run.code = Some(RunCode {
                    version: compiled.clone(),
                    reference: reference.cloned(),
                });
            }
            Err(e) => run.result = plan_failure(run.result, v, e.to_string()),
        }
        if p.quick_look_at == Some(size_index) && run.job.is_some() {
            out.push(quick_look(&run));
        }
        out.push(run);
    }
    out
}

/// `run` as a quick look: checked, with a short warm-up and a few samples.
fn quick_look(run: &PlannedRun) -> PlannedRun {
    let mut quick = run.clone();
    quick.provisional = true;
    if let Some(job) = &mut quick.job {
        job.bench.warmup_ms = 2.0;
        job.bench.stop = QUICK_LOOK;
    }
    quick
}

/// The index of the workspace's reference version, if it names one.
pub fn reference_index(ws: &Workspace) -> Option<usize> {
    match &ws.reference {
        Reference::Version(name) => ws.versions.iter().position(|v| &v.name == name),
        _ => None,
    }
}

/// The seed of the `index`th size: one fresh seed per size, shared by its versions, so every
/// version of a size is checked on the same data.
pub fn size_seed(seed0: u64, index: usize) -> u64 {
    seed0.wrapping_add((index as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d))
}

/// A seed that differs from run to run.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

/// A fresh result for `v` at `size`, marked with its place in its sweep.
pub fn new_result(ws: &Workspace, v: &Version, size: &ProblemSize) -> RunResult {
    let mut r = RunResult::new(&v.name, &size.name, Status::Ok);
    r.sweep = v.sweep.as_ref().map(|p| SweepMark {
        parent: p.parent.clone(),
        values: p.values.iter().cloned().collect(),
        default: ws
            .sweep(&p.parent)
            .and_then(|s| s.default_at(size).map(|i| s.configs[i] == v.name))
            .unwrap_or(false),
        best: false,
    });
    r.baseline = v.baseline.as_ref().and_then(|b| {
        let us =
            b.us.eval_f64(&crate::workspace::SizeEnv::vars(&size.vars))
                .ok()?;
        Some(crate::report::BaselineTime {
            name: b.name.clone(),
            us,
            note: b.note.clone(),
        })
    });
    r
}

/// Per version (in workspace order): its compile failed, but it is a configuration of a sweep
/// other configurations of which compiled, so the failure is the configuration's.
pub fn config_compile_failures(ws: &Workspace, compiled: &[Arc<CompiledVersion>]) -> Vec<bool> {
    let family_compiles = |parent: &str| {
        ws.versions
            .iter()
            .zip(compiled)
            .any(|(v, c)| c.ok && v.sweep.as_ref().is_some_and(|p| p.parent == parent))
    };
    ws.versions
        .iter()
        .zip(compiled)
        .map(|(v, c)| !c.ok && v.sweep.as_ref().is_some_and(|p| family_compiles(&p.parent)))
        .collect()
}

/// The result of a version that did not compile: its first error.
fn compile_failure(mut r: RunResult, c: &CompiledVersion) -> RunResult {
    r.status = Status::CompileError;
    r.message = c
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .map(|d| d.to_string());
    r
}

/// The result of a configuration whose compile failed where others' did not: skipped, with
/// the first error as the reason.
fn skipped_compile(mut r: RunResult, c: &CompiledVersion) -> RunResult {
    r.status = Status::Skipped;
    let first = c
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .map_or_else(|| "no error message".to_string(), |d| d.to_string());
    r.message = Some(format!("this configuration does not compile: {first}"));
    r
}

/// The result of a version whose launch could not be planned: for a configuration of a sweep
/// the launch is what the configuration asks for (too many threads, too much shared memory),
/// so it is skipped; for any other version it is an error.
fn plan_failure(mut r: RunResult, v: &Version, why: String) -> RunResult {
    if v.sweep.is_some() {
        r.status = Status::Skipped;
        r.message = Some(format!("this configuration cannot launch: {why}"));
    } else {
        r.status = Status::Error;
        r.message = Some(why);
    }
    r
}
