//! The compile cache: NVRTC's outputs on disk, keyed by everything that can change them (the
//! source, the local files it includes, the options and the NVRTC version), so an unchanged
//! version reloads in well under a millisecond instead of recompiling.

use super::nvrtc::RawOutput;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Bumped when the cached layout or what kwb derives from it changes.
const FORMAT: &str = "kwb-compile-cache-1";

/// A folder of cached compiles; `None` disables caching.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: Some(dir.into()),
        }
    }

    pub fn disabled() -> Cache {
        Cache { dir: None }
    }

    /// kwb's default cache folder (`$KWB_CACHE_DIR`, `$XDG_CACHE_HOME/kwb` or `~/.cache/kwb`).
    pub fn default_location() -> Cache {
        Cache {
            dir: crate::cache_dir().map(|d| d.join("compile")),
        }
    }

    /// The key for one compile.
    pub fn key(
        source: &str,
        includes: &[(PathBuf, Vec<u8>)],
        options: &[String],
        nvrtc: (i32, i32),
    ) -> String {
        let mut h = Sha256::new();
        h.update(FORMAT);
        h.update(format!("nvrtc {}.{}\0", nvrtc.0, nvrtc.1));
        for o in options {
            h.update(o.as_bytes());
            h.update([0]);
        }
        h.update(source.len().to_le_bytes());
        h.update(source.as_bytes());
        for (path, bytes) in includes {
            h.update(path.to_string_lossy().as_bytes());
            h.update([0]);
            h.update(bytes.len().to_le_bytes());
            h.update(bytes);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn entry(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(&key[..2]).join(key))
    }

    /// A cached output, if present and whole.
    pub fn get(&self, key: &str) -> Option<RawOutput> {
        let e = self.entry(key)?;
        let meta = std::fs::read_to_string(e.join("ok")).ok()?;
        Some(RawOutput {
            ok: meta.trim() == "1",
            log: std::fs::read_to_string(e.join("log.txt")).ok()?,
            ptx: std::fs::read_to_string(e.join("kernel.ptx")).ok()?,
            cubin: std::fs::read(e.join("kernel.cubin")).ok()?,
        })
    }

    /// Stores an output. Written to a temporary folder and renamed into place, so a reader never
    /// sees half an entry; failures are ignored (the cache is only an accelerator).
    pub fn put(&self, key: &str, out: &RawOutput) {
        let Some(e) = self.entry(key) else { return };
        let _ = write_entry(&e, out);
    }
}

fn write_entry(e: &Path, out: &RawOutput) -> std::io::Result<()> {
    let parent = e.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(
        ".tmp-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    std::fs::write(tmp.join("log.txt"), &out.log)?;
    std::fs::write(tmp.join("kernel.ptx"), &out.ptx)?;
    std::fs::write(tmp.join("kernel.cubin"), &out.cubin)?;
    std::fs::write(tmp.join("ok"), if out.ok { "1" } else { "0" })?;
    if std::fs::rename(&tmp, e).is_err() {
        // Another process stored the same key first; theirs is as good as ours.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keys_on_every_input() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let opts = vec!["--gpu-architecture=sm_90".to_string()];
        let k = Cache::key("src", &[], &opts, (13, 0));
        assert!(cache.get(&k).is_none());
        let out = RawOutput {
            ok: true,
            log: "log".into(),
            ptx: "ptx".into(),
            cubin: vec![1, 2, 3],
        };
        cache.put(&k, &out);
        let back = cache.get(&k).unwrap();
        assert_eq!(
            (back.ok, back.log, back.ptx, back.cubin),
            (true, "log".into(), "ptx".into(), vec![1, 2, 3])
        );

        let inc = vec![(PathBuf::from("a.cuh"), b"x".to_vec())];
        let others = [
            Cache::key("src2", &[], &opts, (13, 0)),
            Cache::key("src", &inc, &opts, (13, 0)),
            Cache::key("src", &[], &[], (13, 0)),
            Cache::key("src", &[], &opts, (12, 9)),
        ];
        for o in others {
            assert_ne!(o, k);
        }
        assert!(Cache::disabled().get(&k).is_none());
    }
}
