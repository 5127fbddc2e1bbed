//! The parser's safety net over Triton code kwb did not write: every `@triton.jit` function
//! of liger-kernel, flag-gems and Triton's own Python sources (and any folder named in
//! `KWB_CONFORMANCE_DIRS`, `:`-separated, e.g. a checkout of Triton's tutorials) is parsed,
//! and no statement may be left out of the tree it builds (`parse/coverage.rs` reports an
//! internal error for any code outside every statement). The sources are installed from the
//! package index into kwb's cache at run time, never committed.

mod support;

use kwb::tile::parse::{parse, FileKind};
use std::path::{Path, PathBuf};

const WHEELS: &[(&str, &str)] = &[
    ("liger-kernel==0.8.5", "liger_kernel"),
    ("flag-gems==5.0.2", "flag_gems"),
];

/// The package folders to scan, installing the wheels (no dependencies: only their sources
/// are read) when they are missing. Err says why they could not be had.
fn corpus_dirs() -> Result<Vec<PathBuf>, String> {
    let cache = kwb::cache_dir()
        .ok_or("no cache folder")?
        .join("conformance");
    let mut dirs = Vec::new();
    for (spec, package) in WHEELS {
        let dir = cache.join(package);
        if !dir.join(package).exists() {
            if std::env::var_os("KWB_NO_INSTALL").is_some() {
                return Err(format!(
                    "{spec} is not in {} and KWB_NO_INSTALL is set",
                    dir.display()
                ));
            }
            eprintln!(
                "tests: installing {spec} (sources only) into {}",
                dir.display()
            );
            kwb::compile::provision::pip_install(&dir, &["--no-deps", spec])
                .map_err(|e| format!("{spec} could not be installed: {e}"))?;
        }
        dirs.push(dir.join(package));
    }
    // Triton's own `@jit` functions (triton.language's standard library and more), from the
    // installation the differential test uses.
    if let Ok(site) = support::triton::provision() {
        dirs.push(site.join("triton"));
    }
    for extra in std::env::var("KWB_CONFORMANCE_DIRS")
        .unwrap_or_default()
        .split(':')
    {
        if !extra.is_empty() {
            dirs.push(PathBuf::from(extra));
        }
    }
    Ok(dirs)
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            python_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

#[test]
fn every_statement_of_triton_code_written_elsewhere_reaches_the_tree() {
    let dirs = match corpus_dirs() {
        Ok(d) => d,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the corpus test: {e}"
            );
            println!("SKIPPED: the conformance corpus is unavailable: {e}");
            return;
        }
    };
    let (mut files, mut kernels, mut with_errors) = (0, 0, 0);
    let mut dropped = Vec::new();
    for dir in &dirs {
        let mut paths = Vec::new();
        python_files(dir, &mut paths);
        paths.sort();
        for p in paths {
            let Ok(src) = std::fs::read_to_string(&p) else {
                continue;
            };
            if !src.contains("jit") {
                continue;
            }
            files += 1;
            let (module, errors) = parse(&src, FileKind::Python);
            kernels += module.funcs.len();
            with_errors += module.funcs.iter().filter(|f| f.has_errors).count();
            for e in errors
                .iter()
                .filter(|e| e.message.starts_with("internal error"))
            {
                let line = src[..e.span.start as usize].matches('\n').count() + 1;
                dropped.push(format!("{}:{line}: {}", p.display(), e.message));
            }
        }
    }
    println!(
        "tile corpus: {files} files with `jit` in {} folders, {kernels} @triton.jit functions parsed ({with_errors} with syntax kwb does not take), {} with code left out of the tree",
        dirs.len(),
        dropped.len()
    );
    assert!(
        kernels >= 300,
        "the corpus is smaller than expected: {kernels} functions"
    );
    assert!(dropped.is_empty(), "{}", dropped.join("\n"));
}
