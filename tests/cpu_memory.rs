//! `kwb batch --cpu` and host memory: a size that needs more than kwb allows itself (half the
//! physical memory, or `KWB_CPU_MEMORY`) is skipped before anything is allocated, saying how
//! much it needed and what the limit is, and the run goes on (no abort, no OOM).

mod support;

use kwb::report::{BatchReport, Status};
use std::process::Command;

/// `kwb batch --cpu --format json --seed 7 ARGS` with `KWB_CPU_MEMORY` set to `limit` (or
/// unset): exit code, report, stderr.
fn cpu_batch(args: &[&str], limit: Option<&str>) -> (i32, BatchReport, String) {
    support::provision_nvrtc();
    let mut cmd = Command::new(support::kwb_bin());
    cmd.current_dir(support::repo())
        .args(["batch", "--cpu", "--format", "json", "--seed", "7"])
        .args(args);
    match limit {
        Some(l) => cmd.env("KWB_CPU_MEMORY", l),
        None => cmd.env_remove("KWB_CPU_MEMORY"),
    };
    let out = cmd.output().expect("run kwb");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    let report = kwb::report::json::from_json(&stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{stdout}\n{stderr}"));
    (out.status.code().unwrap_or(-1), report, stderr)
}

#[test]
fn a_size_of_2_to_the_40_elements_is_skipped_with_what_it_needs() {
    let (code, report, err) = cpu_batch(&["tests/fixtures/broken/huge_for_cpu.yaml"], None);
    assert_eq!(code, kwb::exit::OK, "skipped sizes are no failure: {err}");
    let r = &report.results[0];
    assert_eq!(r.status, Status::Skipped, "{r:?}\n{err}");
    let msg = r.message.as_deref().unwrap_or_default();
    assert!(
        msg.contains("does not fit in host memory: needs about "),
        "{msg}"
    );
    assert!(msg.contains("(12.00 TiB of buffers"), "{msg}");
    assert!(
        msg.contains("of physical memory; KWB_CPU_MEMORY sets"),
        "{msg}"
    );
    assert!(r.check.is_none(), "nothing ran: {r:?}");
}

#[test]
fn kwb_cpu_memory_sets_the_limit_and_a_bad_value_says_what_it_takes() {
    let ws = "workspaces/elementwise-add.yaml";
    let args = [ws, "--versions", "v1,v2"];
    // 100003 f32 elements in three buffers is over 1 MiB: both versions skipped, the run goes on.
    let (code, report, err) = cpu_batch(&args, Some("1Mi"));
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert_eq!(report.results.len(), 2, "{report:?}");
    for r in &report.results {
        assert_eq!(r.status, Status::Skipped, "{r:?}");
        let msg = r.message.as_deref().unwrap_or_default();
        assert!(
            msg.ends_with("kwb allows itself 1.00 MiB (KWB_CPU_MEMORY=1Mi)"),
            "{msg}"
        );
    }
    // A generous limit: they run and pass.
    let (code, report, err) = cpu_batch(&args, Some("4Gi"));
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(
        report.results.iter().all(|r| r.status == Status::Ok),
        "{report:?}"
    );
    // A value that is no number of bytes: bad usage, said before anything runs.
    let mut cmd = Command::new(support::kwb_bin());
    cmd.current_dir(support::repo())
        .args(["batch", "--cpu", ws])
        .env("KWB_CPU_MEMORY", "lots");
    let out = cmd.output().expect("run kwb");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(kwb::exit::USAGE), "{err}");
    assert!(err.contains("error: KWB_CPU_MEMORY=lots: "), "{err}");
    assert!(out.stdout.is_empty());
}
