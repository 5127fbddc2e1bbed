//! `kwb worker`: the process that owns the GPU. It reads requests from stdin and writes replies
//! to stdout (see docs/worker-protocol.md); a kernel that faults takes only this process down.
//! It may run on another machine (`ssh HOST kwb worker`): when its input closes, it exits even
//! from a hung kernel, so a dropped connection leaves nothing holding the GPU.

use super::bench::measure_copy_peak;
use super::device::{error_name, Stream};
use super::execute::{run_job, ExecError, Progress, Workbench};
use super::open::Gpu;
use super::peak::Peaks;
use crate::report::DeviceInfo;
use crate::run::protocol::{
    read_frame, write_frame, Phase, ProtocolError, Reply, Request, PROTOCOL,
};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HEARTBEAT: Duration = Duration::from_millis(250);

/// The reply stream, shared with the heartbeat thread.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

fn send(out: &Out, reply: &Reply) -> Result<(), ProtocolError> {
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    write_frame(&mut *w, reply)
}

struct Open {
    gpu: Gpu,
    bench: Workbench,
    info: DeviceInfo,
}

/// How long a worker whose input closed mid-job waits before it exits anyway.
const ORPHAN_GRACE: Duration = Duration::from_secs(1);

/// For tests of the version check: `kwb worker` says it is this version instead of its own.
pub const FAKE_VERSION_VAR: &str = "KWB_WORKER_FAKE_VERSION";

/// Reads requests on a thread of its own. When the input closes (the supervisor is gone: it
/// exited, or the ssh connection to it dropped) the worker must not outlive it, even if it is
/// stuck in a hung kernel: after a short grace, the process exits.
///
/// A `Cancel` is not queued: it is noted in `cancel` at once, where the running job's
/// heartbeat sees it.
fn read_requests(
    mut input: impl std::io::Read + Send + 'static,
    cancel: Arc<AtomicU64>,
) -> std::sync::mpsc::Receiver<Result<Request, ProtocolError>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || loop {
        let frame = read_frame(&mut input);
        if let Ok(Request::Cancel { id }) = frame {
            cancel.store(id, Ordering::Relaxed);
            continue;
        }
        let end = frame.is_err();
        if tx.send(frame).is_err() || end {
            std::thread::sleep(ORPHAN_GRACE);
            std::process::exit(0);
        }
    });
    rx
}

/// Serves requests until shutdown or end of input; returns the process exit code.
pub fn serve(input: impl std::io::Read + Send + 'static, output: Box<dyn Write + Send>) -> i32 {
    let out: Out = Arc::new(Mutex::new(output));
    // Heartbeats while the worker is busy on the CPU (inputs, references), never while it
    // waits on the GPU: a hung kernel must go quiet so the supervisor's watchdog fires.
    let busy = Arc::new(AtomicBool::new(false));
    let job = Arc::new(AtomicU64::new(0));
    {
        let (out, busy, job) = (out.clone(), busy.clone(), job.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(HEARTBEAT);
            if busy.load(Ordering::Relaxed)
                && send(
                    &out,
                    &Reply::Heartbeat {
                        id: job.load(Ordering::Relaxed),
                    },
                )
                .is_err()
            {
                return;
            }
        });
    }
    let mut open: Option<Open> = None;
    // No job is cancelled yet (job ids start at 0 in watch: the marker must be none of them).
    let cancel = Arc::new(AtomicU64::new(u64::MAX));
    let requests = read_requests(input, cancel.clone());
    loop {
        let req: Request = match requests.recv() {
            Ok(Ok(r)) => r,
            Ok(Err(ProtocolError::Closed)) | Err(_) => return 0,
            Ok(Err(e)) => {
                eprintln!("kwb worker: {e}");
                return 2;
            }
        };
        let reply = match req {
            Request::Hello { .. } => Reply::Hello {
                protocol: PROTOCOL,
                kwb_version: std::env::var(FAKE_VERSION_VAR)
                    .unwrap_or_else(|_| env!("CARGO_PKG_VERSION").into()),
            },
            Request::Shutdown => return 0,
            // Noted by the reader as it arrives; one here came after its job ended.
            Request::Cancel { .. } => continue,
            Request::Device { ordinal } => match ensure_open(&mut open, ordinal as usize) {
                Ok(o) => Reply::Device(o.info.clone()),
                Err(message) => Reply::Error { id: None, message },
            },
            Request::Run(j) => {
                job.store(j.id, Ordering::Relaxed);
                // On the GPU the supervisor opened (`Request::Device`); GPU 0 if it opened none.
                // Reopening GPU 0 here ran every job of `--device N` on GPU 0.
                let ordinal = open.as_ref().map_or(0, |o| o.gpu.ordinal);
                let o = match ensure_open(&mut open, ordinal) {
                    Ok(o) => o,
                    Err(message) => {
                        let _ = send(
                            &out,
                            &Reply::Error {
                                id: Some(j.id),
                                message,
                            },
                        );
                        continue;
                    }
                };
                let mut p = Reporter {
                    out: out.clone(),
                    busy: busy.clone(),
                    id: j.id,
                    last: Instant::now(),
                    cancel: cancel.clone(),
                };
                let r = run_job(&mut o.bench, &j, &mut p);
                busy.store(false, Ordering::Relaxed);
                match r {
                    Ok(outcome) => Reply::Done(Box::new(outcome)),
                    Err(ExecError::Cancelled) => Reply::Cancelled { id: j.id },
                    Err(ExecError::Failed(message)) => Reply::Error {
                        id: Some(j.id),
                        message,
                    },
                    Err(ExecError::Fault(error)) => {
                        let _ = send(&out, &Reply::Fault { id: j.id, error });
                        // The context is unusable; leave without running destructors on it.
                        std::process::exit(1);
                    }
                }
            }
        };
        if send(&out, &reply).is_err() {
            return 2;
        }
    }
}

struct Reporter {
    out: Out,
    busy: Arc<AtomicBool>,
    id: u64,
    last: Instant,
    /// The last job id the supervisor cancelled.
    cancel: Arc<AtomicU64>,
}

impl Progress for Reporter {
    fn phase(&mut self, phase: Phase) {
        let _ = send(&self.out, &Reply::Phase { id: self.id, phase });
        self.last = Instant::now();
    }

    fn beat(&mut self) -> bool {
        if self.last.elapsed() >= HEARTBEAT {
            let _ = send(&self.out, &Reply::Heartbeat { id: self.id });
            self.last = Instant::now();
        }
        self.cancel.load(Ordering::Relaxed) != self.id
    }

    fn cpu_busy(&mut self, busy: bool) {
        self.busy.store(busy, Ordering::Relaxed);
    }
}

fn ensure_open(open: &mut Option<Open>, ordinal: usize) -> Result<&mut Open, String> {
    if open.as_ref().is_some_and(|o| o.gpu.ordinal != ordinal) {
        *open = None;
    }
    if open.is_none() {
        *open = Some(open_device(ordinal)?);
    }
    open.as_mut().ok_or_else(|| "no device".to_string())
}

fn open_device(ordinal: usize) -> Result<Open, String> {
    let mut phases = crate::run::gpu::execute::Trace::labelled("worker start:".to_string());
    let gpu = Gpu::open(ordinal).map_err(|e| e.to_string())?;
    gpu.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
    let facts = gpu.facts().map_err(|e| e.to_string())?;
    let cu = |e: cudarc::driver::result::DriverError| error_name(&e);
    let stream = Stream::new().map_err(cu)?;
    let flush = crate::run::gpu::flush::L2Flush::new(facts.l2_bytes, facts.sm_count).map_err(cu)?;
    flush.prepare(&stream).map_err(cu)?;
    phases.mark("context and flush");
    if !flush.reads() {
        eprintln!("kwb worker: the L2 flush kernel did not load; flushing with a memset");
    }
    let devgen = match crate::run::gpu::devgen::DeviceGen::load(&stream, facts.sm_count) {
        Ok(g) => Some(g),
        Err(why) => {
            eprintln!("kwb worker: inputs are uploaded, not drawn on the GPU: {why}");
            None
        }
    };
    phases.mark("device inputs' self-check");
    let peaks =
        crate::run::gpu::peak::cached_or_measure(&facts, || measure_peaks(&stream, &facts, &flush));
    phases.mark("peaks (cached or measured)");
    phases.finish();
    let info = DeviceInfo {
        measured_copy_gbps: peaks.copy_gbps,
        stream_kernel_gbps: peaks.stream_kernel_gbps,
        ..facts
    };
    Ok(Open {
        gpu,
        bench: Workbench {
            stream,
            flush,
            l2_bytes: info.l2_bytes,
            data: crate::run::host::data::DataCache::for_this_machine(),
            devgen,
            shared: crate::run::host::shared::SharedRefs::from_env(),
        },
        info,
    })
}

/// The copy and stream-kernel peaks over buffers of up to 1 GiB each (all of them together a
/// little over three quarters of free memory at most): the size of the largest shipped
/// elementwise runs (256Mi fp32), so the peak is measured where those kernels are. A failure
/// leaves that figure out, said on stderr.
fn measure_peaks(
    stream: &Stream,
    facts: &DeviceInfo,
    flush: &crate::run::gpu::flush::L2Flush,
) -> Peaks {
    let cu = |e: cudarc::driver::result::DriverError| error_name(&e);
    let bytes = match cudarc::driver::result::mem_get_info() {
        Ok((free, _)) => (1usize << 30).min(free / 4) & !0xfff,
        Err(e) => {
            eprintln!("kwb worker: cannot measure the bandwidth peak: {}", cu(e));
            return Peaks::default();
        }
    };
    let copy = measure_copy_peak(stream, bytes, Some(flush)).map_err(cu);
    let kernel = crate::run::gpu::stream_peak::measure(stream, facts.sm_count, bytes, Some(flush))
        .map_err(cu);
    match (&copy, &kernel) {
        (Err(e), _) => eprintln!("kwb worker: the copy peak failed: {e}"),
        (_, Err(e)) => eprintln!("kwb worker: the stream-kernel peak failed: {e}"),
        (Ok(c), Ok(k)) => eprintln!(
            "kwb worker: bandwidth peak: copy engine {c:.0} GB/s, kwb stream kernel {:.0} GB/s ({})",
            k.gbps, k.config
        ),
    }
    Peaks {
        copy_gbps: copy.ok(),
        stream_kernel_gbps: kernel.ok().map(|k| k.gbps),
    }
}
