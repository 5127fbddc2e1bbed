//! Triton itself, for differential tests: torch and triton installed from the package index
//! into kwb's cache folder (as NVRTC is), and `scripts/triton_interpret.py` run as a server
//! that executes kernels under Triton's interpreter on the CPU.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

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

/// A running `scripts/triton_interpret.py`.
pub struct Interpreter {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Triton's and torch's versions, as the server reported them.
    pub versions: String,
}

impl Interpreter {
    /// Triton's interpreter on the CPU, torch and triton from `site`.
    pub fn start(site: &std::path::Path) -> Result<Interpreter, String> {
        let mut cmd = Command::new("python3");
        cmd.env("PYTHONPATH", site).env("TRITON_INTERPRET", "1");
        Self::spawn(cmd)
    }

    /// Triton compiling for the GPU, with the machine's own torch and triton.
    pub fn start_compiled() -> Result<Interpreter, String> {
        let mut cmd = Command::new("python3");
        cmd.env("KWB_TRITON_DEVICE", "cuda")
            .env_remove("TRITON_INTERPRET");
        Self::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Result<Interpreter, String> {
        let mut child = cmd
            .arg(super::repo().join("scripts/triton_interpret.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start python3: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut me = Interpreter {
            child,
            stdin,
            stdout,
            versions: String::new(),
        };
        let ready = me.line()?;
        if !ready.contains("\"ready\"") {
            return Err(format!("the Triton interpreter did not start: {ready}"));
        }
        me.versions = ready;
        Ok(me)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut l = String::new();
        match self.stdout.read_line(&mut l) {
            Ok(0) => Err("the Triton interpreter exited".into()),
            Ok(_) => Ok(l),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Runs one request (a JSON object, see the script); Err is Triton's error.
    pub fn run(&mut self, request: &str) -> Result<(), String> {
        writeln!(self.stdin, "{request}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        let answer = self.line()?;
        if answer.contains("\"ok\": true") {
            Ok(())
        } else {
            Err(answer.trim().to_string())
        }
    }
}

impl Drop for Interpreter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
