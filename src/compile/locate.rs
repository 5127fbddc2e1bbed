//! Finding NVRTC and the CUDA headers without a toolkit install: kwb looks in the places a CUDA
//! user has them (an explicit `KWB_CUDA_PATH`, `CUDA_HOME`/`CUDA_PATH`, `/usr/local/cuda`) and
//! in pip-installed NVIDIA wheels, and says exactly where it looked when it finds nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The NVRTC library and the folder holding `cuda_fp16.h`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaPaths {
    pub nvrtc_lib: PathBuf,
    pub include_dir: PathBuf,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum LocateError {
    #[error("NVRTC (libnvrtc.so) not found. Looked in:\n{}\n{INSTALL_HINT}", list(.searched))]
    NvrtcNotFound { searched: Vec<PathBuf> },
    #[error("the CUDA headers (cuda_fp16.h) were not found. Looked in:\n{}\n{INSTALL_HINT}", list(.searched))]
    HeadersNotFound { searched: Vec<PathBuf> },
}

const INSTALL_HINT: &str = "Install a CUDA toolkit, or the NVRTC and runtime-header wheels with\n    \
python3 -m pip install 'nvidia-cuda-nvrtc==13.0.*' 'nvidia-cuda-runtime==13.0.*'\n\
or into kwb's own cache folder with\n    \
python3 -m pip install --target ~/.cache/kwb/cuda-wheels 'nvidia-cuda-nvrtc==13.0.*' 'nvidia-cuda-runtime==13.0.*'\n\
or point KWB_CUDA_PATH at a folder that holds lib/libnvrtc.so and include/cuda_fp16.h.";

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("  - {}", p.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where to look: toolkit-style roots and Python site-packages folders, in priority order.
#[derive(Debug, Clone, Default)]
pub struct SearchRoots {
    pub toolkits: Vec<PathBuf>,
    pub site_packages: Vec<PathBuf>,
}

impl SearchRoots {
    /// The roots from the environment: `KWB_CUDA_PATH`, `CUDA_HOME`, `CUDA_PATH`,
    /// `/usr/local/cuda`, kwb's cache folder, then the active Python's site-packages.
    pub fn from_env() -> SearchRoots {
        let mut toolkits = Vec::new();
        for var in ["KWB_CUDA_PATH", "CUDA_HOME", "CUDA_PATH"] {
            if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                toolkits.push(PathBuf::from(v));
            }
        }
        toolkits.push(PathBuf::from("/usr/local/cuda"));
        let mut site_packages = Vec::new();
        if let Some(cache) = crate::cache_dir() {
            site_packages.push(cache.join("cuda-wheels"));
        }
        SearchRoots {
            toolkits,
            site_packages,
        }
    }

    /// Adds the active Python's site-packages (spawns `python3` once; only called when the
    /// cheaper places came up empty; also by the CUPTI locator, `run::cupti_locate`).
    pub fn with_python(mut self) -> SearchRoots {
        self.site_packages.extend(python_site_packages());
        self
    }
}

/// Finds NVRTC and the headers, looking at Python's site-packages only if needed.
pub fn locate() -> Result<CudaPaths, LocateError> {
    let roots = SearchRoots::from_env();
    match locate_in(&roots) {
        Ok(p) => Ok(p),
        Err(_) => locate_in(&roots.with_python()),
    }
}

/// Finds NVRTC and the headers under the given roots only.
pub fn locate_in(roots: &SearchRoots) -> Result<CudaPaths, LocateError> {
    let mut lib_dirs = Vec::new();
    let mut inc_dirs = Vec::new();
    for t in &roots.toolkits {
        for sub in [
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            lib_dirs.push(t.join(sub));
        }
        inc_dirs.push(t.join("include"));
        inc_dirs.push(t.join("targets/x86_64-linux/include"));
    }
    for s in &roots.site_packages {
        for (lib, inc) in [
            ("nvidia/cu13/lib", "nvidia/cu13/include"),
            ("nvidia/cu12/lib", "nvidia/cu12/include"),
            ("nvidia/cuda_nvrtc/lib", "nvidia/cuda_runtime/include"),
        ] {
            lib_dirs.push(s.join(lib));
            inc_dirs.push(s.join(inc));
        }
    }
    let nvrtc_lib =
        lib_dirs
            .iter()
            .find_map(|d| find_nvrtc(d))
            .ok_or_else(|| LocateError::NvrtcNotFound {
                searched: lib_dirs.clone(),
            })?;
    let include_dir = inc_dirs
        .iter()
        .find(|d| d.join("cuda_fp16.h").is_file())
        .cloned()
        .ok_or(LocateError::HeadersNotFound { searched: inc_dirs })?;
    Ok(CudaPaths {
        nvrtc_lib,
        include_dir,
    })
}

/// The NVRTC library in `dir`: `libnvrtc.so.<major>` preferred, else `libnvrtc.so`.
fn find_nvrtc(dir: &Path) -> Option<PathBuf> {
    find_versioned_lib(dir, "libnvrtc.so")
}

/// The library `stem` (e.g. `libnvrtc.so`) in `dir`: the highest `<stem>.<major>`, the shortest
/// name among equals (`libcupti.so.13` before `libcupti.so.13.0.85`), else `<stem>` itself.
/// Names that only start like it (`libnvrtc-builtins.so`, `libcupti.so.bak`) do not count.
pub fn find_versioned_lib(dir: &Path, stem: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<(u32, usize, PathBuf)> = None;
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix(stem) else {
            continue;
        };
        let major = match rest.strip_prefix('.') {
            None if rest.is_empty() => 0,
            Some(v) => match v.split('.').next().and_then(|m| m.parse().ok()) {
                Some(m) => m,
                None => continue,
            },
            None => continue,
        };
        let better = best
            .as_ref()
            .is_none_or(|(m, len, _)| major > *m || (major == *m && name.len() < *len));
        if better {
            best = Some((major, name.len(), e.path()));
        }
    }
    best.map(|(_, _, p)| p)
}

fn python_site_packages() -> Vec<PathBuf> {
    let script = "import site, sys\nfor p in site.getsitepackages() + [site.getusersitepackages()]: print(p)";
    for py in ["python3", "python"] {
        if let Ok(out) = Command::new(py).args(["-c", script]).output() {
            if out.status.success() {
                return String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(PathBuf::from)
                    .collect();
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_every_place_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let roots = SearchRoots {
            toolkits: vec![dir.path().join("toolkit")],
            site_packages: vec![dir.path().join("site")],
        };
        let err = locate_in(&roots).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("NVRTC (libnvrtc.so) not found"), "{msg}");
        assert!(msg.contains(&dir.path().join("toolkit/lib64").display().to_string()));
        assert!(msg.contains(
            &dir.path()
                .join("site/nvidia/cu13/lib")
                .display()
                .to_string()
        ));
        assert!(msg.contains("pip install"));
    }

    #[test]
    fn prefers_the_highest_major_and_skips_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("nvidia/cu13/lib");
        let inc = dir.path().join("nvidia/cu13/include");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::create_dir_all(&inc).unwrap();
        for f in [
            "libnvrtc-builtins.so.13.0",
            "libnvrtc.alt.so.13",
            "libnvrtc.so.12",
            "libnvrtc.so.13",
        ] {
            std::fs::write(lib.join(f), b"").unwrap();
        }
        std::fs::write(inc.join("cuda_fp16.h"), b"").unwrap();
        let roots = SearchRoots {
            toolkits: vec![],
            site_packages: vec![dir.path().to_path_buf()],
        };
        let found = locate_in(&roots).unwrap();
        assert_eq!(found.nvrtc_lib, lib.join("libnvrtc.so.13"));
        assert_eq!(found.include_dir, inc);
    }

    #[test]
    fn missing_headers_are_their_own_error() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib64");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libnvrtc.so.13"), b"").unwrap();
        let roots = SearchRoots {
            toolkits: vec![dir.path().to_path_buf()],
            site_packages: vec![],
        };
        let err = locate_in(&roots).unwrap_err();
        assert!(matches!(err, LocateError::HeadersNotFound { .. }), "{err}");
        assert!(err.to_string().contains("cuda_fp16.h"));
    }
}
