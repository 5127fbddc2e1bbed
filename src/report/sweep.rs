//! Sweeps in a report: each result of a swept version's configuration carries a [`SweepMark`]
//! (its sweep, its values, whether the version's own fields chose it at that size); from those
//! alone [`summarize`] groups the configurations by sweep and size, marks the fastest, and
//! works out the spread between best and worst, so a report read back from JSON summarizes
//! the same way. [`render_text`] is the section the table and markdown formats print.

use super::{fmt_us, reason, BatchReport, RunResult, Status};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// What a result of one configuration of a swept version says about its place in the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepMark {
    /// The swept version's name, e.g. `v9`.
    pub parent: String,
    /// Axis name → value, in axis order.
    pub values: IndexMap<String, String>,
    /// The configuration the version's own (unswept) fields choose at this size: its rule.
    #[serde(default, skip_serializing_if = "is_false")]
    pub default: bool,
    /// The fastest configuration of its sweep at this size.
    #[serde(default, skip_serializing_if = "is_false")]
    pub best: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One sweep at one size: how many configurations ran, the best and worst, and how far the
/// version's own rule is from the best.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    pub parent: String,
    pub size: String,
    /// The swept names, in axis order.
    pub axes: Vec<String>,
    pub configs: usize,
    /// Configurations that passed and were timed.
    pub timed: usize,
    /// Configurations skipped as invalid (too many threads, too much shared memory, an
    /// assertion or compile error only some configurations hit).
    pub skipped: usize,
    /// Configurations that failed (a check, a crash, a timeout).
    pub failed: usize,
    pub best: Option<String>,
    pub best_us: Option<f64>,
    pub worst: Option<String>,
    pub worst_us: Option<f64>,
    /// Worst time over best time (1.0 when they are the same).
    pub spread: Option<f64>,
    /// The configuration the version's own fields choose at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// How much slower the default is than the best, in percent (0 when it is the best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_slower_pct: Option<f64>,
}

/// The median time of a result that passed and was timed.
pub fn time_of(r: &RunResult) -> Option<f64> {
    (r.status == Status::Ok)
        .then(|| r.timing.as_ref().map(|t| t.median_us))
        .flatten()
        .filter(|t| t.is_finite() && *t > 0.0)
}

/// The results of each (sweep, size), in order of first appearance: indexes into `results`.
pub fn groups(results: &[RunResult]) -> Vec<((String, String), Vec<usize>)> {
    let mut out: Vec<((String, String), Vec<usize>)> = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let Some(m) = &r.sweep else { continue };
        let key = (m.parent.clone(), r.size.clone());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => out.push((key, vec![i])),
        }
    }
    out
}

/// Marks the best configuration of each (sweep, size) in `results` and returns the summaries.
pub fn summarize(results: &mut [RunResult]) -> Vec<SweepSummary> {
    let mut out = Vec::new();
    for ((parent, size), members) in groups(results) {
        let timed: Vec<(usize, f64)> = members
            .iter()
            .filter_map(|&i| time_of(&results[i]).map(|t| (i, t)))
            .collect();
        let best = timed.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
        let worst = timed.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
        for &i in &members {
            if let Some(m) = &mut results[i].sweep {
                m.best = best.is_some_and(|(b, _)| b == i);
            }
        }
        let default = members
            .iter()
            .copied()
            .find(|&i| results[i].sweep.as_ref().is_some_and(|m| m.default));
        let name = |i: usize| results[i].version.clone();
        let axes = results[members[0]]
            .sweep
            .as_ref()
            .map(|m| m.values.keys().cloned().collect())
            .unwrap_or_default();
        let count =
            |f: &dyn Fn(Status) -> bool| members.iter().filter(|&&i| f(results[i].status)).count();
        out.push(SweepSummary {
            parent,
            size,
            axes,
            configs: members.len(),
            timed: timed.len(),
            skipped: count(&|s| s == Status::Skipped),
            failed: count(&|s| s != Status::Skipped && s != Status::Ok),
            best: best.map(|(i, _)| name(i)),
            best_us: best.map(|(_, t)| t),
            worst: worst.map(|(i, _)| name(i)),
            worst_us: worst.map(|(_, t)| t),
            spread: best.zip(worst).map(|((_, b), (_, w))| w / b),
            default: default.map(name),
            default_slower_pct: default
                .and_then(|i| time_of(&results[i]))
                .zip(best)
                .map(|(d, (_, b))| (d / b - 1.0) * 100.0),
        });
    }
    out
}

/// `block=256` or `num_warps=8,BLOCK=2048`: a configuration by its values.
pub fn values_label(m: &SweepMark) -> String {
    m.values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The sweep section of the plain-text table: per sweep and size, a line that sums it up, then
/// one row per configuration with its values, time, GB/s, distance from the best and marks.
pub fn render_text(report: &BatchReport) -> String {
    let mut out = String::new();
    for ((parent, size), members) in groups(&report.results) {
        let summary = report
            .sweeps
            .iter()
            .find(|s| s.parent == parent && s.size == size);
        let rows: Vec<&RunResult> = members.iter().map(|&i| &report.results[i]).collect();
        let _ = writeln!(out, "\n{}", headline(&parent, &size, &rows, summary));
        let axes: Vec<String> = summary.map(|s| s.axes.clone()).unwrap_or_else(|| {
            rows[0]
                .sweep
                .as_ref()
                .map(|m| m.values.keys().cloned().collect())
                .unwrap_or_default()
        });
        let best = summary.and_then(|s| s.best_us);
        let mut header: Vec<String> = axes.clone();
        header.extend(["time (µs median)", "GB/s", "vs best", ""].map(String::from));
        let mut table: Vec<Vec<String>> = Vec::new();
        for r in &rows {
            let Some(m) = &r.sweep else { continue };
            let mut cells: Vec<String> = axes
                .iter()
                .map(|a| m.values.get(a).cloned().unwrap_or_default())
                .collect();
            let marks: Vec<&str> = [(m.best, "best"), (m.default, "rule")]
                .into_iter()
                .filter_map(|(on, w)| on.then_some(w))
                .collect();
            match time_of(r) {
                Some(t) => {
                    cells.push(fmt_us(t));
                    cells.push(r.gbps.map_or("-".into(), |g| format!("{g:.1}")));
                    cells.push(match best {
                        Some(b) if !m.best => format!("+{:.1}%", (t / b - 1.0) * 100.0),
                        _ => "-".into(),
                    });
                    cells.push(marks.join(", "));
                }
                None if r.status == Status::Ok => {
                    let check = match &r.check {
                        Some(c) if c.passed => "pass",
                        _ => "ok",
                    };
                    cells.extend(["-".into(), "-".into(), "-".into()]);
                    cells.push(
                        [check]
                            .into_iter()
                            .chain(marks)
                            .collect::<Vec<_>>()
                            .join(", "),
                    );
                }
                None => {
                    let mut why = reason(r);
                    if m.default {
                        why.push_str(" (rule)");
                    }
                    cells.push(why);
                }
            }
            table.push(cells);
        }
        out += &align(&header, &table, axes.len());
    }
    out
}

/// The one-line summary of a sweep at a size.
fn headline(parent: &str, size: &str, rows: &[&RunResult], s: Option<&SweepSummary>) -> String {
    let mut line = format!("sweep {parent} @ {size}: {} configurations", rows.len());
    let Some(s) = s else { return line };
    let label = |name: &Option<String>| {
        name.as_ref()
            .and_then(|n| rows.iter().find(|r| &r.version == n))
            .and_then(|r| r.sweep.as_ref())
            .map(values_label)
            .unwrap_or_default()
    };
    if s.skipped > 0 {
        let _ = write!(line, ", {} skipped", s.skipped);
    }
    if s.failed > 0 {
        let _ = write!(line, ", {} failed", s.failed);
    }
    if let (Some(b), Some(w), Some(spread)) = (s.best_us, s.worst_us, s.spread) {
        let _ = write!(
            line,
            "; best {} {} µs, worst {} {} µs, spread {spread:.2}×",
            label(&s.best),
            fmt_us(b),
            label(&s.worst),
            fmt_us(w)
        );
    }
    match (&s.default, s.default_slower_pct) {
        (Some(_), Some(p)) if p > 0.0 => {
            let _ = write!(line, "; the rule's {} is {p:.1}% slower", label(&s.default));
        }
        (Some(_), Some(_)) => {
            let _ = write!(line, "; the rule's {} is the best", label(&s.default));
        }
        (Some(_), None) => {
            let _ = write!(line, "; the rule chooses {}", label(&s.default));
        }
        (None, _) => {}
    }
    line
}

/// Columns padded to their widths; time, GB/s and "vs best" (after the `axes` columns) are
/// right-aligned. A row shorter than the header spans the rest with its last cell.
fn align(header: &[String], rows: &[Vec<String>], axes: usize) -> String {
    let n = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows.iter().filter(|r| r.len() == n) {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let numeric = axes..axes + 3;
    let line = |cells: &[String]| {
        let full = cells.len() == n;
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(width[i].saturating_sub(c.chars().count()));
                if !full && i + 1 == cells.len() {
                    c.clone()
                } else if numeric.contains(&i) {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect();
        padded.join(" | ").trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    let rule: Vec<String> = width.iter().map(|w| "-".repeat(w + 2)).collect();
    let rule = rule.join("+");
    out += &rule[1..rule.len().saturating_sub(1)];
    out.push('\n');
    for r in rows {
        out += &line(r);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::common::stats::StopReason;
    use crate::report::json::{from_json, to_json};
    use crate::report::table::tests::{sample_report, stats};

    /// A result of configuration `values` of sweep `v9`, timed at `us` (skipped when `None`).
    fn config(values: &[(&str, &str)], size: &str, us: Option<f64>, default: bool) -> RunResult {
        let values: IndexMap<String, String> = values
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut r = RunResult::new(
            format!(
                "v9[{}]",
                values
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            size,
            Status::Ok,
        );
        r.bytes = Some(12_000_000);
        match us {
            Some(us) => r.set_timing(stats(us, 0.01, 100), StopReason::Converged, None),
            None => {
                r.status = Status::Skipped;
                r.message = Some("this configuration cannot launch: 2048 threads".into());
            }
        }
        r.sweep = Some(SweepMark {
            parent: "v9".into(),
            values,
            default,
            best: false,
        });
        r
    }

    /// A report with a one-axis sweep at two sizes next to an ordinary version.
    pub fn swept_report() -> BatchReport {
        let mut report = sample_report();
        report.results.truncate(1);
        for (size, times, rule) in [
            ("1M", [Some(10.0), Some(8.0), Some(12.0), None], 0),
            ("16M", [Some(80.0), Some(70.0), Some(64.0), None], 2),
        ] {
            for (i, (block, us)) in ["256", "512", "1024", "2048"].iter().zip(times).enumerate() {
                report
                    .results
                    .push(config(&[("block", block)], size, us, i == rule));
            }
        }
        report.sweeps = summarize(&mut report.results);
        report
    }

    #[test]
    fn the_best_is_marked_and_the_spread_and_the_rule_are_summed_up() {
        let report = swept_report();
        let best: Vec<&str> = report
            .results
            .iter()
            .filter(|r| r.sweep.as_ref().is_some_and(|m| m.best))
            .map(|r| r.version.as_str())
            .collect();
        assert_eq!(best, ["v9[block=512]", "v9[block=1024]"]);
        let s = &report.sweeps[1];
        assert_eq!((s.parent.as_str(), s.size.as_str()), ("v9", "16M"));
        assert_eq!(s.axes, ["block"]);
        assert_eq!((s.configs, s.timed, s.skipped, s.failed), (4, 3, 1, 0));
        assert_eq!(s.best.as_deref(), Some("v9[block=1024]"));
        assert_eq!(s.worst.as_deref(), Some("v9[block=256]"));
        assert_eq!(s.spread, Some(80.0 / 64.0));
        assert_eq!(s.default.as_deref(), Some("v9[block=1024]"));
        assert_eq!(s.default_slower_pct, Some(0.0));
        assert_eq!(report.sweeps[0].default_slower_pct, Some(25.0));
    }

    #[test]
    fn sweep_fields_round_trip_through_json_and_are_absent_without_a_sweep() {
        let report = swept_report();
        let text = to_json(&report);
        assert!(text.contains("\"sweeps\": ["), "{text}");
        assert!(
            text.contains(
                "\"sweep\": {\n        \"parent\": \"v9\",\n        \"values\": {\n          \"block\": \"256\"\n        },\n        \"default\": true\n      }"
            ),
            "{text}"
        );
        assert!(text.contains("\"spread\": 1.5,"), "{text}");
        assert_eq!(from_json(&text).unwrap(), report);
        let plain = to_json(&sample_report());
        assert!(!plain.contains("sweep"), "{plain}");
    }

    #[test]
    fn the_table_has_a_section_per_sweep_and_size() {
        let text = crate::report::table::render(&swept_report(), &[]);
        let section = &text[text.find("\nsweep v9 @ 1M").expect("a sweep section")..];
        let expected = "
sweep v9 @ 1M: 4 configurations, 1 skipped; best block=512 8.000 µs, worst block=1024 12.00 µs, spread 1.50×; the rule's block=256 is 25.0% slower
block | time (µs median) |   GB/s | vs best |
------+------------------+--------+---------+-----
256   |            10.00 | 1200.0 |  +25.0% | rule
512   |            8.000 | 1500.0 |       - | best
1024  |            12.00 | 1000.0 |  +50.0% |
2048  | skipped: this configuration cannot launch: 2048 threads

sweep v9 @ 16M: 4 configurations, 1 skipped; best block=1024 64.00 µs, worst block=256 80.00 µs, spread 1.25×; the rule's block=1024 is the best
block | time (µs median) |  GB/s | vs best |
------+------------------+-------+---------+-----------
256   |            80.00 | 150.0 |  +25.0% |
512   |            70.00 | 171.4 |   +9.4% |
1024  |            64.00 | 187.5 |       - | best, rule
2048  | skipped: this configuration cannot launch: 2048 threads
";
        assert_eq!(section, expected);
        let md = crate::report::markdown::render(&swept_report(), &[]);
        assert!(
            md.contains("#### Sweeps\n\n```text\nsweep v9 @ 1M: "),
            "{md}"
        );
    }
}
