//! Turns NVRTC's program log into [`Diagnostic`]s so compile problems show up in the same
//! panel, with the same `file:line:col` links, as every other kwb problem.
//!
//! The front end (EDG) writes `file(LINE): error: msg` (also `warning #177-D:`, `remark
//! #20200-D:`, `note #3322-D:`, `catastrophic error:`), then optional indented continuation
//! lines (`argument types are: ...`), the offending source line echoed with a two-space indent,
//! a caret line whose `^` marks the column, and optional trailers such as `detected during
//! instantiation of ...`. The caret line is padded byte for byte (tabs copied), so the column
//! is recovered by mapping the caret's byte offset back into the echoed line; columns count
//! characters, a tab being one. ptxas and NVRTC's own `nvrtc: error:` lines become file-less
//! diagnostics. Summary lines and the `-diag-suppress` hint are dropped. Never panics.

use crate::diag::{Diagnostic, Severity};

/// Parses an NVRTC program log. `ptxas info` lines are left to `ptxas_log`, but for ptxas'
/// numbered advice (`(C7514) Potential Performance Loss: ...`), which becomes a warning.
pub fn parse_nvrtc_log(log: &str) -> Vec<Diagnostic> {
    let lines: Vec<&str> = log.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if let Some(mut diag) = parse_header(line) {
            let start = i;
            while i < lines.len() && !ends_block(lines[i]) {
                i += 1;
            }
            let block = &lines[start..i];
            // The caret line is the last of a run of caret-only lines (the echoed source may
            // itself be just `^`); the line above it is the echoed source.
            let caret = (1..block.len())
                .find(|&k| is_caret(block[k]) && !block.get(k + 1).is_some_and(|l| is_caret(l)));
            let mut extra: Vec<&str> = block.to_vec();
            if let Some(k) = caret {
                diag.column = column(block[k - 1], block[k]);
                extra.drain(k - 1..=k);
            }
            for text in extra.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
                diag.message.push('\n');
                diag.message.push_str(text);
            }
            out.push(diag);
        } else if let Some(mut diag) = parse_tool_line(line) {
            // Indented lines right after a tool message continue it.
            while i < lines.len()
                && lines[i].starts_with([' ', '\t'])
                && !lines[i].trim().is_empty()
            {
                diag.message.push('\n');
                diag.message.push_str(lines[i].trim());
                i += 1;
            }
            out.push(diag);
        }
    }
    out
}

fn ends_block(line: &str) -> bool {
    line.trim().is_empty()
        || line.starts_with("Remark: ")
        || line.contains("detected in the compilation of")
        || parse_header(line).is_some()
        || is_tool_line(line)
}

fn is_tool_line(line: &str) -> bool {
    ["ptxas", "nvlink", "nvrtc:"]
        .iter()
        .any(|t| line.starts_with(t))
}

fn is_caret(line: &str) -> bool {
    line.trim() == "^"
}

/// `file(LINE): severity[ #code]: message`; the file may itself contain parentheses.
fn parse_header(line: &str) -> Option<Diagnostic> {
    line.match_indices("): ").find_map(|(close, _)| {
        let open = line[..close].rfind('(')?;
        let (file, number) = (&line[..open], &line[open + 1..close]);
        if file.trim().is_empty()
            || number.is_empty()
            || !number.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let (label, message) = line[close + 3..].split_once(':')?;
        let (word, code) = label
            .split_once(" #")
            .map_or((label, None), |(w, c)| (w, Some(c)));
        let severity = severity_of(word)?;
        let mut text = message.trim().to_string();
        if !matches!(word, "error" | "warning" | "remark" | "note") {
            text = format!("{word}: {text}");
        }
        if let Some(code) = code {
            text = format!("{text} [#{code}]");
        }
        let line_no = number.parse().unwrap_or(u32::MAX);
        let mut diag = Diagnostic::error(text).in_file(file).at(line_no, None);
        diag.severity = severity;
        Some(diag)
    })
}

fn severity_of(word: &str) -> Option<Severity> {
    let word = word.trim();
    if word.is_empty()
        || word.len() > 24
        || !word
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b' ' || b == b'-')
    {
        return None;
    }
    match word.rsplit(' ').next()? {
        "error" | "fatal" => Some(Severity::Error),
        "warning" => Some(Severity::Warning),
        "remark" | "note" => Some(Severity::Note),
        _ => None,
    }
}

/// `ptxas application ptx input, line 29; error   : msg`, `ptxas warning : msg`,
/// `ptxas fatal   : msg`, `nvrtc: error: msg`. `info` lines yield nothing.
fn parse_tool_line(line: &str) -> Option<Diagnostic> {
    let tool = ["ptxas", "nvlink", "nvrtc"]
        .into_iter()
        .find(|t| line.starts_with(t))?;
    let rest = line[tool.len()..].trim_start_matches(':');
    let (location, rest) = match (rest.find(';'), rest.find(':')) {
        (Some(semi), Some(colon)) if semi < colon => (&rest[..semi], &rest[semi + 1..]),
        _ => ("", rest),
    };
    let (label, message) = rest.split_once(':')?;
    // ptxas' advice comes as an `info` line with a code: "(C7514) Potential Performance Loss:
    // wgmma.mma_async instructions are serialized ...". It costs speed, so it is a warning.
    let advice = label.trim() == "info" && is_ptxas_code(message.trim());
    let severity = if advice {
        Severity::Warning
    } else {
        severity_of(label)?
    };
    let mut text = format!("{tool}: {}", message.trim());
    if let Some(n) = location
        .split("line ")
        .nth(1)
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
    {
        text.push_str(&format!(" (PTX line {n})"));
    }
    let mut diag = Diagnostic::error(text);
    diag.severity = severity;
    Some(diag)
}

/// `(C7514) ...`: ptxas' numbered messages.
fn is_ptxas_code(message: &str) -> bool {
    message
        .strip_prefix("(C")
        .and_then(|m| m.split_once(')'))
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// 1-based character column of the caret, relative to the echoed source line.
fn column(source: &str, caret: &str) -> Option<u32> {
    let at = caret.find('^')?;
    let tabs_copied = caret[..at].contains('\t');
    // Both lines carry the same two-space indent.
    let (source, at) = match (source.strip_prefix("  "), caret.starts_with("  ")) {
        (Some(s), true) => (s, at - 2),
        _ => (source, at),
    };
    let chars = source.chars().count();
    let col = if source.contains('\t') && !tabs_copied {
        // Tabs were expanded (to stops of 8) in the caret line: walk display columns.
        let mut display = 0;
        let mut found = None;
        for (n, ch) in source.chars().enumerate() {
            let next = if ch == '\t' {
                (display / 8 + 1) * 8
            } else {
                display + 1
            };
            if at < next {
                found = Some(n);
                break;
            }
            display = next;
        }
        found.unwrap_or(chars + (at - display))
    } else if at <= source.len() {
        source.char_indices().take_while(|&(b, _)| b < at).count()
    } else {
        chars + (at - source.len())
    };
    u32::try_from(col + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_advice_is_a_warning_and_plain_info_is_dropped() {
        let log = "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in the function 'matmul_kernel'\n\
                   ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'matmul_kernel' for 'sm_90a'\n\
                   ptxas info    : (C) not a code\n";
        let ds = parse_nvrtc_log(log);
        assert_eq!(ds.len(), 1, "{ds:?}");
        assert_eq!(ds[0].severity, Severity::Warning);
        assert!(ds[0]
            .message
            .starts_with("ptxas: (C7514) Potential Performance Loss: wgmma.mma_async"));
    }

    fn fixture(name: &str) -> Vec<Diagnostic> {
        let text = match name {
            "errors" => include_str!("../../tests/fixtures/compiler-output/errors.log"),
            "overload" => include_str!("../../tests/fixtures/compiler-output/overload.log"),
            "warnings" => include_str!("../../tests/fixtures/compiler-output/warnings_sm_90.log"),
            "ptxas" => include_str!("../../tests/fixtures/compiler-output/ptxas_error.log"),
            _ => include_str!("../../tests/fixtures/compiler-output/catastrophic.log"),
        };
        parse_nvrtc_log(text)
    }

    fn spot(d: &Diagnostic) -> (Severity, Option<&str>, Option<u32>, Option<u32>) {
        (
            d.severity,
            d.file.as_ref().and_then(|f| f.to_str()),
            d.line,
            d.column,
        )
    }

    #[test]
    fn errors_with_tabs_and_utf8_columns() {
        let ds = fixture("errors");
        assert_eq!(ds.len(), 4, "{ds:#?}");
        // `\tfloat y = x + 1.0f;`: the tab is one column, so `x` sits in column 12.
        assert_eq!(
            spot(&ds[0]),
            (Severity::Error, Some("kernel.cu"), Some(3), Some(12))
        );
        assert_eq!(ds[0].message, "identifier \"x\" is undefined");
        // The caret is padded by bytes; `é` is two bytes but one column.
        assert_eq!(
            spot(&ds[1]),
            (Severity::Error, Some("kernel.cu"), Some(5), Some(41))
        );
        assert_eq!(
            spot(&ds[2]),
            (Severity::Error, Some("kernel.cu"), Some(7), Some(1))
        );
        assert_eq!(ds[2].message, "expected a \";\"");
        assert_eq!(
            spot(&ds[3]),
            (Severity::Warning, Some("kernel.cu"), Some(2), Some(7))
        );
        assert_eq!(
            ds[3].message,
            "variable \"unused\" was declared but never referenced [#177-D]"
        );
        assert_eq!(
            ds[3].to_string(),
            format!("kernel.cu:2:7: warning: {}", ds[3].message)
        );
    }

    #[test]
    fn multi_line_messages_and_notes() {
        let ds = fixture("overload");
        assert_eq!(ds.len(), 4);
        assert_eq!(
            spot(&ds[0]),
            (Severity::Error, Some("kernel.cu"), Some(5), Some(10))
        );
        assert_eq!(
            ds[0].message,
            concat!(
                "no instance of overloaded function \"f\" matches the argument list\n",
                "argument types are: (int *)"
            )
        );
        assert_eq!(
            spot(&ds[1]),
            (Severity::Note, Some("kernel.cu"), Some(2), Some(16))
        );
        assert_eq!(
            spot(&ds[3]),
            (Severity::Error, Some("kernel.cu"), Some(3), Some(56))
        );
        assert!(ds[3]
            .message
            .ends_with("\ndetected during instantiation of \"T twice(T) [with T=int]\" at line 6"));
    }

    #[test]
    fn remarks_warnings_and_ptxas_info() {
        let ds = fixture("warnings");
        let spots: Vec<_> = ds.iter().map(spot).collect();
        assert_eq!(
            spots,
            [
                (Severity::Note, Some("kernel.cu"), Some(4), Some(32)),
                (Severity::Warning, Some("kernel.cu"), Some(5), Some(10)),
                (Severity::Note, Some("kernel.cu"), Some(1), Some(3)),
                (Severity::Warning, Some("kernel.cu"), Some(3), Some(7)),
            ]
        );
        assert_eq!(
            ds[0].message,
            "#pragma message: \"hello remark\" [#20200-D]"
        );
    }

    #[test]
    fn ptxas_and_catastrophic_errors() {
        let ds = fixture("ptxas");
        assert_eq!(ds.len(), 3);
        assert!(ds
            .iter()
            .all(|d| d.is_error() && d.file.is_none() && d.line.is_none()));
        assert_eq!(
            ds[0].message,
            "ptxas: Unknown modifier '.instr' (PTX line 29)"
        );
        assert_eq!(ds[2].message, "ptxas: Ptx assembly aborted due to errors");
        let ds = fixture("catastrophic");
        assert_eq!(ds.len(), 1);
        assert_eq!(
            spot(&ds[0]),
            (
                Severity::Error,
                Some("my dir (2)/kern.cu"),
                Some(1),
                Some(21)
            )
        );
        assert_eq!(
            ds[0].message,
            "catastrophic error: cannot open source file \"missing.h\""
        );
        let ds = parse_nvrtc_log(
            "nvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n  Make sure it is installed.",
        );
        assert_eq!(
            ds[0].message,
            "nvrtc: failed to open libnvrtc-builtins.so.13.0.\nMake sure it is installed."
        );
        let ds = parse_nvrtc_log("ptxas warning : Spilled; see\nptxas info    : Used 3 registers");
        assert_eq!((ds.len(), ds[0].severity), (1, Severity::Warning));
        assert_eq!(ds[0].message, "ptxas: Spilled; see");
    }

    #[test]
    fn expanded_tabs_in_caret_line() {
        // An older front end that expands tabs (to 8) in the caret line only.
        let ds = parse_nvrtc_log("a.cu(1): error: bad\n  \tint x;\n              ^\n");
        assert_eq!(ds[0].column, Some(6));
    }

    #[test]
    fn garbage_never_panics() {
        for junk in [
            "",
            "(",
            "(1): error: x",
            "f(): error: x",
            "f(1):",
            "f(1): : x",
            "f(99999999999): error: x\n^",
            "f(1): error: x\n^\n^\n^",
            "f(1): error: x\n  \t\u{e9}\n ^",
            "ptxas",
            "ptxas error",
            "nvrtc: x",
            "f(1): error: x\n  \tab\n          \u{e9}^",
            "f(1)): error: ((2): warning: y",
            "\u{1F600}(3): note: z\n\u{1F600}\n   ^",
        ] {
            let _ = parse_nvrtc_log(junk);
        }
        assert_eq!(
            parse_nvrtc_log("f(99999999999): error: x")[0].line,
            Some(u32::MAX)
        );
        assert!(parse_nvrtc_log(
            "1 error detected in the compilation of \"k.cu\".\nCompilation terminated."
        )
        .is_empty());
    }
}
