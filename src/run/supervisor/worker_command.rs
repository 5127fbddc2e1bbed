//! How a worker is started: this kwb's own `kwb worker` by default, any command that speaks
//! the protocol (`--worker-cmd`, run by `sh -c`), or `ssh HOST kwb worker` (`--remote HOST`).
//! The command also knows how to name itself in messages, and what to tell the user when the
//! worker at the other end is another kwb.

use std::io;
use std::path::{Path, PathBuf};

/// How to start a worker: by default this executable with the `worker` argument; `--worker-cmd`
/// gives any command that speaks the protocol, and `--remote HOST` is `ssh HOST kwb worker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The host a remote worker runs on, for messages (how to install kwb there).
    pub host: Option<String>,
    /// Variables set in the worker's environment (on this machine: an ssh worker does not get
    /// them).
    pub env: Vec<(String, String)>,
}

impl WorkerCommand {
    /// `<this executable> worker`.
    pub fn current_exe() -> io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?, ["worker"]))
    }

    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            host: None,
            env: Vec::new(),
        }
    }

    /// Any command line, run by `sh -c`.
    pub fn shell(command: &str) -> Self {
        Self::new("sh", ["-c", command])
    }

    /// `ssh HOST kwb worker`, with the user's own ssh config and agent. Never a password
    /// prompt (it would fight the TUI for the terminal); a connection that goes quiet for 15 s
    /// counts as dropped.
    pub fn ssh(host: &str) -> Self {
        let options = [
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
        ];
        let mut args: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        args.extend([host.to_string(), "kwb".into(), "worker".into()]);
        Self {
            host: Some(host.to_string()),
            ..Self::new("ssh", args)
        }
    }

    /// The same command with `name=value` in its environment.
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The command as the user wrote it, for messages.
    pub fn label(&self) -> String {
        match (&self.host, self.args.as_slice()) {
            (Some(host), _) => format!("ssh {host} kwb worker"),
            (None, [c, script]) if self.program == Path::new("sh") && c == "-c" => script.clone(),
            (None, args) => std::iter::once(self.program.display().to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// What to do when the worker runs another kwb.
    pub(crate) fn install_hint(&self) -> String {
        let ours = env!("CARGO_PKG_VERSION");
        let exe = std::env::current_exe().map_or("kwb".into(), |p| p.display().to_string());
        match &self.host {
            Some(host) => format!(
                "install kwb {ours} on {host}: run `cargo install --path .` in a checkout of this \
                 kwb on {host}, or copy this binary ({exe}) into a folder on {host}'s PATH"
            ),
            None => format!("make `{}` run kwb {ours}", self.label()),
        }
    }
}
