//! References computed once per host for several workers.
//!
//! With `--devices`, each GPU has a worker process of its own, and every worker needs the
//! reference of each size it runs. A matmul reference at 4096³ is seconds of host work; two
//! workers making it side by side on one CPU took 7.6 s where one alone took 3.3 s. So workers
//! started for one run share a folder (`KWB_SHARED_DATA`, made and removed by the run): the
//! first worker to need a reference takes a lock file and makes it, and the others wait for its
//! file and read it. A worker that finds the lock's holder gone (killed mid-reference) takes the
//! lock over. References of different sizes are made one at a time on the host (each uses
//! every core; two side by side took longer each than both one after the other). Nothing here
//! is needed for correctness: without the variable, or when the folder
//! cannot be used, a worker makes its own reference, as one worker always did.

use crate::expr::Tensor;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable that names the shared folder.
pub const SHARED_DATA_VAR: &str = "KWB_SHARED_DATA";

const MAGIC: &[u8; 8] = b"KWBREF1\n";
/// How long a worker waits for another's reference before making its own.
const PATIENCE: Duration = Duration::from_secs(600);

/// A folder shared by the workers of one run.
pub struct SharedRefs {
    dir: PathBuf,
}

impl SharedRefs {
    /// The folder `KWB_SHARED_DATA` names, if it is set and is a folder.
    pub fn from_env() -> Option<SharedRefs> {
        let dir = PathBuf::from(std::env::var_os(SHARED_DATA_VAR)?);
        dir.is_dir().then_some(SharedRefs { dir })
    }

    pub fn new(dir: PathBuf) -> SharedRefs {
        SharedRefs { dir }
    }

    fn path(&self, key: u64, ext: &str) -> PathBuf {
        self.dir.join(format!("{key:016x}.{ext}"))
    }

    /// The reference for `key`: read from the folder when another worker made it, else made
    /// here by `make` (and written for the others). An error of `make` is returned as is; an
    /// error of the folder only means making the reference here.
    pub fn get_or_make(
        &self,
        key: u64,
        make: impl FnOnce() -> Result<Vec<Tensor>, String>,
    ) -> Result<Vec<Tensor>, String> {
        let done = self.path(key, "ref");
        let lock = self.path(key, "lock");
        let start = Instant::now();
        loop {
            if let Ok(t) = read(&done) {
                return Ok(t);
            }
            match OpenOptions::new().write(true).create_new(true).open(&lock) {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    let host = self.dir.join("host.lock");
                    let turn = take_turn(&host, start);
                    let made = make();
                    if turn {
                        let _ = fs::remove_file(&host);
                    }
                    if let Ok(t) = &made {
                        let tmp = self.path(key, &format!("tmp{}", std::process::id()));
                        if write(&tmp, t).is_ok() {
                            let _ = fs::rename(&tmp, &done);
                        }
                        let _ = fs::remove_file(&tmp);
                    }
                    let _ = fs::remove_file(&lock);
                    return made;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if holder_gone(&lock) {
                        let _ = fs::remove_file(&lock);
                        continue;
                    }
                    if start.elapsed() > PATIENCE {
                        return make();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(_) => return make(),
            }
        }
    }
}

/// Waits for the host's turn to make a reference (the lock file at `path`), within the
/// patience left since `start`; true when the turn was taken (and must be given back).
fn take_turn(path: &Path, start: Instant) -> bool {
    loop {
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut f) => {
                let _ = writeln!(f, "{}", std::process::id());
                return true;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if holder_gone(path) {
                    let _ = fs::remove_file(path);
                } else if start.elapsed() > PATIENCE {
                    return false;
                } else {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Err(_) => return false,
        }
    }
}

/// Whether the process named in a lock file has ended (Linux `/proc`; elsewhere, or when the
/// file cannot be read yet, the holder is taken to be alive).
fn holder_gone(lock: &Path) -> bool {
    let Ok(text) = fs::read_to_string(lock) else {
        return false;
    };
    let Ok(pid) = text.trim().parse::<u32>() else {
        return false;
    };
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}

fn write(path: &Path, tensors: &[Tensor]) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    w.write_all(MAGIC)?;
    w.write_all(&(tensors.len() as u64).to_le_bytes())?;
    for t in tensors {
        w.write_all(&(t.shape.len() as u64).to_le_bytes())?;
        for &d in &t.shape {
            w.write_all(&(d as u64).to_le_bytes())?;
        }
        w.write_all(&(t.data.len() as u64).to_le_bytes())?;
        for chunk in t.data.chunks(1 << 16) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
    }
    w.flush()
}

fn read(path: &Path) -> io::Result<Vec<Tensor>> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(bad("not a kwb reference file"));
    }
    fn word(r: &mut impl Read) -> io::Result<u64> {
        let mut b = [0u8; 8];
        r.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    let count = word(&mut r)?;
    let mut out = Vec::new();
    let mut left = size;
    for _ in 0..count.min(1 << 16) {
        let ndim = word(&mut r)?;
        if ndim > 16 {
            return Err(bad("too many dimensions"));
        }
        let shape = (0..ndim)
            .map(|_| word(&mut r).map(|d| d as usize))
            .collect::<io::Result<Vec<_>>>()?;
        let len = word(&mut r)?;
        // A file cut short (or corrupt) is an error, never a huge allocation.
        if len.saturating_mul(8) > left || shape.iter().product::<usize>() as u64 != len {
            return Err(bad("truncated reference file"));
        }
        left -= len * 8;
        let mut data = Vec::with_capacity(len as usize);
        let mut buf = vec![0u8; 1 << 19];
        let mut rest = len as usize;
        while rest > 0 {
            let n = rest.min(buf.len() / 8);
            r.read_exact(&mut buf[..n * 8])?;
            data.extend(
                buf[..n * 8]
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))),
            );
            rest -= n;
        }
        out.push(Tensor { shape, data });
    }
    if out.len() as u64 != count {
        return Err(bad("too many tensors"));
    }
    Ok(out)
}

/// The folder a run's local workers share, removed when the run ends. In `/dev/shm` where
/// there is one (references are read back at memory speed), else the temporary folder.
pub struct SharedDir {
    pub path: PathBuf,
}

impl SharedDir {
    pub fn create() -> io::Result<SharedDir> {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = base.join(format!("kwb-shared-{}-{nanos}", std::process::id()));
        fs::create_dir(&path)?;
        Ok(SharedDir { path })
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn tensor(n: usize) -> Tensor {
        Tensor {
            shape: vec![2, n],
            data: (0..2 * n).map(|i| i as f64 * 0.5 - 3.0).collect(),
        }
    }

    #[test]
    fn one_of_several_workers_makes_the_reference_and_all_read_it() {
        let dir = SharedDir::create().unwrap();
        let made = Arc::new(AtomicUsize::new(0));
        let got: Vec<Vec<Tensor>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let (made, path) = (made.clone(), dir.path.clone());
                    s.spawn(move || {
                        SharedRefs::new(path)
                            .get_or_make(7, || {
                                made.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(100));
                                Ok(vec![tensor(1000), tensor(3)])
                            })
                            .unwrap()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
        for g in got {
            assert_eq!(g.len(), 2);
            assert_eq!(g[0].shape, vec![2, 1000]);
            assert_eq!(g[0].data, tensor(1000).data);
            assert_eq!(g[1].data, tensor(3).data);
        }
    }

    #[test]
    fn a_failed_reference_is_not_shared_and_a_dead_holder_is_taken_over() {
        let dir = SharedDir::create().unwrap();
        let refs = SharedRefs::new(dir.path.clone());
        assert_eq!(refs.get_or_make(1, || Err("bad".into())), Err("bad".into()));
        assert!(!refs.path(1, "ref").exists() && !refs.path(1, "lock").exists());
        // A lock left by a process that no longer exists.
        fs::write(refs.path(2, "lock"), "4000000000\n").unwrap();
        let t = refs.get_or_make(2, || Ok(vec![tensor(1)])).unwrap();
        assert_eq!(t[0].data, tensor(1).data);
    }

    #[test]
    fn a_truncated_or_foreign_file_is_an_error_not_an_allocation() {
        let dir = SharedDir::create().unwrap();
        let p = dir.path.join("x.ref");
        write(&p, &[tensor(100)]).unwrap();
        let full = fs::read(&p).unwrap();
        fs::write(&p, &full[..full.len() - 8]).unwrap();
        assert!(read(&p).is_err());
        let mut huge = full.clone();
        // The element count of the first tensor, claimed to be 2^60.
        let at = 8 + 8 + 8 + 2 * 8;
        huge[at..at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
        fs::write(&p, &huge).unwrap();
        assert!(read(&p).is_err());
        fs::write(&p, b"hello").unwrap();
        assert!(read(&p).is_err());
    }
}
