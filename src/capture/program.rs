//! Running the user's program, unchanged, with the capture hook: the hook is installed as a
//! `sitecustomize` module in a folder put first on `PYTHONPATH`, so every Python process the
//! program starts (pytest workers too) records its launches. The program's output passes
//! through; the last lines of its stderr are kept for the error when it fails.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
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
    /// The signal that stopped it, when one did.
    pub signal: Option<i32>,
    pub stderr_tail: Vec<String>,
    pub wall: Duration,
}

/// The program's pid while it runs, for the signal handler (0: none).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe; the pid is our own child's until it is reaped.
        unsafe { libc::kill(pid, sig) };
    }
}

/// While alive, SIGINT and SIGTERM sent to kwb go to the program instead: kwb outlives it and
/// writes the launches recorded before it stopped. The handlers before are put back on drop.
struct Forward {
    old: [(libc::c_int, libc::sighandler_t); 2],
}

impl Forward {
    fn install(pid: u32) -> Forward {
        CHILD.store(pid as i32, Ordering::SeqCst);
        let handler = forward_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only reads an atomic and calls kill(2).
        let old =
            [libc::SIGINT, libc::SIGTERM].map(|sig| (sig, unsafe { libc::signal(sig, handler) }));
        Forward { old }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        for (sig, old) in self.old {
            // SAFETY: restores the disposition `install` replaced.
            unsafe { libc::signal(sig, old) };
        }
        CHILD.store(0, Ordering::SeqCst);
    }
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
    // Ctrl-C or a `timeout` stops the program, not the capture: what it recorded is written.
    let forward = Forward::install(child.id());
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
    let status = child.wait();
    drop(forward);
    let status = status?;
    Ok(Ended {
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stderr_tail: tail.into(),
        wall: start.elapsed(),
    })
}
