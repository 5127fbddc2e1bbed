//! On a GPU machine: red zones. Writes that do not fault (one element past the end, two before
//! the start, four far away into an input, one far away into another buffer's red zone) fail
//! the check with the buffer and the element they landed on; a correct kernel passes and times
//! the same with red zones on and off. Ignored without `--include-ignored` (they need a GPU).

mod support;

use kwb::report::{BatchReport, RunResult, Status};
use kwb::run::gpu::open::gpu_or_skip;
use std::process::Command;

const WS: &str = "tests/fixtures/redzone/redzone.yaml";

fn batch(extra: &[&str]) -> BatchReport {
    let out = Command::new(support::kwb_bin())
        .arg("batch")
        .arg(support::repo().join(WS))
        .args([
            "--format",
            "json",
            "--min-time",
            "0.05",
            "--max-time",
            "0.5",
        ])
        .args(extra)
        .output()
        .expect("run kwb batch");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    kwb::report::json::from_json(&stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{stdout}\n{stderr}"))
}

fn by<'a>(report: &'a BatchReport, version: &str) -> &'a RunResult {
    (report.results.iter().find(|r| r.version == version))
        .unwrap_or_else(|| panic!("no result for {version}"))
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn stray_writes_are_reported_with_buffer_and_offset() {
    if gpu_or_skip("stray_writes_are_reported_with_buffer_and_offset").is_none() {
        return;
    }
    support::provision_nvrtc();
    let report = batch(&[]);
    for r in &report.results {
        println!("redzone {}: {} {:?}", r.version, r.status, r.message);
    }
    assert_eq!(by(&report, "good").status, Status::Ok);
    let expect = [
        (
            "past_end",
            "wrote 4 bytes past the end of `c` (first at c[1048576+3])",
        ),
        (
            "before_start",
            "wrote 4 bytes before the start of `c` (first at c[-2])",
        ),
        (
            "far_input",
            "wrote 16 bytes into input `a`, which the kernel must only read (first at a[1000])",
        ),
        (
            "far_guard",
            "wrote 4 bytes before the start of `b` (first at b[-3])",
        ),
    ];
    for (version, want) in expect {
        let r = by(&report, version);
        assert_eq!(r.status, Status::CheckFailed, "{version}: {:?}", r.message);
        // far_input races with the threads that read a[1000..1004], so a mismatch in `c` may
        // follow the stray write's description; the description always comes first.
        let message = r.message.as_deref().unwrap_or("");
        assert!(message.starts_with(want), "{version}: {message}");
        assert!(r.check.as_ref().is_some_and(|c| !c.passed), "{version}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn a_correct_kernel_is_unaffected_by_red_zones() {
    if gpu_or_skip("a_correct_kernel_is_unaffected_by_red_zones").is_none() {
        return;
    }
    support::provision_nvrtc();
    let median = |guard: &str| {
        let report = batch(&["--versions", "good", "--guard-bytes", guard]);
        let r = by(&report, "good");
        assert_eq!(r.status, Status::Ok, "guard {guard}: {:?}", r.message);
        r.timing.as_ref().expect("timed").median_us
    };
    // Alternate, so drift in clocks or temperature does not favour one side.
    let (mut on, mut off) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        off = off.min(median("0"));
        on = on.min(median("65536"));
    }
    let diff = (on - off).abs() / off;
    println!(
        "good @ 1Mi: {on:.2} µs with red zones, {off:.2} µs without ({:.1}%)",
        diff * 100.0
    );
    assert!(
        diff < 0.05 || (on - off).abs() < 0.3,
        "red zones changed the time: {on:.2} µs vs {off:.2} µs"
    );
}
