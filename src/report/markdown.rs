//! GitHub-flavoured markdown for pull-request comments: a heading with the device and mode, a
//! summary line, the same rows as the terminal table, and regressions called out with their
//! percentage, so a reviewer sees at a glance whether a change made a kernel slower.

use super::{fmt_us, grouped, reason, regression_of, render_regression, BatchReport, Regression};
use super::{Status, Summary};
use std::fmt::Write;

/// Makes text safe inside a table cell: backslash-escapes the punctuation that GitHub would read
/// as markup (pipes would split the cell, `<…>` would vanish as HTML) and joins lines.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The report as a markdown comment.
pub fn render(report: &BatchReport, regressions: &[Regression]) -> String {
    let mut out = format!("### kwb batch: {}\n\n", cell(&report.workspace));
    match &report.device {
        Some(d) => {
            let _ = write!(
                out,
                "**{}** ({}) · {} mode",
                cell(&d.name),
                d.arch,
                report.mode
            );
            if let (Some(p), label) = d.peak() {
                let _ = write!(out, " · {label} {p:.1} GB/s");
            }
        }
        None => {
            let _ = write!(out, "no device · {} mode", report.mode);
        }
    }
    let summary = Summary::of(report, regressions);
    let mark = if summary.ok == report.results.len() && regressions.is_empty() {
        "✅"
    } else {
        "❌"
    };
    let _ = writeln!(out, "\n\n{mark} **{summary}**\n");

    out.push_str(
        "| version | size | time (µs median) | ±CV | GB/s | % of peak | check | status |\n",
    );
    out.push_str("|:--|:--|--:|--:|--:|--:|:--|:--|\n");
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map(f).unwrap_or_else(|| "–".into());
    for r in grouped(report) {
        let t = r.timing.as_ref().filter(|_| r.status == Status::Ok);
        let ok = r.status == Status::Ok;
        let status = match (ok, regression_of(r, regressions)) {
            (true, Some(g)) => format!("⚠️ **+{:.1}% slower**", g.change_pct),
            (true, None) => "ok".into(),
            (false, _) if r.status == Status::Skipped => "skipped".into(),
            (false, _) => format!("❌ {}", cell(&reason(r))),
        };
        let check = match &r.check {
            Some(c) if c.passed => "pass",
            Some(_) => "**fail**",
            None => "–",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {check} | {status} |",
            cell(&r.version),
            cell(&r.size),
            opt(t.map(|t| t.median_us), &fmt_us),
            opt(t.map(|t| t.cv), &|cv| format!("±{:.1}%", cv * 100.0)),
            opt(r.gbps.filter(|_| ok), &|g| format!("{g:.1}")),
            opt(r.pct_of_peak.filter(|_| ok), &|p| format!("{p:.1}%")),
        );
    }
    let sweeps = super::sweep::render_text(report);
    if !sweeps.is_empty() {
        let _ = write!(out, "\n#### Sweeps\n\n```text{sweeps}```\n");
    }
    if !regressions.is_empty() {
        out.push_str("\n#### Regressions\n\n");
        for g in regressions {
            let _ = writeln!(out, "- ⚠️ {}", cell(&render_regression(g)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::sample_report;

    #[test]
    fn rows_summary_and_regressions() {
        let mut report = sample_report();
        report.results[0].version = "v0|naive_x".into();
        let reg = Regression {
            version: "v0-naive".into(),
            size: "16M".into(),
            baseline_us: 60.0,
            current_us: 70.0,
            change_pct: 16.666,
            noise_pct: 1.0,
        };
        let md = render(&report, &[reg]);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 7, "{md}");
        assert_eq!(
            rows[1],
            "| v0\\|naive\\_x | 1M | 8.000 | ±1.0% | 1500.0 | 50.0% | pass | ok |"
        );
        assert_eq!(
            rows[3],
            "| v3-tma | 1M | – | – | – | – | – | ❌ crashed: CUDA\\_ERROR\\_ILLEGAL\\_ADDRESS \\<in launch\\> |"
        );
        assert_eq!(
            rows[4],
            "| v0-naive | 16M | 70.00 | ±1.0% | 171.4 | 5.7% | pass | ⚠️ **+16.7% slower** |"
        );
        assert!(rows[2].contains("| **fail** | ❌ check\\_failed: out\\[17\\] = 2.5"));
        assert!(rows[6].ends_with("| skipped |"));
        assert!(md.contains("❌ **2 ok, 1 check failed, 2 errors, 1 skipped, 1 regression**"));
        assert!(md.contains(
            "**NVIDIA H100 80GB HBM3** (sm_90) · hot mode · measured copy peak 3000.0 GB/s"
        ));
        assert!(md.contains(
            "#### Regressions\n\n- ⚠️ v0-naive @ 16M: 60.00 µs → 70.00 µs (+16.7% slower"
        ));
        // Every table line has the same number of unescaped pipes.
        let pipes = |l: &str| l.replace("\\|", "").matches('|').count();
        assert!(md
            .lines()
            .filter(|l| l.starts_with('|'))
            .all(|l| pipes(l) == 9));
    }
}
