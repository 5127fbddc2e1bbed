//! `kwb batch` on swept versions, on the CPU: every configuration runs and is checked;
//! configurations that cannot run (a 2048-thread block, a static assertion that fails for one
//! BLOCK) are skipped with their reason and do not fail the batch; a sweep none of whose
//! configurations compiles is a compile error; `--versions` takes a swept version's name.

mod support;

use kwb::report::{BatchReport, Status};

fn by<'a>(report: &'a BatchReport, version: &str) -> &'a kwb::report::RunResult {
    report
        .results
        .iter()
        .find(|r| r.version == version)
        .unwrap_or_else(|| panic!("no result for {version}"))
}

#[test]
fn a_block_over_1024_threads_is_skipped_with_its_reason() {
    let (code, report, err) = support::cpu_batch_json(&["tests/fixtures/sweep/sweep.yaml"]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    let names: Vec<&str> = report.results.iter().map(|r| r.version.as_str()).collect();
    assert_eq!(
        names,
        ["add[block=128]", "add[block=256]", "add[block=2048]"]
    );
    for ok in ["add[block=128]", "add[block=256]"] {
        let r = by(&report, ok);
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert!(r.check.as_ref().unwrap().passed);
    }
    let skipped = by(&report, "add[block=2048]");
    assert_eq!(skipped.status, Status::Skipped);
    let why = skipped.message.as_deref().unwrap();
    assert!(
        why.starts_with("this configuration cannot launch:") && why.contains("2048 threads"),
        "{why}"
    );
    // The marks: the sweep, the values, and the rule's choice at this size (3000 elements:
    // 256 threads).
    let m = by(&report, "add[block=256]").sweep.as_ref().unwrap();
    assert_eq!(m.parent, "add");
    assert_eq!(m.values.get("block").map(String::as_str), Some("256"));
    assert!(m.default);
    assert!(
        !by(&report, "add[block=128]")
            .sweep
            .as_ref()
            .unwrap()
            .default
    );
    let s = &report.sweeps[0];
    assert_eq!((s.parent.as_str(), s.size.as_str()), ("add", "small"));
    assert_eq!((s.configs, s.skipped, s.failed), (3, 1, 0));
    assert_eq!(s.default.as_deref(), Some("add[block=256]"));
}

#[test]
fn a_failed_static_assert_skips_only_the_configurations_it_fails_for() {
    let (code, report, err) =
        support::cpu_batch_json(&["tests/fixtures/sweep/capped.yaml", "--versions", "copy"]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert_eq!(report.results.len(), 6);
    for r in &report.results {
        let big = r.version.starts_with("copy[BLOCK=4096");
        if big {
            assert_eq!(r.status, Status::Skipped, "{r:?}");
            let why = r.message.as_deref().unwrap();
            assert!(
                why.starts_with("this configuration does not compile:"),
                "{why}"
            );
            assert!(
                why.contains("capped.tile:9:22: error: assertion `BLOCK <= 2048` failed: BLOCK over 2048 is not supported"),
                "{why}"
            );
        } else {
            assert_eq!(r.status, Status::Ok, "{r:?}");
        }
    }
    assert_eq!(report.sweeps[0].skipped, 2);
}

#[test]
fn a_sweep_with_no_configuration_that_compiles_is_a_compile_error() {
    let (code, report, err) =
        support::cpu_batch_json(&["tests/fixtures/sweep/capped.yaml", "--versions", "never"]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{err}");
    assert!(report
        .results
        .iter()
        .all(|r| r.status == Status::CompileError));
}

#[test]
fn versions_select_whole_sweeps_or_single_configurations() {
    let (_, report, err) = support::cpu_batch_json(&[
        "tests/fixtures/sweep/capped.yaml",
        "--versions",
        "copy[BLOCK=1024,num_warps=2],copy[BLOCK=2048,num_warps=4]",
    ]);
    let names: Vec<&str> = report.results.iter().map(|r| r.version.as_str()).collect();
    assert_eq!(
        names,
        [
            "copy[BLOCK=1024,num_warps=2]",
            "copy[BLOCK=2048,num_warps=4]"
        ],
        "{err}"
    );
    let (code, out, _) = support::run_kwb(&[
        "batch",
        "--cpu",
        "tests/fixtures/sweep/sweep.yaml",
        "--versions",
        "ad",
    ]);
    assert_eq!(code, kwb::exit::USAGE);
    assert!(out.is_empty());
}

#[test]
fn the_table_shows_each_sweep_with_its_skipped_configurations() {
    support::provision_nvrtc();
    let (code, out, err) = support::run_kwb(&[
        "batch",
        "--cpu",
        "--seed",
        "7",
        "tests/fixtures/sweep/sweep.yaml",
    ]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    let section = &out[out.find("\nsweep add @ small").expect(&out)..];
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(
        lines[1],
        "sweep add @ small: 3 configurations, 1 skipped; the rule chooses block=256"
    );
    assert_eq!(lines[2], "block | time (µs median) | GB/s | vs best |");
    assert_eq!(lines[4], "128   |                - |    - |       - | pass");
    assert_eq!(
        lines[5],
        "256   |                - |    - |       - | pass, rule"
    );
    assert!(
        lines[6].starts_with("2048  | skipped: this configuration cannot launch:"),
        "{section}"
    );
}
