//! Tests of the supervisor against real processes: small Python workers that speak the protocol
//! and then misbehave in each way a GPU worker can (fault, die mid-frame, hang, refuse, speak
//! another version), so the crash, timeout and restart paths run without a GPU.

use super::*;
use crate::run::protocol::{BenchMode, BenchSpec, Blob, Program, ReferenceSpec, PROTOCOL};
use crate::run::stats::StopRule;

/// Frame helpers and a request loop; each worker defines `on_run(id)` after this.
const PRELUDE: &str = r#"
import json, struct, sys, time
def rd():
    h = sys.stdin.buffer.read(4)
    if len(h) < 4: sys.exit(0)
    return json.loads(sys.stdin.buffer.read(struct.unpack('<I', h)[0]))
def wr(m):
    b = json.dumps(m).encode()
    sys.stdout.buffer.write(struct.pack('<I', len(b)) + b)
    sys.stdout.buffer.flush()
def done(i): wr({'type': 'done', 'id': i, 'check': None, 'timing': None, 'stop': None, 'error': None})
def serve(protocol=int(sys.argv[1]), version=sys.argv[2]):
    rd()
    wr({'type': 'hello', 'protocol': protocol, 'kwb_version': version})
    while True:
        m = rd()
        if m['type'] == 'shutdown': sys.exit(0)
        if m['type'] == 'device': wr({'type': 'error', 'id': None, 'message': 'no GPU here'})
        if m['type'] == 'run': on_run(m['id'])
"#;

/// A worker running `body` (which defines `on_run` and ends by calling `serve()`).
fn worker(body: &str) -> WorkerCommand {
    let script = format!("{PRELUDE}\n{body}\n");
    let version = env!("CARGO_PKG_VERSION").to_string();
    WorkerCommand::new(
        "python3",
        ["-c".to_string(), script, PROTOCOL.to_string(), version],
    )
}

fn start(body: &str) -> Supervisor {
    Supervisor::start(worker(body)).expect("the fake worker starts")
}

fn job(id: u64, watchdog_ms: u64) -> RunJob {
    RunJob {
        id,
        version: "v1".into(),
        size: "small".into(),
        program: Program {
            cubin: Blob(vec![0x7f, b'E', b'L', b'F']),
            launches: vec![],
        },
        buffers: vec![],
        reference: ReferenceSpec::None,
        seed: 1,
        bench: BenchSpec {
            check: false,
            benchmark: true,
            mode: BenchMode::Cold,
            warmup_ms: 0.0,
            stop: StopRule::default(),
            watchdog_ms,
            rtol: None,
            atol: None,
            guard_bytes: None,
        },
    }
}

fn run(sup: &mut Supervisor, job: &RunJob) -> (JobResult, Vec<Phase>) {
    let mut phases = vec![];
    let result = sup.run(job, &mut |p| phases.push(p));
    (result, phases)
}

fn assert_done(result: &JobResult, id: u64) {
    match result {
        JobResult::Done(outcome) => assert_eq!(outcome.id, id),
        other => panic!("expected job {id} done, got {other:?}"),
    }
}

/// Whether a process with this pid still exists (our children are reaped once killed).
fn alive(pid: u32) -> bool {
    Command::new("sh")
        .args(["-c", &format!("kill -0 {pid}")])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

const GOOD: &str = r#"
def on_run(i):
    wr({'type': 'done', 'id': i + 1000, 'check': None, 'timing': None, 'stop': None, 'error': 'stale'})
    wr({'type': 'phase', 'id': i + 1000, 'phase': 'preparing'})
    wr({'type': 'phase', 'id': i, 'phase': 'checking'})
    wr({'type': 'heartbeat', 'id': i})
    wr({'type': 'phase', 'id': i, 'phase': 'benchmarking'})
    done(i)
serve()
"#;

#[test]
fn a_good_worker_runs_jobs_and_stale_replies_are_ignored() {
    let mut sup = start(GOOD);
    for id in [1, 2] {
        let (result, phases) = run(&mut sup, &job(id, 5_000));
        assert_done(&result, id);
        assert_eq!(phases, [Phase::Checking, Phase::Benchmarking]);
        if let JobResult::Done(outcome) = result {
            assert_eq!(
                outcome.error, None,
                "the stale `done` was taken for this job's"
            );
        }
    }
    assert_eq!(sup.restarts(), 0);
    let pid = sup.worker_pid().unwrap();
    assert!(alive(pid), "`alive` cannot see a live worker");
    sup.shutdown();
    assert!(!alive(pid), "the worker outlived shutdown");
}

#[test]
fn a_fault_is_a_crash_and_the_next_job_runs_on_a_new_worker() {
    let mut sup = start(
        r#"
def on_run(i):
    if i == 1:
        wr({'type': 'fault', 'id': i, 'error': 'CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access'})
        sys.exit(1)
    done(i)
serve()
"#,
    );
    let first = sup.worker_pid().unwrap();
    let (result, _) = run(&mut sup, &job(1, 5_000));
    match &result {
        JobResult::Crashed { error } => {
            assert!(error.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{error}")
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    assert_eq!(sup.restarts(), 1);
    assert!(!alive(first));
    assert_done(&run(&mut sup, &job(2, 5_000)).0, 2);
    assert_eq!(sup.restarts(), 1);
}

#[test]
fn a_worker_dying_mid_frame_is_a_crash_with_its_status_and_stderr() {
    let mut sup = start(
        r#"
def on_run(i):
    sys.stderr.write('kwb worker: cuLaunchKernel went badly\n')
    sys.stderr.flush()
    sys.stdout.buffer.write(struct.pack('<I', 100) + b'{"type":')
    sys.stdout.buffer.flush()
    sys.exit(3)
serve()
"#,
    );
    match run(&mut sup, &job(1, 5_000)).0 {
        JobResult::Crashed { error } => {
            assert!(error.contains("exited with status 3"), "{error}");
            assert!(error.contains("cut short"), "{error}");
            assert!(error.contains("cuLaunchKernel went badly"), "{error}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    assert_eq!(sup.restarts(), 1);
}

#[test]
fn a_silent_worker_is_killed_at_the_watchdog_and_replaced() {
    let mut sup = start(
        r#"
def on_run(i):
    if i == 1:
        wr({'type': 'phase', 'id': i, 'phase': 'preparing'})
        time.sleep(1000)
    done(i)
serve()
"#,
    );
    let hung = sup.worker_pid().unwrap();
    let began = Instant::now();
    let (result, phases) = run(&mut sup, &job(1, 300));
    match result {
        JobResult::Timeout { silent_ms } => assert!(
            (300..10_000).contains(&silent_ms),
            "silent for {silent_ms} ms"
        ),
        other => panic!("expected a timeout, got {other:?}"),
    }
    // Bounds loose enough for a loaded CI machine: the job itself would never end.
    assert!(began.elapsed() < Duration::from_secs(15));
    assert_eq!(phases, [Phase::Preparing]);
    assert!(!alive(hung), "the hung worker is still running");
    assert_eq!(sup.restarts(), 1);
    assert_done(&run(&mut sup, &job(2, 300)).0, 2);
}

#[test]
fn heartbeats_keep_a_long_job_alive() {
    let mut sup = start(
        r#"
def on_run(i):
    for _ in range(10):
        time.sleep(0.1)
        wr({'type': 'heartbeat', 'id': i})
    done(i)
serve()
"#,
    );
    let began = Instant::now();
    assert_done(&run(&mut sup, &job(1, 300)).0, 1);
    assert!(began.elapsed() >= Duration::from_millis(900));
    assert_eq!(sup.restarts(), 0);
}

#[test]
fn a_protocol_mismatch_fails_the_start_naming_both_versions() {
    let theirs = PROTOCOL + 41;
    let Err(e) = Supervisor::start(worker(&format!("serve({theirs})"))) else {
        panic!("a worker of another protocol was accepted");
    };
    assert!(matches!(e, SupervisorError::Version { .. }));
    let message = e.to_string();
    let ours = env!("CARGO_PKG_VERSION");
    let want = format!("runs a kwb that speaks protocol {theirs}, but this is kwb {ours}");
    assert!(message.contains(&want), "{message}");
}

#[test]
fn a_worker_of_another_kwb_version_is_refused_saying_how_to_install_one() {
    let mut cmd = worker("serve(version='0.0.1')");
    cmd.host = Some("gpu-box".into());
    let Err(e) = Supervisor::start(cmd) else {
        panic!("a worker of another kwb version was accepted");
    };
    let message = e.to_string();
    let ours = env!("CARGO_PKG_VERSION");
    for want in [
        format!("runs kwb 0.0.1, but this is kwb {ours}"),
        format!("install kwb {ours} on gpu-box"),
        "`cargo install --path .`".to_string(),
        "into a folder on gpu-box's PATH".to_string(),
    ] {
        assert!(message.contains(&want), "{want:?} not in: {message}");
    }
}

#[test]
fn worker_commands_for_a_shell_line_and_a_remote_host() {
    let sh = WorkerCommand::shell("ssh -p 2222 box kwb worker");
    assert_eq!((sh.program.to_str(), sh.args.len()), (Some("sh"), 2));
    assert_eq!(sh.label(), "ssh -p 2222 box kwb worker");
    let ssh = WorkerCommand::ssh("me@gpu-box");
    assert_eq!(ssh.program.to_str(), Some("ssh"));
    assert_eq!(
        ssh.args[ssh.args.len() - 3..],
        ["me@gpu-box", "kwb", "worker"]
    );
    assert!(ssh.args.contains(&"BatchMode=yes".to_string()));
    assert_eq!(ssh.label(), "ssh me@gpu-box kwb worker");
    assert_eq!(ssh.host.as_deref(), Some("me@gpu-box"));
}

#[test]
fn an_ssh_exit_255_reads_as_a_lost_connection() {
    let mut cmd = worker(
        r#"
def on_run(i):
    sys.stderr.write('Connection to gpu-box closed by remote host.\n')
    sys.exit(255)
serve()
"#,
    );
    cmd.host = Some("gpu-box".into());
    let mut sup = Supervisor::start(cmd).unwrap();
    match run(&mut sup, &job(1, 5_000)).0 {
        JobResult::Crashed { error } => {
            let want = "the ssh connection to gpu-box failed or was lost (ssh exited with 255)";
            assert!(error.starts_with(want), "{error}");
            assert!(error.contains("closed by remote host"), "{error}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[test]
fn a_refused_job_fails_and_the_worker_stays() {
    let mut sup = start(
        r#"
def on_run(i):
    if i == 1:
        wr({'type': 'error', 'id': i, 'message': 'out of memory: needs 3 GiB'})
    else:
        done(i)
serve()
"#,
    );
    let pid = sup.worker_pid();
    assert_eq!(
        run(&mut sup, &job(1, 5_000)).0,
        JobResult::Failed {
            message: "out of memory: needs 3 GiB".into()
        }
    );
    assert_done(&run(&mut sup, &job(2, 5_000)).0, 2);
    assert_eq!(sup.restarts(), 0);
    assert_eq!(sup.worker_pid(), pid);
    match sup.device(0) {
        Err(SupervisorError::Worker(m)) => assert_eq!(m, "no GPU here"),
        other => panic!("expected the worker's error, got {other:?}"),
    }
}

#[test]
fn a_missing_program_is_a_spawn_error_naming_it() {
    let program = "/nonexistent/kwb-worker-for-tests";
    let Err(e) = Supervisor::start(WorkerCommand::new(program, ["worker"])) else {
        panic!("a missing program started");
    };
    assert!(matches!(e, SupervisorError::Spawn { .. }), "{e:?}");
    assert!(e.to_string().contains(program), "{e}");
}

#[test]
fn a_worker_that_exits_before_hello_fails_the_start_with_its_stderr() {
    let cmd = WorkerCommand::new(
        "sh",
        ["-c", "echo 'kwb: unknown command worker' >&2; exit 2"],
    );
    let Err(e) = Supervisor::start(cmd) else {
        panic!("a worker that never said hello was accepted");
    };
    let message = e.to_string();
    assert!(matches!(e, SupervisorError::Handshake { .. }), "{e:?}");
    assert!(message.contains("exited with status 2"), "{message}");
    assert!(message.contains("unknown command worker"), "{message}");
}

#[test]
fn dropping_the_supervisor_kills_a_busy_worker() {
    let mut sup = start("def on_run(i): time.sleep(1000)\nserve()");
    let pid = sup.worker_pid().unwrap();
    assert!(matches!(
        run(&mut sup, &job(1, 200)).0,
        JobResult::Timeout { .. }
    ));
    let second = sup.worker_pid().unwrap();
    assert_ne!(pid, second);
    drop(sup);
    assert!(!alive(pid) && !alive(second));
}

#[test]
fn failed_restarts_are_reported_and_retried() {
    // Answers hello only while a marker file is absent; the first job creates it and faults.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("broken");
    let body = format!(
        r#"
import os
M = {marker:?}
def on_run(i):
    open(M, 'w').close()
    wr({{'type': 'fault', 'id': i, 'error': 'CUDA_ERROR_LAUNCH_FAILED'}})
    sys.exit(1)
if os.path.exists(M): sys.exit(5)
serve()
"#
    );
    let mut sup = start(&body);
    match run(&mut sup, &job(1, 5_000)).0 {
        JobResult::Crashed { error } => {
            assert!(error.contains("CUDA_ERROR_LAUNCH_FAILED"), "{error}");
            assert!(error.contains("restarting the worker failed"), "{error}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    assert!(!sup.connected());
    match run(&mut sup, &job(2, 5_000)).0 {
        JobResult::Failed { message } => assert!(message.contains("status 5"), "{message}"),
        other => panic!("expected a failure to start, got {other:?}"),
    }
    let e = sup.reconnect().unwrap_err();
    assert!(e.to_string().contains("status 5"), "{e}");
    assert!(!sup.connected());
    std::fs::remove_file(&marker).unwrap();
    match run(&mut sup, &job(3, 5_000)).0 {
        JobResult::Crashed { error } => assert!(error.contains("LAUNCH_FAILED"), "{error}"),
        other => panic!("expected the new worker to run (and fault), got {other:?}"),
    }
    assert_eq!(sup.restarts(), 1);
    // The marker is back, so no worker is up; reconnecting once it is gone brings one up.
    assert!(!sup.connected());
    std::fs::remove_file(&marker).unwrap();
    sup.reconnect().unwrap();
    assert!(sup.connected() && sup.restarts() == 2);
    match run(&mut sup, &job(4, 5_000)).0 {
        JobResult::Crashed { error } => assert!(error.contains("LAUNCH_FAILED"), "{error}"),
        other => panic!("expected the reconnected worker to run (and fault), got {other:?}"),
    }
}

#[test]
fn a_cancelled_job_stops_its_worker_and_the_next_job_runs() {
    // The first job heartbeats for ever (a long benchmark); the second finishes at once.
    let mut sup = start(
        r#"
def on_run(i):
    if i == 1:
        while True:
            time.sleep(0.05)
            wr({'type': 'heartbeat', 'id': i})
    done(i)
serve()
"#,
    );
    let pid = sup.worker_pid().unwrap();
    let asked = std::cell::Cell::new(0);
    let cancel = || {
        asked.set(asked.get() + 1);
        asked.get() > 3
    };
    let began = Instant::now();
    let result = sup.run_cancellable(&job(1, 60_000), &mut |_| {}, &cancel);
    assert_eq!(result, JobResult::Cancelled);
    // Well under the 60 s watchdog (the job itself never ends), loose for a loaded machine.
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "cancelling took {:?}",
        began.elapsed()
    );
    assert!(!alive(pid), "the cancelled job's worker is still running");
    assert_eq!(sup.restarts(), 1);
    assert_done(&run(&mut sup, &job(2, 5_000)).0, 2);
}

#[test]
fn a_worker_that_stops_a_cancelled_job_is_kept_for_the_next() {
    // Job 1 benchmarks for ever, but looks at its input between samples, as `kwb worker`
    // does, and answers a cancel; job 2 finishes at once, on the same worker.
    let mut sup = start(
        r#"
import select
def on_run(i):
    if i == 1:
        while True:
            wr({'type': 'heartbeat', 'id': i})
            if select.select([sys.stdin.buffer], [], [], 0.05)[0]:
                m = rd()
                if m['type'] == 'cancel' and m['id'] == i:
                    wr({'type': 'cancelled', 'id': i})
                    return
    done(i)
serve()
"#,
    );
    let pid = sup.worker_pid().unwrap();
    let asked = std::cell::Cell::new(0);
    let cancel = || {
        asked.set(asked.get() + 1);
        asked.get() > 3
    };
    let result = sup.run_cancellable(&job(1, 5_000), &mut |_| {}, &cancel);
    assert_eq!(result, JobResult::Cancelled);
    assert!(alive(pid), "the worker that stopped its job was killed");
    assert_eq!(sup.restarts(), 0);
    assert_done(&run(&mut sup, &job(2, 5_000)).0, 2);
    assert_eq!(
        sup.worker_pid(),
        Some(pid),
        "the next job ran on the same worker"
    );
}

#[test]
fn a_cancelled_reply_to_the_running_job_ends_it_without_a_watchdog_wait() {
    // A worker that answers job 0 with `cancelled` (as one whose cancel marker once matched
    // job 0 did): the supervisor takes it as cancelled at once, keeps the worker, and the
    // next job runs on it.
    let mut sup = start(
        r#"
def on_run(i):
    if i == 0:
        wr({'type': 'cancelled', 'id': i})
        return
    done(i)
serve()
"#,
    );
    let pid = sup.worker_pid().unwrap();
    let began = Instant::now();
    let result = sup.run_cancellable(&job(0, 5_000), &mut |_| {}, &|| false);
    assert_eq!(result, JobResult::Cancelled);
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    assert_done(&run(&mut sup, &job(1, 5_000)).0, 1);
    assert_eq!(sup.worker_pid(), Some(pid));
}
