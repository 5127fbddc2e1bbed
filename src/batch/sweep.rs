//! What a batch does differently for the configurations of a swept version: each result is
//! marked with its sweep (and whether the version's own fields choose it at that size), and a
//! configuration that cannot run as configured (a compile error or failed assertion that other
//! configurations do not hit, more threads or shared memory than a block may have) is
//! skipped with its reason instead of failing the batch.

use crate::compile::CompiledVersion;
use crate::report::{RunResult, Status, SweepMark};
use crate::workspace::{ProblemSize, Version, Workspace};

/// A fresh result for `v` at `size`, marked with its place in its sweep.
pub(crate) fn new_result(ws: &Workspace, v: &Version, size: &ProblemSize) -> RunResult {
    let mut r = RunResult::new(&v.name, &size.name, Status::Ok);
    r.sweep = v.sweep.as_ref().map(|p| SweepMark {
        parent: p.parent.clone(),
        values: p.values.iter().cloned().collect(),
        default: ws
            .sweep(&p.parent)
            .and_then(|s| s.default_at(size).map(|i| s.configs[i] == v.name))
            .unwrap_or(false),
        best: false,
    });
    r
}

/// Per version (in workspace order): its compile failed, but it is a configuration of a sweep
/// that other configurations of which compiled, so the failure is the configuration's.
pub(crate) fn config_compile_failures(ws: &Workspace, compiled: &[CompiledVersion]) -> Vec<bool> {
    let family_compiles = |parent: &str| {
        ws.versions
            .iter()
            .zip(compiled)
            .any(|(v, c)| c.ok && v.sweep.as_ref().is_some_and(|p| p.parent == parent))
    };
    ws.versions
        .iter()
        .zip(compiled)
        .map(|(v, c)| !c.ok && v.sweep.as_ref().is_some_and(|p| family_compiles(&p.parent)))
        .collect()
}

/// The result of a configuration whose compile failed where others' did not: skipped, with
/// the first error as the reason.
pub(crate) fn skipped_compile(mut r: RunResult, c: &CompiledVersion) -> RunResult {
    r.status = Status::Skipped;
    let first = c
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .map_or_else(|| "no error message".to_string(), |d| d.to_string());
    r.message = Some(format!("this configuration does not compile: {first}"));
    r
}

/// The result of a version whose launch could not be planned: for a configuration of a sweep
/// the launch is what the configuration asks for (too many threads, too much shared memory),
/// so it is skipped; for any other version it is an error.
pub(crate) fn plan_failure(mut r: RunResult, v: &Version, why: String) -> RunResult {
    if v.sweep.is_some() {
        r.status = Status::Skipped;
        r.message = Some(format!("this configuration cannot launch: {why}"));
    } else {
        r.status = Status::Error;
        r.message = Some(why);
    }
    r
}

/// Splits comma-separated version names, leaving the commas inside a configuration's
/// brackets alone: `v1,v8[num_warps=4,BLOCK=1024]` is two names.
pub fn split_names(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for arg in args {
        let mut depth = 0i32;
        let mut cur = String::new();
        for ch in arg.chars() {
            match ch {
                '[' => depth += 1,
                ']' => depth -= 1,
                ',' if depth <= 0 => {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        out.push(cur);
    }
    out.retain(|s| !s.trim().is_empty());
    out.iter_mut().for_each(|s| *s = s.trim().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::split_names;

    #[test]
    fn commas_inside_brackets_stay() {
        let got = split_names(&["v1,v8[num_warps=4,BLOCK=1024]".into(), "v9".into()]);
        assert_eq!(got, ["v1", "v8[num_warps=4,BLOCK=1024]", "v9"]);
    }
}
