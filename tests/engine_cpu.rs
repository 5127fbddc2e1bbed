//! The engine on the CPU, as `kwb watch` drives it with no GPU: real NVRTC compiles, the tile
//! interpreter and the PTX emulator behind the backend seam. A kernel that never ends must not
//! hold up the other versions, and a new save of it must cancel the run in flight instead of
//! waiting for its watchdog.

mod support;

use kwb::compile::{Arch, Cache, CompiledVersion, Compiler};
use kwb::engine::{
    plan_runs, CpuBackend, CpuEngine, Event, Order, Planning, Pool, Request, Target,
};
use kwb::report::Status;
use kwb::run::protocol::{BenchMode, BenchSpec};
use kwb::workspace::Workspace;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

fn setup() -> (Workspace, Vec<Arc<CompiledVersion>>) {
    support::provision_nvrtc();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine/runaway.yaml");
    let ws = kwb::workspace::load(&path).unwrap();
    let compiler = Compiler::new(Arch::DEFAULT, Cache::disabled()).unwrap();
    let compiled = compiler
        .compile_workspace(&ws)
        .into_iter()
        .map(Arc::new)
        .collect::<Vec<_>>();
    assert!(compiled.iter().all(|c| c.ok), "both versions compile");
    (ws, compiled)
}

fn request(
    ws: &Workspace,
    compiled: &[Arc<CompiledVersion>],
    version: usize,
    generation: u64,
    watchdog_ms: u64,
) -> Request {
    let planning = Planning {
        ws,
        arch: Arch::DEFAULT.spec(),
        seed: 7,
        bench: BenchSpec {
            check: true,
            benchmark: false,
            mode: BenchMode::Cold,
            warmup_ms: 0.0,
            stop: Default::default(),
            watchdog_ms,
            rtol: None,
            atol: None,
            guard_bytes: None,
        },
        quick_look_at: None,
    };
    Request {
        version,
        generation,
        target: Target::Cpu,
        runs: plan_runs(&planning, version, &compiled[version], None, &[0], false),
        saved: generation > 1,
    }
}

fn pool(backends: usize) -> (Pool, Receiver<Event>) {
    let (tx, rx) = channel();
    let pool = Pool::new(Order::Watch, Arc::new(move |e| tx.send(e).is_ok()));
    for _ in 0..backends {
        pool.add(Box::new(CpuBackend::new(CpuEngine::Auto, 1)));
    }
    (pool, rx)
}

/// The next result, skipping phase events.
fn next_result(rx: &Receiver<Event>) -> (usize, u64, Status) {
    loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(Event::Finished {
                version,
                generation,
                result,
                ..
            }) => return (version, generation, result.status),
            Ok(Event::Phase { .. }) => continue,
            Ok(Event::Dropped { backend, why }) => panic!("{backend} dropped: {why}"),
            Err(e) => panic!("no result: {e}"),
        }
    }
}

#[test]
fn a_runaway_kernel_does_not_hold_up_the_other_versions() {
    let (ws, compiled) = setup();
    let (spin, good) = (0, 1);
    let (pool, rx) = pool(2);
    // The runaway first, with a watchdog far longer than the test may take.
    pool.submit(request(&ws, &compiled, spin, 1, 600_000));
    pool.submit(request(&ws, &compiled, good, 1, 600_000));
    assert_eq!(next_result(&rx), (good, 1, Status::Ok));
    // The save that fixes nothing still cancels the endless run: nothing of generation 1
    // comes back, and generation 2 ends at its own (short) watchdog.
    pool.submit(request(&ws, &compiled, spin, 2, 1_000));
    assert_eq!(next_result(&rx), (spin, 2, Status::Timeout));
    pool.stop();
}

#[test]
fn a_new_save_cancels_the_run_in_flight_on_a_busy_backend() {
    let (ws, compiled) = setup();
    let (pool, rx) = pool(1);
    pool.submit(request(&ws, &compiled, 0, 1, 600_000));
    // Wait until the endless run has started on the only backend.
    loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(Event::Phase { generation: 1, .. }) => break,
            Ok(_) => continue,
            Err(e) => panic!("the run never started: {e}"),
        }
    }
    pool.submit(request(&ws, &compiled, 0, 2, 1_000));
    // Without cancelling, the backend would be busy with generation 1 for ten minutes.
    assert_eq!(next_result(&rx), (0, 2, Status::Timeout));
    pool.stop();
}
