//! End to end, in a real terminal: `kwb watch` runs in tmux on a copy of the elementwise-add
//! workspace, and the test saves kernels the ways editors do (atomic rename, in-place write,
//! `sed -i`), breaks and fixes the workspace YAML, and quits, reading the screen with
//! `tmux capture-pane` and waiting on conditions with deadlines. Skips, saying why, without tmux.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

struct Session {
    name: String,
}

impl Session {
    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen satisfies `ok`, or fails with the last screen.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.capture();
            if ok(&screen) {
                return screen;
            }
            if Instant::now() > deadline || !self.alive() {
                panic!("timed out waiting for {what}; the screen was:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether kwb still runs in the pane.
    fn alive(&self) -> bool {
        let out = Command::new("tmux")
            .args(["display-message", "-p", "-t", &self.name, "#{pane_dead}"])
            .output();
        out.is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "0")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn atomic_write(path: &Path, text: &str) {
    let tmp = path.with_extension("cu.kwb-tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn watch_follows_saves_errors_and_fixes_in_a_real_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("skipped: tmux is not installed (apt-get install tmux)");
        return;
    }
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(
        &support::repo().join("kernels/elementwise-add"),
        &root.join("kernels/elementwise-add"),
    );
    std::fs::create_dir_all(root.join("workspaces")).unwrap();
    let ws: PathBuf = root.join("workspaces/elementwise-add.yaml");
    let yaml =
        std::fs::read_to_string(support::repo().join("workspaces/elementwise-add.yaml")).unwrap();
    std::fs::write(&ws, &yaml).unwrap();
    let kernel = root.join("kernels/elementwise-add/v1_f32.cu");
    let good = std::fs::read_to_string(&kernel).unwrap();

    let name = format!("kwb-e2e-{}", std::process::id());
    let cmd = format!(
        "{} watch {} --no-gpu",
        support::kwb_bin().display(),
        ws.display()
    );
    // remain-on-exit keeps the pane, and whatever kwb printed, if it stops early.
    let status = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "200",
            "-y",
            "50",
            &cmd,
        ])
        .args([";", "set-option", "remain-on-exit", "on"])
        .status()
        .expect("tmux new-session");
    assert!(status.success());
    let s = Session { name };

    s.wait_for("all versions compiled", |sc| {
        sc.contains("add_f32") && sc.contains("No GPU") && !sc.contains("compiling")
    });

    // 1. Atomic rename (VS Code, JetBrains): an undeclared identifier on line 11.
    atomic_write(
        &kernel,
        &good.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undeclared_thing;"),
    );
    s.wait_for("the diagnostic at v1_f32.cu:11", |sc| {
        sc.contains("v1_f32.cu:11") && sc.contains("undeclared_thing")
    });

    // Fixed by another atomic save: the error goes and the compile shows again.
    atomic_write(&kernel, &good);
    s.wait_for("the error to clear", |sc| {
        !sc.contains("undeclared_thing") && sc.contains("No problems.") && !sc.contains("stale")
    });

    // 2. In-place write (truncate and write), broken on line 9, then fixed with a change that
    //    the PTX and resources must show: a multiply-add instead of an add.
    std::fs::write(&kernel, good.replace("size_t i =", "size_t i = oops +")).unwrap();
    s.wait_for("the in-place error at line 9", |sc| {
        sc.contains("v1_f32.cu:9") && sc.contains("oops")
    });
    std::fs::write(
        &kernel,
        good.replace("c[i] = a[i] + b[i];", "c[i] = a[i] * 2.0f + b[i];"),
    )
    .unwrap();
    s.wait_for("the fixed PTX", |sc| {
        !sc.contains("oops") && sc.contains("No problems.") && !sc.contains("stale")
    });
    assert!(Command::new("tmux")
        .args(["send-keys", "-t", &s.name, "G"])
        .status()
        .unwrap()
        .success());
    s.wait_for("fma in the PTX", |sc| sc.contains("fma.rn.f32"));
    assert!(Command::new("tmux")
        .args(["send-keys", "-t", &s.name, "g"])
        .status()
        .unwrap()
        .success());
    std::fs::write(&kernel, &good).unwrap();
    s.wait_for("the original again", |sc| {
        sc.contains("No problems.") && !sc.contains("stale")
    });

    // 3. sed -i (a temp file renamed over the kernel), broken then fixed.
    let sed = |expr: &str| {
        assert!(Command::new("sed")
            .args(["-i", expr])
            .arg(&kernel)
            .status()
            .unwrap()
            .success())
    };
    sed("s/if (i < (size_t)n) {/if (i < (size_t)n) { int broken = ;/");
    s.wait_for("the sed -i error at line 10", |sc| {
        sc.contains("v1_f32.cu:10")
    });
    sed("s/ int broken = ;//");
    s.wait_for("the sed -i fix", |sc| {
        !sc.contains("v1_f32.cu:10") && sc.contains("add_f32")
    });

    // 4. A bad workspace keeps the old configuration and says what is wrong; fixing it reloads.
    std::fs::write(
        &ws,
        yaml.replace("    entry: add_f32\n", "    entry: add_f32\n    grdi: 1\n"),
    )
    .unwrap();
    s.wait_for("the workspace error", |sc| {
        sc.contains("grdi") && sc.contains("add_f32")
    });
    std::fs::write(&ws, &yaml).unwrap();
    s.wait_for("the workspace to reload", |sc| {
        !sc.contains("grdi") && sc.contains("reloaded")
    });

    // 5. A tile-language kernel: select v8 (the 8th version), show its PTX, save a broken
    //    `.tile` (the diagnostic lands on the tile line), then a fix whose PTX must show.
    let tile = root.join("kernels/elementwise-add/v8.tile");
    let tile_good = std::fs::read_to_string(&tile).unwrap();
    let keys = |k: &[&str]| {
        assert!(Command::new("tmux")
            .args(["send-keys", "-t", &s.name])
            .args(k)
            .status()
            .unwrap()
            .success())
    };
    keys(&["g", "j", "j", "j", "j", "j", "j", "j", "2"]);
    s.wait_for("v8's PTX", |sc| {
        sc.contains("PTX") && sc.contains("add_kernel")
    });
    std::fs::write(&tile, tile_good.replace("mask = offs < n", "mask = offs <")).unwrap();
    s.wait_for("the tile diagnostic at v8.tile:14", |sc| {
        sc.contains("v8.tile:14")
    });
    std::fs::write(
        &tile,
        tile_good.replace(
            "tl.store(c_ptr + offs, a + b, mask=mask)",
            "tl.store(c_ptr + offs, a * b, mask=mask)",
        ),
    )
    .unwrap();
    s.wait_for("the fixed tile kernel", |sc| {
        !sc.contains("v8.tile:14") && !sc.contains("stale")
    });
    // The multiply (fp16 through f32, or packed f16x2) is somewhere in the PTX: page down
    // from the top until it is on screen.
    let multiply = |sc: &str| {
        ["mul.f32", "mul.rn.f32", "mul.rn.f16x2", "mul.f16x2"]
            .iter()
            .any(|m| sc.contains(m))
    };
    keys(&["g"]);
    let mut seen = false;
    for _ in 0..80 {
        if multiply(&s.capture()) {
            seen = true;
            break;
        }
        keys(&["PageDown"]);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if !seen {
        s.wait_for("the multiply in v8's PTX", multiply);
    }
    keys(&["g", "5"]);
    s.wait_for("the generated CUDA", |sc| {
        sc.contains("#line") && sc.contains("add_kernel")
    });

    // 6. Quit cleanly.
    assert!(Command::new("tmux")
        .args(["send-keys", "-t", &s.name, "q"])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.alive() {
        assert!(
            Instant::now() < deadline,
            "kwb did not quit:\n{}",
            s.capture()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
