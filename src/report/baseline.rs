//! Comparing a batch report with a baseline (an earlier report read back from JSON), so CI can
//! fail a pull request that makes a kernel slower.
//!
//! A slowdown is a regression only when it is larger than both the allowed threshold and the
//! measured noise. The noise of a comparison, in percent, is
//!
//! ```text
//! noise_pct = 100 × max( cv_current, cv_baseline, 3 × sqrt(rse_current² + rse_baseline²) )
//! ```
//!
//! * The larger **coefficient of variation** (per-sample spread) is the main term, as in
//!   nvbench's comparison script. The standard error alone would shrink towards zero with many
//!   samples and flag shifts that are real but environmental: clocks, temperature and other
//!   tenants move a kernel's time between runs by about its per-sample spread, and samples
//!   within one run are correlated, so the run-to-run error is much larger than `std/sqrt(n)`.
//!   A kernel whose launches vary by 20 % cannot gate a 10 % threshold reliably.
//! * The **3-sigma standard-error** term covers runs with few samples (e.g. stopped by the time
//!   limit), where the CV itself is poorly estimated and the medians are uncertain.
//!
//! Times compared are medians. Only results that are `ok` with timing in both reports and match
//! by (version, size) are compared; the rest are ignored.

use super::{BatchReport, Status};
use crate::common::stats::Stats;
use serde::{Deserialize, Serialize};

/// A result that got slower than the baseline beyond threshold and noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    pub version: String,
    pub size: String,
    /// Baseline median, µs.
    pub baseline_us: f64,
    /// Current median, µs.
    pub current_us: f64,
    /// `(current − baseline) / baseline × 100`; positive is slower.
    pub change_pct: f64,
    /// The comparison's noise, see the module documentation.
    pub noise_pct: f64,
}

/// The noise of comparing two timings, in percent (see the module documentation).
pub fn noise_pct(current: &Stats, baseline: &Stats) -> f64 {
    let se = 3.0 * current.rel_std_error.hypot(baseline.rel_std_error);
    100.0 * current.cv.max(baseline.cv).max(se)
}

/// The regressions of `current` against `baseline`: matched by (version, size), slower by more
/// than `max_regression_pct` and more than the noise. In `current`'s order.
pub fn compare(
    current: &BatchReport,
    baseline: &BatchReport,
    max_regression_pct: f64,
) -> Vec<Regression> {
    let timed = |r: &super::RunResult| match (&r.status, &r.timing) {
        (Status::Ok, Some(t)) if t.median_us > 0.0 => Some(t.clone()),
        _ => None,
    };
    let mut out = Vec::new();
    for cur in &current.results {
        let Some(c) = timed(cur) else { continue };
        let Some(b) = baseline
            .results
            .iter()
            .find(|b| b.version == cur.version && b.size == cur.size)
            .and_then(timed)
        else {
            continue;
        };
        let change_pct = (c.median_us - b.median_us) / b.median_us * 100.0;
        let noise = noise_pct(&c, &b);
        if change_pct > max_regression_pct && change_pct > noise {
            out.push(Regression {
                version: cur.version.clone(),
                size: cur.size.clone(),
                baseline_us: b.median_us,
                current_us: c.median_us,
                change_pct,
                noise_pct: noise,
            });
        }
    }
    out
}

/// Reasons the two reports may not be comparable (different GPU or timing mode); empty when
/// they are. Worth printing as warnings next to the comparison.
pub fn incompatibilities(current: &BatchReport, baseline: &BatchReport) -> Vec<String> {
    let mut w = Vec::new();
    if current.mode != baseline.mode {
        w.push(format!(
            "baseline was timed in {} mode, this run in {} mode",
            baseline.mode, current.mode
        ));
    }
    let name = |r: &BatchReport| {
        r.device
            .as_ref()
            .map(|d| format!("{} ({})", d.name, d.arch))
    };
    if let (Some(a), Some(b)) = (name(current), name(baseline)) {
        if a != b {
            w.push(format!("baseline was measured on {b}, this run on {a}"));
        }
    }
    w
}

/// One line saying what got slower and by how much, e.g.
/// `v1 @ 16M: 70.00 µs → 77.00 µs (+10.0% slower, noise ±1.0%)`.
pub fn render_regression(r: &Regression) -> String {
    format!(
        "{} @ {}: {} µs → {} µs (+{:.1}% slower, noise ±{:.1}%)",
        r.version,
        r.size,
        super::fmt_us(r.baseline_us),
        super::fmt_us(r.current_us),
        r.change_pct,
        r.noise_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::{sample_report, stats};
    use crate::report::{Mode, RunResult};

    fn report(rows: &[(&str, f64, f64, usize)]) -> BatchReport {
        let mut r = sample_report();
        r.results = rows
            .iter()
            .map(|&(v, us, cv, n)| {
                let mut x = RunResult::new(v, "1M", Status::Ok);
                x.timing = Some(stats(us, cv, n));
                x
            })
            .collect();
        r
    }

    #[test]
    fn ten_percent_slowdown() {
        let base = report(&[("quiet", 100.0, 0.01, 1000), ("noisy", 100.0, 0.20, 1000)]);
        let cur = report(&[("quiet", 110.0, 0.01, 1000), ("noisy", 110.0, 0.20, 1000)]);
        let regs = compare(&cur, &base, 5.0);
        assert_eq!(regs.len(), 1, "{regs:?}");
        let g = &regs[0];
        assert_eq!((g.version.as_str(), g.size.as_str()), ("quiet", "1M"));
        assert!((g.change_pct - 10.0).abs() < 1e-9);
        assert!((g.noise_pct - 1.0).abs() < 1e-9);
        assert_eq!(
            render_regression(g),
            "quiet @ 1M: 100.0 µs → 110.0 µs (+10.0% slower, noise ±1.0%)"
        );
        // Below the threshold it is not a regression, whatever the noise.
        assert!(compare(&cur, &base, 12.0).is_empty());
    }

    #[test]
    fn speedups_unmatched_and_failed_rows_are_ignored() {
        let base = report(&[("a", 100.0, 0.01, 1000), ("b", 100.0, 0.01, 1000)]);
        let mut cur = report(&[
            ("a", 80.0, 0.01, 1000),
            ("b", 150.0, 0.01, 1000),
            ("new", 1e3, 0.0, 9),
        ]);
        assert!(compare(&cur, &base, 5.0).iter().all(|g| g.version == "b"));
        cur.results[1].status = Status::CheckFailed;
        assert!(compare(&cur, &base, 5.0).is_empty());
    }

    #[test]
    fn few_samples_widen_the_noise() {
        // CV 5 % from 4 samples each: 3 × sqrt(2) × 2.5 % ≈ 10.6 % noise hides a 10 % change.
        let base = report(&[("a", 100.0, 0.05, 4)]);
        let cur = report(&[("a", 110.0, 0.05, 4)]);
        assert!(compare(&cur, &base, 5.0).is_empty());
        let n = noise_pct(&stats(1.0, 0.05, 4), &stats(1.0, 0.05, 4));
        assert!((n - 300.0 * 0.025 * 2f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn warns_on_different_mode_or_device() {
        let base = sample_report();
        let mut cur = base.clone();
        assert!(incompatibilities(&cur, &base).is_empty());
        cur.mode = Mode::Cold;
        cur.device.as_mut().unwrap().name = "NVIDIA H200".into();
        assert_eq!(incompatibilities(&cur, &base).len(), 2);
    }
}
