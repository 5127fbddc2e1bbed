//! JUnit XML for CI test tabs (Jenkins, GitLab, GitHub test-report actions), so a failing check
//! or a regression shows up as a failed test next to the project's other tests.
//!
//! Shape: `<testsuites>` holding one `<testsuite name=WORKSPACE>`, and one
//! `<testcase classname="STEM.VERSION" name="SIZE" time="MEDIAN_SECONDS">` per result, where
//! STEM is the workspace's file name without directories or extension (dots in a path would
//! otherwise be read as package levels by Jenkins). Inside a testcase:
//! a failed check is `<failure type="check">`, a regression `<failure type="regression">`,
//! a compile error, crash, timeout or other error `<error type="compile_error|crashed|…">`, a
//! skipped result `<skipped/>`, and a successful one a `<system-out>` with its numbers.
//! Messages go in the `message` attribute (first line) and in full in the element's body.
//!
//! XML escaping is written here (no XML crate): the five markup characters become entities,
//! line breaks and tabs inside attributes become character references so parsers keep them,
//! and characters XML 1.0 forbids (most C0 controls) become U+FFFD.

use super::{fmt_us, regression_of, BatchReport, Regression, RunResult, Status};
use std::fmt::Write;

/// Escapes text for an XML attribute value (`attr`) or element content.
fn escape(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\n' if attr => out.push_str("&#10;"),
            '\t' if attr => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// What goes inside one testcase: (element, type, message, body).
fn outcome(
    r: &RunResult,
    reg: Option<&Regression>,
) -> Option<(&'static str, String, String, String)> {
    let message = r.message.clone().unwrap_or_default();
    match r.status {
        Status::Ok => reg.map(|g| {
            let line = super::render_regression(g);
            ("failure", "regression".into(), line.clone(), line)
        }),
        Status::CheckFailed => {
            let mut body = message.clone();
            if let Some(c) = &r.check {
                let detail = c
                    .failure
                    .as_deref()
                    .unwrap_or("output differs from the reference");
                body = format!(
                    "{detail}\nmax_abs_error = {:e}, rel_l2_error = {:e}\n{body}",
                    c.max_abs_error, c.rel_l2_error
                );
            }
            let body = body.trim_end().to_string();
            Some((
                "failure",
                "check".into(),
                super::first_line(&body).into(),
                body,
            ))
        }
        Status::Skipped => Some(("skipped", String::new(), message, String::new())),
        s => Some((
            "error",
            s.as_str().into(),
            super::first_line(&message).into(),
            message,
        )),
    }
}

/// The numbers of a successful result, for `<system-out>`.
fn numbers(r: &RunResult) -> Option<String> {
    let t = r.timing.as_ref()?;
    let mut s = format!(
        "median {} µs ±{:.1}% over {} samples",
        fmt_us(t.median_us),
        t.cv * 100.0,
        t.samples
    );
    if let Some(stop) = r.stop {
        let _ = write!(s, " ({stop})");
    }
    if let Some(g) = r.gbps {
        let _ = write!(s, ", {g:.1} GB/s");
    }
    if let Some(p) = r.pct_of_peak {
        let _ = write!(s, " ({p:.1}% of peak)");
    }
    if let Some(g) = r.gflops {
        let _ = write!(s, ", {g:.1} GFLOP/s");
    }
    Some(s)
}

/// The report as JUnit XML; `regressions` become failures of their testcases.
pub fn render(report: &BatchReport, regressions: &[Regression]) -> String {
    let stem = report
        .workspace
        .rsplit(['/', '\\'])
        .next()
        .map(|f| f.rsplit_once('.').map_or(f, |(s, _)| s))
        .filter(|s| !s.is_empty())
        .unwrap_or(&report.workspace);
    let (mut failures, mut errors, mut skipped, mut total_s) = (0, 0, 0, 0.0);
    let mut cases = String::new();
    for r in &report.results {
        let time_s = r.timing.as_ref().map_or(0.0, |t| t.median_us * 1e-6);
        total_s += time_s;
        let _ = write!(
            cases,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{time_s:.9}\"",
            escape(&format!("{stem}.{}", r.version), true),
            escape(&r.size, true)
        );
        let inner = match outcome(r, regression_of(r, regressions)) {
            Some(("skipped", _, msg, _)) => {
                skipped += 1;
                if msg.is_empty() {
                    "<skipped/>".to_string()
                } else {
                    format!(
                        "<skipped message=\"{}\"/>",
                        escape(super::first_line(&msg), true)
                    )
                }
            }
            Some((elem, kind, msg, body)) => {
                if elem == "failure" {
                    failures += 1;
                } else {
                    errors += 1;
                }
                format!(
                    "<{elem} message=\"{}\" type=\"{}\">{}</{elem}>",
                    escape(&msg, true),
                    escape(&kind, true),
                    escape(&body, false)
                )
            }
            None => numbers(r)
                .map(|n| format!("<system-out>{}</system-out>", escape(&n, false)))
                .unwrap_or_default(),
        };
        if inner.is_empty() {
            cases.push_str("/>\n");
        } else {
            let _ = writeln!(cases, ">\n      {inner}\n    </testcase>");
        }
    }
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{total_s:.9}\"",
        report.results.len()
    );
    let mut props = vec![
        ("kwb_version", report.kwb_version.clone()),
        ("mode", report.mode.to_string()),
    ];
    if let Some(d) = &report.device {
        props.push(("device", format!("{} ({})", d.name, d.arch)));
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"kwb batch\" {counts}>");
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" {counts}>",
        escape(&report.workspace, true)
    );
    out.push_str("    <properties>\n");
    for (k, v) in props {
        let _ = writeln!(
            out,
            "      <property name=\"{k}\" value=\"{}\"/>",
            escape(&v, true)
        );
    }
    out.push_str("    </properties>\n");
    out.push_str(&cases);
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::sample_report;

    /// A parsed element: name, attributes, child elements and its own text.
    #[derive(Debug)]
    struct Node {
        name: String,
        attrs: Vec<(String, String)>,
        children: Vec<Node>,
        text: String,
    }

    impl Node {
        fn attr(&self, k: &str) -> &str {
            let found = self.attrs.iter().find(|(n, _)| n == k);
            &found
                .unwrap_or_else(|| panic!("{} has no {k}", self.name))
                .1
        }
        fn all(&self, name: &str) -> Vec<&Node> {
            self.children.iter().filter(|c| c.name == name).collect()
        }
    }

    fn unescape(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('&') {
            out.push_str(&rest[..i]);
            let end = rest[i..].find(';').expect("unterminated entity") + i;
            let ent = &rest[i + 1..end];
            let c = match ent {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                _ if ent.starts_with('#') => char::from_u32(ent[1..].parse().unwrap()).unwrap(),
                _ => panic!("unknown entity &{ent};"),
            };
            out.push(c);
            rest = &rest[end + 1..];
        }
        out + rest
    }

    /// A minimal, strict XML reader: enough to prove the output is well-formed.
    fn parse(xml: &str) -> Node {
        fn element(s: &mut &str) -> Node {
            *s = s.trim_start();
            assert!(s.starts_with('<'), "expected an element at {s:.30?}");
            let tag_end = s.find('>').unwrap();
            let tag = &s[1..tag_end];
            let empty = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, mut attrs_src) = tag.split_once(' ').unwrap_or((tag, ""));
            let mut node = Node {
                name: name.into(),
                attrs: vec![],
                children: vec![],
                text: String::new(),
            };
            while let Some((k, v)) = attrs_src.trim_start().split_once("=\"") {
                let close = v.find('"').expect("unterminated attribute");
                assert!(!v[..close].contains(['<', '\n']), "bad attribute value");
                node.attrs.push((k.trim().into(), unescape(&v[..close])));
                attrs_src = &v[close + 1..];
            }
            *s = &s[tag_end + 1..];
            if empty {
                return node;
            }
            loop {
                let lt = s.find('<').unwrap();
                node.text.push_str(&unescape(&s[..lt]));
                *s = &s[lt..];
                if let Some(rest) = s.strip_prefix("</") {
                    let close = rest.find('>').unwrap();
                    assert_eq!(&rest[..close], node.name, "mismatched closing tag");
                    *s = &rest[close + 1..];
                    return node;
                }
                node.children.push(element(s));
            }
        }
        let mut s = xml
            .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
            .unwrap();
        let root = element(&mut s);
        assert!(s.trim().is_empty(), "trailing content");
        root
    }

    #[test]
    fn counts_and_attributes_parse_back() {
        let report = sample_report();
        let reg = Regression {
            version: "v0-naive".into(),
            size: "16M".into(),
            baseline_us: 60.0,
            current_us: 70.0,
            change_pct: 16.7,
            noise_pct: 1.0,
        };
        let root = parse(&render(&report, &[reg]));
        assert_eq!(root.name, "testsuites");
        let suites = root.all("testsuite");
        assert_eq!(suites.len(), 1);
        let suite = suites[0];
        assert_eq!(suite.attr("name"), "workspaces/add.yaml");
        let counts: Vec<&str> = ["tests", "failures", "errors", "skipped"]
            .map(|k| suite.attr(k))
            .to_vec();
        assert_eq!(counts, ["6", "2", "2", "1"]);
        let cases = suite.all("testcase");
        assert_eq!(cases.len(), 6);
        assert_eq!(cases[0].attr("classname"), "add.v0-naive");
        assert_eq!(cases[0].attr("name"), "1M");
        assert_eq!(cases[0].attr("time"), "0.000008000");
        assert!(cases[0].all("system-out")[0]
            .text
            .contains("1500.0 GB/s (50.0% of peak)"));
        let kinds: Vec<String> = cases
            .iter()
            .map(|c| match c.children.first() {
                Some(e) if e.name == "system-out" => "ok".into(),
                Some(e) if e.name == "skipped" => "skipped".into(),
                Some(e) => format!("{}:{}", e.name, e.attr("type")),
                None => "none".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "ok",
                "failure:check",
                "error:crashed",
                "failure:regression",
                "error:timeout",
                "skipped"
            ]
        );
        let check = &cases[1].children[0];
        assert_eq!(
            check.attr("message"),
            "out[17] = 2.5, expected 2 (atol 1e-5)"
        );
        assert!(
            check.text.contains("max_abs_error = 5e-1"),
            "{}",
            check.text
        );
        let crash = &cases[2].children[0];
        assert_eq!(
            crash.attr("message"),
            "CUDA_ERROR_ILLEGAL_ADDRESS <in launch>"
        );
        assert!(crash.text.ends_with("<in launch>\nsecond line"));
        assert!(cases[3].children[0]
            .attr("message")
            .contains("+16.7% slower"));
    }

    #[test]
    fn hostile_text_is_escaped() {
        let mut report = sample_report();
        report.workspace = "a&b/<ws>\".yaml".into();
        report.results.truncate(3);
        report.results[2].version = "v'\"<&>\u{1}".into();
        report.results[2].message = Some("line1\tx\r\nline2 ]]> & <tag>".into());
        let root = parse(&render(&report, &[]));
        let suite = &root.children[0];
        assert_eq!(suite.attr("name"), "a&b/<ws>\".yaml");
        let case = &suite.all("testcase")[2];
        assert_eq!(case.attr("classname"), "<ws>\".v'\"<&>\u{FFFD}");
        assert_eq!(case.children[0].text, "line1\tx\r\nline2 ]]> & <tag>");
        assert_eq!(escape("a\nb\tc", true), "a&#10;b&#9;c");
    }
}
