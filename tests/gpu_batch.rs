//! On a GPU machine: `kwb batch` end to end. Every shipped version passes its check, and
//! deliberately broken kernels (an out-of-bounds write, an infinite loop, a wrong result, an
//! unwritten output) are caught and reported while the versions after them still run.
//! Ignored without `--include-ignored` (they need a GPU); run with it and no GPU, they skip,
//! saying why, or fail under `KWB_REQUIRE_GPU=1`.

mod support;

use kwb::report::{BatchReport, Status};
use kwb::run::gpu::open::gpu_or_skip;
use std::process::Command;

fn batch(workspace: &str, extra: &[&str]) -> (i32, BatchReport, String) {
    let ws = support::repo().join(workspace);
    let out = Command::new(support::kwb_bin())
        .arg("batch")
        .arg(&ws)
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
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = kwb::report::json::from_json(&stdout)
        .unwrap_or_else(|e| panic!("{workspace}: not a JSON report ({e}):\n{stdout}\n{stderr}"));
    (out.status.code().unwrap_or(-1), report, stderr)
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn every_shipped_version_passes_its_check() {
    if gpu_or_skip("every_shipped_version_passes_its_check").is_none() {
        return;
    }
    support::provision_nvrtc();
    for ws in [
        "workspaces/elementwise-add.yaml",
        "workspaces/gelu.yaml",
        "workspaces/softmax.yaml",
    ] {
        let (code, report, stderr) = batch(ws, &[]);
        for r in &report.results {
            println!(
                "{ws} {} @ {}: {} {:?} {:.1} GB/s",
                r.version,
                r.size,
                r.status,
                r.check.as_ref().map(|c| c.rel_l2_error),
                r.gbps.unwrap_or(0.0)
            );
            assert_eq!(
                r.status,
                Status::Ok,
                "{ws} {} @ {}: {:?}",
                r.version,
                r.size,
                r.message
            );
            assert!(r.check.as_ref().is_some_and(|c| c.passed));
            assert!(r
                .timing
                .as_ref()
                .is_some_and(|t| t.samples >= 10 && t.median_us > 0.0));
        }
        assert_eq!(code, kwb::exit::OK, "{ws}: {stderr}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn broken_kernels_are_caught_and_the_rest_still_run() {
    if gpu_or_skip("broken_kernels_are_caught_and_the_rest_still_run").is_none() {
        return;
    }
    support::provision_nvrtc();
    let (code, report, stderr) = batch(
        "tests/fixtures/broken/broken.yaml",
        &["--watchdog-ms", "3000"],
    );
    let by = |v: &str| {
        report
            .results
            .iter()
            .find(|r| r.version == v)
            .unwrap_or_else(|| panic!("no result for {v}"))
    };
    for r in &report.results {
        println!("broken {}: {} {:?}", r.version, r.status, r.message);
    }
    assert_eq!(by("good").status, Status::Ok);
    assert_eq!(by("oob").status, Status::Crashed);
    assert!(
        by("oob")
            .message
            .as_deref()
            .unwrap_or("")
            .contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{:?}",
        by("oob").message
    );
    assert_eq!(by("hang").status, Status::Timeout);
    assert_eq!(by("wrong").status, Status::CheckFailed);
    assert!(by("wrong")
        .message
        .as_deref()
        .unwrap_or("")
        .contains("differ"));
    assert_eq!(by("unwritten").status, Status::CheckFailed);
    assert!(
        by("unwritten")
            .message
            .as_deref()
            .unwrap_or("")
            .contains("never written"),
        "{:?}",
        by("unwritten").message
    );
    assert_eq!(by("good2").status, Status::Ok, "{:?}", by("good2").message);
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{stderr}");
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn a_size_that_does_not_fit_is_skipped_with_the_figures() {
    if gpu_or_skip("a_size_that_does_not_fit_is_skipped_with_the_figures").is_none() {
        return;
    }
    support::provision_nvrtc();
    let (code, report, stderr) = batch("tests/fixtures/broken/huge.yaml", &[]);
    let r = &report.results[0];
    println!("huge: {} {:?}", r.status, r.message);
    assert_eq!(r.status, Status::Skipped, "{stderr}");
    let msg = r.message.as_deref().unwrap_or("");
    assert!(
        msg.contains("does not fit in device memory: needs 768.00 GiB"),
        "{msg}"
    );
    assert!(msg.contains("GiB free of"), "{msg}");
    assert_eq!(
        code,
        kwb::exit::OK,
        "a skipped size is not a failure: {stderr}"
    );
}
