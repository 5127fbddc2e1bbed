//! `kwb batch` on the command line without a GPU: usage errors and the no-GPU path map to their
//! documented exit codes with messages that say what to do.

mod support;

fn kwb(args: &[&str]) -> (i32, String, String) {
    support::run_kwb(args)
}

#[test]
fn unknown_sizes_and_versions_are_usage_errors() {
    let (code, _, err) = kwb(&[
        "batch",
        "workspaces/elementwise-add.yaml",
        "--sizes",
        "1Mi,3Mi",
    ]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(
        err.contains("no size `3Mi`; sizes: 1Mi, 16Mi, 256Mi, odd"),
        "{err}"
    );
    let (code, _, err) = kwb(&[
        "batch",
        "workspaces/elementwise-add.yaml",
        "--versions",
        "v99",
    ]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("no version `v99`"), "{err}");
}

#[test]
fn a_bad_baseline_or_workspace_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("baseline.json");
    std::fs::write(&bad, "{\"schema\": 99}").unwrap();
    let (code, _, err) = kwb(&[
        "batch",
        "workspaces/gelu.yaml",
        "--baseline",
        &bad.display().to_string(),
    ]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("baseline.json"), "{err}");
    let (code, _, err) = kwb(&["batch", "tests/fixtures/workspaces/unknown_field.yaml"]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("unknown field `grdi`"), "{err}");
}

#[test]
fn without_a_gpu_batch_exits_5_and_says_why() {
    if kwb::run::gpu::probe(0).is_ok() {
        println!("a GPU is present; the no-GPU path is not exercised here");
        return;
    }
    let (code, out, err) = kwb(&["batch", "workspaces/elementwise-add.yaml", "--sizes", "1Mi"]);
    assert_eq!(code, kwb::exit::NO_GPU, "{out}{err}");
    assert!(err.contains("no usable GPU"), "{err}");
    assert!(err.contains("`kwb batch --cpu`"), "{err}");
    assert!(err.contains("`kwb inspect`"), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn inspect_of_a_tile_file_with_syntax_errors_lists_each_at_its_line() {
    let (code, out, err) = kwb(&[
        "inspect",
        "tests/tile/err_syntax.tile",
        "--constexpr",
        "BLOCK=128",
    ]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{out}{err}");
    let text = format!("{out}{err}");
    assert!(text.contains("err_syntax.tile:8:"), "{text}");
    assert!(text.contains("err_syntax.tile:9:"), "{text}");
    assert!(
        !text.contains("error: :"),
        "a diagnostic wrapped in another: {text}"
    );
}
