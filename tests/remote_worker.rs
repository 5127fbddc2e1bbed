//! `kwb batch --worker-cmd` and `--remote`: the GPU worker behind any command that speaks the
//! protocol. Without a GPU, the worker is tests/fixtures/remote/fake_worker.py (a made-up
//! device; a crash, a hang and a dropped connection made real by a process that dies, goes
//! silent, or exits as ssh does), or the real `kwb worker` pretending to be another version.
//! With a GPU (an ignored test: run it with `--include-ignored`), the real `kwb worker` behind
//! `sh -c` runs a workspace end to end; and where `ssh` to 127.0.0.1 works without a password,
//! `--remote 127.0.0.1` does the same.

mod support;

use kwb::report::{BatchReport, RunResult, Status};
use std::path::Path;
use std::process::Command;

const WS: &str = "tests/fixtures/remote/remote.yaml";

/// `sh -c` words for the fake worker, with its marker file in `dir`.
fn fake(dir: &Path) -> String {
    let script = support::repo().join("tests/fixtures/remote/fake_worker.py");
    format!(
        "python3 '{}' '{}' '{}'",
        script.display(),
        env!("CARGO_PKG_VERSION"),
        dir.join("unreachable").display()
    )
}

/// `kwb batch` of `versions` of the fixture through `worker`: (exit code, report, stderr).
fn batch(worker: &[&str], versions: &str, extra: &[&str]) -> (i32, Option<BatchReport>, String) {
    support::provision_nvrtc();
    let out = Command::new(support::kwb_bin())
        .current_dir(support::repo())
        .args(["batch", WS, "--format", "json", "--versions", versions])
        .args(worker)
        .args(extra)
        .output()
        .expect("run kwb batch");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = kwb::report::json::from_json(&stdout).ok();
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn by<'a>(report: &'a BatchReport, version: &str) -> &'a RunResult {
    (report.results.iter().find(|r| r.version == version))
        .unwrap_or_else(|| panic!("no result for {version}"))
}

fn message(r: &RunResult) -> &str {
    r.message.as_deref().unwrap_or("")
}

#[test]
fn a_worker_command_runs_the_batch_on_the_device_it_reports() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = fake(dir.path());
    let (code, report, err) = batch(&["--worker-cmd", &cmd], "good,good2", &[]);
    let report = report.unwrap_or_else(|| panic!("no report: {err}"));
    assert_eq!(code, kwb::exit::OK, "{err}");
    let device = report.device.as_ref().unwrap();
    assert!(device.name.starts_with("Fake H100"), "{}", device.name);
    for v in ["good", "good2"] {
        let r = by(&report, v);
        assert_eq!(r.status, Status::Ok, "{v}: {:?}", r.message);
        assert_eq!(r.timing.as_ref().map(|t| t.median_us), Some(10.0));
    }
}

#[test]
fn a_worker_that_crashes_mid_job_marks_that_job_and_the_next_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = fake(dir.path());
    let (code, report, err) = batch(&["--worker-cmd", &cmd], "good,crash,good2", &[]);
    let report = report.unwrap_or_else(|| panic!("no report: {err}"));
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    let crash = by(&report, "crash");
    assert_eq!(crash.status, Status::Crashed);
    assert!(message(crash).contains("status 139"), "{}", message(crash));
    assert!(
        message(crash).contains("Segmentation fault"),
        "{}",
        message(crash)
    );
    assert_eq!(by(&report, "good2").status, Status::Ok);
}

#[test]
fn a_worker_that_hangs_is_killed_at_the_watchdog_and_the_next_job_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = fake(dir.path());
    let began = std::time::Instant::now();
    let (code, report, err) = batch(
        &["--worker-cmd", &cmd],
        "hang,good2",
        &["--watchdog-ms", "1000"],
    );
    let report = report.unwrap_or_else(|| panic!("no report: {err}"));
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    let hang = by(&report, "hang");
    assert_eq!(hang.status, Status::Timeout, "{:?}", hang.message);
    assert!(
        message(hang).contains("the worker was killed"),
        "{}",
        message(hang)
    );
    assert_eq!(by(&report, "good2").status, Status::Ok);
    assert!(began.elapsed().as_secs() < 60, "took {:?}", began.elapsed());
}

#[test]
fn a_dropped_connection_marks_the_job_in_flight_and_the_batch_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = fake(dir.path());
    let (code, report, err) = batch(&["--worker-cmd", &cmd], "good,drop,good2", &[]);
    let report = report.unwrap_or_else(|| panic!("no report: {err}"));
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    assert_eq!(by(&report, "good").status, Status::Ok);
    let drop = by(&report, "drop");
    assert_eq!(drop.status, Status::Crashed);
    for want in [
        "status 255",
        "closed by remote host",
        "restarting the worker failed",
    ] {
        assert!(message(drop).contains(want), "{want:?}: {}", message(drop));
    }
    // The host stays unreachable: the next job says so instead of hanging.
    let after = by(&report, "good2");
    assert_eq!(after.status, Status::Error);
    assert!(
        message(after).contains("Connection refused"),
        "{}",
        message(after)
    );
}

#[test]
fn a_worker_of_another_kwb_version_is_refused_saying_how_to_install_one() {
    let kwb = support::kwb_bin();
    let cmd = format!(
        "{}=0.0.1 '{}' worker",
        kwb::run::gpu::worker::FAKE_VERSION_VAR,
        kwb.display()
    );
    let (code, _, err) = batch(&["--worker-cmd", &cmd], "good", &[]);
    assert_eq!(code, kwb::exit::NO_GPU, "{err}");
    let ours = env!("CARGO_PKG_VERSION");
    assert!(
        err.contains(&format!("runs kwb 0.0.1, but this is kwb {ours}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("make `{cmd}` run kwb {ours}")),
        "{err}"
    );
}

#[test]
fn remote_and_worker_cmd_are_exclusive() {
    let (code, _, err) =
        support::run_kwb(&["batch", WS, "--remote", "gpu-box", "--worker-cmd", "true"]);
    // clap's own usage errors exit 2 (as every kwb flag error does today).
    assert_ne!(code, kwb::exit::OK, "{err}");
    assert!(
        err.contains("'--remote <HOST>' cannot be used with '--worker-cmd <CMD>'"),
        "{err}"
    );
}

/// Whether `ssh 127.0.0.1` logs in without a prompt (for the real ssh tests; CI sets up sshd).
fn ssh_to_localhost_works() -> Result<(), String> {
    let out = Command::new("ssh")
        .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5"])
        .args([
            "-o",
            "StrictHostKeyChecking=accept-new",
            "127.0.0.1",
            "true",
        ])
        .output()
        .map_err(|e| format!("no ssh client ({e})"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "`ssh 127.0.0.1 true` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// The worker over a real ssh to 127.0.0.1: `--remote 127.0.0.1` where the login shell finds
/// `kwb`, else this build's kwb by its path, with `env` words (e.g. the fake-version hook).
fn ssh_worker(env: &str) -> Vec<String> {
    let found = Command::new("ssh")
        .args(["-o", "BatchMode=yes", "127.0.0.1", "kwb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found && env.is_empty() {
        return vec!["--remote".into(), "127.0.0.1".into()];
    }
    let kwb = support::kwb_bin();
    let kwb = if found {
        "kwb".into()
    } else {
        kwb.display().to_string()
    };
    let cmd = format!("ssh -o BatchMode=yes 127.0.0.1 {env} '{kwb}' worker");
    vec!["--worker-cmd".into(), cmd]
}

#[test]
fn a_version_mismatch_over_real_ssh_is_refused() {
    if let Err(why) = ssh_to_localhost_works() {
        println!("skipped: {why}");
        return;
    }
    let env = format!("{}=0.0.1", kwb::run::gpu::worker::FAKE_VERSION_VAR);
    let worker = ssh_worker(&env);
    let worker: Vec<&str> = worker.iter().map(String::as_str).collect();
    let (code, _, err) = batch(&worker, "good", &[]);
    assert_eq!(code, kwb::exit::NO_GPU, "{err}");
    assert!(err.contains("runs kwb 0.0.1"), "{err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn gpu_a_workspace_runs_through_a_worker_command_and_over_ssh() {
    if kwb::run::gpu::open::gpu_or_skip(
        "gpu_a_workspace_runs_through_a_worker_command_and_over_ssh",
    )
    .is_none()
    {
        return;
    }
    let kwb = support::kwb_bin();
    let cmd = format!("'{}' worker", kwb.display());
    let run = |worker: &[&str]| {
        let out = Command::new(&kwb)
            .current_dir(support::repo())
            .args([
                "batch",
                "tests/fixtures/redzone/redzone.yaml",
                "--versions",
                "good",
            ])
            .args([
                "--format",
                "json",
                "--min-time",
                "0.05",
                "--max-time",
                "0.5",
            ])
            .args(worker)
            .output()
            .expect("run kwb batch");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let report = kwb::report::json::from_json(&String::from_utf8_lossy(&out.stdout))
            .unwrap_or_else(|e| panic!("no report ({e}): {err}"));
        (out.status.code(), report, err)
    };
    support::provision_nvrtc();
    let (code, report, err) = run(&["--worker-cmd", &cmd]);
    let r = by(&report, "good");
    println!(
        "--worker-cmd: {} {:?} µs",
        r.status,
        r.timing.as_ref().map(|t| t.median_us)
    );
    assert_eq!((code, r.status), (Some(kwb::exit::OK), Status::Ok), "{err}");
    match ssh_to_localhost_works() {
        Err(why) => println!("skipped the ssh half: {why}"),
        Ok(()) => {
            let worker = ssh_worker("");
            let worker: Vec<&str> = worker.iter().map(String::as_str).collect();
            let (code, report, err) = run(&worker);
            let r = by(&report, "good");
            let t = r.timing.as_ref().map(|t| t.median_us);
            println!("{worker:?}: {} {t:?} µs", r.status);
            assert_eq!((code, r.status), (Some(kwb::exit::OK), Status::Ok), "{err}");
        }
    }
}

#[test]
fn watch_survives_a_dropped_connection_and_the_reconnect_key_resumes() {
    if let Err(why) = support::tmux::available() {
        println!("skipped: {why}");
        return;
    }
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    let ws = support::repo().join("tests/fixtures/remote/reconnect.yaml");
    let cmd = format!(
        "{} watch {} --worker-cmd \"{}\"",
        support::kwb_bin().display(),
        ws.display(),
        fake(dir.path())
    );
    let s = support::tmux::Tmux::start(&cmd);
    let lost = s.wait_for("the lost connection", |sc| {
        sc.contains("press c to reconnect") && sc.contains("good")
    });
    assert!(lost.contains("drop  crashed"), "{lost}");
    // The job in flight says what happened to it.
    s.keys("j");
    s.wait_for("the lost job's message", |sc| {
        sc.contains("Timing · drop") && sc.contains("connection to the worker lost")
    });
    // The host comes back; the key resumes the job that was in flight and those waiting.
    std::fs::remove_file(dir.path().join("unreachable")).unwrap();
    s.keys("c");
    let screen = s.wait_for("every version done after the reconnect", |sc| {
        sc.contains("reconnected to") && sc.matches(" done").count() >= 3
    });
    assert!(screen.contains("2900 GB/s measured copy peak"), "{screen}");
    s.keys("q");
}

/// `--devices` through a worker command: every GPU the first worker reports gets a worker, the
/// jobs spread over them and each result names its GPU; the workers see one shared folder,
/// removed when the run ends; a GPU of another arch is left out with a message, and the others
/// run every job.
#[test]
fn devices_spread_the_jobs_share_a_folder_and_leave_out_another_arch() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("shared.log");
    let cmd = format!(
        "FAKE_GPUS=3 FAKE_SHARED_LOG='{}' {}",
        log.display(),
        fake(dir.path())
    );
    let (code, report, err) = batch(
        &["--worker-cmd", &cmd, "--devices", "all"],
        "good,good2",
        &[],
    );
    let report = report.unwrap_or_else(|| panic!("no report: {err}"));
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert_eq!(report.results.len(), 2, "every job once");
    for r in &report.results {
        assert_eq!(r.status, Status::Ok, "{:?}", r.message);
        assert!(matches!(r.gpu, Some(0..=2)), "{:?}", r.gpu);
    }
    let seen = std::fs::read_to_string(&log).unwrap();
    let folders: std::collections::HashSet<&str> = seen.lines().collect();
    assert_eq!(
        seen.lines().count(),
        3,
        "each of 3 workers saw the folder: {seen}"
    );
    assert_eq!(folders.len(), 1, "one folder for the run: {seen}");
    let folder = folders.into_iter().next().unwrap();
    assert!(!Path::new(folder).exists(), "{folder} outlived the run");

    let cmd = format!("FAKE_GPUS=2 FAKE_ARCH_1=sm_80 {}", fake(dir.path()));
    let (code, report, err) = batch(
        &["--worker-cmd", &cmd, "--devices", "all"],
        "good,good2",
        &[],
    );
    let report = report.unwrap_or_else(|| panic!("no report: {err}"));
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(
        err.contains("GPU 1 is") && err.contains("(sm_80), not sm_90"),
        "{err}"
    );
    assert!(report.results.iter().all(|r| r.gpu == Some(0)));
}
