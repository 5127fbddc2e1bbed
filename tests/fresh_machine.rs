//! A fresh machine: an empty cache folder and no CUDA toolkit. `kwb inspect` installs the
//! pinned NVRTC wheels into the cache by itself (this test fetches them from PyPI, or pip's
//! own cache) and shows its table; `--offline` and `KWB_NO_INSTALL=1` give the "not found"
//! error instead; an install that cannot work (no python3, no package index) says why and what
//! to do. Skips the install where NVRTC is found without the cache (a toolkit, or wheels in
//! the active Python), since then the machine is not fresh.

mod support;

use std::path::Path;
use std::process::Command;

/// `kwb ARGS` in the repository with `cache` as its cache folder and no toolkit variables;
/// `env` adds or (with `None`) removes variables. (exit code, stdout, stderr)
fn kwb(cache: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> (i32, String, String) {
    let mut cmd = Command::new(support::kwb_bin());
    cmd.current_dir(support::repo()).args(args);
    cmd.env("KWB_CACHE_DIR", cache);
    for var in ["KWB_CUDA_PATH", "CUDA_HOME", "CUDA_PATH", "KWB_NO_INSTALL"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().expect("run kwb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const INSPECT: [&str; 2] = ["inspect", "workspaces/elementwise-add.yaml"];

/// Whether NVRTC is missing for a kwb with an empty cache (else: why this is no fresh machine).
fn fresh(cache: &Path) -> Result<(), String> {
    let (code, _, err) = kwb(cache, &[INSPECT[0], "--offline", INSPECT[1]], &[]);
    match code {
        3 if err.contains("NVRTC (libnvrtc.so) not found") => Ok(()),
        0 => Err(
            "NVRTC is found without kwb's cache (a toolkit, or wheels in the active Python)".into(),
        ),
        _ => panic!("unexpected exit {code}: {err}"),
    }
}

#[test]
fn offline_and_no_install_keep_the_not_found_error() {
    let cache = tempfile::tempdir().unwrap();
    if let Err(why) = fresh(cache.path()) {
        println!("skipped: {why}");
        return;
    }
    let (code, _, err) = kwb(cache.path(), &[INSPECT[0], "--offline", INSPECT[1]], &[]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{err}");
    assert!(err.contains("pip install"), "{err}");
    assert!(
        err.contains("kwb did not install the wheels itself: --offline"),
        "{err}"
    );
    let (code, _, err) = kwb(cache.path(), &INSPECT, &[("KWB_NO_INSTALL", Some("1"))]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{err}");
    assert!(err.contains("KWB_NO_INSTALL is set"), "{err}");
    assert!(!err.contains("installing"), "{err}");
    assert!(!cache.path().join("cuda-wheels").exists());
}

#[test]
fn a_failed_install_says_why_and_what_to_do() {
    let cache = tempfile::tempdir().unwrap();
    if let Err(why) = fresh(cache.path()) {
        println!("skipped: {why}");
        return;
    }
    // No python3 at all.
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().display().to_string();
    let (code, _, err) = kwb(cache.path(), &INSPECT, &[("PATH", Some(&path))]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{err}");
    assert!(
        err.contains("installing nvidia-cuda-nvrtc==13.0.*"),
        "{err}"
    );
    assert!(err.contains("python3 could not be run"), "{err}");
    assert!(err.contains("Install Python 3 with pip"), "{err}");
    // A package index that cannot be reached (as with no network).
    let unreachable = [
        ("PIP_INDEX_URL", Some("http://127.0.0.1:9/simple")),
        ("PIP_NO_CACHE_DIR", Some("1")),
        ("PIP_RETRIES", Some("0")),
        ("PIP_TIMEOUT", Some("2")),
        ("PIP_FIND_LINKS", None),
        ("PIP_EXTRA_INDEX_URL", None),
    ];
    let (code, _, err) = kwb(cache.path(), &INSPECT, &unreachable);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{err}");
    assert!(err.contains("installing NVRTC failed"), "{err}");
    assert!(err.contains("If this machine has no network"), "{err}");
    let leftovers: Vec<_> = std::fs::read_dir(cache.path()).unwrap().flatten().collect();
    assert!(leftovers.is_empty(), "a failed install left {leftovers:?}");
}

#[test]
fn the_first_run_installs_nvrtc_into_the_cache_and_goes_on() {
    let cache = tempfile::tempdir().unwrap();
    if let Err(why) = fresh(cache.path()) {
        println!("skipped: {why}");
        return;
    }
    let (code, out, err) = kwb(cache.path(), &INSPECT, &[]);
    println!("{err}");
    let wheels = cache.path().join("cuda-wheels");
    let line = format!(
        "installing nvidia-cuda-nvrtc==13.0.* and nvidia-cuda-runtime==13.0.* from PyPI into {}",
        wheels.display()
    );
    assert!(err.contains(&line), "{err}");
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(
        out.contains("add_f32") && out.contains("occupancy"),
        "{out}"
    );
    assert!(wheels.join("nvidia").is_dir());
    // The second run finds what the first installed, and says nothing about it.
    let (code, _, err) = kwb(cache.path(), &INSPECT, &[]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert!(!err.contains("installing"), "{err}");
}

#[test]
fn the_readme_main_command_reaches_the_workbench_on_a_fresh_machine() {
    if let Err(why) = support::tmux::available() {
        println!("skipped: {why}");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    if let Err(why) = fresh(cache.path()) {
        println!("skipped: {why}");
        return;
    }
    // `cargo run --release -- watch workspaces/elementwise-add.yaml`, less the build, and with
    // no GPU asked for (the install is what is tested here).
    let cmd = format!(
        "env -u KWB_CUDA_PATH -u CUDA_HOME -u CUDA_PATH -u KWB_NO_INSTALL KWB_CACHE_DIR='{}' '{}' watch '{}' --no-gpu",
        cache.path().display(),
        support::kwb_bin().display(),
        support::repo().join("workspaces/elementwise-add.yaml").display()
    );
    let s = support::tmux::Tmux::start(&cmd);
    s.wait_for("the workbench with every version compiled", |sc| {
        sc.contains("Versions") && sc.contains("add_f32") && !sc.contains("compiling")
    });
    assert!(cache.path().join("cuda-wheels/nvidia").is_dir());
    s.keys("q");
}
