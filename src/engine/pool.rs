//! The engine's threads: one per backend (each GPU, or the CPU), all taking tasks from one
//! [`Scheduler`] and sending owned [`Event`]s to one sink. `kwb batch` and `kwb watch` both
//! run their jobs through it.

use super::backend::{Backend, Ran};
use super::schedule::{Ending, Focus, Order, Request, Scheduler, Task};
use crate::report::RunResult;
use crate::run::protocol::Phase;
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
}

/// Where events go; false when nobody listens any more (the threads then stop).
pub type Sink = Arc<dyn Fn(Event) -> bool + Send + Sync>;

struct Shared {
    sched: Mutex<Scheduler>,
    wake: Condvar,
    stop: Mutex<bool>,
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
}

type Thread = JoinHandle<Box<dyn Backend>>;

/// Backends running tasks from one scheduler. Backends may join while it runs (watch adds the
/// GPU once its worker answers).
pub struct Pool {
    shared: Arc<Shared>,
    sink: Sink,
    threads: Mutex<Vec<Thread>>,
}

impl Pool {
    pub fn new(order: Order, sink: Sink) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                sched: Mutex::new(Scheduler::new(order)),
                wake: Condvar::new(),
                stop: Mutex::new(false),
            }),
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
        self.threads()
            .push(std::thread::spawn(move || serve(backend, &shared, &sink)));
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

/// One backend's thread: take a task, run it, report it, until stopped.
fn serve(mut backend: Box<dyn Backend>, shared: &Shared, sink: &Sink) -> Box<dyn Backend> {
    let target = backend.target();
    loop {
        let task = {
            let mut s = shared.sched();
            loop {
                if shared.stopping() {
                    return backend;
                }
                if let Some(t) = s.next(target) {
                    break t;
                }
                s = shared.wake.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let (result, ran) = run_task(backend.as_mut(), &task, sink);
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
                (Ran::Done { .. }, false) => Ending::Finished {
                    status: result.status,
                    check: result.check.as_ref(),
                },
            };
            let c = shared.sched().finish(task, ending);
            shared.wake.notify_all();
            c
        };
        if let Some(samples) = done {
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
