//! Regression tests kept by the differential campaigns: each folder of `tests/diff_regressions/`
//! is a reduced program that once made kwb disagree with Triton (saved by
//! `support::tile_campaign::save_fixture`), with its inputs and Triton's outputs. Every layout
//! of it that was kept (`k.py`, the plain one Triton ran, and `k.*.py`, those kwb ran or
//! compiled) must now give Triton's outputs on both of kwb's CPU engines. Needs no Triton.

mod support;

use kwb::compile::Arch;
use std::collections::BTreeMap;
use std::path::Path;
use support::tile_diff::{check, Outcome};

/// Triton's outputs, by buffer name.
fn triton_outputs(dir: &Path) -> BTreeMap<String, Vec<f64>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(buffer) = name.strip_suffix(".triton.npy") {
            let (_, data) = kwb::run::host::npy::read_f64(&e.path()).unwrap();
            out.insert(buffer.to_string(), data);
        }
    }
    out
}

/// Replays one fixture (copied to `work` first: runs write beside their workspace). Err says
/// which layout disagrees and how.
fn replay(fixture: &Path, work: &Path) -> Result<usize, String> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).unwrap();
    let mut layouts = Vec::new();
    for e in std::fs::read_dir(fixture).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        std::fs::copy(e.path(), work.join(&name)).unwrap();
        if name.starts_with("k.") && name.ends_with(".py") {
            layouts.push(name);
        }
    }
    layouts.sort();
    let why = std::fs::read_to_string(work.join("why.txt")).unwrap();
    let mut lines = why.lines();
    let exact = lines.next() == Some("exact");
    let seed: u64 = lines
        .next()
        .and_then(|l| l.strip_prefix("seed "))
        .and_then(|s| s.parse().ok())
        .expect("why.txt's second line is `seed N`");
    let yaml = std::fs::read_to_string(work.join("workspace.yaml")).unwrap();
    let want = triton_outputs(work);
    assert!(!want.is_empty(), "{}: no Triton outputs", fixture.display());
    for layout in &layouts {
        let yaml = yaml.replace("file: k.py", &format!("file: {layout}"));
        match check(
            Arch::parse("sm_90").unwrap(),
            work,
            &yaml,
            seed,
            exact,
            &want,
        ) {
            Outcome::Agree => {}
            other => return Err(format!("{layout}: {other:?}")),
        }
    }
    Ok(layouts.len())
}

#[test]
fn reduced_mismatches_stay_fixed() {
    support::provision_nvrtc();
    let root = support::repo().join("tests/diff_regressions");
    let mut fixtures: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("why.txt").exists())
        .collect();
    fixtures.sort();
    assert!(!fixtures.is_empty(), "no fixtures in {}", root.display());
    let mut failures = Vec::new();
    for f in &fixtures {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let work = support::repo().join("target/diff-regressions").join(&name);
        match replay(f, &work) {
            Ok(n) => println!("{name}: {n} layouts agree with Triton's outputs"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
