//! The engine's threads: one per backend (each GPU, or the CPU), all taking tasks from one
//! [`Scheduler`] and sending owned [`Event`]s to one sink. `kwb batch` and `kwb watch` both
//! run their jobs through it.

use super::backend::{Backend, Ran};
use super::schedule::{Ending, Focus, Order, Request, Scheduler, Target, Task, DROP_AFTER};
use crate::report::{RunResult, Status};
use crate::run::protocol::Phase;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// What the engine tells its user.
#[derive(Debug)]
pub enum Event {
    /// A run moved on (checking, benchmarking).
    Phase {
        version: usize,
        generation: u64,
        size: usize,
        phase: Phase,
    },
    /// A run's result.
    Finished {
        version: usize,
        generation: u64,
        size: usize,
        result: Box<RunResult>,
        /// Timed samples (µs).
        samples: Vec<f64>,
        /// The last run of this version's request.
        last: bool,
        /// A quick look, to be refined by a full run.
        provisional: bool,
    },
    /// A backend left the run: its worker kept losing jobs that other backends then ran
    /// well. The others finish the run.
    Dropped { backend: String, why: String },
}

/// Where events go; false when nobody listens any more (the threads then stop).
pub type Sink = Arc<dyn Fn(Event) -> bool + Send + Sync>;

struct Shared {
    sched: Mutex<Scheduler>,
    wake: Condvar,
    stop: Mutex<bool>,
    /// Backends serving, per target (GPU, CPU).
    live: [AtomicUsize; 2],
}

impl Shared {
    fn sched(&self) -> MutexGuard<'_, Scheduler> {
        // A thread that panicked while holding the lock left the queue consistent enough to
        // go on: every change to it is a single push or remove.
        self.sched.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopping(&self) -> bool {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self, target: Target) -> &AtomicUsize {
        &self.live[usize::from(target == Target::Cpu)]
    }
}

type Thread = JoinHandle<Box<dyn Backend>>;

/// Backends running tasks from one scheduler. Backends may join while it runs (watch adds the
/// GPU once its worker answers).
pub struct Pool {
    shared: Arc<Shared>,
    sink: Sink,
    threads: Mutex<Vec<Thread>>,
    /// A job whose worker crashed or hung runs once more (a batch; watch reruns on save).
    retries: bool,
}

impl Pool {
    pub fn new(order: Order, sink: Sink) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                sched: Mutex::new(Scheduler::new(order)),
                wake: Condvar::new(),
                stop: Mutex::new(false),
                live: [AtomicUsize::new(0), AtomicUsize::new(0)],
            }),
            retries: order != Order::Watch,
            sink,
            threads: Mutex::new(Vec::new()),
        }
    }

    fn threads(&self) -> MutexGuard<'_, Vec<Thread>> {
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a thread that runs tasks on `backend`.
    pub fn add(&self, backend: Box<dyn Backend>) {
        let (shared, sink) = (self.shared.clone(), self.sink.clone());
        shared.live(backend.target()).fetch_add(1, Ordering::SeqCst);
        let mut threads = self.threads();
        let me = Server {
            index: threads.len(),
            retries: self.retries,
        };
        threads.push(std::thread::spawn(move || {
            let target = backend.target();
            let backend = serve(backend, me, &shared, &sink);
            shared.live(target).fetch_sub(1, Ordering::SeqCst);
            // Tasks that skipped this backend for a retry may now be its peers' alone.
            shared.wake.notify_all();
            backend
        }));
    }

    /// How many backends serve.
    pub fn backends(&self) -> usize {
        self.threads().len()
    }

    /// Some backend's thread still runs.
    pub fn alive(&self) -> bool {
        self.threads().iter().any(|t| !t.is_finished())
    }

    /// Queues a version's runs; a request in progress for the version is superseded.
    pub fn submit(&self, request: Request) {
        self.shared.sched().submit(request);
        self.shared.wake.notify_all();
    }

    pub fn set_focus(&self, focus: Focus) {
        self.shared.sched().set_focus(focus);
    }

    /// Waits until every submitted run has ended.
    pub fn wait_idle(&self) {
        let mut s = self.shared.sched();
        while !s.idle() && self.alive() {
            s = self
                .shared
                .wake
                .wait_timeout(s, std::time::Duration::from_millis(200))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Stops the threads once their current task ends, and hands back the backends.
    pub fn stop(&self) -> Vec<Box<dyn Backend>> {
        {
            // Under the queue's lock: a thread between its check and its wait cannot miss it.
            let _queue = self.shared.sched();
            *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.shared.wake.notify_all();
        }
        let threads = std::mem::take(&mut *self.threads());
        threads.into_iter().filter_map(|t| t.join().ok()).collect()
    }
}

/// Which backend a thread serves, and how.
#[derive(Clone, Copy)]
struct Server {
    /// The backend's index in the pool.
    index: usize,
    retries: bool,
}

/// One backend's thread: take a task, run it, report it, until stopped.
fn serve(
    mut backend: Box<dyn Backend>,
    me: Server,
    shared: &Shared,
    sink: &Sink,
) -> Box<dyn Backend> {
    let target = backend.target();
    loop {
        let task = {
            let mut s = shared.sched();
            loop {
                if shared.stopping() {
                    return backend;
                }
                let peers = shared.live(target).load(Ordering::SeqCst);
                if let Some(t) = s.next_for(target, me.index, peers) {
                    break t;
                }
                s = shared.wake.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let (mut result, ran) = run_task(backend.as_mut(), &task, sink);
        if let (Some(note), Ran::Done { .. }) = (&task.retry_note, &ran) {
            let how = result.message.take();
            result.message = Some(match how {
                Some(m) => format!("{m}\n(second try, on {}; {note})", backend.label()),
                None => format!("second try, on {}; {note}", backend.label()),
            });
        }
        // A GPU worker that crashed or hung was replaced; the CPU's verdicts are final (the
        // emulator is deterministic, and its watchdog already waited).
        let lost_worker =
            target == Target::Gpu && matches!(result.status, Status::Crashed | Status::Timeout);
        let peers = shared.live(target).load(Ordering::SeqCst);
        // A lost backend that can come back runs the job again once it has; one that cannot
        // (a batch) reports the job as it ended and tries the next.
        let lost = !backend.connected() && backend.recovers();
        let (version, generation, size) = (task.run.version, task.generation, task.run.size);
        let done = match &ran {
            Ran::Cancelled => None,
            Ran::Done { samples } => Some(samples.clone()),
        };
        let completion = {
            let ending = match (&ran, lost) {
                (Ran::Cancelled, _) => Ending::Cancelled,
                (_, true) => Ending::Requeue,
                // Once more, where a worker can take it: this one restarted, or another GPU.
                (Ran::Done { .. }, false)
                    if me.retries
                        && lost_worker
                        && task.tries == 0
                        && (backend.connected() || peers > 1) =>
                {
                    Ending::Retry {
                        note: format!(
                            "the first, on {}, ended {}: {}",
                            backend.label(),
                            result.status.as_str(),
                            result.message.as_deref().unwrap_or("no message").trim()
                        ),
                    }
                }
                (Ran::Done { .. }, false) => Ending::Finished {
                    status: result.status,
                    check: result.check.as_ref(),
                },
            };
            let c = shared.sched().finish(task, ending);
            shared.wake.notify_all();
            c
        };
        if let (Some(samples), false) = (done, completion.retried) {
            let event = Event::Finished {
                version,
                generation,
                size,
                result: Box::new(result),
                samples,
                last: completion.last,
                provisional: completion.provisional,
            };
            if !sink(event) {
                return backend;
            }
        }
        if lost && !backend.recover() {
            return backend;
        }
        let others = shared.live(target).load(Ordering::SeqCst) > 1;
        let why = if !backend.connected() && !backend.recovers() {
            // Its worker could not be restarted: every job it took would fail at once.
            Some("its worker could not be restarted".to_string())
        } else if shared.sched().failing(me.index) {
            Some(format!(
                "its worker lost {DROP_AFTER} jobs in a row that another backend then ran well"
            ))
        } else {
            None
        };
        if let (true, Some(why)) = (others, why) {
            sink(Event::Dropped {
                backend: backend.label(),
                why,
            });
            return backend;
        }
    }
}

/// Runs one task on `backend`: its planned result when there is nothing to run.
fn run_task(backend: &mut dyn Backend, task: &Task, sink: &Sink) -> (RunResult, Ran) {
    let mut result = task.run.result.clone();
    let Some(planned) = &task.run.job else {
        return (
            result,
            Ran::Done {
                samples: Vec::new(),
            },
        );
    };
    let mut job = planned.clone();
    job.id = task.id;
    if task.quick_check.is_some() {
        job.bench.check = false;
    }
    let (version, generation, size) = (task.run.version, task.generation, task.run.size);
    let mut phase = |phase| {
        sink(Event::Phase {
            version,
            generation,
            size,
            phase,
        });
    };
    let ran = backend.run(&task.run, &job, &mut result, &mut phase, &task.cancel);
    if let Some(quick) = &task.quick_check {
        if result.check.is_none() {
            result.check = quick.clone();
        }
    }
    (result, ran)
}
