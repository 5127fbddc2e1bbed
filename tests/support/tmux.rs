//! A `kwb watch` in a real terminal: a tmux session whose screen tests read, waiting on
//! conditions with deadlines, never on sleeps alone.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `Err(why)` when tmux cannot be run here.
pub fn available() -> Result<(), String> {
    match Command::new("tmux").arg("-V").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("tmux is not installed (apt-get install tmux)".into()),
    }
}

/// A tmux session running kwb, killed on drop.
pub struct Tmux(String);

impl Tmux {
    pub fn start(cmd: &str) -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("kwb-test-{}-{n}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "160",
                "-y",
                "45",
                cmd,
            ])
            .args([";", "set-option", "remain-on-exit", "on"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session");
        Tmux(name)
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.0])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if std::time::Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen was:\n{screen}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn keys(&self, keys: &str) {
        let ok = Command::new("tmux")
            .args(["send-keys", "-t", &self.0, keys])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux send-keys");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}
