//! The local files a kernel pulls in with `#include "..."`, found by a light scan (no
//! preprocessing), so that editing a header invalidates the cache and is watched like the kernel.

use std::path::{Path, PathBuf};

/// Every file reachable from `file` through quoted includes, resolved against the including
/// file's folder and then `search_dirs`. Missing files are skipped: NVRTC reports them.
pub fn local_includes(file: &Path, source: &str, search_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, String)> = vec![(file.to_path_buf(), source.to_string())];
    while let Some((from, text)) = queue.pop() {
        let here = from.parent().map(Path::to_path_buf).unwrap_or_default();
        for name in quoted_includes(&text) {
            let candidates =
                std::iter::once(here.join(name)).chain(search_dirs.iter().map(|d| d.join(name)));
            let Some(path) = candidates.into_iter().find(|p| p.is_file()) else {
                continue;
            };
            if found.contains(&path) || path == file {
                continue;
            }
            if let Ok(t) = std::fs::read_to_string(&path) {
                queue.push((path.clone(), t));
            }
            found.push(path);
        }
    }
    found
}

/// The names in `#include "name"` lines of `source`.
pub fn quoted_includes(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_quoted_includes_transitively_and_ignores_system_ones() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("common")).unwrap();
        std::fs::write(d.join("common/a.cuh"), "#include \"b.cuh\"\n").unwrap();
        std::fs::write(d.join("common/b.cuh"), "// leaf\n#include \"a.cuh\"\n").unwrap();
        let src = "#include <cuda_fp16.h>\n  #  include \"common/a.cuh\"\n#include \"missing.h\"\n";
        let k = d.join("k.cu");
        std::fs::write(&k, src).unwrap();
        let inc = local_includes(&k, src, &[]);
        assert_eq!(inc, vec![d.join("common/a.cuh"), d.join("common/b.cuh")]);
    }
}
