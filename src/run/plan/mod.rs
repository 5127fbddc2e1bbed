//! The run planner: (workspace, compiled version, problem size) → a fully evaluated [`RunJob`]
//! that a GPU worker executes without interpreting anything.
//!
//! Everything that can be checked without a GPU is checked here, so that a bad launch becomes
//! a message naming the version, the launch, the size and the limit, never a fault in the
//! worker. Launches are planned in `plan/launch.rs` (the limits, and the rules that bind
//! arguments to PTX parameter types); this file adds the buffers, the reference, the
//! tolerances, and the work one run does.

mod launch;
pub mod params;

pub use launch::{ArgProblem, LaunchProblem, MAX_BLOCK_DIM, MAX_GRID_DIM};

use self::params::{entry_params, Param, ParamError};
use crate::compile::occupancy::ArchSpec;
use crate::compile::CompiledVersion;
use crate::diag::Diagnostic;
use crate::run::protocol::{BenchSpec, Blob, BufferSpec, Program, ReferenceSpec, Role, RunJob};
use crate::workspace::{Buffer, Formula, ProblemSize, Reference, SizeEnv, Version, Workspace};
use launch::plan_launch;

pub struct PlanOptions {
    pub seed: u64,
    /// Copied into the job; `rtol`/`atol` left `None` are filled from the workspace.
    pub bench: BenchSpec,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("version `{version}`, size `{size}`, launch {index} `{entry}` ({field}): {problem}")]
    Launch {
        version: String,
        index: usize,
        entry: String,
        /// Where in the YAML, e.g. `versions.v1.launches[2].args[1]`.
        field: String,
        size: String,
        problem: Box<LaunchProblem>,
    },
    #[error("version `{version}`, size `{size}`: {problem}")]
    Version {
        version: String,
        size: String,
        /// Where in the YAML: the version, or `reference`, `bytes`, `flops`.
        field: String,
        problem: Box<VersionProblem>,
    },
}

impl PlanError {
    /// The YAML field the problem is in, as precisely as known.
    pub fn field(&self) -> &str {
        match self {
            PlanError::Launch { field, .. } | PlanError::Version { field, .. } => field,
        }
    }

    /// The error as a diagnostic located in the workspace file.
    pub fn to_diagnostic(&self, ws: &Workspace) -> Diagnostic {
        let mut d = Diagnostic::error(self.to_string()).in_file(&ws.path);
        if !self.field().is_empty() {
            d = d.field(self.field());
            if let Some(p) = ws.spans.find(self.field()) {
                d = d.at(p.line, Some(p.column));
            }
        }
        d
    }
}

/// What is wrong with a version as a whole (its buffers, its reference, its work formulas).
#[derive(Debug, thiserror::Error)]
pub enum VersionProblem {
    #[error("it did not compile, so it cannot run")]
    NotCompiled,
    #[error("cannot size buffer `{name}`: {message}")]
    Buffer { name: String, message: String },
    #[error("cannot evaluate `{field}`: {message}")]
    Formula {
        field: &'static str,
        message: String,
    },
    #[error("reference version `{name}`: {message}")]
    Reference { name: String, message: String },
    #[error("cannot evaluate its constexprs or num_warps: {0}")]
    Vars(String),
    #[error("its reference cannot be planned: {0}")]
    ReferencePlan(Box<PlanError>),
}

/// Plans one run of `version` at `size`. `reference` is the reference version and its
/// compilation, needed when the workspace's reference is another version.
#[allow(clippy::too_many_arguments)]
pub fn plan_job(
    ws: &Workspace,
    version: &Version,
    compiled: &CompiledVersion,
    size: &ProblemSize,
    arch: &ArchSpec,
    reference: Option<(&Version, &CompiledVersion)>,
    id: u64,
    opts: &PlanOptions,
) -> Result<RunJob, PlanError> {
    let err = |problem| version_error(version, size, problem);
    let program = plan_program(version, compiled, size, arch)?;
    let mut buffers = buffer_specs(version, size).map_err(err)?;
    let reference = match &ws.reference {
        Reference::None => ReferenceSpec::None,
        Reference::Version(name) if *name == version.name => ReferenceSpec::None,
        Reference::Version(name) => {
            let (rv, rc) = reference
                .filter(|(rv, _)| rv.name == *name)
                .ok_or_else(|| {
                    let message = "it was not given to the planner".to_string();
                    err(VersionProblem::Reference {
                        name: name.clone(),
                        message,
                    })
                })?;
            let program = plan_program(rv, rc, size, arch)
                .map_err(|e| err(VersionProblem::ReferencePlan(Box::new(e))))?;
            share_buffers(&mut buffers, rv, size).map_err(err)?;
            ReferenceSpec::Version {
                name: name.clone(),
                program,
            }
        }
        Reference::Expr(outs) => ReferenceSpec::Expr {
            outputs: outs
                .iter()
                .map(|(n, f)| (n.clone(), f.text.clone()))
                .collect(),
            vars: size.vars.clone(),
        },
        Reference::Npy(files) => ReferenceSpec::Npy {
            outputs: (files.iter())
                .map(|(n, p)| (n.clone(), p.to_string_lossy().into_owned()))
                .collect(),
        },
    };
    let mut bench = opts.bench.clone();
    let tols = [version.tolerance, ws.tolerance];
    bench.rtol = bench
        .rtol
        .or_else(|| tols.iter().flatten().find_map(|t| t.rtol));
    bench.atol = bench
        .atol
        .or_else(|| tols.iter().flatten().find_map(|t| t.atol));
    Ok(RunJob {
        id,
        version: version.name.clone(),
        size: size.name.clone(),
        program,
        buffers,
        reference,
        seed: opts.seed,
        bench,
    })
}

/// Device memory a job needs, in bytes: every buffer (scratch included) and, when the
/// reference is another version, a second copy of each output for that version to write.
/// Expression and `.npy` references are computed and compared on the host.
pub fn device_bytes(job: &RunJob) -> u64 {
    let size = |b: &BufferSpec| {
        (b.shape.iter().map(|d| *d as u64)).fold(b.dtype.size(), u64::saturating_mul)
    };
    let all = job.buffers.iter().map(size).fold(0, u64::saturating_add);
    let outputs = (job.buffers.iter())
        .filter(|b| b.role == Role::Output)
        .map(size)
        .fold(0, u64::saturating_add);
    match job.reference {
        ReferenceSpec::Version { .. } => all.saturating_add(outputs),
        _ => all,
    }
}

/// Bytes moved and FLOPs of one run at this size: the workspace's `bytes`/`flops` formulas
/// evaluated with this version's buffers (so `bytes(a)` is its own dtype's), or by default every
/// non-scratch buffer once and no FLOP count. Bytes are `None` for a version without buffers.
pub fn work(
    ws: &Workspace,
    version: &Version,
    size: &ProblemSize,
) -> Result<(Option<u64>, Option<u64>), PlanError> {
    let err =
        |field, message| version_error(version, size, VersionProblem::Formula { field, message });
    let all: Vec<Buffer> = version
        .buffers
        .iter()
        .chain(&version.scratch)
        .cloned()
        .collect();
    let env = SizeEnv::with_buffers(&size.vars, &all);
    let eval = |field: &'static str, f: &Formula| {
        let v = f.eval_f64(&env).map_err(|m| err(field, m))?;
        if !(0.0..1.8e19).contains(&v) {
            return Err(err(
                field,
                format!("`{}` is {v}; expected a count from 0 to 2^64", f.text),
            ));
        }
        Ok(v.round() as u64)
    };
    let bytes = match &ws.bytes {
        Some(f) => Some(eval("bytes", f)?),
        None if version.buffers.is_empty() => None,
        None => Some(version.buffers.iter().try_fold(0u64, |sum, b| {
            let n = env.bytes(b).map_err(|m| err("bytes", m))?;
            sum.checked_add(n)
                .ok_or_else(|| err("bytes", "the total overflows".into()))
        })?),
    };
    let flops = ws.flops.as_ref().map(|f| eval("flops", f)).transpose()?;
    Ok((bytes, flops))
}

fn version_error(version: &Version, size: &ProblemSize, problem: VersionProblem) -> PlanError {
    let field = match &problem {
        VersionProblem::Formula { field, .. } => field.to_string(),
        VersionProblem::Reference { .. } | VersionProblem::ReferencePlan(_) => "reference".into(),
        VersionProblem::NotCompiled | VersionProblem::Buffer { .. } | VersionProblem::Vars(_) => {
            version.field.clone()
        }
    };
    PlanError::Version {
        version: version.name.clone(),
        size: size.name.clone(),
        field,
        problem: Box::new(problem),
    }
}

/// The launches of `version`, evaluated, checked and bound.
fn plan_program(
    version: &Version,
    compiled: &CompiledVersion,
    size: &ProblemSize,
    arch: &ArchSpec,
) -> Result<Program, PlanError> {
    if !compiled.ok {
        return Err(version_error(version, size, VersionProblem::NotCompiled));
    }
    let vars = version
        .vars_at(size)
        .map_err(|message| version_error(version, size, VersionProblem::Vars(message)))?;
    let env = SizeEnv::vars(&vars);
    // Each distinct entry's parameter list, read from the PTX once.
    let params: Vec<(&str, Result<Vec<Param>, ParamError>)> = (version.entries().into_iter())
        .map(|e| (e, entry_params(&compiled.ptx, e)))
        .collect();
    let mut launches = Vec::new();
    for (index, launch) in version.launches.iter().enumerate() {
        let ps = (params.iter().find(|(e, _)| *e == launch.entry)).map_or_else(
            || entry_params(&compiled.ptx, &launch.entry),
            |(_, p)| p.clone(),
        );
        let spec = ps
            .map_err(LaunchProblem::from)
            .and_then(|ps| plan_launch(version, compiled, launch, &env, arch, &ps));
        launches.push(spec.map_err(|problem| PlanError::Launch {
            version: version.name.clone(),
            index,
            entry: launch.entry.clone(),
            field: format!("{}{}", launch.field, problem.field_suffix()),
            size: size.name.clone(),
            problem: Box::new(problem),
        })?);
    }
    Ok(Program {
        cubin: Blob(compiled.cubin.to_vec()),
        launches,
    })
}

/// Every buffer `version` sees at `size`: its own (inputs and outputs), then its scratch.
fn buffer_specs(version: &Version, size: &ProblemSize) -> Result<Vec<BufferSpec>, VersionProblem> {
    let env = SizeEnv::vars(&size.vars);
    let own = version
        .buffers
        .iter()
        .map(|b| (b, if b.output { Role::Output } else { Role::Input }));
    let scratch = version.scratch.iter().map(|b| (b, Role::Scratch));
    own.chain(scratch)
        .map(|(b, role)| {
            let problem = |message| VersionProblem::Buffer {
                name: b.name.clone(),
                message,
            };
            env.bytes(b).map_err(problem)?;
            let shape = (b.shape.iter())
                .map(|d| {
                    d.eval_u64(&env)
                        .and_then(|n| usize::try_from(n).map_err(|e| e.to_string()))
                })
                .collect::<Result<_, _>>()
                .map_err(problem)?;
            Ok(BufferSpec {
                name: b.name.clone(),
                dtype: b.dtype,
                shape,
                init: b.init.clone(),
                role,
                initialized: role == Role::Output && b.init_given,
            })
        })
        .collect()
}

/// Makes the job's buffers serve the reference version too: the ones both see must agree in
/// dtype and shape (it runs on the same inputs), and its own scratch buffers are added.
fn share_buffers(
    buffers: &mut Vec<BufferSpec>,
    rv: &Version,
    size: &ProblemSize,
) -> Result<(), VersionProblem> {
    let problem = |message| VersionProblem::Reference {
        name: rv.name.clone(),
        message,
    };
    for theirs in buffer_specs(rv, size).map_err(|e| problem(e.to_string()))? {
        match buffers.iter().find(|b| b.name == theirs.name) {
            Some(ours) if ours.dtype == theirs.dtype && ours.shape == theirs.shape => {}
            Some(ours) => {
                return Err(problem(format!(
                    "it sees buffer `{}` as {}{:?}, this version as {}{:?}; \
                     the two must run on the same buffers",
                    ours.name, theirs.dtype, theirs.shape, ours.dtype, ours.shape
                )))
            }
            None if theirs.role == Role::Scratch => buffers.push(theirs),
            None => {
                return Err(problem(format!(
                    "this version has no buffer `{}`",
                    theirs.name
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
