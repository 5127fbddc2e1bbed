//! What `kwb capture` tells the user: the workspaces it wrote (with Triton's time), and on
//! stderr every launch it could not turn into one, and why the capture itself failed.

use super::Outcome;
use crate::exit;
use std::fmt::Write as _;

/// The summary for stdout, the messages for stderr, and the exit code.
pub fn render(o: &Outcome, out_dir: &std::path::Path) -> (String, String, i32) {
    let (mut out, mut err) = (String::new(), String::new());
    for w in &o.written {
        let time = w
            .triton_us
            .map(|t| format!(", Triton {t:.2} µs"))
            .unwrap_or_default();
        let _ = writeln!(out, "{} ({}{time})", w.path.display(), w.kernel);
    }
    for (kernel, problems) in &o.refused {
        let _ = writeln!(err, "error: `{kernel}` was not written as a workspace:");
        for p in problems {
            let _ = writeln!(err, "  {p}");
        }
    }
    for p in &o.unchecked {
        let _ = writeln!(
            err,
            "warning: {}: the launch changed none of its tensors (it wrote what was already there), so kwb cannot tell its outputs; mark them `output: true` and give a reference to check it",
            p.display()
        );
    }
    for k in &o.over_limit {
        let _ = writeln!(
            err,
            "warning: `{k}`: a launch was not recorded: the capture reached --max-bytes"
        );
    }
    for e in &o.hook_errors {
        let _ = writeln!(err, "warning: the capture hook: {e}");
    }
    let failed = o.program.code != Some(0);
    if failed {
        let how = match o.program.code {
            Some(c) => format!("exited with code {c}"),
            None => match o.program.signal {
                Some(sig) => format!(
                    "was stopped by signal {sig} (the launches recorded before are written)"
                ),
                None => "was killed by a signal".into(),
            },
        };
        let _ = writeln!(
            err,
            "error: the program {how}; the last lines of its stderr:"
        );
        for l in &o.program.stderr_tail {
            let _ = writeln!(err, "  | {l}");
        }
    }
    let code = if failed {
        exit::PROGRAM_FAILED
    } else if o.written.is_empty() && o.refused.is_empty() {
        let why = match o.triton {
            Some(false) => {
                "the program's Python cannot import triton: install Triton where it runs"
                    .to_string()
            }
            _ if o.over_limit.is_empty() => {
                "the program made no Triton launches (none matched --kernels, if given)".to_string()
            }
            _ => "every launch was over --max-bytes".to_string(),
        };
        let _ = writeln!(err, "error: nothing was captured: {why}");
        exit::USAGE
    } else if !o.refused.is_empty() {
        exit::CHECK_FAILED
    } else {
        exit::OK
    };
    let _ = writeln!(
        out,
        "kwb capture: {} workspace(s) in {}, {} launch(es) refused, {} launch(es) seen, {} recorded, program {:.2} s",
        o.written.len(),
        out_dir.display(),
        o.refused.len(),
        o.launches,
        o.recorded,
        o.program.wall.as_secs_f64()
    );
    (out, err, code)
}
