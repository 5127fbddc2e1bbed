//! `kwb batch --cpu` with no GPU: every shipped version of every workspace runs on the CPU (CUDA
//! in the PTX emulator, tile kernels in the tile interpreter) and passes its reference check;
//! the tile kernels' generated code passes in the emulator too; broken kernels are reported
//! with what went wrong and where, while the versions after them still run.

mod support;

use kwb::report::{json::from_json, Backend, BatchReport, Status};

fn cpu_batch(args: &[&str]) -> (i32, BatchReport, String) {
    support::provision_nvrtc();
    let mut all = vec!["batch", "--cpu", "--format", "json", "--seed", "7"];
    all.extend_from_slice(args);
    let (code, out, err) = support::run_kwb(&all);
    let report =
        from_json(&out).unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{out}\n{err}"));
    (code, report, err)
}

fn assert_all_pass(workspace: &str, extra: &[&str]) -> BatchReport {
    let mut args = vec![workspace];
    args.extend_from_slice(extra);
    let (code, report, err) = cpu_batch(&args);
    for r in &report.results {
        assert_eq!(
            r.status,
            Status::Ok,
            "{workspace}: {} @ {}: {:?}\n{err}",
            r.version,
            r.size,
            r.message
        );
        let check = r.check.as_ref().expect("checked against the reference");
        assert!(check.passed, "{workspace}: {} @ {}", r.version, r.size);
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        assert!(r.timing.is_none(), "the CPU times nothing");
    }
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert_eq!(report.backend, Some(Backend::Emulator));
    report
}

#[test]
fn every_shipped_version_passes_on_the_cpu() {
    for ws in [
        "workspaces/elementwise-add.yaml",
        "workspaces/gelu.yaml",
        "workspaces/softmax.yaml",
    ] {
        let report = assert_all_pass(ws, &[]);
        assert!(!report.results.is_empty());
        for r in &report.results {
            // The sizes meant for emulation, and only those.
            assert_eq!(r.size, "odd", "{ws}: {}", r.version);
            let tile = ["v8", "v4", "v5", "v6", "triton"].contains(&r.version.as_str())
                && !(ws.contains("softmax") && r.version == "v4")
                && !(ws.contains("elementwise") && r.version == "v4");
            let want = if tile {
                Backend::Interpreter
            } else {
                Backend::Emulator
            };
            assert_eq!(r.backend, Some(want), "{ws}: {}", r.version);
        }
    }
}

#[test]
fn tile_kernels_generated_code_passes_in_the_emulator() {
    // The tile compiler's output, run instruction by instruction: a check of the lowering that
    // needs no GPU.
    for (ws, versions) in [
        ("workspaces/elementwise-add.yaml", "v8"),
        ("workspaces/gelu.yaml", "v4"),
        ("workspaces/softmax.yaml", "v5,v6,triton"),
    ] {
        let report = assert_all_pass(ws, &["--cpu-engine", "emulator", "--versions", versions]);
        assert!(report
            .results
            .iter()
            .all(|r| r.backend == Some(Backend::Emulator)));
    }
}

#[test]
fn tile_kernels_pass_at_sizes_that_exercise_their_masks() {
    for ws in ["tile_odd_sizes", "tile_odd_add", "tile_odd_gelu"] {
        let ws = format!("tests/fixtures/workspaces/{ws}.yaml");
        let sizes = kwb::workspace::load(&support::repo().join(&ws))
            .unwrap()
            .sizes
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
            .join(",");
        assert_all_pass(&ws, &["--sizes", &sizes]);
        assert_all_pass(&ws, &["--sizes", &sizes, "--cpu-engine", "emulator"]);
    }
}

#[test]
fn broken_kernels_are_reported_with_what_and_where() {
    let (code, report, err) = cpu_batch(&[
        "tests/fixtures/broken/broken.yaml",
        "--versions",
        "good,oob,wrong,unwritten,good2",
    ]);
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    let get = |v: &str| report.results.iter().find(|r| r.version == v).unwrap();
    assert_eq!(get("good").status, Status::Ok);
    assert_eq!(get("good2").status, Status::Ok);
    let oob = get("oob");
    assert_eq!(oob.status, Status::CheckFailed);
    let f = &oob.findings[0];
    assert_eq!(f.kind, "out-of-bounds", "{f}");
    assert!(
        f.file.as_deref().is_some_and(|p| p.ends_with("broken.cu")),
        "{f}"
    );
    assert_eq!(f.line, Some(12), "{f}");
    assert_eq!(get("wrong").status, Status::CheckFailed);
    let unwritten = get("unwritten");
    assert_eq!(unwritten.status, Status::CheckFailed);
    assert!(
        unwritten
            .message
            .as_deref()
            .unwrap_or("")
            .contains("never written"),
        "{:?}",
        unwritten.message
    );
}
