//! Running the user's program, unchanged, with the capture hook: the hook is installed as a
//! `sitecustomize` module in a folder put first on `PYTHONPATH`, so every Python process the
//! program starts (pytest workers too) records its launches. The program's output passes
//! through; the last lines of its stderr are kept for the error when it fails.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The hook, written into the capture folder at each run.
pub const HOOK: &str = include_str!("hook.py");

/// Stderr lines kept for the error of a failed program.
const TAIL_LINES: usize = 20;

/// What the recording asks of the hook.
#[derive(Debug, Clone)]
pub struct HookSettings {
    pub kernels: Option<String>,
    pub max_per_kernel: u32,
    pub max_bytes: u64,
    /// Time Triton's kernels on the GPU.
    pub time: bool,
    pub reps: u32,
}

/// How the program ended.
#[derive(Debug)]
pub struct Ended {
    pub code: Option<i32>,
    pub stderr_tail: Vec<String>,
    pub wall: Duration,
}

/// Runs `argv` with the hook writing into `out`; `Err` when it could not be started.
pub fn run(argv: &[String], out: &Path, s: &HookSettings) -> std::io::Result<Ended> {
    let hook_dir = out.join(".hook");
    std::fs::create_dir_all(&hook_dir)?;
    std::fs::write(hook_dir.join("sitecustomize.py"), HOOK)?;
    let mut path = std::ffi::OsString::from(hook_dir.as_os_str());
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("no program to run"))?;
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .env("PYTHONPATH", path)
        .env("KWB_CAPTURE_DIR", out)
        .env("KWB_CAPTURE_MAX_PER_KERNEL", s.max_per_kernel.to_string())
        .env("KWB_CAPTURE_MAX_BYTES", s.max_bytes.to_string())
        .env("KWB_CAPTURE_TIME", if s.time { "1" } else { "0" })
        .env("KWB_CAPTURE_REPS", s.reps.to_string())
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped());
    match &s.kernels {
        Some(k) => cmd.env("KWB_CAPTURE_KERNELS", k),
        None => cmd.env_remove("KWB_CAPTURE_KERNELS"),
    };
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let mut tail = VecDeque::with_capacity(TAIL_LINES);
    if let Some(err) = child.stderr.take() {
        let mut stderr = std::io::stderr();
        for line in BufReader::new(err).split(b'\n').map_while(Result::ok) {
            let _ = stderr.write_all(&line);
            let _ = stderr.write_all(b"\n");
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(String::from_utf8_lossy(&line).into_owned());
        }
    }
    let status = child.wait()?;
    Ok(Ended {
        code: status.code(),
        stderr_tail: tail.into(),
        wall: start.elapsed(),
    })
}
