//! Timing statistics and the stopping rule for `kwb batch`.
//!
//! A benchmark loop needs two things from statistics: an O(1)-per-sample answer to "have we
//! measured enough?" while it runs ([`Running`] + [`StopRule`]), and a summary of the samples
//! once it stops ([`summarize`] → [`Stats`]). The summary is what every report format prints
//! and what baselines are compared on, so it lives apart from the GPU code and is unit-tested
//! without a GPU.
//!
//! All times are in microseconds; every sample is one run's duration (one launch, or the span
//! of a multi-launch version's kernels, or a graph replay per launch).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Summary of one benchmark's samples. Times are microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of (finite) samples summarized.
    pub samples: usize,
    /// Median; the mean of the two middle samples for an even count. Reports lead with this.
    pub median_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Sample standard deviation (divides by n − 1); 0 for a single sample.
    pub std_us: f64,
    /// Coefficient of variation, `std / mean`: the spread of one sample, relative.
    pub cv: f64,
    /// Relative standard error of the mean, `std / sqrt(n) / mean`: how well the mean is known.
    pub rel_std_error: f64,
    /// What the samples were timed with; absent from results of kwb before CUPTI timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer: Option<Timer>,
    /// Why the samples were timed with events when CUPTI was wanted (not found, failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_note: Option<String>,
    /// The median of the same runs timed with CUDA events (what a caller waits: launch and
    /// timestamp overhead included). Equals `median_us` when `timer` is `events`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_median_us: Option<f64>,
    /// With CUPTI: the median of the kernels' own durations summed per run. Below
    /// `median_us` by the gaps between the kernels of a multi-launch version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_median_us: Option<f64>,
    /// The buffers the version moves fit in the device's L2 together: its GB/s is then not
    /// DRAM bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_resident: Option<bool>,
}

/// The clock a run was timed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timer {
    /// CUPTI's kernel records: the GPU's own start and end timestamps of the kernels.
    Cupti,
    /// CUDA events around the launches: the kernels plus launch and timestamp overhead.
    Events,
}

impl Timer {
    /// The name used in every format (the same as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Timer::Cupti => "cupti",
            Timer::Events => "events",
        }
    }
}

impl fmt::Display for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Summarizes samples (µs). Non-finite samples (NaN, ±∞) are ignored; returns `None` when no
/// finite sample is left. Ratios (`cv`, `rel_std_error`) are 0 when the mean is not positive,
/// so a summary always serializes to plain JSON numbers.
pub fn summarize(samples_us: &[f64]) -> Option<Stats> {
    let mut v: Vec<f64> = samples_us
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median_us = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let mean_us = v.iter().sum::<f64>() / n as f64;
    // Two-pass variance: exact enough for any realistic series, and the reference that the
    // incremental `Running` is tested against.
    let std_us = if n > 1 {
        (v.iter().map(|x| (x - mean_us).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let ratio = |x: f64| if mean_us > 0.0 { x / mean_us } else { 0.0 };
    Some(Stats {
        samples: n,
        median_us,
        mean_us,
        min_us: v[0],
        max_us: v[n - 1],
        std_us,
        cv: ratio(std_us),
        rel_std_error: ratio(std_us / (n as f64).sqrt()),
        timer: None,
        timer_note: None,
        event_median_us: None,
        busy_median_us: None,
        l2_resident: None,
    })
}

/// Mean and variance kept up to date one sample at a time (Welford's algorithm), so the
/// benchmark loop can ask [`StopRule::should_stop`] after every launch at O(1) cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Running {
    n: usize,
    mean: f64,
    /// Sum of squared deviations from the current mean.
    m2: f64,
}

impl Running {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sample (µs). Non-finite samples are ignored, as in [`summarize`].
    pub fn push(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The mean so far; 0 before the first sample.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation (n − 1); 0 below two samples.
    pub fn std(&self) -> f64 {
        if self.n > 1 {
            (self.m2 / (self.n - 1) as f64).max(0.0).sqrt()
        } else {
            0.0
        }
    }

    /// `std / sqrt(n) / mean`. Infinite below two samples or for a non-positive mean: nothing
    /// is known about the spread yet, so nothing can have converged.
    pub fn rel_std_error(&self) -> f64 {
        if self.n < 2 || self.mean <= 0.0 {
            return f64::INFINITY;
        }
        self.std() / (self.n as f64).sqrt() / self.mean
    }
}

impl FromIterator<f64> for Running {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Self {
        let mut r = Running::new();
        iter.into_iter().for_each(|x| r.push(x));
        r
    }
}

/// Why a benchmark loop stopped taking samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The mean is known to within [`StopRule::target_rel_std_error`].
    Converged,
    /// [`StopRule::max_time_s`] ran out first; the result is noisier than the target.
    TimeLimit,
    /// [`StopRule::max_samples`] was reached first.
    SampleLimit,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::Converged => "converged",
            StopReason::TimeLimit => "time_limit",
            StopReason::SampleLimit => "sample_limit",
        })
    }
}

/// When to stop sampling. Checked after each sample, in this order:
///
/// 1. **Converged** once the relative standard error of the mean (`std / sqrt(n) / mean`) is
///    below `target_rel_std_error`, but only after at least `min_samples` samples *and*
///    `min_time_s` seconds of measuring, so an early lucky streak of identical timings cannot
///    end the run, and short kernels still get enough launches to see clock and cache effects.
/// 2. **SampleLimit** at `max_samples`, a safety cap for very short kernels.
/// 3. **TimeLimit** at `max_time_s`, whatever else holds, even below `min_samples`: CI time
///    stays bounded, and a kernel that never settles (noisy machine) reports what it has.
///
/// Like nvbench's default criterion it asks for a minimum time as well as a noise target; it
/// targets the error of the mean rather than the per-sample spread, which keeps shrinking as
/// samples accumulate, so a stationary series always converges in the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    pub min_samples: usize,
    pub min_time_s: f64,
    pub max_time_s: f64,
    pub target_rel_std_error: f64,
    pub max_samples: usize,
}

impl Default for StopRule {
    /// At least 10 samples and 0.2 s; at most 5 s or 100 000 samples; target error 0.5 %.
    fn default() -> Self {
        StopRule {
            min_samples: 10,
            min_time_s: 0.2,
            max_time_s: 5.0,
            target_rel_std_error: 0.005,
            max_samples: 100_000,
        }
    }
}

impl StopRule {
    /// Applies the rule to the samples so far and the seconds spent measuring them; `None`
    /// means "take another sample".
    pub fn should_stop(&self, run: &Running, elapsed_s: f64) -> Option<StopReason> {
        let eligible = run.len() >= self.min_samples && elapsed_s >= self.min_time_s;
        if eligible && run.rel_std_error() < self.target_rel_std_error {
            Some(StopReason::Converged)
        } else if run.len() >= self.max_samples {
            Some(StopReason::SampleLimit)
        } else if elapsed_s >= self.max_time_s {
            Some(StopReason::TimeLimit)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn summarize_known_data() {
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[f64::NAN]), None);
        let odd = summarize(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((odd.median_us, odd.min_us, odd.max_us), (3.0, 1.0, 5.0));
        let even = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(even.median_us, 2.5);
        // 2,4,4,4,5,5,7,9: mean 5, squared deviations sum to 32, sample variance 32/7.
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.samples, s.mean_us, s.median_us), (8, 5.0, 4.5));
        let std = (32.0f64 / 7.0).sqrt();
        assert!(close(s.std_us, std));
        assert!(close(s.cv, std / 5.0));
        assert!(close(s.rel_std_error, std / 8f64.sqrt() / 5.0));
    }

    #[test]
    fn single_sample_has_zero_spread() {
        let s = summarize(&[7.5, f64::INFINITY]).unwrap();
        assert_eq!(s.samples, 1);
        assert_eq!(
            (s.median_us, s.std_us, s.cv, s.rel_std_error),
            (7.5, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn welford_agrees_with_two_pass() {
        // A deterministic, skewed series with a large offset (hard for naive sum-of-squares).
        let xs: Vec<f64> = (0..5000)
            .map(|i| {
                1.0e6 + ((i * 7919) % 1013) as f64 * 0.37 + if i % 97 == 0 { 50.0 } else { 0.0 }
            })
            .collect();
        let run: Running = xs.iter().copied().collect();
        let s = summarize(&xs).unwrap();
        assert_eq!(run.len(), s.samples);
        assert!(close(run.mean(), s.mean_us));
        assert!((run.std() - s.std_us).abs() < 1e-9 * s.std_us);
        assert!((run.rel_std_error() - s.rel_std_error).abs() < 1e-9 * s.rel_std_error);
        assert_eq!(Running::new().rel_std_error(), f64::INFINITY);
    }

    /// Feeds `xs` one at a time, each taking `dt_s`, until the rule stops.
    fn drive(
        rule: &StopRule,
        xs: impl Iterator<Item = f64>,
        dt_s: f64,
    ) -> (StopReason, usize, f64) {
        let mut run = Running::new();
        let mut t = 0.0;
        for x in xs {
            run.push(x);
            t += dt_s;
            if let Some(r) = rule.should_stop(&run, t) {
                return (r, run.len(), t);
            }
        }
        panic!("series ended before the rule stopped");
    }

    #[test]
    fn converged_waits_for_min_samples_and_min_time() {
        let rule = StopRule::default();
        // Constant series: converged from the second sample, but it must still fill 0.2 s
        // (1/1024 s per sample keeps the clock exact in binary: 0.2 s is 204.8 samples).
        let (r, n, t) = drive(&rule, std::iter::repeat(10.0), 1.0 / 1024.0);
        assert_eq!(r, StopReason::Converged);
        assert_eq!(n, 205);
        assert!(t >= rule.min_time_s);
        // Slow samples: min_time is met at once, min_samples still holds.
        let (r, n, _) = drive(&rule, std::iter::repeat(10.0), 0.1);
        assert_eq!((r, n), (StopReason::Converged, 10));
        let run: Running = [10.0; 5].into_iter().collect();
        assert_eq!(rule.should_stop(&run, 1.0), None);
    }

    #[test]
    fn limits() {
        let rule = StopRule::default();
        // Alternating 1 / 100: CV ≈ 1 needs ~40 000 samples; at ~1 ms each, 5 s comes first.
        let noisy = (0..).map(|i| if i % 2 == 0 { 1.0 } else { 100.0 });
        let (r, n, t) = drive(&rule, noisy, 1.0 / 1024.0);
        assert_eq!((r, n), (StopReason::TimeLimit, 5 * 1024));
        assert!(t >= rule.max_time_s);
        // A kernel slower than the budget stops on time even below min_samples.
        let (r, n, _) = drive(&rule, std::iter::repeat(3e6), 3.0);
        assert_eq!((r, n), (StopReason::TimeLimit, 2));
        // Very short noisy samples hit the sample cap.
        let capped = StopRule {
            max_samples: 1000,
            ..StopRule::default()
        };
        let noisy = (0..).map(|i| if i % 2 == 0 { 1.0 } else { 100.0 });
        let (r, n, _) = drive(&capped, noisy, 1e-6);
        assert_eq!((r, n), (StopReason::SampleLimit, 1000));
        assert_eq!(
            serde_json::to_string(&StopReason::TimeLimit).unwrap(),
            "\"time_limit\""
        );
    }
}
