//! A fresh machine's first run: when neither NVRTC nor the CUDA headers can be found, kwb
//! installs the pinned NVIDIA wheels into its own cache folder with `python3 -m pip install
//! --target`, saying on stderr what it fetches and where, then looks again. `--offline` or
//! `KWB_NO_INSTALL=1` turn this off (and the "not found" error says how to install by hand);
//! an install that fails says why and what to do.

use super::locate::{locate, CudaPaths, LocateError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The wheels kwb installs: NVRTC and the runtime headers of CUDA 13.0.
pub const WHEELS: [&str; 2] = ["nvidia-cuda-nvrtc==13.0.*", "nvidia-cuda-runtime==13.0.*"];
/// Set to `1` to never install anything.
pub const NO_INSTALL_VAR: &str = "KWB_NO_INSTALL";

static OFFLINE: AtomicBool = AtomicBool::new(false);

/// `--offline`: from now on, never install anything.
pub fn set_offline(offline: bool) {
    OFFLINE.store(offline, Ordering::Relaxed);
}

/// Whether installing is off (`--offline`, or `KWB_NO_INSTALL` set to anything but 0 or empty).
pub fn offline() -> bool {
    OFFLINE.load(Ordering::Relaxed)
        || std::env::var(NO_INSTALL_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Why the wheels could not be installed, each with what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProvisionError {
    #[error("{locate}\n(kwb did not install the wheels itself: {why})")]
    Off { locate: LocateError, why: String },
    #[error("no cache folder to install NVRTC into: set KWB_CACHE_DIR or HOME")]
    NoCacheDir,
    #[error(
        "cannot install NVRTC: python3 could not be run ({0}).\n\
         Install Python 3 with pip (e.g. apt-get install python3-pip), or a CUDA toolkit, and run kwb again."
    )]
    NoPython(String),
    #[error(
        "cannot install NVRTC: python3 has no pip ({0}).\n\
         Install pip (e.g. apt-get install python3-pip, or python3 -m ensurepip), or a CUDA toolkit, and run kwb again."
    )]
    NoPip(String),
    #[error(
        "installing NVRTC failed: `python3 -m pip install --target {target} {wheels}` {status}:\n{tail}\n\
         If this machine has no network, install the wheels on one that has and copy {target} here, \
         or install a CUDA toolkit; --offline (or KWB_NO_INSTALL=1) stops kwb from trying.",
        target = .target.display(), wheels = WHEELS.join(" ")
    )]
    PipFailed {
        target: PathBuf,
        status: String,
        tail: String,
    },
    #[error("installed the wheels into {target}, but still: {locate}", target = .target.display())]
    StillMissing {
        target: PathBuf,
        locate: LocateError,
    },
}

/// Where kwb installs the wheels (also the first place [`locate`] looks after the toolkits).
pub fn wheels_dir() -> Option<PathBuf> {
    crate::cache_dir().map(|d| d.join("cuda-wheels"))
}

/// Finds NVRTC and the headers; if they are missing and installing is allowed, installs the
/// pinned wheels into kwb's cache folder first.
pub fn locate_or_install() -> Result<CudaPaths, ProvisionError> {
    let missing = match locate() {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    if offline() {
        let why = if OFFLINE.load(Ordering::Relaxed) {
            "--offline"
        } else {
            "KWB_NO_INSTALL is set"
        };
        return Err(ProvisionError::Off {
            locate: missing,
            why: why.into(),
        });
    }
    let target = wheels_dir().ok_or(ProvisionError::NoCacheDir)?;
    let what = match missing {
        LocateError::NvrtcNotFound { .. } => "NVRTC",
        LocateError::HeadersNotFound { .. } => "the CUDA headers",
    };
    eprintln!(
        "kwb: {what} not found; installing {} from PyPI into {} (python3 -m pip; --offline or {NO_INSTALL_VAR}=1 to skip)...",
        WHEELS.join(" and "),
        target.display()
    );
    let began = Instant::now();
    install(&target)?;
    eprintln!(
        "kwb: installed into {} in {:.1} s",
        target.display(),
        began.elapsed().as_secs_f64()
    );
    locate().map_err(|locate| ProvisionError::StillMissing { target, locate })
}

/// Installs the NVRTC wheels into `target` ([`pip_install`]).
pub fn install(target: &Path) -> Result<(), ProvisionError> {
    pip_install(target, &WHEELS)
}

/// `python3 -m pip install --target` of `packages` (pip's own arguments: names, pins, options
/// such as `--no-deps`) into a folder of its own next to `target`, then moved into place, so
/// that two processes installing at once, or an install cut short, never leave a half-made
/// `target` behind. The tests install Triton and the conformance corpus this way too.
pub fn pip_install(target: &Path, packages: &[&str]) -> Result<(), ProvisionError> {
    let parent = target.parent().unwrap_or(Path::new("."));
    let io_failed = |e: std::io::Error| ProvisionError::PipFailed {
        target: target.to_path_buf(),
        status: "could not start".into(),
        tail: format!("  {}: {e}", parent.display()),
    };
    std::fs::create_dir_all(parent).map_err(io_failed)?;
    let name = target
        .file_name()
        .map_or("cuda-wheels".into(), |n| n.to_string_lossy().into_owned());
    let fresh = parent.join(format!(".{name}.installing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-input", "--target"])
        .arg(&fresh)
        .args(packages)
        .output()
        .map_err(|e| ProvisionError::NoPython(e.to_string()))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&fresh);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("No module named pip") {
            return Err(ProvisionError::NoPip(stderr.trim().to_string()));
        }
        return Err(ProvisionError::PipFailed {
            target: target.to_path_buf(),
            status: format!("failed ({})", out.status),
            tail: tail(&stderr, 8),
        });
    }
    // Whatever was there (a broken install) makes way; a complete one made meanwhile by
    // another kwb is as good as ours.
    if target.exists() {
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        if std::fs::rename(target, &old).is_ok() {
            let _ = std::fs::remove_dir_all(&old);
        }
    }
    if std::fs::rename(&fresh, target).is_err() {
        let _ = std::fs::remove_dir_all(&fresh);
    }
    Ok(())
}

/// The last `n` non-empty lines of `text`, indented.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "  b\n  c");
        assert_eq!(tail("", 3), "");
    }

    #[test]
    fn failures_say_what_to_do() {
        let e = ProvisionError::PipFailed {
            target: "/c/cuda-wheels".into(),
            status: "failed (exit status: 1)".into(),
            tail: "  ERROR: No matching distribution found".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains(
                "python3 -m pip install --target /c/cuda-wheels nvidia-cuda-nvrtc==13.0.*"
            ),
            "{text}"
        );
        assert!(text.contains("No matching distribution"), "{text}");
        assert!(text.contains("copy /c/cuda-wheels here"), "{text}");
        let e = ProvisionError::NoPip("No module named pip".into()).to_string();
        assert!(e.contains("ensurepip"), "{e}");
    }
}
