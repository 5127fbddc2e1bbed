//! The results of `kwb batch`, and the formats they are rendered in.
//!
//! One data model, [`BatchReport`], is filled by the batch runner and rendered by every format:
//! a plain-text table for terminals ([`table`]), JSON for machines and baselines ([`json`]),
//! JUnit XML for CI test tabs ([`junit`]) and GitHub markdown for pull-request comments
//! ([`markdown`]). Baselines are earlier reports read back from JSON and compared with
//! [`baseline::compare`], so the model is `Deserialize` too and its JSON shape is a public,
//! versioned format (see `docs/batch-json.md`).

pub mod baseline;
pub mod device;
pub mod finding;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sweep;
pub mod table;

pub use baseline::{compare, render_regression, Regression};
pub use device::DeviceInfo;
pub use finding::{Backend, Finding};
pub use sweep::{SweepMark, SweepSummary};

use crate::common::stats::{Stats, StopReason, Timer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the JSON shape. Within one number fields are only added (as optional fields), so
/// older readers ignore new fields and newer readers accept older files. Renames, removals and
/// changes of meaning bump it, and [`json::from_json`] refuses any other number.
pub const SCHEMA: u32 = 1;

/// Everything one `kwb batch` run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    pub schema: u32,
    pub kwb_version: String,
    /// The workspace file as given on the command line.
    pub workspace: String,
    pub created_unix_s: u64,
    /// `None` when no GPU was used (for example every version failed to compile).
    pub device: Option<DeviceInfo>,
    pub mode: Mode,
    /// One per (version, size), in run order.
    pub results: Vec<RunResult>,
    /// `emulator` for `kwb batch --cpu` (no timing); absent for GPU runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// Per swept version and size: best, worst and spread (absent when nothing is swept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<SweepSummary>,
    /// The part of the jobs this report holds (`kwb batch --shard`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardMark>,
}

/// Which shard a report is, and the whole run's plan, so that `kwb merge` can check that the
/// shards cover it exactly once and put the results back in plan order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardMark {
    /// 0-based, below `count`.
    pub index: u32,
    pub count: u32,
    /// The whole run's sizes and versions, in plan order (sizes outer).
    pub sizes: Vec<String>,
    pub versions: Vec<String>,
}

/// How launches were timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// L2 flushed before each launch.
    Cold,
    /// Back-to-back launches with warm caches.
    Hot,
    /// Launches captured in a CUDA graph and replayed.
    Graph,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Cold => "cold",
            Mode::Hot => "hot",
            Mode::Graph => "graph",
        })
    }
}

/// One version at one problem size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub version: String,
    pub size: String,
    pub status: Status,
    /// Why it did not succeed: the compile log, the crash, the check's failure.
    pub message: Option<String>,
    pub check: Option<CheckSummary>,
    pub timing: Option<Stats>,
    pub stop: Option<StopReason>,
    /// Bytes moved per launch, from the workspace's `bytes` expression.
    pub bytes: Option<u64>,
    /// Floating-point operations per launch, from the workspace's `flops` expression.
    pub flops: Option<u64>,
    pub gbps: Option<f64>,
    pub pct_of_peak: Option<f64>,
    pub gflops: Option<f64>,
    /// Arithmetic intensity, flop per byte.
    pub intensity: Option<f64>,
    /// The engine that ran it, on the CPU (`emulator`, `interpreter`); absent for the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// What the emulator or interpreter found (each also fails the result).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Remarks that are not failures, e.g. approximate instructions computed exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A configuration of a swept version: its sweep, values, and whether it is the best or
    /// the version's own choice at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepMark>,
    /// GFLOP/s as a percentage of the device's dense fp16 tensor-core peak
    /// ([`DeviceInfo::tensor_peak_tflops`]), where the workspace counts flops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_tensor_peak: Option<f64>,
    /// The GPU (its ordinal on the worker's machine) that ran this result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    /// Another tool's time for the same launch (the version's `baseline`), to compare with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineTime>,
}

/// Another tool's kernel time for a result's launch, from the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineTime {
    /// Who: `Triton 3.6.0`.
    pub name: String,
    pub us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl RunResult {
    /// kwb's median over the baseline's time: below 1, kwb is faster.
    pub fn baseline_ratio(&self) -> Option<f64> {
        let b = self.baseline.as_ref().filter(|b| b.us > 0.0)?;
        Some(self.timing.as_ref()?.median_us / b.us)
    }
}

impl RunResult {
    /// A result with only its identity and status; everything else empty.
    pub fn new(version: impl Into<String>, size: impl Into<String>, status: Status) -> Self {
        RunResult {
            version: version.into(),
            size: size.into(),
            status,
            message: None,
            check: None,
            timing: None,
            stop: None,
            bytes: None,
            flops: None,
            gbps: None,
            pct_of_peak: None,
            gflops: None,
            intensity: None,
            backend: None,
            findings: Vec::new(),
            notes: Vec::new(),
            sweep: None,
            pct_of_tensor_peak: None,
            gpu: None,
            baseline: None,
        }
    }

    /// Sets the timing and fills the rates from it (see [`derive`]).
    pub fn set_timing(&mut self, timing: Stats, stop: StopReason, peak_gbps: Option<f64>) {
        let d = derive(self.bytes, self.flops, timing.median_us, peak_gbps);
        (self.gbps, self.pct_of_peak, self.gflops, self.intensity) =
            (d.gbps, d.pct_of_peak, d.gflops, d.intensity);
        self.timing = Some(timing);
        self.stop = Some(stop);
    }
}

/// The outcome of one result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    CheckFailed,
    CompileError,
    Crashed,
    Timeout,
    Skipped,
    Error,
}

impl Status {
    /// The name used in every format (the same as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::CheckFailed => "check_failed",
            Status::CompileError => "compile_error",
            Status::Crashed => "crashed",
            Status::Timeout => "timeout",
            Status::Skipped => "skipped",
            Status::Error => "error",
        }
    }

    /// Did not get to a verdict: it failed to build, run or finish (a JUnit `<error>`).
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Status::CompileError | Status::Crashed | Status::Timeout | Status::Error
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The output check against the reference version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub passed: bool,
    /// Non-finite errors are written as `null` and read back as NaN.
    #[serde(deserialize_with = "json::nan_if_null")]
    pub max_abs_error: f64,
    /// ‖out − ref‖₂ / ‖ref‖₂.
    #[serde(deserialize_with = "json::nan_if_null")]
    pub rel_l2_error: f64,
    /// The first offending element and tolerance, when it failed.
    pub failure: Option<String>,
}

/// Rates derived from bytes, flops and the median time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Derived {
    pub gbps: Option<f64>,
    pub pct_of_peak: Option<f64>,
    pub gflops: Option<f64>,
    pub intensity: Option<f64>,
}

/// GB/s and GFLOP/s from per-launch bytes and flops over the median time, % of the given peak,
/// and flop/byte. A rate is `None` when its input is, or when the time is not positive.
pub fn derive(
    bytes: Option<u64>,
    flops: Option<u64>,
    median_us: f64,
    peak_gbps: Option<f64>,
) -> Derived {
    let timed = median_us.is_finite() && median_us > 0.0;
    // x per µs × 10⁶ / 10⁹ = x / (µs × 10³)
    let rate = |x: Option<u64>| x.filter(|_| timed).map(|x| x as f64 / (median_us * 1e3));
    let gbps = rate(bytes);
    Derived {
        gbps,
        pct_of_peak: gbps
            .zip(peak_gbps.filter(|p| *p > 0.0))
            .map(|(g, p)| g / p * 100.0),
        gflops: rate(flops),
        intensity: flops
            .zip(bytes.filter(|b| *b > 0))
            .map(|(f, b)| f as f64 / b as f64),
    }
}

/// The output formats of `kwb batch --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Junit,
    Markdown,
}

/// Renders a report. `regressions` (from [`compare`]) are shown by the table, JUnit and
/// markdown formats; JSON is the report alone, as baselines are read back from it.
pub fn render(report: &BatchReport, format: Format, regressions: &[Regression]) -> String {
    match format {
        Format::Table => table::render(report, regressions),
        Format::Json => json::to_json(report),
        Format::Junit => junit::render(report, regressions),
        Format::Markdown => markdown::render(report, regressions),
    }
}

/// Errors reading a report back.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("not a kwb batch report: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("kwb batch report has no numeric `schema` field")]
    NoSchema,
    #[error(
        "kwb batch report has schema {found}, but this kwb reads schema {expected}; \
         re-create the baseline with this kwb or read it with the kwb that wrote it"
    )]
    Schema { found: u64, expected: u32 },
}

/// Counts over a report, for summary lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    pub ok: usize,
    pub check_failed: usize,
    /// Results whose status [`Status::is_error`].
    pub errors: usize,
    pub skipped: usize,
    pub regressions: usize,
}

impl Summary {
    pub fn of(report: &BatchReport, regressions: &[Regression]) -> Summary {
        let count =
            |f: &dyn Fn(Status) -> bool| report.results.iter().filter(|r| f(r.status)).count();
        Summary {
            ok: count(&|s| s == Status::Ok),
            check_failed: count(&|s| s == Status::CheckFailed),
            errors: count(&Status::is_error),
            skipped: count(&|s| s == Status::Skipped),
            regressions: regressions.len(),
        }
    }
}

impl fmt::Display for Summary {
    /// e.g. `3 ok, 1 check failed, 2 errors, 0 skipped, 1 regression`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "{} ok, {} check failed, {}, {} skipped, {}",
            self.ok,
            self.check_failed,
            plural(self.errors, "error"),
            self.skipped,
            plural(self.regressions, "regression")
        )
    }
}

/// Results grouped by size (sizes in order of first appearance, run order within a size).
pub(crate) fn grouped(report: &BatchReport) -> Vec<&RunResult> {
    let first = |size: &str| report.results.iter().position(|r| r.size == size);
    let mut rows: Vec<&RunResult> = report.results.iter().collect();
    rows.sort_by_key(|r| first(&r.size)); // stable: run order within a size
    rows
}

/// The timers the report's timed results used, in the order first seen (empty for reports of
/// kwb before CUPTI timing, which did not say).
pub(crate) fn timers(report: &BatchReport) -> Vec<Timer> {
    let mut seen = Vec::new();
    for t in report
        .results
        .iter()
        .filter_map(|r| r.timing.as_ref()?.timer)
    {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    seen
}

/// What the header says about the timer: `cupti`, `events`, or `cupti, events where marked`.
pub(crate) fn timer_label(report: &BatchReport) -> Option<String> {
    match timers(report).as_slice() {
        [] => None,
        [one] => Some(one.to_string()),
        _ => Some("cupti, events where marked".into()),
    }
}

/// The regression for a result, if any.
pub(crate) fn regression_of<'a>(r: &RunResult, regs: &'a [Regression]) -> Option<&'a Regression> {
    regs.iter()
        .find(|g| g.version == r.version && g.size == r.size)
}

/// A time in µs with about four significant digits.
pub(crate) fn fmt_us(us: f64) -> String {
    let decimals = match us.abs() {
        x if x < 10.0 => 3,
        x if x < 100.0 => 2,
        x if x < 1000.0 => 1,
        _ => 0,
    };
    format!("{us:.decimals$}")
}

/// The first line of a message, for one-line cells and attributes.
pub(crate) fn first_line(s: &str) -> &str {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// A failed result's one-line explanation: its message, else the check's failure.
pub(crate) fn reason(r: &RunResult) -> String {
    let detail = r
        .message
        .as_deref()
        .or(r.check.as_ref().and_then(|c| c.failure.as_deref()))
        .map(first_line)
        .unwrap_or("");
    if detail.is_empty() {
        r.status.to_string()
    } else {
        format!("{}: {detail}", r.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use table::tests::sample_report;

    #[test]
    fn derive_rates() {
        // 12 MB in 8 µs = 1500 GB/s = 50 % of 3000; 2 Mflop → 250 GFLOP/s, 1/6 flop per byte.
        let d = derive(Some(12_000_000), Some(2_000_000), 8.0, Some(3000.0));
        assert_eq!(d.gbps, Some(1500.0));
        assert_eq!(d.pct_of_peak, Some(50.0));
        assert_eq!(d.gflops, Some(250.0));
        assert!((d.intensity.unwrap() - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(derive(Some(1), None, 0.0, Some(1.0)), Derived::default());
        assert_eq!(derive(Some(1000), None, 1.0, None).pct_of_peak, None);
    }

    #[test]
    fn the_peak_is_the_best_measured_figure_and_says_which() {
        let mut d = sample_report().device.unwrap();
        assert_eq!(d.peak(), (Some(3000.0), "measured copy peak"));
        d.stream_kernel_gbps = Some(3210.0);
        assert_eq!(d.peak(), (Some(3210.0), "kwb stream kernel peak"));
        d.stream_kernel_gbps = Some(2900.0);
        assert_eq!(d.peak(), (Some(3000.0), "measured copy peak"));
        d.measured_copy_gbps = None;
        assert_eq!(d.peak(), (Some(2900.0), "kwb stream kernel peak"));
        d.stream_kernel_gbps = Some(f64::NAN);
        assert_eq!(d.peak(), (Some(3352.5), "theoretical peak"));
    }

    #[test]
    fn names_and_summary() {
        assert_eq!(
            serde_json::to_string(&Status::CheckFailed).unwrap(),
            "\"check_failed\""
        );
        assert_eq!(serde_json::to_string(&Mode::Graph).unwrap(), "\"graph\"");
        let s = Summary::of(&sample_report(), &[]);
        assert_eq!(
            s.to_string(),
            "2 ok, 1 check failed, 2 errors, 1 skipped, 0 regressions"
        );
        let order: Vec<_> = grouped(&sample_report())
            .iter()
            .map(|r| r.size.clone())
            .collect();
        assert_eq!(order, ["1M", "1M", "1M", "16M", "16M", "16M"]);
    }
}
