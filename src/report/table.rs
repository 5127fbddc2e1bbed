//! The plain-text table `kwb batch` prints by default: one row per (version, size), grouped by
//! size, like the table under a benchmark blog post. No colours, so it reads the same in a
//! terminal, a CI log or a pasted issue. Column widths follow the content.

use super::{fmt_us, grouped, reason, regression_of, BatchReport, Regression, Status, Summary};
use crate::common::stats::{StopReason, Timer};

const HEADERS: [&str; 8] = [
    "version",
    "size",
    "time (µs median)",
    "±CV",
    "GB/s",
    "% of peak",
    "check",
    "status",
];
/// Columns 2..=5 hold numbers and are right-aligned.
const NUMERIC: std::ops::RangeInclusive<usize> = 2..=5;

/// One row: all eight cells, or version and size followed by one spanning explanation.
enum Row {
    Cells([String; 8]),
    Failed(String, String, String),
}

/// The table, its header line and a summary; regressions are marked in the status column and
/// listed below.
pub fn render(report: &BatchReport, regressions: &[Regression]) -> String {
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map(f).unwrap_or_else(|| "-".into());
    let timers = super::timers(report);
    let marked_events = timers.len() > 1;
    let l2 = report.results.iter().any(|r| {
        r.pct_of_peak.is_some() && r.timing.as_ref().and_then(|t| t.l2_resident) == Some(true)
    });
    let mut unconverged = false;
    let mut groups: Vec<Vec<Row>> = Vec::new();
    let mut last_size = None;
    for r in grouped(report) {
        if last_size != Some(&r.size) {
            groups.push(Vec::new());
            last_size = Some(&r.size);
        }
        let row = if r.status == Status::Ok {
            let t = r.timing.as_ref();
            let mut status = match regression_of(r, regressions) {
                Some(g) => format!("REGRESSED +{:.1}%", g.change_pct),
                None => "ok".to_string(),
            };
            if matches!(
                r.stop,
                Some(StopReason::TimeLimit | StopReason::SampleLimit)
            ) {
                status.push('*');
                unconverged = true;
            }
            // Another tool's time for the same launch (e.g. Triton's, from `kwb capture`).
            if let (Some(b), Some(x)) = (&r.baseline, r.baseline_ratio()) {
                status.push_str(&format!(" · {x:.2}× {} ({} µs)", b.name, fmt_us(b.us)));
            }
            let check = match &r.check {
                Some(c) if c.passed => "pass",
                Some(_) => "FAIL",
                None => "-",
            };
            // Marks, padded so the numbers stay aligned: in a report timed both ways the
            // events-timed figures say so, and L2-resident sizes say so after their %.
            let mut time = opt(t.map(|t| t.median_us), &fmt_us);
            if marked_events {
                let events = t.and_then(|t| t.timer) == Some(Timer::Events);
                time.push_str(if events { " (events)" } else { "         " });
            }
            let mut pct = opt(r.pct_of_peak, &|p| format!("{p:.1}%"));
            if l2 {
                let resident = t.and_then(|t| t.l2_resident) == Some(true);
                pct.push_str(if resident && r.pct_of_peak.is_some() {
                    " L2"
                } else {
                    "   "
                });
            }
            Row::Cells([
                r.version.clone(),
                r.size.clone(),
                time,
                opt(t.map(|t| t.cv), &|cv| format!("±{:.1}%", cv * 100.0)),
                opt(r.gbps, &|g| format!("{g:.1}")),
                pct,
                check.to_string(),
                status,
            ])
        } else {
            Row::Failed(r.version.clone(), r.size.clone(), reason(r))
        };
        groups.last_mut().expect("pushed above").push(row);
    }

    // Widths: headers and full rows; failed rows only constrain version and size.
    let mut width = HEADERS.map(|h| h.chars().count());
    for row in groups.iter().flatten() {
        let (cells, n): (Vec<&String>, usize) = match row {
            Row::Cells(c) => (c.iter().collect(), 8),
            Row::Failed(v, s, _) => (vec![v, s], 2),
        };
        for (w, c) in width.iter_mut().zip(cells).take(n) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(width[i].saturating_sub(c.chars().count()));
                if NUMERIC.contains(&i) && cells.len() == 8 {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect();
        padded.join(" | ").trim_end().to_string() + "\n"
    };
    let rule: String = width
        .iter()
        .map(|w| "-".repeat(w + 2))
        .collect::<Vec<_>>()
        .join("+");
    let rule = rule[1..rule.len() - 1].to_string() + "\n";

    let mut out = header_line(report);
    out += &line(&HEADERS);
    for group in &groups {
        out += &rule;
        for row in group {
            out += &match row {
                Row::Cells(c) => line(&c.each_ref().map(String::as_str)),
                Row::Failed(v, s, why) => line(&[v.as_str(), s.as_str(), why.as_str()]),
            };
        }
    }
    out += &format!(
        "\n{} results: {}\n",
        report.results.len(),
        Summary::of(report, regressions)
    );
    if unconverged {
        out += "* stopped on the time or sample limit before reaching the target error\n";
    }
    if l2 {
        let cache = report
            .device
            .as_ref()
            .map(|d| format!("the {:.0} MiB L2", d.l2_bytes as f64 / (1u64 << 20) as f64))
            .unwrap_or_else(|| "L2".into());
        out += &format!(
            "L2: L2-resident, the buffers fit in {cache}: its % of peak is not DRAM bandwidth\n"
        );
    }
    for g in regressions {
        out += &format!("regression: {}\n", super::render_regression(g));
    }
    out += &compute_section(report);
    out += &super::sweep::render_text(report);
    out
}

/// For workspaces that count flops: each timed result's TFLOP/s and its share of the device's
/// dense fp16 tensor-core peak, below the table (whose columns are about bandwidth).
fn compute_section(report: &BatchReport) -> String {
    let rows: Vec<_> = grouped(report)
        .into_iter()
        .filter_map(|r| Some((r, r.gflops?)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let peak = report
        .device
        .as_ref()
        .and_then(|d| Some((d, d.tensor_peak_tflops()?)));
    let mut out = match peak {
        Some((d, p)) => format!(
            "\ncompute: TFLOP/s, and % of the dense fp16 tensor-core peak ({p:.0} TFLOP/s: {} SMs at {} MHz, {} FLOP per SM per clock)\n",
            d.sm_count,
            d.sm_clock_khz / 1000,
            (p * 1e12 / (f64::from(d.sm_count) * f64::from(d.sm_clock_khz) * 1e3)).round()
        ),
        None => "\ncompute: TFLOP/s\n".to_string(),
    };
    let width = rows
        .iter()
        .map(|(r, _)| r.version.len() + r.size.len() + 3)
        .max()
        .unwrap_or(0);
    for (r, g) in rows {
        let name = format!("{} @ {}", r.version, r.size);
        let pct = r
            .pct_of_tensor_peak
            .map(|p| format!("  {p:5.1}% of peak"))
            .unwrap_or_default();
        out += &format!("  {name:<width$}  {:9.1} TFLOP/s{pct}\n", g / 1e3);
    }
    out
}

/// `device: NAME (arch) · mode: hot · timer: cupti · measured copy peak: 3000.0 GB/s`, then a
/// line with the device's facts (SMs, L2, memory, clocks, theoretical bandwidth).
fn header_line(report: &BatchReport) -> String {
    let timer = super::timer_label(report)
        .map(|t| format!(" · timer: {t}"))
        .unwrap_or_default();
    match &report.device {
        Some(d) => {
            let (peak, label) = d.peak();
            let peak = peak
                .map(|p| format!(" · {label}: {p:.1} GB/s"))
                .unwrap_or_default();
            let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
            // With the stream kernel measured, both figures the peak is the best of.
            let measured = match (d.measured_copy_gbps, d.stream_kernel_gbps) {
                (c, Some(k)) => format!(
                    " · copy {} · kwb stream kernel {k:.0} GB/s",
                    c.map_or("-".into(), |c| format!("{c:.0} GB/s"))
                ),
                _ => String::new(),
            };
            format!(
                "device: {} ({}) · mode: {}{timer}{peak}\n        {} SMs · L2 {:.0} MiB · {:.0} GiB · SM {} MHz · memory {} MHz · theoretical {:.0} GB/s{measured}\n",
                d.name,
                d.arch,
                report.mode,
                d.sm_count,
                mib(d.l2_bytes),
                mib(d.memory_bytes) / 1024.0,
                d.sm_clock_khz / 1000,
                d.memory_clock_khz / 1000,
                d.theoretical_bandwidth_gbps
            )
        }
        None => format!("device: none · mode: {}{timer}\n", report.mode),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::common::stats::Stats;
    use crate::report::{CheckSummary, DeviceInfo, Mode, RunResult, SCHEMA};

    pub fn stats(median_us: f64, cv: f64, samples: usize) -> Stats {
        Stats {
            samples,
            median_us,
            mean_us: median_us,
            min_us: median_us * 0.9,
            max_us: median_us * 1.5,
            std_us: cv * median_us,
            cv,
            rel_std_error: cv / (samples as f64).sqrt(),
            timer: None,
            timer_note: None,
            event_median_us: None,
            busy_median_us: None,
            l2_resident: None,
        }
    }

    /// A small report with one result of each interesting kind.
    pub fn sample_report() -> BatchReport {
        let dev = DeviceInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            arch: "sm_90".into(),
            sm_count: 132,
            l2_bytes: 50 << 20,
            memory_bytes: 80 << 30,
            sm_clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            theoretical_bandwidth_gbps: 3352.5,
            measured_copy_gbps: Some(3000.0),
            stream_kernel_gbps: None,
            driver_version: 13000,
            visible_gpus: None,
        };
        let ok = |v: &str, size: &str, us: f64| {
            let mut r = RunResult::new(v, size, Status::Ok);
            r.bytes = Some(12_000_000);
            r.check = Some(CheckSummary {
                passed: true,
                max_abs_error: 0.0,
                rel_l2_error: 0.0,
                failure: None,
            });
            r.set_timing(stats(us, 0.01, 1000), StopReason::Converged, Some(3000.0));
            r
        };
        let mut bad = RunResult::new("v2-vec4", "1M", Status::CheckFailed);
        bad.check = Some(CheckSummary {
            passed: false,
            max_abs_error: 0.5,
            rel_l2_error: 0.01,
            failure: Some("out[17] = 2.5, expected 2 (atol 1e-5)".into()),
        });
        let mut crashed = RunResult::new("v3-tma", "1M", Status::Crashed);
        crashed.message = Some("CUDA_ERROR_ILLEGAL_ADDRESS <in launch>\nsecond line".into());
        let mut timeout = RunResult::new("v3-tma", "16M", Status::Timeout);
        timeout.message = Some("no result after 10 s".into());
        BatchReport {
            schema: SCHEMA,
            kwb_version: "0.1.0".into(),
            workspace: "workspaces/add.yaml".into(),
            created_unix_s: 1_760_000_000,
            device: Some(dev),
            mode: Mode::Hot,
            backend: None,
            sweeps: Vec::new(),
            shard: None,
            results: vec![
                ok("v0-naive", "1M", 8.0),
                bad,
                crashed,
                ok("v0-naive", "16M", 70.0),
                timeout,
                RunResult::new("v1-cp", "16M", Status::Skipped),
            ],
        }
    }

    #[test]
    fn small_report() {
        let report = sample_report();
        let expected = "\
device: NVIDIA H100 80GB HBM3 (sm_90) · mode: hot · measured copy peak: 3000.0 GB/s
        132 SMs · L2 50 MiB · 80 GiB · SM 1980 MHz · memory 2619 MHz · theoretical 3352 GB/s
version  | size | time (µs median) |   ±CV |   GB/s | % of peak | check | status
---------+------+------------------+-------+--------+-----------+-------+-------
v0-naive | 1M   |            8.000 | ±1.0% | 1500.0 |     50.0% | pass  | ok
v2-vec4  | 1M   | check_failed: out[17] = 2.5, expected 2 (atol 1e-5)
v3-tma   | 1M   | crashed: CUDA_ERROR_ILLEGAL_ADDRESS <in launch>
---------+------+------------------+-------+--------+-----------+-------+-------
v0-naive | 16M  |            70.00 | ±1.0% |  171.4 |      5.7% | pass  | ok
v3-tma   | 16M  | timeout: no result after 10 s
v1-cp    | 16M  | skipped

6 results: 2 ok, 1 check failed, 2 errors, 1 skipped, 0 regressions
";
        assert_eq!(render(&report, &[]), expected);
    }

    #[test]
    fn another_tools_time_for_the_same_launch_is_shown_as_a_ratio() {
        let mut report = sample_report();
        report.results[0].baseline = Some(crate::report::BaselineTime {
            name: "Triton 3.6.0".into(),
            us: 6.4,
            note: None,
        });
        let out = render(&report, &[]);
        assert!(
            out.contains("| pass  | ok · 1.25× Triton 3.6.0 (6.400 µs)\n"),
            "{out}"
        );
        let json = crate::report::json::to_json(&report);
        assert!(json.contains("\"baseline\": {"), "{json}");
        let back = crate::report::json::from_json(&json).unwrap();
        assert_eq!(back.results[0].baseline_ratio(), Some(1.25));
    }

    #[test]
    fn regressions_and_unconverged_rows_are_marked() {
        let mut report = sample_report();
        report.device = None;
        report.results[3].stop = Some(StopReason::TimeLimit);
        let reg = Regression {
            version: "v0-naive".into(),
            size: "16M".into(),
            baseline_us: 60.0,
            current_us: 70.0,
            change_pct: 16.666,
            noise_pct: 1.0,
        };
        let out = render(&report, std::slice::from_ref(&reg));
        assert!(out.starts_with("device: none · mode: hot\n"), "{out}");
        assert!(out.contains("| pass  | REGRESSED +16.7%*\n"), "{out}");
        assert!(
            out.contains("\n* stopped on the time or sample limit"),
            "{out}"
        );
        assert!(out.ends_with(
            "regression: v0-naive @ 16M: 60.00 µs → 70.00 µs (+16.7% slower, noise ±1.0%)\n"
        ));
    }

    #[test]
    fn timers_l2_residency_and_the_stream_kernel_peak_are_labelled() {
        let mut report = sample_report();
        report.results.truncate(1);
        let dev = report.device.as_mut().unwrap();
        dev.stream_kernel_gbps = Some(3210.0);
        let mut cupti = report.results[0].clone();
        let t = cupti.timing.as_mut().unwrap();
        (t.timer, t.event_median_us, t.l2_resident) = (Some(Timer::Cupti), Some(9.5), Some(true));
        let mut events = report.results[0].clone();
        events.size = "16M".into();
        let t = events.timing.as_mut().unwrap();
        (t.timer, t.l2_resident) = (Some(Timer::Events), Some(false));
        report.results = vec![cupti, events];
        let out = render(&report, &[]);
        assert!(
            out.starts_with(
                "device: NVIDIA H100 80GB HBM3 (sm_90) · mode: hot · timer: cupti, events where marked · kwb stream kernel peak: 3210.0 GB/s\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("theoretical 3352 GB/s · copy 3000 GB/s · kwb stream kernel 3210 GB/s\n"),
            "{out}"
        );
        assert!(
            out.contains("| 1M   |   8.000          | ±1.0% | 1500.0 |  50.0% L2 |"),
            "{out}"
        );
        assert!(
            out.contains("| 16M  |   8.000 (events) | ±1.0% | 1500.0 |  50.0%    |"),
            "{out}"
        );
        assert!(out.contains("\nL2: L2-resident, the buffers fit in the 50 MiB L2: its % of peak is not DRAM bandwidth\n"), "{out}");
        // One timer: said once in the header, no marks.
        report.results.truncate(1);
        let out = render(&report, &[]);
        assert!(out.contains(" · timer: cupti · "), "{out}");
        assert!(!out.contains("(events)"), "{out}");
    }

    #[test]
    fn workspaces_that_count_flops_get_tflops_and_the_tensor_core_share() {
        let mut report = sample_report();
        // 132 SMs at 1980 MHz, 4096 FLOP per SM per clock on sm_90.
        let peak = report
            .device
            .as_ref()
            .unwrap()
            .tensor_peak_tflops()
            .unwrap();
        assert!((peak - 1070.5).abs() < 0.1, "{peak}");
        assert!(!render(&report, &[]).contains("compute:"));
        let mut mm = RunResult::new("v4", "4096^3", Status::Ok);
        mm.flops = Some(2 * 4096u64.pow(3));
        mm.set_timing(stats(400.0, 0.01, 100), StopReason::Converged, Some(3000.0));
        mm.pct_of_tensor_peak = mm.gflops.map(|g| g / 1e3 / peak * 100.0);
        report.results.push(mm);
        let text = render(&report, &[]);
        assert!(
            text.contains("compute: TFLOP/s, and % of the dense fp16 tensor-core peak (1071 TFLOP/s: 132 SMs at 1980 MHz, 4096 FLOP per SM per clock)"),
            "{text}"
        );
        // 2·4096³ FLOP in 400 µs: 343.6 TFLOP/s, 32.1% of 1070.5.
        assert!(
            text.contains("v4 @ 4096^3      343.6 TFLOP/s   32.1% of peak"),
            "{text}"
        );
        let other = DeviceInfo {
            arch: "sm_120".into(),
            ..report.device.clone().unwrap()
        };
        assert_eq!(other.tensor_peak_tflops(), None);
    }
}
