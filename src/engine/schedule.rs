//! The scheduler: which planned run goes next, for every backend. Runs come in requests, one
//! per version and save; the latest save of a version wins ([`LatestWins`]): a newer request
//! drops the older one's queued runs and cancels its running ones. In watch the user comes
//! first: the version just saved, then the selected version, get their quick look at the
//! viewed size before anything else; every version gets a quick look before any is refined;
//! then full runs at the viewed size, then the other sizes. A save also preempts the full runs
//! of other versions in flight (they go back to the queue), so its quick look starts at once.
//! A batch runs in plan order.

use super::latest::{LatestWins, Offer};
use super::plan::PlannedRun;
use crate::report::{CheckSummary, Status};
use crate::watchdog::CancelFlag;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Jobs lost by a backend's worker, and then run well on another, after which the backend
/// is dropped from the run.
pub const DROP_AFTER: u32 = 2;

/// Which kind of backend a request is planned for: a GPU's runs are timed, the CPU's checked
/// with findings, and neither takes the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Gpu,
    Cpu,
}

/// The runs of one version for one save.
pub struct Request {
    pub version: usize,
    pub generation: u64,
    pub target: Target,
    pub runs: Vec<PlannedRun>,
    /// The request follows a save of the version (not the first pass or a reload).
    pub saved: bool,
}

/// One run handed to a backend.
pub struct Task {
    /// Unique over the scheduler's life: the job's id on the wire.
    pub id: u64,
    pub generation: u64,
    pub target: Target,
    pub run: PlannedRun,
    /// The quick look's check, when this run refines a good quick look: the run need not
    /// check the same inputs again.
    pub quick_check: Option<Option<CheckSummary>>,
    /// Set when the task's work is no longer wanted.
    pub cancel: CancelFlag,
    /// Earlier tries that a lost worker ended (crashed or hung): a job runs again once.
    pub tries: u8,
    /// What the failed try was, to note on the result of the next.
    pub retry_note: Option<String>,
    /// The backend running it (its index in the pool).
    pub ran_on: Option<usize>,
    /// The backend whose worker the failed try lost: the retry goes elsewhere if it can.
    failed_on: Option<usize>,
    seq: u64,
}

/// How a task ended.
pub enum Ending<'a> {
    Finished {
        status: Status,
        check: Option<&'a CheckSummary>,
    },
    Cancelled,
    /// The backend was lost before the task could count: run it again first.
    Requeue,
    /// The worker crashed or hung on it: run it once more, on another backend if one is
    /// there. The note says what the first try came to.
    Retry {
        note: String,
    },
}

/// What the scheduler says about a finished task.
#[derive(Debug, PartialEq, Eq)]
pub struct Completion {
    /// No more runs of this request will come: the version is done.
    pub last: bool,
    /// A good quick look: a full run refines it.
    pub provisional: bool,
    /// The task went back to the queue for another try: its result is not the last word.
    pub retried: bool,
}

/// The order runs go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// As planned: sizes in order, each size's versions in order (a batch on one backend).
    Plan,
    /// The most work first (FLOPs, else bytes), so that on several GPUs the slowest job does
    /// not start last and hold up the end.
    Largest,
    /// The user first (watch), by [`Focus`].
    Watch,
}

/// What the user looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Focus {
    pub selected: usize,
    pub size: usize,
}

struct Active {
    generation: u64,
    queued: Vec<Task>,
    /// The running tasks' cancel flags, and whether a save may preempt them (full runs).
    running: Vec<(CancelFlag, bool)>,
}

pub struct Scheduler {
    order: Order,
    focus: Focus,
    requests: LatestWins<usize, Request>,
    active: HashMap<usize, Active>,
    /// The version saved last.
    saved: Option<usize>,
    /// Per backend: jobs its worker lost that then ran well on another, since its last good
    /// run. A backend with [`DROP_AFTER`] of them is failing, not the jobs.
    strikes: HashMap<usize, u32>,
    /// Per backend: the sizes it has run. Its worker keeps their inputs and reference, which
    /// for a large size take seconds to make: a backend takes its own sizes' jobs first.
    sizes_seen: HashMap<usize, Vec<usize>>,
    next_id: u64,
    seq: u64,
}

impl Scheduler {
    pub fn new(order: Order) -> Scheduler {
        Scheduler {
            order,
            focus: Focus::default(),
            requests: LatestWins::new(),
            active: HashMap::new(),
            saved: None,
            strikes: HashMap::new(),
            sizes_seen: HashMap::new(),
            next_id: 1,
            seq: 0,
        }
    }

    pub fn set_focus(&mut self, focus: Focus) {
        self.focus = focus;
    }

    /// Queues a version's runs. A request already in progress for the version is superseded:
    /// its queued runs are dropped and its running ones cancelled.
    pub fn submit(&mut self, request: Request) {
        let version = request.version;
        if request.saved {
            self.saved = Some(version);
            // The save's quick look goes first: full runs of other versions step aside.
            for (_, a) in self.active.iter().filter(|(v, _)| **v != version) {
                for (flag, _) in a.running.iter().filter(|(_, preemptible)| *preemptible) {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        }
        match self.requests.offer(version, request) {
            Offer::Start(r) => self.activate(r),
            Offer::Queued => {
                if let Some(a) = self.active.get_mut(&version) {
                    a.queued.clear();
                    for (flag, _) in &a.running {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
                self.settle(version);
            }
        }
    }

    fn activate(&mut self, r: Request) {
        let queued = r
            .runs
            .into_iter()
            .map(|run| {
                self.seq += 1;
                Task {
                    id: 0,
                    generation: r.generation,
                    target: r.target,
                    run,
                    quick_check: None,
                    cancel: Arc::new(AtomicBool::new(false)),
                    tries: 0,
                    retry_note: None,
                    ran_on: None,
                    failed_on: None,
                    seq: self.seq,
                }
            })
            .collect();
        self.active.insert(
            r.version,
            Active {
                generation: r.generation,
                queued,
                running: Vec::new(),
            },
        );
        self.settle(r.version);
    }

    /// A request with nothing queued or running is over: the pending one, if any, starts.
    fn settle(&mut self, version: usize) {
        let over = self
            .active
            .get(&version)
            .is_none_or(|a| a.queued.is_empty() && a.running.is_empty());
        if over {
            self.active.remove(&version);
            if let Some(next) = self.requests.finished(&version) {
                self.activate(next);
            }
        }
    }

    /// The next task for a backend of kind `target`, if one is waiting.
    pub fn next(&mut self, target: Target) -> Option<Task> {
        self.next_for(target, usize::MAX, 1)
    }

    /// The next task for backend `backend` of kind `target`, one of `peers` such backends
    /// alive: a retry skips the backend that failed it while another can take it.
    pub fn next_for(&mut self, target: Target, backend: usize, peers: usize) -> Option<Task> {
        let mut best: Option<(usize, usize, (u8, u64, u64))> = None;
        for (&v, a) in &self.active {
            for (i, t) in a.queued.iter().enumerate() {
                if t.target != target || (peers > 1 && t.failed_on == Some(backend)) {
                    continue;
                }
                let key = self.key(t, backend);
                if best.as_ref().is_none_or(|b| key < b.2) {
                    best = Some((v, i, key));
                }
            }
        }
        let (v, i, _) = best?;
        let a = self.active.get_mut(&v)?;
        let mut task = a.queued.remove(i);
        task.ran_on = (backend != usize::MAX).then_some(backend);
        let seen = self.sizes_seen.entry(backend).or_default();
        if !seen.contains(&task.run.size) {
            seen.push(task.run.size);
        }
        task.id = self.next_id;
        self.next_id += 1;
        let preemptible = self.order == Order::Watch && !task.run.provisional;
        a.running.push((task.cancel.clone(), preemptible));
        Some(task)
    }

    /// Lower goes first, for `backend`: (tier, rank, submission order).
    fn key(&self, t: &Task, backend: usize) -> (u8, u64, u64) {
        let (v, size) = (t.run.version, t.run.size);
        match self.order {
            Order::Plan => (0, ((size as u64) << 32) | v as u64, t.seq),
            Order::Largest => {
                // The backend's own sizes first, then the most work: each GPU makes a size's
                // data once, and the small jobs still come last.
                let seen = self
                    .sizes_seen
                    .get(&backend)
                    .is_some_and(|s| s.contains(&size));
                let work = t.run.result.flops.or(t.run.result.bytes).unwrap_or(0);
                (u8::from(!seen), u64::MAX - work, t.seq)
            }
            Order::Watch => {
                let (selected, viewed) = (v == self.focus.selected, size == self.focus.size);
                let tier = match (t.run.provisional, self.saved == Some(v), selected, viewed) {
                    (true, true, _, _) => 0,
                    (true, _, true, _) => 1,
                    (true, _, _, _) => 2,
                    (false, _, true, true) => 3,
                    (false, _, _, true) => 4,
                    (false, _, true, _) => 5,
                    _ => 6,
                };
                (tier, 0, t.seq)
            }
        }
    }

    /// Records how `task` ended.
    pub fn finish(&mut self, mut task: Task, ending: Ending) -> Completion {
        let version = task.run.version;
        let mut done = Completion {
            last: false,
            provisional: false,
            retried: false,
        };
        let Some(a) = self.active.get_mut(&version) else {
            return done;
        };
        a.running.retain(|(f, _)| !Arc::ptr_eq(f, &task.cancel));
        if let Ending::Finished {
            status: Status::Ok, ..
        } = ending
        {
            // A good run clears its backend; one that another backend's worker had lost is a
            // strike against that one.
            if let Some(b) = task.ran_on {
                self.strikes.remove(&b);
            }
            if let Some(f) = task.failed_on.filter(|f| Some(*f) != task.ran_on) {
                *self.strikes.entry(f).or_default() += 1;
            }
        }
        let current = a.generation == task.generation && !self.requests.superseded(&version);
        match ending {
            Ending::Requeue if current => {
                task.seq = 0;
                task.cancel = Arc::new(AtomicBool::new(false));
                a.queued.insert(0, task);
            }
            Ending::Retry { note } if current => {
                task.seq = 0;
                task.tries += 1;
                task.retry_note = Some(note);
                task.failed_on = task.ran_on;
                task.cancel = Arc::new(AtomicBool::new(false));
                a.queued.insert(0, task);
                done.retried = true;
            }
            // Cancelled while its request still stands: preempted by another version's save.
            // It runs again in its turn.
            Ending::Cancelled if current => {
                task.cancel = Arc::new(AtomicBool::new(false));
                a.queued.push(task);
            }
            Ending::Finished { status, check } if current && task.run.provisional => {
                // The full run at the same size refines a good quick look, and goes without
                // one that failed (the quick look's result is final then).
                let size = task.run.size;
                let refine = a
                    .queued
                    .iter()
                    .position(|t| t.run.size == size && !t.run.provisional);
                match (status, refine) {
                    (Status::Ok, Some(i)) => {
                        a.queued[i].quick_check = Some(check.cloned());
                        done.provisional = true;
                    }
                    (_, Some(i)) => {
                        a.queued.remove(i);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        let finished = a.queued.is_empty() && a.running.is_empty();
        done.last = finished && current;
        self.settle(version);
        done
    }

    /// Whether `backend` keeps losing jobs that other backends then run well.
    pub fn failing(&self, backend: usize) -> bool {
        self.strikes.get(&backend).is_some_and(|n| *n >= DROP_AFTER)
    }

    /// Nothing queued or running.
    pub fn idle(&self) -> bool {
        self.active.is_empty()
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
