//! SASS for the TUI, when the machine has a disassembler.
//!
//! NVRTC gives kwb PTX and a CUBIN but no way to read the CUBIN's machine code; NVIDIA ships
//! that as separate tools (`nvdisasm`, `cuobjdump`) in the toolkit and in the
//! `nvidia-cuda-nvdisasm` wheel. kwb does not need them, so this module only looks for one in
//! the places kwb already knows for CUDA, runs it on a CUBIN written to a temporary file, and
//! bounds it with a timeout so a wedged tool cannot hang a compile worker.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a disassembly may take before the tool is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Which of NVIDIA's tools was found; they take different options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Nvdisasm,
    Cuobjdump,
}

impl Kind {
    fn file_name(self) -> String {
        let base = match self {
            Kind::Nvdisasm => "nvdisasm",
            Kind::Cuobjdump => "cuobjdump",
        };
        format!("{base}{}", std::env::consts::EXE_SUFFIX)
    }

    /// nvdisasm: code sections only (`-c`), annotated with the source lines of `-lineinfo`
    /// (`-g`). cuobjdump has no line-info mode; `-sass` prints the code.
    fn args(self) -> &'static [&'static str] {
        match self {
            Kind::Nvdisasm => &["-c", "-g"],
            Kind::Cuobjdump => &["-sass"],
        }
    }
}

/// A disassembler found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disassembler {
    pub program: PathBuf,
    pub kind: Kind,
}

#[derive(Debug, thiserror::Error)]
pub enum SassError {
    #[error("there is no CUBIN to disassemble")]
    EmptyCubin,
    #[error("cannot write the CUBIN to {}: {source}", path.display())]
    TempFile { path: PathBuf, source: io::Error },
    #[error("cannot run {}: {source}", program.display())]
    Spawn { program: PathBuf, source: io::Error },
    #[error("{} failed ({status}): {}", program.display(), stderr.trim())]
    Failed {
        program: PathBuf,
        status: String,
        stderr: String,
    },
    #[error("{} did not finish within {timeout:?} and was killed", program.display())]
    Timeout { program: PathBuf, timeout: Duration },
}

/// The folders searched, in order: `$KWB_CUDA_PATH/bin`, `$PATH`, `$CUDA_HOME/bin`,
/// `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, then pip `--target` folders in kwb's cache:
/// `cuda-wheels` (where kwb's NVRTC wheels go) and `nvdisasm-wheel`, each holding the
/// `nvidia-cuda-nvdisasm` wheel's `nvidia/cu13/bin/nvdisasm`.
pub fn search_dirs() -> Vec<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let mut dirs = Vec::new();
    if let Some(root) = var("KWB_CUDA_PATH") {
        dirs.push(PathBuf::from(root).join("bin"));
    }
    if let Some(path) = var("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|p| !p.as_os_str().is_empty()));
    }
    for root in ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(|k| var(k)) {
        dirs.push(PathBuf::from(root).join("bin"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    if let Some(cache) = crate::cache_dir() {
        let wheels = cache.join("cuda-wheels/nvidia");
        dirs.push(wheels.join("cu13/bin"));
        dirs.push(wheels.join("cu12/bin"));
        dirs.push(wheels.join("cuda_nvdisasm/bin"));
        // pip will not add a package to an existing `--target` folder, so the wheel is best
        // installed into a folder of its own.
        dirs.push(cache.join("nvdisasm-wheel/nvidia/cu13/bin"));
    }
    dirs
}

/// `nvdisasm` or `cuobjdump` on `PATH` or under the CUDA roots kwb knows (see `search_dirs`),
/// preferring nvdisasm wherever it is.
pub fn find_disassembler() -> Option<Disassembler> {
    find_disassembler_in(&search_dirs())
}

/// Like `find_disassembler`, over the given folders only.
pub fn find_disassembler_in(dirs: &[PathBuf]) -> Option<Disassembler> {
    [Kind::Nvdisasm, Kind::Cuobjdump]
        .into_iter()
        .find_map(|kind| {
            let name = kind.file_name();
            dirs.iter()
                .map(|d| d.join(&name))
                .find(|p| is_executable(p))
                .map(|program| Disassembler { program, kind })
        })
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// A temporary CUBIN, removed when dropped.
struct TempCubin(PathBuf);

impl TempCubin {
    fn write(bytes: &[u8]) -> Result<TempCubin, SassError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("kwb-sass-{}-{n}.cubin", std::process::id()));
        let result = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| io::Write::write_all(&mut f, bytes));
        match result {
            Ok(()) => Ok(TempCubin(path)),
            Err(source) => {
                let _ = std::fs::remove_file(&path);
                Err(SassError::TempFile { path, source })
            }
        }
    }
}

impl Drop for TempCubin {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Disassembler {
    /// Disassembles a CUBIN: writes it to a temporary file, runs the tool (nvdisasm `-c -g`,
    /// cuobjdump `-sass`) and returns its stdout, or an error carrying its stderr. The tool is
    /// killed after `DEFAULT_TIMEOUT`.
    pub fn disassemble(&self, cubin: &[u8]) -> Result<String, SassError> {
        self.disassemble_with_timeout(cubin, DEFAULT_TIMEOUT)
    }

    /// `disassemble` with a chosen timeout.
    pub fn disassemble_with_timeout(
        &self,
        cubin: &[u8],
        timeout: Duration,
    ) -> Result<String, SassError> {
        if cubin.is_empty() {
            return Err(SassError::EmptyCubin);
        }
        let file = TempCubin::write(cubin)?;
        let deadline = Instant::now() + timeout;
        let mut child = self.spawn(&file.0)?;
        let stdout = read_in_background(child.stdout.take());
        let stderr = read_in_background(child.stderr.take());
        let program = self.program.clone();
        let status = loop {
            let error = match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                Ok(None) => SassError::Timeout { program, timeout },
                Err(source) => SassError::Spawn { program, source },
            };
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        };
        // The pipes close when the tool exits; the grace period only matters if it left a
        // child of its own holding them.
        let grace = Duration::from_secs(1);
        let out = stdout.recv_timeout(grace).unwrap_or_default();
        let err = stderr.recv_timeout(grace).unwrap_or_default();
        if status.success() {
            Ok(String::from_utf8_lossy(&out).into_owned())
        } else {
            Err(SassError::Failed {
                program: self.program.clone(),
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&err).into_owned(),
            })
        }
    }

    fn spawn(&self, cubin: &Path) -> Result<std::process::Child, SassError> {
        let mut attempts = 0;
        loop {
            let spawned = Command::new(&self.program)
                .args(self.kind.args())
                .arg(cubin)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn();
            match spawned {
                // A tool being (re)installed right now is briefly "text file busy".
                Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy && attempts < 5 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(source) => {
                    return Err(SassError::Spawn {
                        program: self.program.clone(),
                        source,
                    })
                }
                Ok(child) => return Ok(child),
            }
        }
    }
}

fn read_in_background(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            let _ = tx.send(buf);
        });
    }
    rx
}

#[cfg(test)]
#[cfg(unix)] // The fake tools are shell scripts.
mod tests {
    use super::*;

    /// Writes an executable shell script named `name` into `dir`.
    fn tool(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    const FAKE_SASS: &str = r#"echo '        /*0000*/                   LDC R1, c[0x0][0x28] ;'
echo "args: $*"
for a; do last=$a; done
echo "bytes: $(wc -c < "$last" | tr -d ' ')""#;

    #[test]
    fn finds_a_fake_nvdisasm_and_runs_it_on_the_cubin() {
        let dir = tempfile::tempdir().unwrap();
        let program = tool(dir.path(), "nvdisasm", FAKE_SASS);
        let empty = tempfile::tempdir().unwrap();
        let found = find_disassembler_in(&[empty.path().into(), dir.path().into()]).unwrap();
        assert_eq!(
            found,
            Disassembler {
                program,
                kind: Kind::Nvdisasm
            }
        );
        let text = found.disassemble(b"\x7fELF fake cubin").unwrap();
        assert!(text.contains("LDC R1, c[0x0][0x28] ;"), "{text}");
        assert!(
            text.contains("bytes: 15"),
            "the tool read our CUBIN: {text}"
        );
        let args = text.lines().find_map(|l| l.strip_prefix("args: ")).unwrap();
        assert!(args.starts_with("-c -g "), "{args}");
        let cubin = PathBuf::from(args.rsplit(' ').next().unwrap());
        assert!(cubin.extension().is_some_and(|e| e == "cubin"));
        assert!(!cubin.exists(), "the temporary CUBIN is removed");
    }

    #[test]
    fn prefers_nvdisasm_and_skips_what_cannot_run() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cuobjdump = tool(a.path(), "cuobjdump", "echo \"cuobjdump $*\"");
        // Not executable: not a candidate.
        std::fs::write(a.path().join("nvdisasm"), "#!/bin/sh\n").unwrap();
        let dirs = [a.path().to_path_buf(), b.path().to_path_buf()];
        let found = find_disassembler_in(&dirs).unwrap();
        assert_eq!(found.kind, Kind::Cuobjdump);
        assert_eq!(found.program, cuobjdump);
        assert!(found
            .disassemble(b"x")
            .unwrap()
            .starts_with("cuobjdump -sass "));
        let nvdisasm = tool(b.path(), "nvdisasm", "true");
        assert_eq!(find_disassembler_in(&dirs).unwrap().program, nvdisasm);
        assert_eq!(find_disassembler_in(&[]), None);
        assert_eq!(
            find_disassembler_in(&[PathBuf::from("/nonexistent/kwb")]),
            None
        );
    }

    #[test]
    fn a_failing_tool_reports_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        tool(
            dir.path(),
            "nvdisasm",
            "echo partial; echo 'nvdisasm fatal : bad ELF' >&2; exit 3",
        );
        let d = find_disassembler_in(&[dir.path().into()]).unwrap();
        match d.disassemble(b"not an elf") {
            Err(SassError::Failed { stderr, status, .. }) => {
                assert_eq!(stderr.trim(), "nvdisasm fatal : bad ELF");
                assert!(status.contains('3'), "{status}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        assert!(matches!(d.disassemble(b""), Err(SassError::EmptyCubin)));
        let gone = Disassembler {
            program: dir.path().join("missing"),
            kind: Kind::Nvdisasm,
        };
        assert!(matches!(
            gone.disassemble(b"x"),
            Err(SassError::Spawn { .. })
        ));
    }

    #[test]
    fn a_hanging_tool_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        tool(dir.path(), "nvdisasm", "echo started; exec sleep 30");
        let d = find_disassembler_in(&[dir.path().into()]).unwrap();
        let start = Instant::now();
        let err = d
            .disassemble_with_timeout(b"x", Duration::from_millis(300))
            .unwrap_err();
        assert!(matches!(err, SassError::Timeout { .. }), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(err.to_string().contains("was killed"));
    }

    /// Runs only where a real disassembler is installed (e.g. the `nvidia-cuda-nvdisasm`
    /// wheel in kwb's cache folder) and NVRTC can compile.
    #[test]
    fn real_disassembler_on_a_real_cubin() {
        let Some(d) = find_disassembler() else {
            eprintln!("skipped: no nvdisasm or cuobjdump in {:?}", search_dirs());
            return;
        };
        let arch = crate::compile::Arch::parse("sm_90").unwrap();
        let compiler = match crate::compile::Compiler::new(arch, crate::compile::Cache::disabled())
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: NVRTC unavailable: {e}");
                return;
            }
        };
        let file =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/elementwise-add/v2_f32x4.cu");
        let ws = crate::workspace::Workspace::for_kernel_file(&file).unwrap();
        let compiled = compiler.compile_version(Some(&ws), &ws.versions[0]);
        assert!(compiled.ok, "{:?}", compiled.diagnostics);
        let sass = d.disassemble(&compiled.cubin).unwrap();
        assert!(sass.contains("add_f32x4"), "{sass}");
        assert!(sass.contains("LDG.E.128"), "the float4 load: {sass}");
        if d.kind == Kind::Nvdisasm {
            assert!(sass.contains("v2_f32x4.cu\", line 13"), "line info: {sass}");
        }
    }
}
