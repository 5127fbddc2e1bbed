//! On a GPU machine: the figures kwb's timing rests on. Kernel times come from CUPTI (and the
//! JSON says so, with the events' figure beside them), `KWB_TIMER=events` falls back to events
//! and says so, no shipped add version beats the bandwidth peak at 256Mi (nor at 16Mi unless
//! that size is marked L2-resident), 1Mi is marked L2-resident on an H100/H200, and a
//! multi-launch version's span covers its kernels. Every test prints its figures, so one run
//! on the device tells everything. Ignored without `--include-ignored` (they need a GPU); run
//! with it and no GPU, they skip, saying why (`KWB_REQUIRE_GPU=1` makes that a failure).

mod support;

use kwb::report::{BatchReport, RunResult, Status};
use kwb::run::gpu::open::gpu_or_skip;
use kwb::run::stats::Timer;
use std::process::Command;

fn batch(workspace: &str, extra: &[&str], env: &[(&str, &str)]) -> (BatchReport, String) {
    let ws = support::repo().join(workspace);
    let mut cmd = Command::new(support::kwb_bin());
    cmd.arg("batch")
        .arg(&ws)
        .args(["--format", "json", "--min-time", "0.1", "--max-time", "1"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kwb batch");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = kwb::report::json::from_json(&stdout)
        .unwrap_or_else(|e| panic!("{workspace}: not a JSON report ({e}):\n{stdout}\n{stderr}"));
    (report, stderr)
}

/// Prints the device, its peaks and every result's figures.
fn show(what: &str, report: &BatchReport, stderr: &str) {
    if let Some(d) = &report.device {
        let (peak, label) = d.peak();
        println!(
            "[{what}] {} ({}) · L2 {} MiB · copy {:?} GB/s · stream kernel {:?} GB/s · peak {:?} ({label})",
            d.name,
            d.arch,
            d.l2_bytes >> 20,
            d.measured_copy_gbps.map(|g| g.round()),
            d.stream_kernel_gbps.map(|g| g.round()),
            peak.map(|g| g.round()),
        );
    }
    for r in &report.results {
        let t = r.timing.as_ref();
        println!(
            "[{what}] {:>4} @ {:>5}: {:<6} timer {:<6} median {:>9.3} µs · events {:>9.3} µs · busy {:>9} · {:>7.1} GB/s · {:>6.1}% of peak · L2-resident {:?}",
            r.version,
            r.size,
            r.status.as_str(),
            t.and_then(|t| t.timer).map_or("-", Timer::as_str),
            t.map_or(f64::NAN, |t| t.median_us),
            t.and_then(|t| t.event_median_us).unwrap_or(f64::NAN),
            t.and_then(|t| t.busy_median_us)
                .map_or("-".into(), |b| format!("{b:.3} µs")),
            r.gbps.unwrap_or(f64::NAN),
            r.pct_of_peak.unwrap_or(f64::NAN),
            t.and_then(|t| t.l2_resident),
        );
        if let Some(note) = t.and_then(|t| t.timer_note.as_deref()) {
            println!("[{what}]      why events: {note}");
        }
    }
    for line in stderr.lines().filter(|l| l.contains("kwb worker")) {
        println!("[{what}] stderr: {line}");
    }
}

fn timed<'a>(report: &'a BatchReport, version: &str, size: &str) -> &'a RunResult {
    let r = report
        .results
        .iter()
        .find(|r| r.version == version && r.size == size)
        .unwrap_or_else(|| panic!("no result for {version} @ {size}"));
    assert_eq!(r.status, Status::Ok, "{version} @ {size}: {:?}", r.message);
    assert!(r.timing.is_some(), "{version} @ {size} was not timed");
    r
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn kernels_are_timed_with_cupti_and_events_are_kept_beside() {
    if gpu_or_skip("kernels_are_timed_with_cupti_and_events_are_kept_beside").is_none() {
        return;
    }
    support::provision_nvrtc();
    let (report, stderr) = batch("workspaces/elementwise-add.yaml", &["--sizes", "1Mi"], &[]);
    show("cupti", &report, &stderr);
    for r in &report.results {
        let t = timed(&report, &r.version, &r.size).timing.as_ref().unwrap();
        assert_eq!(
            t.timer,
            Some(Timer::Cupti),
            "{} @ {} was not timed with CUPTI; the worker said:\n{stderr}",
            r.version,
            r.size
        );
        let events = t.event_median_us.expect("the events' median is kept");
        // Events add the launch and timestamp overhead; the GPU's own time is never longer
        // (a 2% margin for sampling noise between the two medians).
        assert!(
            t.median_us <= events * 1.02,
            "{}: cupti {:.3} µs > events {:.3} µs",
            r.version,
            t.median_us,
            events
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn kwb_timer_events_falls_back_and_says_so() {
    if gpu_or_skip("kwb_timer_events_falls_back_and_says_so").is_none() {
        return;
    }
    support::provision_nvrtc();
    let (report, stderr) = batch(
        "workspaces/elementwise-add.yaml",
        &["--sizes", "1Mi", "--versions", "v1,v7"],
        &[("KWB_TIMER", "events")],
    );
    show("events", &report, &stderr);
    for r in &report.results {
        let t = timed(&report, &r.version, &r.size).timing.as_ref().unwrap();
        assert_eq!(t.timer, Some(Timer::Events), "{}", r.version);
        assert_eq!(t.event_median_us, Some(t.median_us));
    }
    let table = kwb::report::render(&report, kwb::report::Format::Table, &[]);
    assert!(table.contains(" · timer: events"), "{table}");
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn no_add_version_beats_the_peak_at_256mi_nor_unmarked_at_16mi() {
    if gpu_or_skip("no_add_version_beats_the_peak_at_256mi_nor_unmarked_at_16mi").is_none() {
        return;
    }
    support::provision_nvrtc();
    let (report, stderr) = batch(
        "workspaces/elementwise-add.yaml",
        &["--sizes", "16Mi,256Mi"],
        &[],
    );
    show("peak", &report, &stderr);
    let d = report.device.as_ref().expect("a device");
    assert!(
        d.stream_kernel_gbps.is_some(),
        "the stream-kernel peak was not measured; the worker said:\n{stderr}"
    );
    for r in &report.results {
        let r = timed(&report, &r.version, &r.size);
        let resident = r.timing.as_ref().unwrap().l2_resident;
        let pct = r.pct_of_peak.expect("% of peak");
        // Above the peak only where L2 serves part of the bytes, and so marked.
        assert!(
            pct <= 100.0 || resident == Some(true),
            "{} reaches {pct:.1}% of the {:?} at {}, unmarked",
            r.version,
            d.peak(),
            r.size
        );
        if r.size == "256Mi" {
            assert_eq!(resident, Some(false), "{} @ 256Mi", r.version);
            assert!(pct <= 100.0, "{} reaches {pct:.1}% at 256Mi", r.version);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn one_mi_is_l2_resident_on_an_h100_or_h200() {
    let Some(gpu) = gpu_or_skip("one_mi_is_l2_resident_on_an_h100_or_h200") else {
        return;
    };
    support::provision_nvrtc();
    let facts = gpu.facts().expect("device facts");
    drop(gpu);
    let (report, stderr) = batch(
        "workspaces/elementwise-add.yaml",
        &["--sizes", "1Mi,256Mi", "--versions", "v1,v7"],
        &[],
    );
    show("l2", &report, &stderr);
    let hopper = facts.name.contains("H100") || facts.name.contains("H200");
    if !hopper {
        println!(
            "{} is not an H100/H200 (L2 {} MiB): checking the rule only",
            facts.name,
            facts.l2_bytes >> 20
        );
    }
    for v in ["v1", "v7"] {
        let small = timed(&report, v, "1Mi").timing.as_ref().unwrap();
        let large = timed(&report, v, "256Mi").timing.as_ref().unwrap();
        if hopper {
            assert_eq!(small.l2_resident, Some(true), "{v} @ 1Mi");
        }
        assert_eq!(large.l2_resident, Some(false), "{v} @ 256Mi");
    }
    let table = kwb::report::render(&report, kwb::report::Format::Table, &[]);
    println!("{table}");
    if hopper {
        assert!(table.contains("% L2 |"), "{table}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn a_multi_launch_span_covers_its_kernels() {
    if gpu_or_skip("a_multi_launch_span_covers_its_kernels").is_none() {
        return;
    }
    support::provision_nvrtc();
    let (report, stderr) = batch(
        "workspaces/gelu.yaml",
        &["--sizes", "1Mi,16Mi", "--versions", "v1,v2"],
        &[],
    );
    show("gelu", &report, &stderr);
    for size in ["1Mi", "16Mi"] {
        let t = timed(&report, "v1", size).timing.as_ref().unwrap();
        assert_eq!(t.timer, Some(Timer::Cupti), "gelu v1 @ {size}: {stderr}");
        let busy = t.busy_median_us.expect("CUPTI gives the kernels' own time");
        // The span is first start to last end: at least the nine kernels' own durations
        // (medians of the two, so a hair of rounding is allowed).
        assert!(
            t.median_us >= busy * 0.999,
            "gelu v1 @ {size}: span {:.3} µs < kernels {busy:.3} µs",
            t.median_us
        );
        println!(
            "gelu v1 @ {size}: span {:.3} µs, kernels {busy:.3} µs, gaps {:.3} µs",
            t.median_us,
            t.median_us - busy
        );
    }
}
