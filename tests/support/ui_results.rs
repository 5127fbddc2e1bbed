//! Results and a device for the TUI's snapshot tests: one H100 as kwb's probe would describe
//! it, and a passed, timed result whose 50 samples spread ±0.5% around a median.

use kwb::report::{CheckSummary, DeviceInfo, RunResult, Status};
use kwb::run::stats::{summarize, StopReason};

/// An H100 SXM as the worker's probe reports it (its copy bandwidth measured).
pub fn h100() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H100 80GB HBM3".into(),
        arch: "sm_90".into(),
        sm_count: 132,
        l2_bytes: 50 << 20,
        memory_bytes: 80 << 30,
        sm_clock_khz: 1_980_000,
        memory_clock_khz: 2_619_000,
        theoretical_bandwidth_gbps: 3352.3,
        measured_copy_gbps: Some(2962.5),
        stream_kernel_gbps: None,
        driver_version: 13000,
        visible_gpus: None,
    }
}

/// A result of `version` at `size` that moved `bytes` and did `flops`, passed its check and
/// was timed at `median_us`.
pub fn passed(
    version: &str,
    size: &str,
    bytes: Option<u64>,
    flops: Option<u64>,
    median_us: f64,
) -> RunResult {
    let samples: Vec<f64> = (0..50)
        .map(|k| median_us * (1.0 + ((k * 7 % 11) as f64 / 11.0 - 0.5) * 0.01))
        .collect();
    let mut r = RunResult::new(version, size, Status::Ok);
    (r.bytes, r.flops) = (bytes, flops);
    r.check = Some(CheckSummary {
        passed: true,
        max_abs_error: 0.0,
        rel_l2_error: 0.0,
        failure: None,
    });
    r.set_timing(summarize(&samples).unwrap(), StopReason::Converged, None);
    r
}
