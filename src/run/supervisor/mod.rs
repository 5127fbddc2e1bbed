//! The supervisor: kwb's side of the isolated GPU worker. A faulting kernel leaves its CUDA
//! context unusable and a hung one never returns, so all GPU work runs in a child process
//! (`kwb worker`, or `ssh gpu-host kwb worker`) that kwb can lose without losing the batch. The
//! supervisor starts it, checks its protocol, sends one request at a time, turns every way it
//! can fail (a fault, a closed or garbled stream, silence past the watchdog) into a result
//! rather than a panic or a hang, and starts a fresh worker so the next job can run.
//!
//! Per worker, one thread decodes stdout frames into a channel (the watchdog is a plain
//! `recv_timeout`), one writes requests to stdin (a worker that stops reading cannot block kwb),
//! one keeps the end of stderr for crash messages. The worker runs in a process group of its
//! own, so that killing it also kills whatever a `--worker-cmd` started (`sh -c "ssh ..."`); if
//! kwb dies without cleaning up, the worker sees its stdin close and exits.

pub mod worker_command;

use crate::report::DeviceInfo;
use crate::run::protocol::{
    handshake, read_frame, write_frame, JobOutcome, Phase, ProtocolError, Reply, Request, RunJob,
};
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, BufWriter, Read};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

// Limits: for the `hello` (an ssh connection included), for `device` (a context, the copy
// peak), for a worker that closed its stream or was told to shut down to exit, and for the last
// of a dead worker's stderr to arrive; how much of that stderr is kept.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
const DEVICE_TIMEOUT: Duration = Duration::from_secs(120);
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long a cancelled job's worker has to confirm it stopped before it is replaced.
const CANCEL_GRACE: Duration = Duration::from_secs(1);
/// How often a wait for the worker looks up from its replies (to see a cancel).
const POLL: Duration = Duration::from_millis(20);
const STDERR_GRACE: Duration = Duration::from_millis(200);
const STDERR_LINES: usize = 50;
const STDERR_LINE_BYTES: usize = 1000;

pub use crate::run::supervisor::worker_command::WorkerCommand;

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("cannot start the worker `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("the worker `{program}` did not complete the handshake: {reason}")]
    Handshake { program: String, reason: String },
    /// The worker is another kwb (another version, or another protocol).
    #[error("the worker `{program}` runs {theirs}, but this is kwb {ours}; {hint}")]
    Version {
        program: String,
        ours: String,
        theirs: String,
        hint: String,
    },
    /// The worker answered, but not in this kwb's protocol (a version mismatch, say).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The worker refused the request (a `Reply::Error`); it is still usable.
    #[error("the worker reported: {0}")]
    Worker(String),
    /// The worker died or broke the protocol; a new one was started (or will be).
    #[error("the worker crashed: {0}")]
    Crashed(String),
    /// The worker went silent; it was killed and a new one started (or will be).
    #[error("the worker sent nothing for {silent_ms} ms and was killed{detail}")]
    Timeout { silent_ms: u64, detail: String },
    /// The caller cancelled the request; the worker was stopped and replaced.
    #[error("cancelled")]
    Cancelled,
}

/// The default watchdog of a GPU job (ms): a worker silent this long, not even a heartbeat,
/// is running a hung kernel and is killed.
pub const GPU_WATCHDOG_MS: u64 = 10_000;

/// What became of one job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobResult {
    /// The worker finished the job (its outcome may still carry a non-fatal error).
    Done(Box<JobOutcome>),
    /// The worker faulted or died; `error` is the fault's, else the exit status and the end of
    /// its stderr. A new worker has been started, or the message says why not.
    Crashed { error: String },
    /// Nothing, not even a heartbeat, came for the job's watchdog; the worker was killed and a
    /// new one started (if that failed, the next job tries again and reports why it could not).
    Timeout { silent_ms: u64 },
    /// The job could not be carried out (a `Reply::Error`, or no worker could be started).
    Failed { message: String },
    /// The caller withdrew the job (a newer save superseded it); the worker was stopped and a
    /// new one started.
    Cancelled,
}

/// Drives one worker at a time, replacing it whenever it is lost.
pub struct Supervisor {
    cmd: WorkerCommand,
    /// `None` after a restart failed; the next request tries again.
    worker: Option<Worker>,
    restarts: u32,
}

/// How a worker was lost.
enum Loss {
    Fault(String),
    Stream(ProtocolError),
    Silent,
    /// The caller cancelled job `id` mid-flight.
    Cancelled(u64),
}

impl Supervisor {
    /// Starts a worker and checks that it speaks this kwb's protocol.
    pub fn start(cmd: WorkerCommand) -> Result<Supervisor, SupervisorError> {
        let worker = Some(Worker::start(&cmd)?);
        Ok(Supervisor {
            cmd,
            worker,
            restarts: 0,
        })
    }

    /// Opens a GPU in the worker and returns its facts.
    pub fn device(&mut self, ordinal: u32) -> Result<DeviceInfo, SupervisorError> {
        let request = Request::Device { ordinal };
        let answer = self.request(request, DEVICE_TIMEOUT, |reply| match reply? {
            Reply::Device(info) => Some(Ok(Ok(info))),
            Reply::Error { id: None, message } => Some(Ok(Err(SupervisorError::Worker(message)))),
            Reply::Fault { error, .. } => Some(Err(Loss::Fault(error))),
            _ => None,
        });
        answer.and_then(|a| a)
    }

    /// Runs one job. Never panics. `on_phase` sees Phase replies (for progress / TUI).
    ///
    /// A fault or a closed stream gives `Crashed`, silence for `job.bench.watchdog_ms` gives
    /// `Timeout`; either way the worker is killed and replaced before this returns. A
    /// `Reply::Error` gives `Failed` and keeps the worker. Replies for other jobs are ignored,
    /// but any reply at all counts as a sign of life.
    pub fn run(&mut self, job: &RunJob, on_phase: &mut dyn FnMut(Phase)) -> JobResult {
        self.run_cancellable(job, on_phase, &|| false)
    }

    /// [`Supervisor::run`], but `cancelled` is asked at every reply and every [`POLL`] between
    /// them: once it says yes, the worker is told to stop the job (and replaced if it does not
    /// within a grace). A reply that ends the job wins over a cancel that comes with it.
    pub fn run_cancellable(
        &mut self,
        job: &RunJob,
        on_phase: &mut dyn FnMut(Phase),
        cancelled: &dyn Fn() -> bool,
    ) -> JobResult {
        let request = Request::Run(Box::new(job.clone()));
        let watchdog = Duration::from_millis(job.bench.watchdog_ms);
        let answer = self.request(request, watchdog, |reply| match reply {
            None => cancelled().then_some(Err(Loss::Cancelled(job.id))),
            Some(reply) => match reply {
                Reply::Phase { id, phase } if id == job.id && !cancelled() => {
                    on_phase(phase);
                    None
                }
                Reply::Done(outcome) if outcome.id == job.id => Some(Ok(JobResult::Done(outcome))),
                // The worker stopped the job (a cancel from an earlier wait that it saw late).
                Reply::Cancelled { id } if id == job.id => Some(Ok(JobResult::Cancelled)),
                Reply::Fault { id, error } if id == job.id => Some(Err(Loss::Fault(error))),
                // One request at a time: an error without an id answers this one.
                Reply::Error { id, message } if id.is_none_or(|i| i == job.id) => {
                    Some(Ok(JobResult::Failed { message }))
                }
                _ if cancelled() => Some(Err(Loss::Cancelled(job.id))),
                _ => None, // heartbeats, and stale replies
            },
        });
        match answer {
            Ok(result) => result,
            Err(SupervisorError::Crashed(error)) => JobResult::Crashed { error },
            Err(SupervisorError::Timeout { silent_ms, .. }) => JobResult::Timeout { silent_ms },
            Err(SupervisorError::Cancelled) => JobResult::Cancelled,
            Err(e) => JobResult::Failed {
                message: e.to_string(),
            },
        }
    }

    /// Whether a worker is up: false after a lost worker could not be restarted (a dropped
    /// connection to a remote host, say), until [`Supervisor::reconnect`] or the next job.
    pub fn connected(&self) -> bool {
        self.worker.is_some()
    }

    /// Starts a worker if none is up; the error says why none could be.
    pub fn reconnect(&mut self) -> Result<(), SupervisorError> {
        if self.worker.is_none() {
            self.worker = Some(Worker::start(&self.cmd)?);
            self.restarts += 1;
        }
        Ok(())
    }

    /// The worker command, for messages.
    pub fn command(&self) -> &WorkerCommand {
        &self.cmd
    }

    /// How many workers were started to replace lost ones.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Asks the worker to exit, and kills it if it has not within a couple of seconds.
    pub fn shutdown(mut self) {
        if let Some(worker) = self.worker.take() {
            worker.shutdown();
        }
    }

    #[cfg(test)]
    pub(crate) fn worker_pid(&self) -> Option<u32> {
        self.worker.as_ref().map(|w| w.child.id())
    }

    /// Sends a request and waits for the reply that ends it: `pick` returns `Some` for that
    /// one, `None` for those to skip; it is also asked with no reply every [`POLL`] (to notice
    /// a cancel between replies). Any reply at all resets the `silence` limit. A failed send
    /// shows up as an error on the reply channel. A lost worker is replaced.
    fn request<T>(
        &mut self,
        request: Request,
        silence: Duration,
        mut pick: impl FnMut(Option<Reply>) -> Option<Result<T, Loss>>,
    ) -> Result<T, SupervisorError> {
        let worker = self.ready()?;
        let _ = worker.requests.send(request);
        let mut last = Instant::now();
        let loss = loop {
            match worker.replies.recv_timeout(POLL.min(silence)) {
                Ok(Ok(reply)) => {
                    last = Instant::now();
                    match pick(Some(reply)) {
                        Some(Ok(answer)) => return Ok(answer),
                        Some(Err(loss)) => break loss,
                        None => {}
                    }
                }
                Ok(Err(e)) => break Loss::Stream(e),
                Err(RecvTimeoutError::Timeout) if last.elapsed() < silence => match pick(None) {
                    Some(Ok(answer)) => return Ok(answer),
                    Some(Err(loss)) => break loss,
                    None => {}
                },
                Err(RecvTimeoutError::Timeout) => break Loss::Silent,
                Err(RecvTimeoutError::Disconnected) => break Loss::Stream(ProtocolError::Closed),
            }
        };
        let silent_ms = u64::try_from(last.elapsed().as_millis()).unwrap_or(u64::MAX);
        let silent = matches!(loss, Loss::Silent);
        let cancelled = matches!(loss, Loss::Cancelled(_));
        if let Loss::Cancelled(id) = loss {
            if self.stop_job(id) {
                return Err(SupervisorError::Cancelled);
            }
        }
        let detail = self.lose(loss);
        if cancelled {
            return Err(SupervisorError::Cancelled);
        }
        Err(match silent {
            true => SupervisorError::Timeout { silent_ms, detail },
            false => SupervisorError::Crashed(detail),
        })
    }

    /// Asks the worker to stop job `id` at its next sample and waits a moment for it to say
    /// so, keeping the worker and the inputs it holds. False when it does not answer in time
    /// (busy in a long check, or stuck in a kernel): then it is replaced, as any lost worker.
    fn stop_job(&mut self, id: u64) -> bool {
        let Some(w) = self.worker.as_mut() else {
            return false;
        };
        if w.requests.send(Request::Cancel { id }).is_err() {
            return false;
        }
        let deadline = Instant::now() + CANCEL_GRACE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match w.replies.recv_timeout(left) {
                Ok(Ok(Reply::Cancelled { id: i })) if i == id => return true,
                // It finished (or failed) before it saw the cancel: ready all the same.
                Ok(Ok(Reply::Done(o))) if o.id == id => return true,
                Ok(Ok(Reply::Error { id: Some(i), .. })) if i == id => return true,
                Ok(Ok(_)) => {} // heartbeats and phases of the job being stopped
                Ok(Err(_)) | Err(_) => return false,
            }
        }
    }

    /// The worker for the next request: the current one unless it died while idle (replaced
    /// quietly, so that no job is blamed for it), or a new one after a failed restart.
    fn ready(&mut self) -> Result<&mut Worker, SupervisorError> {
        let worker = match self.worker.take() {
            Some(w) if w.idle_and_alive() => w,
            _ => {
                let w = Worker::start(&self.cmd)?;
                self.restarts += 1;
                w
            }
        };
        Ok(self.worker.insert(worker))
    }

    /// Stops the lost worker and starts another; says what became of the old one, and why no
    /// new one could be started if none could (the next request tries again).
    fn lose(&mut self, loss: Loss) -> String {
        let what = self.worker.take().map(|mut w| w.post_mortem(loss));
        let mut what = what.unwrap_or_default();
        match Worker::start(&self.cmd) {
            Ok(w) => {
                self.worker = Some(w);
                self.restarts += 1;
            }
            Err(e) => {
                what += &format!("\nrestarting the worker failed ({e}); the next job tries again");
            }
        }
        what
    }
}

/// One worker process and the threads that talk to it. Dropping it kills the process.
struct Worker {
    child: Child,
    /// To the writer thread; dropping it closes the worker's stdin.
    requests: Sender<Request>,
    /// From the reader thread (and the writer thread's errors).
    replies: Receiver<Result<Reply, ProtocolError>>,
    /// The last lines of stderr, sent when it reaches its end.
    stderr: Receiver<VecDeque<String>>,
    /// Set for `ssh HOST kwb worker`, whose exit status 255 is ssh's own failure.
    host: Option<String>,
}

impl Worker {
    fn start(cmd: &WorkerCommand) -> Result<Worker, SupervisorError> {
        let spawn_error = |source| SupervisorError::Spawn {
            program: cmd.label(),
            source,
        };
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(&cmd.program)
            .args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        let (request_tx, request_rx) = mpsc::channel::<Request>();
        let (reply_tx, reply_rx) = mpsc::channel();
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let mut worker = Worker {
            child, // from here on, dropping `worker` kills the child
            requests: request_tx,
            replies: reply_rx,
            stderr: keep_stderr(pipes.2),
            host: cmd.host.clone(),
        };
        let (Some(stdin), Some(stdout), _) = pipes else {
            return Err(spawn_error(io::Error::other("its pipes were not set up")));
        };

        // The reader thread starts with the handshake, so that a worker that never answers
        // cannot hang kwb, then hands stdin to the writer thread and reads replies.
        let (hello_tx, hello_rx) = mpsc::channel();
        spawn_thread("kwb-worker-out", move || {
            let (mut stdout, mut stdin) = (BufReader::new(stdout), stdin);
            let hello = handshake(&mut stdout, &mut stdin);
            let greeted = hello.is_ok();
            if hello_tx.send(hello).is_err() || !greeted {
                return;
            }
            let errors = reply_tx.clone();
            let writer = spawn_thread("kwb-worker-in", move || {
                let mut stdin = BufWriter::new(stdin);
                for request in request_rx {
                    if let Err(e) = write_frame(&mut stdin, &request) {
                        let _ = errors.send(Err(e));
                        break;
                    }
                }
            });
            if let Err(e) = writer {
                let _ = reply_tx.send(Err(e.into()));
                return;
            }
            loop {
                let frame = read_frame(&mut stdout);
                let end = frame.is_err();
                if reply_tx.send(frame).is_err() || end {
                    break;
                }
            }
        })
        .map_err(spawn_error)?;
        let failed = |reason| SupervisorError::Handshake {
            program: cmd.label(),
            reason,
        };
        let other = |theirs: String| SupervisorError::Version {
            program: cmd.label(),
            ours: env!("CARGO_PKG_VERSION").into(),
            theirs,
            hint: cmd.install_hint(),
        };
        match hello_rx.recv_timeout(HELLO_TIMEOUT) {
            Ok(Ok(v)) if v == env!("CARGO_PKG_VERSION") => Ok(worker),
            Ok(Ok(theirs)) => Err(other(format!("kwb {theirs}"))),
            Ok(Err(ProtocolError::VersionMismatch { theirs, .. })) => {
                Err(other(format!("a kwb that speaks protocol {theirs}")))
            }
            Ok(Err(e @ ProtocolError::Unexpected { .. })) => Err(e.into()),
            Ok(Err(e)) => Err(failed(worker.post_mortem(Loss::Stream(e)))),
            Err(_) => {
                let (secs, what) = (HELLO_TIMEOUT.as_secs(), worker.post_mortem(Loss::Silent));
                Err(failed(format!("no hello in {secs} s{what}")))
            }
        }
    }

    /// Between requests: drops stale replies, and says whether the stream is still whole.
    fn idle_and_alive(&self) -> bool {
        loop {
            match self.replies.try_recv() {
                Ok(Ok(_)) => {}
                other => return matches!(other, Err(mpsc::TryRecvError::Empty)),
            }
        }
    }

    /// Makes sure the process is gone, and says what became of it. A closed or cut stream
    /// means the worker is on its way out: it gets a moment to finish, for its exit status.
    fn post_mortem(&mut self, loss: Loss) -> String {
        use ProtocolError::{Closed, Io, Truncated};
        let status = match &loss {
            Loss::Stream(Closed | Truncated { .. } | Io(_)) => {
                wait_within(&mut self.child, EXIT_GRACE)
            }
            _ => None,
        };
        if status.is_none() {
            self.kill();
        }
        let what = match (loss, status) {
            (Loss::Fault(error), _) => return error,
            (Loss::Silent | Loss::Cancelled(_), _) => String::new(),
            (Loss::Stream(e @ Truncated { .. }), Some(s)) => {
                format!("{} in the middle of a reply ({e})", self.describe(s))
            }
            (Loss::Stream(_), Some(s)) => self.describe(s),
            (Loss::Stream(e), None) => format!("{e}; the worker was stopped"),
        };
        what + &self.stderr_tail()
    }

    fn kill(&mut self) {
        if let Ok(group) = i32::try_from(self.child.id()) {
            // SAFETY: a signal to the process group this worker leads (see `start`).
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last lines of a dead worker's stderr, as a block to append to a message.
    fn stderr_tail(&self) -> String {
        match self.stderr.recv_timeout(STDERR_GRACE) {
            Ok(lines) if !lines.is_empty() => {
                let lines = Vec::from(lines).join("\n  ");
                format!("\nthe worker's stderr ended with:\n  {lines}")
            }
            _ => String::new(),
        }
    }

    fn shutdown(mut self) {
        let _ = self.requests.send(Request::Shutdown);
        self.requests = mpsc::channel().0; // the writer sends Shutdown, then closes stdin
        wait_within(&mut self.child, EXIT_GRACE);
        // Drop kills it if it is still there.
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Keeps the last [`STDERR_LINES`] lines of the worker's stderr, on a thread of its own, and
/// sends them when stderr ends. Lines longer than [`STDERR_LINE_BYTES`] are kept in pieces.
fn keep_stderr(stderr: Option<ChildStderr>) -> Receiver<VecDeque<String>> {
    let (tx, rx) = mpsc::channel();
    let Some(stderr) = stderr else { return rx };
    let _ = spawn_thread("kwb-worker-err", move || {
        let (mut stderr, mut line) = (BufReader::new(stderr), Vec::new());
        let mut kept = VecDeque::with_capacity(STDERR_LINES);
        let limit = STDERR_LINE_BYTES as u64;
        while let Ok(1..) = (&mut stderr).take(limit).read_until(b'\n', &mut line) {
            if kept.len() == STDERR_LINES {
                kept.pop_front();
            }
            let text = String::from_utf8_lossy(&line);
            kept.push_back(text.trim_end_matches(['\n', '\r']).to_string());
            line.clear();
        }
        let _ = tx.send(kept);
    });
    rx
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    thread::Builder::new().name(name.into()).spawn(f).map(drop)
}

/// Waits up to `limit` for the child to exit; `None` if it has not (or cannot be waited on).
fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < end => thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

impl Worker {
    fn describe(&self, status: ExitStatus) -> String {
        match (&self.host, status.code()) {
            (Some(host), Some(255)) => {
                format!("the ssh connection to {host} failed or was lost (ssh exited with 255)")
            }
            _ => describe(status),
        }
    }
}

fn describe(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("the worker exited with status {code}"),
        None => format!("the worker was stopped ({status})"), // e.g. "signal: 11 (SIGSEGV)"
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
