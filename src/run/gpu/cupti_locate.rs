//! Finding libcupti, the library that gives kernel times from the GPU's own timestamps. It is
//! optional: without it kwb times with CUDA events and says so. kwb looks where a CUDA user has
//! it (`KWB_CUDA_PATH`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`, each under `lib64/`,
//! `lib/` and `extras/CUPTI/lib64/`), then in the `nvidia-cuda-cupti` pip wheel in kwb's cache
//! folder and the active Python's site-packages, and loads it by full path, so nothing depends
//! on `LD_LIBRARY_PATH` (the same approach as NVRTC, `compile::locate`).

use crate::compile::locate::SearchRoots;
use std::path::{Path, PathBuf};

/// The folders searched, in order, for the given roots.
pub fn search_dirs(roots: &SearchRoots) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for t in &roots.toolkits {
        for sub in [
            "lib64",
            "lib",
            "extras/CUPTI/lib64",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            dirs.push(t.join(sub));
        }
    }
    for s in &roots.site_packages {
        for sub in [
            "nvidia/cu13/lib",
            "nvidia/cu12/lib",
            "nvidia/cuda_cupti/lib",
        ] {
            dirs.push(s.join(sub));
        }
    }
    dirs
}

/// The first folder (in search order) holding a libcupti, and in it the best file.
pub fn find_in(dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().find_map(|d| find_cupti(d))
}

/// libcupti in the usual places, with Python's site-packages searched only if needed; on
/// failure, every folder it looked in.
pub fn locate() -> Result<PathBuf, Vec<PathBuf>> {
    let roots = SearchRoots::from_env();
    let dirs = search_dirs(&roots);
    if let Some(p) = find_in(&dirs) {
        return Ok(p);
    }
    let dirs = search_dirs(&roots.with_python());
    find_in(&dirs).ok_or(dirs)
}

/// The CUPTI library in `dir`: the highest `libcupti.so.<major>`, the shortest name among
/// equals, else `libcupti.so`.
fn find_cupti(dir: &Path) -> Option<PathBuf> {
    crate::compile::locate::find_versioned_lib(dir, "libcupti.so")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, names: &[&str]) {
        std::fs::create_dir_all(dir).unwrap();
        for n in names {
            std::fs::write(dir.join(n), b"").unwrap();
        }
    }

    #[test]
    fn toolkits_come_before_wheels_in_the_documented_order() {
        let roots = SearchRoots {
            toolkits: vec!["/opt/kwb".into(), "/usr/local/cuda".into()],
            site_packages: vec!["/home/u/.cache/kwb/cuda-wheels".into()],
        };
        let dirs = search_dirs(&roots);
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(shown[0], "/opt/kwb/lib64");
        assert_eq!(shown[1], "/opt/kwb/lib");
        assert_eq!(shown[2], "/opt/kwb/extras/CUPTI/lib64");
        assert_eq!(shown[5], "/usr/local/cuda/lib64");
        assert_eq!(
            shown[10], "/home/u/.cache/kwb/cuda-wheels/nvidia/cu13/lib",
            "{shown:?}"
        );
    }

    #[test]
    fn the_first_folder_with_a_cupti_wins_and_prefers_the_soname() {
        let tmp = tempfile::tempdir().unwrap();
        let toolkit = tmp.path().join("toolkit");
        let wheels = tmp.path().join("wheels");
        touch(
            &toolkit.join("extras/CUPTI/lib64"),
            &["libcupti.so.13.0.85", "libcupti.so.13", "libcupti_static.a"],
        );
        touch(&wheels.join("nvidia/cu13/lib"), &["libcupti.so.13"]);
        let roots = SearchRoots {
            toolkits: vec![toolkit.clone()],
            site_packages: vec![wheels.clone()],
        };
        assert_eq!(
            find_in(&search_dirs(&roots)),
            Some(toolkit.join("extras/CUPTI/lib64/libcupti.so.13"))
        );
        // lib64 is looked at before extras/: a CUPTI there wins, the highest major first.
        touch(
            &toolkit.join("lib64"),
            &["libcupti.so.12", "libcupti.so.13", "libcupti.so"],
        );
        assert_eq!(
            find_in(&search_dirs(&roots)),
            Some(toolkit.join("lib64/libcupti.so.13"))
        );
        // No toolkit: the wheel.
        let roots = SearchRoots {
            toolkits: vec![tmp.path().join("none")],
            site_packages: vec![wheels.clone()],
        };
        assert_eq!(
            find_in(&search_dirs(&roots)),
            Some(wheels.join("nvidia/cu13/lib/libcupti.so.13"))
        );
        let nothing = SearchRoots {
            toolkits: vec![tmp.path().join("none")],
            site_packages: vec![],
        };
        assert_eq!(find_in(&search_dirs(&nothing)), None);
    }
}
