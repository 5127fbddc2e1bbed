//! One job in the worker: make the inputs, run the version once on poisoned outputs and check
//! it against its reference, then benchmark it. GPU faults come back as [`ExecError::Fault`]
//! (the context is gone and the worker must exit); anything else is a recoverable failure.

use super::bench::{benchmark, Timing};
use super::check::{check, default_tolerance, CheckReport, Tolerance};
use super::device::{error_name, is_sticky, DevBuf, Stream};
use super::inputs::{decode, generate, poison};
use super::program::Loaded;
use super::protocol::{BufferSpec, JobOutcome, Phase, Program, ReferenceSpec, Role, RunJob};
use crate::expr::{eval_array, ArrayEnv, ArrayValue, Tensor};
use crate::report::CheckSummary;
use cudarc::driver::result::DriverError as CuError;
use std::collections::HashMap;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    /// The GPU faulted; the context cannot be used again.
    #[error("{0}")]
    Fault(String),
    /// The job failed but the worker can go on.
    #[error("{0}")]
    Failed(String),
}

impl From<CuError> for ExecError {
    fn from(e: CuError) -> Self {
        if is_sticky(&e) {
            ExecError::Fault(error_name(&e))
        } else {
            ExecError::Failed(error_name(&e))
        }
    }
}

/// What the worker tells the supervisor while a job runs.
pub trait Progress {
    fn phase(&mut self, phase: Phase);
    /// Called often during GPU work; the caller rate-limits heartbeats.
    fn beat(&mut self);
    /// Marks a stretch of CPU work (input generation, the reference) during which the worker
    /// sends heartbeats on its own, so a long reference is not mistaken for a hung kernel.
    fn cpu_busy(&mut self, busy: bool);
}

/// The device-side state a worker keeps between jobs.
pub struct Workbench {
    pub stream: Stream,
    /// At least twice the L2 size: written between cold-mode samples.
    pub flush: DevBuf,
    /// The last job's inputs and reference, reused while the next job asks for the same.
    pub data: Option<Data>,
}

/// Host inputs (bytes as uploaded, values as the reference sees them) and the reference.
pub struct Data {
    key: u64,
    inputs: HashMap<String, (Vec<u8>, Tensor)>,
    reference: Option<Option<Vec<Tensor>>>,
}

/// What the inputs and reference depend on: the seed, the input buffers and the reference.
fn data_key(job: &RunJob) -> u64 {
    use std::hash::{Hash, Hasher};
    let inputs: Vec<&BufferSpec> = job
        .buffers
        .iter()
        .filter(|b| b.role == Role::Input)
        .collect();
    let text = serde_json::to_string(&(
        job.seed,
        &inputs,
        &job.reference,
        job.buffers
            .iter()
            .filter(|b| b.role == Role::Output)
            .collect::<Vec<_>>(),
    ))
    .unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

fn make_inputs(job: &RunJob, key: u64) -> Result<Data, ExecError> {
    let mut inputs = HashMap::new();
    for b in job.buffers.iter().filter(|b| b.role == Role::Input) {
        // Each buffer's stream depends on its name, not its position, so versions agree.
        let name_hash = b.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
            (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
        });
        let h = generate(
            b.dtype,
            b.shape.iter().product(),
            &b.init,
            &b.shape,
            job.seed ^ name_hash,
        )
        .map_err(|e| ExecError::Failed(format!("buffer `{}`: {e}", b.name)))?;
        inputs.insert(
            b.name.clone(),
            (
                h.bytes,
                Tensor {
                    shape: b.shape.clone(),
                    data: h.values,
                },
            ),
        );
    }
    Ok(Data {
        key,
        inputs,
        reference: None,
    })
}

pub fn run_job(
    wb: &mut Workbench,
    job: &RunJob,
    progress: &mut dyn Progress,
) -> Result<JobOutcome, ExecError> {
    progress.phase(Phase::Preparing);
    let mut outcome = JobOutcome {
        samples_us: Vec::new(),
        id: job.id,
        check: None,
        timing: None,
        stop: None,
        error: None,
    };
    if let Some(msg) = memory_shortfall(job)? {
        outcome.error = Some(msg);
        return Ok(outcome);
    }
    // Inputs (and the reference made from them) are kept for the next job with the same seed,
    // buffers and reference: every version of one size sees the same data, made once.
    let key = data_key(job);
    let mut data = match wb.data.take() {
        Some(d) if d.key == key => d,
        stale => {
            drop(stale);
            progress.cpu_busy(true);
            let d = make_inputs(job, key);
            progress.cpu_busy(false);
            d?
        }
    };
    let mut device: HashMap<String, DevBuf> = HashMap::new();
    for b in &job.buffers {
        let elems: usize = b.shape.iter().product();
        let buf = DevBuf::alloc(elems * b.dtype.size() as usize)?;
        if let Some((bytes, _)) = data.inputs.get(&b.name) {
            buf.upload(bytes)?;
        }
        device.insert(b.name.clone(), buf);
    }
    settle()?;
    let refs: HashMap<String, &DevBuf> = device.iter().map(|(k, v)| (k.clone(), v)).collect();
    let mut program =
        Loaded::prepare(&job.program, &refs).map_err(|e| ExecError::Failed(e.to_string()))?;
    let outputs: Vec<&BufferSpec> = job
        .buffers
        .iter()
        .filter(|b| b.role == Role::Output)
        .collect();

    if job.bench.check {
        progress.phase(Phase::Checking);
        for b in &outputs {
            device[&b.name].upload(&poison(b.dtype, b.shape.iter().product()))?;
        }
        settle()?;
        program.enqueue(&wb.stream)?;
        wb.stream.sync()?;
        let got: Vec<Vec<u8>> = outputs
            .iter()
            .map(|b| device[&b.name].download())
            .collect::<Result<_, _>>()?;
        if data.reference.is_none() {
            let host: HashMap<&str, &Tensor> = data
                .inputs
                .iter()
                .map(|(k, (_, t))| (k.as_str(), t))
                .collect();
            data.reference = Some(reference(wb, job, &outputs, &host, &device, progress)?);
        }
        if let Some(Some(expected)) = &data.reference {
            let mut reports = Vec::new();
            for ((b, bytes), want) in outputs.iter().zip(&got).zip(expected.iter()) {
                let tol = tolerance(job, b);
                reports.push((
                    b.name.clone(),
                    check(bytes, b.dtype, &b.shape, &want.data, tol),
                ));
            }
            outcome.check = Some(summarize_checks(&reports));
        }
    }
    wb.data = Some(data);
    if job.bench.benchmark {
        progress.phase(Phase::Benchmarking);
        let Timing {
            stats,
            stop,
            samples,
        } = benchmark(&mut program, &wb.stream, &wb.flush, &job.bench, &mut || {
            progress.beat()
        })?;
        outcome.timing = Some(stats);
        outcome.stop = Some(stop);
        outcome.samples_us = samples[samples.len().saturating_sub(256)..].to_vec();
    }
    Ok(outcome)
}

/// Waits for every upload. `cuMemcpyHtoD` from pageable memory may return before its DMA
/// lands, and it runs on the legacy stream, which our non-blocking stream does not wait for.
fn settle() -> Result<(), CuError> {
    cudarc::driver::result::ctx::synchronize()
}

/// Says why a job does not fit in free device memory, with the figures.
fn memory_shortfall(job: &RunJob) -> Result<Option<String>, CuError> {
    let need: u64 = super::plan::device_bytes(job);
    let (free, total) = cudarc::driver::result::mem_get_info()?;
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Ok((need > free as u64).then(|| {
        format!(
            "does not fit in device memory: needs {:.2} GiB, {:.2} GiB free of {:.2} GiB",
            gib(need),
            gib(free as u64),
            gib(total as u64)
        )
    }))
}

fn tolerance(job: &RunJob, b: &BufferSpec) -> Tolerance {
    let d = default_tolerance(b.dtype);
    Tolerance {
        rtol: job.bench.rtol.unwrap_or(d.rtol),
        atol: job.bench.atol.unwrap_or(d.atol),
    }
}

struct Inputs<'a> {
    tensors: &'a HashMap<&'a str, &'a Tensor>,
    vars: &'a [(String, i64)],
}

impl ArrayEnv for Inputs<'_> {
    fn var(&self, name: &str) -> Option<ArrayValue<'_>> {
        if let Some(t) = self.tensors.get(name) {
            return Some(ArrayValue::Tensor(t));
        }
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| ArrayValue::Scalar(*v as f64))
    }

    fn var_names(&self) -> Vec<String> {
        self.tensors
            .keys()
            .map(|k| k.to_string())
            .chain(self.vars.iter().map(|(n, _)| n.clone()))
            .collect()
    }
}

/// The expected outputs, in the order of `outputs`, or `None` when there is no reference.
fn reference(
    wb: &Workbench,
    job: &RunJob,
    outputs: &[&BufferSpec],
    host: &HashMap<&str, &Tensor>,
    device: &HashMap<String, DevBuf>,
    progress: &mut dyn Progress,
) -> Result<Option<Vec<Tensor>>, ExecError> {
    match &job.reference {
        ReferenceSpec::None => Ok(None),
        ReferenceSpec::Expr {
            outputs: exprs,
            vars,
        } => {
            progress.cpu_busy(true);
            let env = Inputs {
                tensors: host,
                vars,
            };
            let mut out = Vec::new();
            for b in outputs {
                let (_, text) = exprs
                    .iter()
                    .find(|(n, _)| n == &b.name)
                    .ok_or_else(|| ExecError::Failed(format!("no reference for `{}`", b.name)))?;
                let expr = crate::expr::parse(text).map_err(|e| {
                    ExecError::Failed(format!(
                        "reference for `{}`: {}",
                        b.name,
                        crate::expr::render_errors(text, &e)
                    ))
                })?;
                let t = eval_array(&expr, &env).map_err(|e| {
                    ExecError::Failed(format!(
                        "reference for `{}`: {}",
                        b.name,
                        crate::expr::render_error(text, &e)
                    ))
                })?;
                out.push(t);
            }
            progress.cpu_busy(false);
            Ok(Some(out))
        }
        ReferenceSpec::Version { name, program } => Ok(Some(run_reference_version(
            wb, name, program, outputs, device,
        )?)),
        ReferenceSpec::Npy { outputs: files } => {
            let mut out = Vec::new();
            for b in outputs {
                let (_, path) = files.iter().find(|(n, _)| n == &b.name).ok_or_else(|| {
                    ExecError::Failed(format!("no reference file for `{}`", b.name))
                })?;
                let (shape, data) = super::npy::read_f64(std::path::Path::new(path))
                    .map_err(|e| ExecError::Failed(e.to_string()))?;
                out.push(Tensor { shape, data });
            }
            Ok(Some(out))
        }
    }
}

/// Runs the reference version on the same inputs into outputs of its own.
fn run_reference_version(
    wb: &Workbench,
    name: &str,
    program: &Program,
    outputs: &[&BufferSpec],
    device: &HashMap<String, DevBuf>,
) -> Result<Vec<Tensor>, ExecError> {
    let mut own: HashMap<String, DevBuf> = HashMap::new();
    for b in outputs {
        let buf = DevBuf::alloc(device[&b.name].bytes)?;
        buf.upload(&poison(b.dtype, b.shape.iter().product()))?;
        own.insert(b.name.clone(), buf);
    }
    settle()?;
    let mut refs: HashMap<String, &DevBuf> = device.iter().map(|(k, v)| (k.clone(), v)).collect();
    for (k, v) in &own {
        refs.insert(k.clone(), v);
    }
    let mut p = Loaded::prepare(program, &refs)
        .map_err(|e| ExecError::Failed(format!("reference version {name}: {e}")))?;
    p.enqueue(&wb.stream)?;
    wb.stream.sync()?;
    outputs
        .iter()
        .map(|b| {
            let bytes = own[&b.name].download()?;
            Ok(Tensor {
                shape: b.shape.clone(),
                data: decode(b.dtype, &bytes),
            })
        })
        .collect()
}

fn summarize_checks(reports: &[(String, CheckReport)]) -> CheckSummary {
    let passed = reports.iter().all(|(_, r)| r.passed);
    let failure = reports.iter().find_map(|(n, r)| {
        r.failure.as_ref().map(|f| {
            if reports.len() > 1 {
                format!("{n}: {f}")
            } else {
                f.clone()
            }
        })
    });
    CheckSummary {
        passed,
        max_abs_error: reports
            .iter()
            .map(|(_, r)| r.max_abs_error)
            .fold(0.0, f64::max),
        rel_l2_error: reports
            .iter()
            .map(|(_, r)| r.rel_l2_error)
            .fold(0.0, f64::max),
        failure,
    }
}
