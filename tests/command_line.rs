//! The `kwb` command line as a whole: every way it can fail exits with the code the README's
//! table gives (clap's own usage errors included, which clap alone would exit 2 for, the
//! table's "a benchmark regressed"), NVRTC not found is the same code from every subcommand,
//! and global flags such as `--offline` go before or after the subcommand.

mod support;

use std::path::Path;
use std::process::Command;

const WS: &str = "workspaces/elementwise-add.yaml";

fn kwb(args: &[&str]) -> (i32, String, String) {
    support::run_kwb(args)
}

/// `kwb ARGS` with `cache` as its cache folder and no toolkit variables, so that without a
/// CUDA toolkit in /usr/local/cuda and with `--offline`, NVRTC is not found.
fn kwb_without_nvrtc(cache: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(support::kwb_bin());
    cmd.current_dir(support::repo())
        .args(args)
        .env("KWB_CACHE_DIR", cache)
        .stdin(std::process::Stdio::null());
    for var in ["KWB_CUDA_PATH", "CUDA_HOME", "CUDA_PATH", "KWB_NO_INSTALL"] {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("run kwb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether this machine finds NVRTC outside kwb's cache (a toolkit, or wheels in the active
/// Python), where "not found" cannot be made by emptying the cache.
fn nvrtc_outside_the_cache(cache: &Path) -> bool {
    let (code, _, err) = kwb_without_nvrtc(cache, &["inspect", "--offline", WS]);
    !(code == kwb::exit::COMPILE_ERROR && err.contains("NVRTC (libnvrtc.so) not found"))
}

#[test]
fn clap_usage_errors_exit_with_the_tables_usage_code() {
    let cases: [&[&str]; 8] = [
        &["batch"],
        &["watch", WS, "--devices", "0,0"],
        &["watch", WS, "--devices", "all", "--no-gpu"],
        &["inspect"],
        &["watch"],
        &["batch", WS, "--format", "xml"],
        &["inspect", WS, "--no-such-flag"],
        &["batch", WS, "--cpu-engine", "emulator"],
    ];
    for args in cases {
        let (code, out, err) = kwb(args);
        assert_eq!(code, kwb::exit::USAGE, "kwb {args:?}: {out}{err}");
        assert!(err.contains("error:"), "kwb {args:?}: {err}");
        assert!(err.contains("try '--help'"), "kwb {args:?}: {err}");
        assert!(out.is_empty(), "kwb {args:?}: {out}");
    }
    // No arguments at all: the help, and the same code.
    let (code, out, err) = kwb(&[]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(out.contains("Usage: kwb"), "{out}");
}

#[test]
fn help_and_version_are_no_error() {
    let (code, out, err) = kwb(&["--help"]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(out.contains("Usage: kwb"), "{out}");
    let (code, out, err) = kwb(&["batch", "--help"]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(out.contains("--cpu"), "{out}");
    let (code, out, err) = kwb(&["--version"]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(out.starts_with("kwb "), "{out}");
}

#[test]
fn a_workspace_before_the_subcommand_is_a_usage_error_not_ignored() {
    let (code, _, err) = kwb(&["workspaces/gelu.yaml", "inspect", WS]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(
        err.contains("unexpected argument `workspaces/gelu.yaml` before the subcommand"),
        "{err}"
    );
}

#[test]
fn nvrtc_not_found_is_the_compile_error_code_from_every_subcommand() {
    let cache = tempfile::tempdir().unwrap();
    if nvrtc_outside_the_cache(cache.path()) {
        println!("skipped: NVRTC is found outside kwb's cache on this machine");
        return;
    }
    let cases: [&[&str]; 4] = [
        &["inspect", "--offline", WS],
        &["batch", "--offline", "--cpu", WS],
        &["watch", "--offline", WS],
        &["--offline", WS],
    ];
    for args in cases {
        let (code, _, err) = kwb_without_nvrtc(cache.path(), args);
        assert_eq!(code, kwb::exit::COMPILE_ERROR, "kwb {args:?}: {err}");
        assert!(
            err.contains("NVRTC (libnvrtc.so) not found"),
            "kwb {args:?}: {err}"
        );
        assert!(
            err.contains("kwb did not install the wheels itself: --offline"),
            "kwb {args:?}: {err}"
        );
    }
}

#[test]
fn global_flags_go_before_or_after_the_subcommand() {
    let cache = tempfile::tempdir().unwrap();
    if nvrtc_outside_the_cache(cache.path()) {
        println!("skipped: NVRTC is found outside kwb's cache on this machine");
        return;
    }
    // `--offline` reached kwb (not only clap) wherever it stands: each run stops at NVRTC,
    // saying --offline kept it from installing, before any terminal is needed.
    for sub in ["watch", "inspect", "batch"] {
        let after: Vec<&str> = match sub {
            "batch" => vec![sub, "--cpu", WS, "--offline"],
            _ => vec![sub, WS, "--offline"],
        };
        let before: Vec<&str> = std::iter::once("--offline")
            .chain(after[..after.len() - 1].iter().copied())
            .collect();
        for args in [before, after] {
            let (code, _, err) = kwb_without_nvrtc(cache.path(), &args);
            assert_eq!(code, kwb::exit::COMPILE_ERROR, "kwb {args:?}: {err}");
            assert!(
                err.contains("kwb did not install the wheels itself: --offline"),
                "kwb {args:?}: {err}"
            );
        }
    }
}

#[test]
fn global_flags_before_the_subcommand_parse_anywhere() {
    // Wherever NVRTC is: `kwb --offline watch` is parsed as `watch` with `--offline` (a
    // missing workspace is then the workspace's error, not clap's), and `kwb --offline
    // inspect` runs.
    let (code, _, err) = kwb(&["--offline", "watch", "no/such/workspace.yaml"]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("no/such/workspace.yaml"), "{err}");
    assert!(!err.contains("Usage:"), "{err}");
    support::provision_nvrtc();
    let (code, out, err) = kwb(&["--offline", "inspect", WS, "--version", "v1"]);
    assert_eq!(code, kwb::exit::OK, "{out}{err}");
    assert!(out.contains("v1"), "{out}");
}
