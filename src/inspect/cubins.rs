//! `kwb inspect --cubin-dir DIR`: each compiled version's CUBIN written out, so that other
//! tools (a benchmark harness, `cuobjdump`, a user's own launcher) can load exactly what kwb
//! runs. A tile version has one CUBIN per specialisation; each size gets the file of the
//! specialisation that serves it.

use crate::compile::CompiledVersion;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CubinError {
    #[error("--cubin-dir {0}: cannot create the folder: {1}")]
    CreateDir(PathBuf, std::io::Error),
    #[error(
        "{0} already exists: kwb does not overwrite files; remove it or pick another --cubin-dir"
    )]
    Exists(PathBuf),
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, std::io::Error),
}

/// One CUBIN to write: where, and its bytes.
struct Planned<'a> {
    path: PathBuf,
    cubin: &'a [u8],
}

/// A file name made only of characters that are safe everywhere.
fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The files `write` would create for `compiled` in `dir`: `VERSION.cubin` for a compile that
/// serves every size, `VERSION@SIZE.cubin` for each size of a specialised one. Versions that did
/// not compile have no file.
fn plan<'a>(compiled: &'a [CompiledVersion], dir: &Path) -> Vec<Planned<'a>> {
    let mut out = Vec::new();
    for c in compiled.iter().filter(|c| c.ok) {
        for part in std::iter::once(c).chain(&c.variants) {
            let name = safe(&part.version);
            if part.sizes.is_empty() {
                out.push(Planned {
                    path: dir.join(format!("{name}.cubin")),
                    cubin: &part.cubin,
                });
            }
            for size in &part.sizes {
                out.push(Planned {
                    path: dir.join(format!("{name}@{}.cubin", safe(size))),
                    cubin: &part.cubin,
                });
            }
        }
    }
    out
}

/// Writes every compiled version's CUBIN into `dir` (created if missing) and returns the paths.
/// Nothing is written when any of the files already exists.
pub fn write(compiled: &[CompiledVersion], dir: &Path) -> Result<Vec<PathBuf>, CubinError> {
    std::fs::create_dir_all(dir).map_err(|e| CubinError::CreateDir(dir.to_path_buf(), e))?;
    let planned = plan(compiled, dir);
    if let Some(p) = planned.iter().find(|p| p.path.exists()) {
        return Err(CubinError::Exists(p.path.clone()));
    }
    for p in &planned {
        std::fs::write(&p.path, p.cubin).map_err(|e| CubinError::Write(p.path.clone(), e))?;
    }
    Ok(planned.into_iter().map(|p| p.path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe() {
        assert_eq!(safe("v5[num_warps=4]"), "v5_num_warps_4_");
        assert_eq!(safe("4096x1024"), "4096x1024");
        assert_eq!(safe("../x"), ".._x");
    }
}
