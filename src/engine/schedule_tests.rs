use super::*;
use crate::report::RunResult;

fn run(version: usize, size: usize, provisional: bool) -> PlannedRun {
    PlannedRun {
        version,
        size,
        result: RunResult::new(format!("v{version}"), format!("s{size}"), Status::Ok),
        job: None,
        code: None,
        provisional,
    }
}

/// A watch request: a quick look at `viewed`, then full runs at every size.
fn watch_request(
    version: usize,
    generation: u64,
    sizes: usize,
    viewed: usize,
    saved: bool,
) -> Request {
    let mut runs = vec![run(version, viewed, true), run(version, viewed, false)];
    runs.extend(
        (0..sizes)
            .filter(|&s| s != viewed)
            .map(|s| run(version, s, false)),
    );
    Request {
        version,
        generation,
        target: Target::Gpu,
        runs,
        saved,
    }
}

fn ok() -> Ending<'static> {
    Ending::Finished {
        status: Status::Ok,
        check: None,
    }
}

/// Runs everything queued, returning (version, size, provisional) in the order run.
fn drain(s: &mut Scheduler) -> Vec<(usize, usize, bool)> {
    let mut order = Vec::new();
    while let Some(t) = s.next(Target::Gpu) {
        order.push((t.run.version, t.run.size, t.run.provisional));
        s.finish(t, ok());
    }
    order
}

#[test]
fn a_batch_runs_sizes_in_order_then_versions() {
    let mut s = Scheduler::new(Order::Plan);
    for v in 0..2 {
        s.submit(Request {
            version: v,
            generation: 1,
            target: Target::Gpu,
            runs: (0..2).map(|z| run(v, z, false)).collect(),
            saved: false,
        });
    }
    let order: Vec<_> = drain(&mut s).into_iter().map(|(v, z, _)| (z, v)).collect();
    assert_eq!(order, [(0, 0), (0, 1), (1, 0), (1, 1)]);
    assert!(s.idle());
}

#[test]
fn every_version_gets_a_quick_look_before_any_is_refined() {
    let mut s = Scheduler::new(Order::Watch);
    s.set_focus(Focus {
        selected: 0,
        size: 1,
    });
    for v in 0..3 {
        s.submit(watch_request(v, 1, 3, 1, false));
    }
    let order = drain(&mut s);
    let first_full = order.iter().position(|r| !r.2).unwrap();
    assert_eq!(first_full, 3, "{order:?}");
    assert!(order[..3].iter().all(|r| r.1 == 1 && r.2));
    // Then the full runs at the viewed size, the selected version's first, then the rest.
    assert_eq!(order[3], (0, 1, false));
    assert!(order[4..6].iter().all(|r| r.1 == 1));
    assert_eq!(order.len(), 3 * 4);
}

#[test]
fn a_save_during_the_first_pass_goes_first() {
    let mut s = Scheduler::new(Order::Watch);
    s.set_focus(Focus {
        selected: 0,
        size: 0,
    });
    for v in 0..8 {
        s.submit(watch_request(v, 1, 4, 0, false));
    }
    // Two runs happen, then version 7 is saved.
    for _ in 0..2 {
        let t = s.next(Target::Gpu).unwrap();
        s.finish(t, ok());
    }
    s.submit(watch_request(7, 2, 4, 0, true));
    let t = s.next(Target::Gpu).unwrap();
    assert_eq!((t.run.version, t.run.size, t.run.provisional), (7, 0, true));
    assert_eq!(t.generation, 2);
}

#[test]
fn a_new_save_cancels_the_running_task_and_drops_the_queued_ones() {
    let mut s = Scheduler::new(Order::Watch);
    s.submit(watch_request(0, 1, 3, 0, false));
    let running = s.next(Target::Gpu).unwrap();
    assert!(!running.cancel.load(Ordering::Relaxed));
    s.submit(watch_request(0, 2, 3, 0, true));
    assert!(
        running.cancel.load(Ordering::Relaxed),
        "the running task is told to stop"
    );
    // Nothing of generation 1 is handed out, and generation 2 waits for the cancelled task.
    assert!(s.next(Target::Gpu).is_none());
    let c = s.finish(running, Ending::Cancelled);
    assert!(!c.last);
    let t = s.next(Target::Gpu).unwrap();
    assert_eq!((t.generation, t.run.provisional), (2, true));
}

#[test]
fn only_the_latest_of_a_burst_of_saves_runs() {
    let mut s = Scheduler::new(Order::Watch);
    s.submit(watch_request(0, 1, 1, 0, false));
    let running = s.next(Target::Gpu).unwrap();
    for g in 2..=6 {
        s.submit(watch_request(0, g, 1, 0, true));
    }
    s.finish(running, Ending::Cancelled);
    let generations: Vec<u64> = std::iter::from_fn(|| {
        let t = s.next(Target::Gpu)?;
        let g = t.generation;
        s.finish(t, ok());
        Some(g)
    })
    .collect();
    assert_eq!(generations, [6, 6]);
}

#[test]
fn a_failed_quick_look_is_final_and_a_good_one_is_refined_with_its_check() {
    let mut s = Scheduler::new(Order::Watch);
    s.submit(watch_request(0, 1, 1, 0, false));
    let quick = s.next(Target::Gpu).unwrap();
    let c = s.finish(
        quick,
        Ending::Finished {
            status: Status::CheckFailed,
            check: None,
        },
    );
    assert_eq!(
        c,
        Completion {
            last: true,
            provisional: false,
            retried: false
        }
    );
    assert!(s.next(Target::Gpu).is_none() && s.idle());

    s.submit(watch_request(0, 2, 1, 0, true));
    let quick = s.next(Target::Gpu).unwrap();
    let summary = CheckSummary {
        passed: true,
        max_abs_error: 0.0,
        rel_l2_error: 0.0,
        failure: None,
    };
    let c = s.finish(
        quick,
        Ending::Finished {
            status: Status::Ok,
            check: Some(&summary),
        },
    );
    assert_eq!(
        c,
        Completion {
            last: false,
            provisional: true,
            retried: false
        }
    );
    let full = s.next(Target::Gpu).unwrap();
    assert!(!full.run.provisional);
    assert_eq!(full.quick_check, Some(Some(summary)));
    assert!(s.finish(full, ok()).last);
}

#[test]
fn a_requeued_task_runs_again_first_with_a_new_id() {
    let mut s = Scheduler::new(Order::Plan);
    s.submit(Request {
        version: 0,
        generation: 1,
        target: Target::Gpu,
        runs: (0..3).map(|z| run(0, z, false)).collect(),
        saved: false,
    });
    let t = s.next(Target::Gpu).unwrap();
    let (id, size) = (t.id, t.run.size);
    assert!(!s.finish(t, Ending::Requeue).last);
    let again = s.next(Target::Gpu).unwrap();
    assert_eq!(again.run.size, size);
    assert_ne!(again.id, id);
}

#[test]
fn tasks_spread_over_several_backends_end_with_one_last() {
    let mut s = Scheduler::new(Order::Plan);
    s.submit(Request {
        version: 0,
        generation: 1,
        target: Target::Gpu,
        runs: (0..3).map(|z| run(0, z, false)).collect(),
        saved: false,
    });
    let (a, b, c) = (
        s.next(Target::Gpu).unwrap(),
        s.next(Target::Gpu).unwrap(),
        s.next(Target::Gpu).unwrap(),
    );
    assert!(s.next(Target::Gpu).is_none());
    assert!(!s.finish(b, ok()).last);
    assert!(!s.finish(c, ok()).last);
    assert!(s.finish(a, ok()).last);
    assert!(s.idle());
}

#[test]
fn a_backend_takes_only_the_runs_planned_for_its_kind() {
    let mut s = Scheduler::new(Order::Plan);
    s.submit(Request {
        version: 0,
        generation: 1,
        target: Target::Cpu,
        runs: vec![run(0, 0, false)],
        saved: false,
    });
    assert!(s.next(Target::Gpu).is_none());
    assert!(s.next(Target::Cpu).is_some());
}

#[test]
fn a_save_preempts_another_versions_full_run_which_runs_again_later() {
    let mut s = Scheduler::new(Order::Watch);
    s.submit(watch_request(0, 1, 1, 0, false));
    let quick = s.next(Target::Gpu).unwrap();
    s.finish(quick, ok());
    let full = s.next(Target::Gpu).unwrap();
    assert!(!full.run.provisional);
    s.submit(watch_request(1, 2, 1, 0, true));
    assert!(
        full.cancel.load(Ordering::Relaxed),
        "the full run steps aside"
    );
    assert!(!s.finish(full, Ending::Cancelled).last);
    let next = s.next(Target::Gpu).unwrap();
    assert_eq!((next.run.version, next.run.provisional), (1, true));
    s.finish(next, ok());
    let order = drain(&mut s);
    assert!(
        order.contains(&(0, 0, false)),
        "the preempted run comes back: {order:?}"
    );
    assert!(s.idle());
}

#[test]
fn a_save_leaves_quick_looks_in_flight_alone() {
    let mut s = Scheduler::new(Order::Watch);
    s.submit(watch_request(0, 1, 1, 0, false));
    let quick = s.next(Target::Gpu).unwrap();
    s.submit(watch_request(1, 2, 1, 0, true));
    assert!(!quick.cancel.load(Ordering::Relaxed));
}

#[test]
fn on_several_gpus_the_largest_jobs_go_first() {
    let mut s = Scheduler::new(Order::Largest);
    let mut runs: Vec<PlannedRun> = (0..3).map(|z| run(0, z, false)).collect();
    for (r, flops) in runs.iter_mut().zip([10, 1000, 100]) {
        r.result.flops = Some(flops);
    }
    s.submit(Request {
        version: 0,
        generation: 1,
        target: Target::Gpu,
        runs,
        saved: false,
    });
    let order: Vec<usize> = drain(&mut s).into_iter().map(|(_, z, _)| z).collect();
    assert_eq!(order, [1, 2, 0]);
}

fn batch_of(runs: usize) -> Request {
    Request {
        version: 0,
        generation: 1,
        target: Target::Gpu,
        runs: (0..runs).map(|s| run(0, s, false)).collect(),
        saved: false,
    }
}

fn crashed() -> Ending<'static> {
    Ending::Finished {
        status: Status::Crashed,
        check: None,
    }
}

#[test]
fn a_job_whose_worker_was_lost_runs_once_more_on_another_backend() {
    let mut s = Scheduler::new(Order::Largest);
    s.submit(batch_of(1));
    let t = s.next_for(Target::Gpu, 0, 2).unwrap();
    assert_eq!(t.ran_on, Some(0));
    let c = s.finish(
        t,
        Ending::Retry {
            note: "crashed".into(),
        },
    );
    assert!(c.retried && !c.last);
    // Backend 0 lost it: while backend 1 serves, backend 0 leaves it alone.
    assert!(s.next_for(Target::Gpu, 0, 2).is_none());
    let t = s.next_for(Target::Gpu, 1, 2).unwrap();
    assert_eq!((t.tries, t.retry_note.as_deref()), (1, Some("crashed")));
    // The second try's ending is final, whatever it is.
    let c = s.finish(t, crashed());
    assert!(c.last && !c.retried);
    assert!(s.idle());
}

#[test]
fn a_retry_goes_back_to_the_failing_backend_when_it_is_alone() {
    let mut s = Scheduler::new(Order::Largest);
    s.submit(batch_of(1));
    let t = s.next_for(Target::Gpu, 0, 1).unwrap();
    s.finish(
        t,
        Ending::Retry {
            note: "hung".into(),
        },
    );
    let t = s.next_for(Target::Gpu, 0, 1).unwrap();
    assert_eq!(t.tries, 1);
    assert!(s.finish(t, ok()).last);
}

#[test]
fn a_backend_whose_lost_jobs_run_well_elsewhere_is_failing() {
    let mut s = Scheduler::new(Order::Largest);
    s.submit(batch_of(4));
    for round in 0..DROP_AFTER {
        assert!(!s.failing(0), "round {round}");
        let t = s.next_for(Target::Gpu, 0, 2).unwrap();
        s.finish(t, Ending::Retry { note: "x".into() });
        let t = s.next_for(Target::Gpu, 1, 2).unwrap();
        assert_eq!(t.tries, 1);
        s.finish(t, ok());
    }
    assert!(s.failing(0));
    assert!(!s.failing(1));
    // A job that fails everywhere is the job's fault: no strike.
    let mut s = Scheduler::new(Order::Largest);
    s.submit(batch_of(4));
    for _ in 0..4 {
        let t = s.next_for(Target::Gpu, 0, 2).unwrap();
        s.finish(t, Ending::Retry { note: "x".into() });
        let t = s.next_for(Target::Gpu, 1, 2).unwrap();
        s.finish(t, crashed());
    }
    assert!(!s.failing(0) && !s.failing(1));
}

#[test]
fn on_several_gpus_each_keeps_to_the_sizes_it_has_data_for() {
    let mut s = Scheduler::new(Order::Largest);
    // Two sizes of equal work, three versions each (requests come version by version).
    for v in 0..3 {
        let runs = (0..2)
            .map(|size| {
                let mut r = run(v, size, false);
                r.result.flops = Some(1000);
                r
            })
            .collect();
        s.submit(Request {
            version: v,
            generation: 1,
            target: Target::Gpu,
            runs,
            saved: false,
        });
    }
    let a = s.next_for(Target::Gpu, 0, 2).unwrap();
    let b = s.next_for(Target::Gpu, 1, 2).unwrap();
    let (sa, sb) = (a.run.size, b.run.size);
    s.finish(a, ok());
    s.finish(b, ok());
    let mut by_backend = vec![vec![sa], vec![sb]];
    while !s.idle() {
        for (k, sizes) in by_backend.iter_mut().enumerate() {
            if let Some(t) = s.next_for(Target::Gpu, k, 2) {
                sizes.push(t.run.size);
                s.finish(t, ok());
            }
        }
    }
    // Each backend ran one size only, once it had started on it.
    for sizes in &by_backend {
        assert!(sizes.iter().all(|z| *z == sizes[0]), "{by_backend:?}");
    }
}
