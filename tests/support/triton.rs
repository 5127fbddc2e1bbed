//! Triton itself, for differential tests: torch and triton installed from the package index
//! into kwb's cache folder (as NVRTC is), and `scripts/triton_interpret.py` run as a server
//! that executes kernels under Triton's interpreter on the CPU.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// The folder torch and triton are installed in (`$KWB_TRITON_PY` overrides), installing
/// them there when they are missing. Err says why they could not be had.
pub fn provision() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("KWB_TRITON_PY") {
        Some(d) => PathBuf::from(d),
        None => kwb::cache_dir()
            .ok_or("no cache folder: set HOME or KWB_CACHE_DIR")?
            .join("triton-cpu"),
    };
    if dir.join("triton/__init__.py").exists() && dir.join("torch/__init__.py").exists() {
        return Ok(dir);
    }
    if std::env::var_os("KWB_NO_INSTALL").is_some() {
        return Err(format!(
            "torch and triton are not in {} and KWB_NO_INSTALL is set",
            dir.display()
        ));
    }
    eprintln!(
        "tests: installing torch and triton from the package index into {}",
        dir.display()
    );
    kwb::compile::provision::pip_install(&dir, &["torch", "triton", "numpy"])
        .map_err(|e| format!("torch and triton could not be installed: {e}"))?;
    Ok(dir)
}

/// A running `scripts/triton_interpret.py`, restarted when it dies or hangs.
pub struct Interpreter {
    make: Box<dyn Fn() -> Command + Send>,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Triton's and torch's versions, as the server reported them.
    pub versions: String,
}

/// How long one program may take in Triton (`KWB_TRITON_TIMEOUT_S`, default 60 s): a reduced
/// program can loop forever.
fn timeout() -> Duration {
    let s = std::env::var("KWB_TRITON_TIMEOUT_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(s)
}

impl Interpreter {
    /// Triton's interpreter on the CPU, torch and triton from `site`.
    pub fn start(site: &std::path::Path) -> Result<Interpreter, String> {
        let site = site.to_path_buf();
        Self::spawn(Box::new(move || {
            let mut cmd = Command::new("python3");
            cmd.env("PYTHONPATH", &site).env("TRITON_INTERPRET", "1");
            cmd
        }))
    }

    /// Triton compiling for GPU `ordinal` (the only one it sees), with the machine's own torch
    /// and triton.
    pub fn start_compiled(ordinal: usize) -> Result<Interpreter, String> {
        Self::spawn(Box::new(move || {
            let mut cmd = Command::new("python3");
            cmd.env("KWB_TRITON_DEVICE", "cuda")
                // Neither side contracts `a * b + c` (kwb's workspace says
                // `enable_fp_fusion: false`), for a like comparison (docs/differential.md,
                // "FMA contraction").
                .env("KWB_TRITON_FP_FUSION", "0")
                .env("CUDA_VISIBLE_DEVICES", ordinal.to_string())
                .env_remove("TRITON_INTERPRET");
            cmd
        }))
    }

    fn spawn(make: Box<dyn Fn() -> Command + Send>) -> Result<Interpreter, String> {
        let (child, stdin, lines) = Self::launch(&make)?;
        let mut me = Interpreter {
            make,
            child,
            stdin,
            lines,
            versions: String::new(),
        };
        // Importing torch can take a while on a cold machine.
        let ready = me.line(Duration::from_secs(300))?;
        if !ready.contains("\"ready\"") {
            return Err(format!("the Triton interpreter did not start: {ready}"));
        }
        me.versions = ready;
        Ok(me)
    }

    fn launch(make: &dyn Fn() -> Command) -> Result<(Child, ChildStdin, Receiver<String>), String> {
        let mut child = make()
            .arg(super::repo().join("scripts/triton_interpret.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start python3: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for l in stdout.lines() {
                let Ok(l) = l else { break };
                if send.send(l).is_err() {
                    break;
                }
            }
        });
        Ok((child, stdin, lines))
    }

    fn line(&mut self, wait: Duration) -> Result<String, String> {
        match self.lines.recv_timeout(wait) {
            Ok(l) => Ok(l),
            Err(RecvTimeoutError::Timeout) => Err(format!("no answer in {} s", wait.as_secs())),
            Err(RecvTimeoutError::Disconnected) => Err("the process exited".into()),
        }
    }

    /// Replaces a dead or hung process with a new one.
    fn restart(&mut self) -> Result<(), String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, stdin, lines) = Self::launch(&self.make)?;
        (self.child, self.stdin, self.lines) = (child, stdin, lines);
        let ready = self.line(Duration::from_secs(300))?;
        if ready.contains("\"ready\"") {
            Ok(())
        } else {
            Err(format!("the Triton interpreter did not restart: {ready}"))
        }
    }

    /// Runs one request (a JSON object, see the script); Err is Triton's error. A process that
    /// dies or hangs on a program is replaced, and the program counts as one Triton rejects.
    pub fn run(&mut self, request: &str) -> Result<(), String> {
        let sent = writeln!(self.stdin, "{request}").and_then(|_| self.stdin.flush());
        let answer = match sent {
            Ok(()) => self.line(timeout()),
            Err(e) => Err(e.to_string()),
        };
        match answer {
            Ok(a) if a.contains("\"ok\": true") => Ok(()),
            Ok(a) => Err(a.trim().to_string()),
            Err(e) => {
                let restarted = self.restart();
                Err(format!(
                    "Triton's process failed on this program ({e}); restarted: {restarted:?}"
                ))
            }
        }
    }
}

impl Drop for Interpreter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
