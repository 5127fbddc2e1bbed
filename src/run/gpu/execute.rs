//! One job in the worker: make the inputs, run the version once on poisoned outputs and check
//! it against its reference, then benchmark it. GPU faults come back as [`ExecError::Fault`]
//! (the context is gone and the worker must exit); anything else is a recoverable failure.

use super::bench::{benchmark, Timing};
use super::canary::Where;
use super::device::{error_name, is_sticky, DevBuf, Stream};
use super::program::Loaded;
use super::redzone;
use crate::expr::Tensor;
use crate::report::CheckSummary;
use crate::run::host::check::check;
use crate::run::host::data::{
    data_key, host_reference, make_inputs, outputs as output_specs, summarize_checks, tolerance,
    DataCache,
};
use crate::run::host::inputs::{decode, poison};
use crate::run::protocol::{BufferSpec, JobOutcome, Phase, Program, ReferenceSpec, Role, RunJob};
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
    /// The supervisor cancelled the job; the worker can go on.
    #[error("cancelled")]
    Cancelled,
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
    /// Called often during GPU work; the caller rate-limits heartbeats. False once the job
    /// has been cancelled: the work stops at the next sample.
    fn beat(&mut self) -> bool;
    /// Marks a stretch of CPU work (input generation, the reference) during which the worker
    /// sends heartbeats on its own, so a long reference is not mistaken for a hung kernel.
    fn cpu_busy(&mut self, busy: bool);
}

/// The device-side state a worker keeps between jobs.
pub struct Workbench {
    pub stream: Stream,
    /// Clears L2 between cold-mode samples.
    pub flush: crate::run::gpu::flush::L2Flush,
    /// The device's L2 size, for marking results whose buffers fit in it.
    pub l2_bytes: u64,
    /// Recent jobs' inputs and references, reused by jobs that ask for the same.
    pub data: DataCache,
    /// References shared with the other workers of a `--devices` run, made once per host.
    pub shared: Option<crate::run::host::shared::SharedRefs>,
    /// Draws inputs on the GPU (the host's bits, no upload); `None`: inputs are uploaded.
    pub devgen: Option<crate::run::gpu::devgen::DeviceGen>,
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
    let mut trace = Trace::new(job);
    // Inputs (and the reference made from them) are kept for later jobs with the same seed,
    // buffers and reference: every version of one size sees the same data, made once.
    let key = data_key(job);
    let mut data = match wb.data.take(key) {
        Some(d) => d,
        None => {
            progress.cpu_busy(true);
            let d = make_inputs(job, key);
            progress.cpu_busy(false);
            d.map_err(ExecError::Failed)?
        }
    };
    trace.mark("inputs");
    let mut device: HashMap<String, DevBuf> = HashMap::new();
    for b in &job.buffers {
        let elems: usize = b.shape.iter().product();
        let buf = redzone::alloc(job, elems * b.dtype.size() as usize)?;
        if let Some((bytes, _)) = data.inputs.get(&b.name) {
            crate::run::gpu::devgen::start_input(
                wb.devgen.as_ref(),
                &wb.stream,
                job,
                b,
                &buf,
                bytes,
            )?;
        }
        device.insert(b.name.clone(), buf);
    }
    settle()?;
    let refs: HashMap<String, &DevBuf> = device.iter().map(|(k, v)| (k.clone(), v)).collect();
    let mut program =
        Loaded::prepare(&job.program, &refs).map_err(|e| ExecError::Failed(e.to_string()))?;
    let outputs = output_specs(job);
    trace.mark("alloc, upload, load");

    if job.bench.check {
        progress.phase(Phase::Checking);
        for b in &outputs {
            device[&b.name].upload(&data.start_of(b))?;
        }
        settle()?;
        program.enqueue(&wb.stream)?;
        wb.stream.sync()?;
        let got: Vec<Vec<u8>> = outputs
            .iter()
            .map(|b| device[&b.name].download())
            .collect::<Result<_, _>>()?;
        trace.mark("checked run, download");
        // What the kernel must only read: the inputs (not outputs that start from their init).
        let uploaded: HashMap<String, &[u8]> = (data.inputs.iter())
            .filter(|(k, _)| {
                job.buffers
                    .iter()
                    .any(|b| &b.name == *k && b.role == crate::run::protocol::Role::Input)
            })
            .map(|(k, (bytes, _))| (k.clone(), bytes.as_slice()))
            .collect();
        // Inputs drawn on the device are compared there; only a harmed one is downloaded.
        let mut suspect = uploaded.clone();
        for b in &job.buffers {
            let gen = wb.devgen.as_ref();
            if suspect.contains_key(&b.name)
                && crate::run::gpu::devgen::unharmed_draw(
                    gen,
                    &wb.stream,
                    job,
                    b,
                    &device[&b.name],
                )?
            {
                suspect.remove(&b.name);
            }
        }
        let damage = redzone::inspect(&job.buffers, &device, &suspect)?;
        if damage.iter().any(|d| d.side == Where::Input) {
            // A reference version must not run on inputs this version overwrote.
            for (name, bytes) in &uploaded {
                device[name].upload(bytes)?;
            }
            settle()?;
        }
        trace.mark("red zones");
        if data.reference.is_none() {
            let host = data.tensors();
            data.reference = Some(reference(wb, job, &outputs, &host, &device, progress)?);
        }
        trace.mark("reference");
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
        trace.mark("compare");
        if let Some(why) = redzone::describe(&damage) {
            // A stray write is the more specific cause: it goes first, any mismatch after it.
            let check = outcome.check.get_or_insert(CheckSummary {
                passed: false,
                max_abs_error: 0.0,
                rel_l2_error: 0.0,
                failure: None,
            });
            check.failure = Some(match check.failure.take() {
                Some(also) => format!("{why}; {also}"),
                None => why,
            });
            check.passed = false;
        }
    }
    wb.data.put(data);
    if job.bench.benchmark {
        progress.phase(Phase::Benchmarking);
        let Some(Timing {
            mut stats,
            stop,
            samples,
            fallback,
        }) = benchmark(&mut program, &wb.stream, &wb.flush, &job.bench, &mut || {
            progress.beat()
        })?
        else {
            return Err(ExecError::Cancelled);
        };
        if let Some(why) = fallback {
            note_fallback(&why);
            stats.timer_note = Some(why);
        }
        stats.l2_resident = Some(l2_resident(&job.buffers, wb.l2_bytes));
        outcome.timing = Some(stats);
        outcome.stop = Some(stop);
        outcome.samples_us = samples[samples.len().saturating_sub(256)..].to_vec();
        trace.mark("benchmark");
    }
    trace.finish();
    Ok(outcome)
}

/// With `KWB_TRACE_FILE` set, each job's phases and their milliseconds are appended to that
/// file, one line per job: where a save's time goes, for `kwb bench-ui --gpu`. The worker's
/// start-up writes one line the same way.
pub struct Trace {
    file: Option<std::path::PathBuf>,
    line: String,
    start: std::time::Instant,
    last: std::time::Instant,
}

impl Trace {
    fn new(job: &RunJob) -> Trace {
        Trace::labelled(format!("job {} {} @ {}:", job.id, job.version, job.size))
    }

    /// A trace whose line starts with `label`.
    pub fn labelled(label: String) -> Trace {
        let now = std::time::Instant::now();
        Trace {
            file: std::env::var_os("KWB_TRACE_FILE").map(Into::into),
            line: label,
            start: now,
            last: now,
        }
    }

    pub fn mark(&mut self, phase: &str) {
        if self.file.is_some() {
            let ms = self.last.elapsed().as_secs_f64() * 1e3;
            self.line += &format!(" {phase} {ms:.1} ms;");
            self.last = std::time::Instant::now();
        }
    }

    pub fn finish(self) {
        use std::io::Write;
        let Some(path) = self.file else { return };
        let total = self.start.elapsed().as_secs_f64() * 1e3;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{} total {total:.1} ms", self.line);
        }
    }
}

/// The bytes of every buffer the version touches, red zones not counted.
pub fn working_set(buffers: &[BufferSpec]) -> u64 {
    buffers
        .iter()
        .map(buffer_bytes)
        .fold(0, u64::saturating_add)
}

fn buffer_bytes(b: &BufferSpec) -> u64 {
    let elems = b
        .shape
        .iter()
        .fold(1u64, |n, d| n.saturating_mul(*d as u64));
    elems.saturating_mul(b.dtype.size())
}

/// Whether L2 serves enough of a cold run's bytes that its GB/s is not DRAM bandwidth: its
/// buffers fit in L2 together, or L2 can hold at least a tenth of them as written lines that
/// reach DRAM only after the kernel ends (an fp16 add at 16Mi on a 50 MiB L2: 32 of its 96
/// MiB are writes, and it read 107% of the stream peak). An unknown L2 size (0) marks nothing.
pub fn l2_resident(buffers: &[BufferSpec], l2_bytes: u64) -> bool {
    let total = working_set(buffers);
    let written = buffers
        .iter()
        .filter(|b| b.role == Role::Output)
        .map(buffer_bytes)
        .fold(0, u64::saturating_add);
    let held = written.min(l2_bytes);
    l2_bytes > 0 && (total <= l2_bytes || held.saturating_mul(10) >= total)
}

/// Says once per worker, on its stderr, why kernels are timed with events.
fn note_fallback(why: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| eprintln!("kwb worker: timing with CUDA events: {why}"));
}

/// Waits for every upload. `cuMemcpyHtoD` from pageable memory may return before its DMA
/// lands, and it runs on the legacy stream, which our non-blocking stream does not wait for.
fn settle() -> Result<(), CuError> {
    cudarc::driver::result::ctx::synchronize()
}

/// Says why a job does not fit in free device memory, with the figures.
fn memory_shortfall(job: &RunJob) -> Result<Option<String>, CuError> {
    let need = crate::run::plan::device_bytes(job).saturating_add(redzone::extra_bytes(job));
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

/// The expected outputs, in the order of `outputs`, or `None` when there is no reference.
fn reference(
    wb: &Workbench,
    job: &RunJob,
    outputs: &[&BufferSpec],
    host: &HashMap<&str, &Tensor>,
    device: &HashMap<String, DevBuf>,
    progress: &mut dyn Progress,
) -> Result<Option<Vec<Tensor>>, ExecError> {
    if let ReferenceSpec::Version { name, program } = &job.reference {
        return Ok(Some(run_reference_version(
            wb, job, name, program, outputs, device,
        )?));
    }
    progress.cpu_busy(true);
    let r = match (&wb.shared, &job.reference) {
        // Only an expression is worth sharing: `.npy` files are read, a version is run.
        (Some(shared), ReferenceSpec::Expr { .. }) => shared
            .get_or_make(data_key(job), || {
                host_reference(job, outputs, host)
                    .unwrap_or(Ok(None))
                    .map(Option::unwrap_or_default)
            })
            .map(Some),
        _ => host_reference(job, outputs, host).unwrap_or(Ok(None)),
    };
    progress.cpu_busy(false);
    r.map_err(ExecError::Failed)
}

/// Runs the reference version on the same inputs into outputs of its own.
fn run_reference_version(
    wb: &Workbench,
    job: &RunJob,
    name: &str,
    program: &Program,
    outputs: &[&BufferSpec],
    device: &HashMap<String, DevBuf>,
) -> Result<Vec<Tensor>, ExecError> {
    let mut own: HashMap<String, DevBuf> = HashMap::new();
    for b in outputs {
        let buf = redzone::alloc(job, device[&b.name].bytes)?;
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
    let specs: Vec<BufferSpec> = outputs.iter().map(|b| (*b).clone()).collect();
    let damage = redzone::inspect(&specs, &own, &HashMap::new())?;
    if let Some(why) = redzone::describe(&damage) {
        return Err(ExecError::Failed(format!(
            "reference version {name}: {why}"
        )));
    }
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

#[cfg(test)]
mod tests {
    use super::{l2_resident, working_set};
    use crate::run::protocol::{BufferSpec, Role};
    use crate::workspace::{DType, Init};

    fn buf(dtype: DType, n: usize) -> BufferSpec {
        BufferSpec {
            name: "x".into(),
            dtype,
            shape: vec![n],
            init: Init::Arange,
            role: Role::Input,
            initialized: false,
        }
    }

    #[test]
    fn a_size_is_l2_resident_when_its_buffers_fit_or_l2_holds_a_tenth_as_writes() {
        let mib = 1u64 << 20;
        let add = |dtype, n| {
            let mut c = buf(dtype, n);
            c.role = Role::Output;
            [buf(dtype, n), buf(dtype, n), c]
        };
        // The add at 1Mi: three f32 buffers, 12 MiB, fit in an H100's 50 MiB L2.
        assert_eq!(working_set(&add(DType::F32, 1 << 20)), 12 * mib);
        assert!(l2_resident(&add(DType::F32, 1 << 20), 50 * mib));
        // At 16Mi in f16 they take 96 MiB, but the 32 MiB output can wait in L2.
        assert!(l2_resident(&add(DType::F16, 16 << 20), 50 * mib));
        // In f32 at 16Mi, the 50 MiB of writes L2 can hold are a quarter of 192 MiB.
        assert!(l2_resident(&add(DType::F32, 16 << 20), 50 * mib));
        // At 256Mi (1.5 GiB in f16), 50 MiB is 3%: DRAM.
        assert!(!l2_resident(&add(DType::F16, 256 << 20), 50 * mib));
        // A reduction's large input with a tiny output is DRAM however small the output.
        let mut sum = [buf(DType::F32, 256 << 20), buf(DType::F32, 1)];
        sum[1].role = Role::Output;
        assert!(!l2_resident(&sum, 50 * mib));
        // Exactly the L2 still fits; an unknown L2 (0) marks nothing.
        let fifty = [buf(DType::F32, 50 << 18)];
        assert!(l2_resident(&fifty, 50 * mib));
        assert!(!l2_resident(&fifty, 0));
        // Absurd shapes saturate instead of overflowing.
        let huge = BufferSpec {
            shape: vec![usize::MAX, usize::MAX],
            ..buf(DType::F64, 1)
        };
        assert_eq!(working_set(&[huge]), u64::MAX);
    }
}
