//! `kwb bench-ui`: the TUI's speed targets as numbers, measured on the real engine (NVRTC, the
//! file watcher, the render functions, and with `--gpu` the GPU worker) with an off-screen
//! buffer instead of a terminal: save-to-screen latency, save-to-result latency on a GPU,
//! frame render time, and CPU use while idle.

use super::app::{App, GpuState};
use super::runtime::{Engine, Msg};
use crate::compile::{Arch, Cache, Compiler};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use std::path::Path;
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "bench_first_pass.rs"]
mod first_pass;
pub use first_pass::{first_pass, FirstPass};

pub struct Percentiles {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
    pub n: usize,
}

fn percentiles(mut ms: Vec<f64>) -> Percentiles {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    Percentiles {
        p50_ms: at(0.5),
        p95_ms: at(0.95),
        max_ms: at(1.0),
        n: ms.len(),
    }
}

/// Saves `version`'s kernel `saves` times (each save changes the source, so each one really
/// compiles) and measures from the write to a drawn frame showing the new PTX and resources.
/// The kernel file with a comment appended, in the file's own comment syntax (`#` in tile and
/// Python source, `//` in CUDA): a change that compiles like the original.
fn edited(file: &std::path::Path, original: &str, i: usize) -> String {
    let mark = if crate::workspace::SourceKind::of(file).is_tile() {
        "#"
    } else {
        "//"
    };
    format!("{original}\n{mark} kwb bench-ui save {i}\n")
}

/// The real engine on a workspace, with `version` selected and its kernel file watched: what
/// the save benchmarks drive.
struct Bench {
    engine: Engine,
    app: App,
    theme: super::theme::Theme,
    rx: std::sync::mpsc::Receiver<Msg>,
    index: usize,
    file: std::path::PathBuf,
    /// The kernel file as it was, written back when the benchmark ends.
    original: String,
    _watcher: crate::watch::FileWatcher,
}

impl Bench {
    fn new(workspace: &Path, version: &str) -> Result<Bench, String> {
        let ws = crate::workspace::load(workspace).map_err(|e| e.to_string())?;
        let index = ws
            .versions
            .iter()
            .position(|v| v.name == version)
            .ok_or_else(|| format!("no version `{version}`"))?;
        let file = ws.versions[index].file.clone();
        let original =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let arch = ws.arch.unwrap_or(Arch::DEFAULT);
        let compiler = Compiler::new(arch, Cache::disabled()).map_err(|e| e.to_string())?;
        let (tx, rx) = channel();
        let (themes, _) = super::themes::available(true);
        let theme = themes[0].clone();
        let engine = Engine::new(tx.clone(), compiler, themes, true);
        let mut app = App::new(ws, arch);
        app.selected = index;
        let watcher = super::runtime::watch(&tx, std::slice::from_ref(&file))?;
        Ok(Bench {
            engine,
            app,
            theme,
            rx,
            index,
            file,
            original,
            _watcher: watcher,
        })
    }
}

pub fn save_to_screen(
    workspace: &Path,
    version: &str,
    saves: usize,
) -> Result<Percentiles, String> {
    let Bench {
        mut engine,
        mut app,
        theme,
        rx,
        index,
        file,
        original,
        _watcher,
    } = Bench::new(workspace, version)?;
    app.gpu = GpuState::Absent("benchmark".into());
    let area = Rect::new(0, 0, 160, 48);
    let mut buf = Buffer::empty(area);
    let mut times = Vec::new();
    let result = (|| {
        for i in 0..=saves {
            let before = app.versions[index].shown_generation;
            let t0 = Instant::now();
            std::fs::write(&file, edited(&file, &original, i)).map_err(|e| e.to_string())?;
            let deadline = t0 + Duration::from_secs(20);
            while app.versions[index].shown_generation == before {
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(Msg::Action(a)) => engine.apply(&mut app, a),
                    Ok(Msg::Term(_)) => {}
                    Err(_) => {
                        return Err(format!("save {i}: no new compile on screen within 20 s"))
                    }
                }
            }
            super::draw::render(&app, &theme, area, &mut buf);
            // The first save warms NVRTC up; it is not counted.
            if i > 0 {
                times.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        Ok(())
    })();
    let _ = std::fs::write(&file, &original);
    result?;
    Ok(percentiles(times))
}

/// On a GPU: saves `version`'s kernel `saves` times and measures from the write to a drawn
/// frame showing the version's checked, timed result at `size` (the quick look, provisional),
/// through the real watch engine: watcher, NVRTC, the planner and the isolated GPU worker.
/// Before each save the version finishes every size, as when a user reads a result and then
/// edits again. Returns the save → compile-on-screen times and the save → result times, and
/// prints a tally of every result the loop saw for the version (size, status, message).
pub fn save_to_result(
    workspace: &Path,
    version: &str,
    size: &str,
    saves: usize,
    worker: crate::run::supervisor::WorkerCommand,
) -> Result<(Percentiles, Percentiles), String> {
    use super::action::{Action, RunEvent};
    use super::app::VersionStatus;
    let Bench {
        mut engine,
        mut app,
        theme,
        rx,
        index,
        file,
        original,
        _watcher,
    } = Bench::new(workspace, version)?;
    app.size = (app.workspace.sizes.iter())
        .position(|s| s.name == size)
        .ok_or_else(|| format!("no size `{size}`"))?;
    let size_index = app.size;
    engine.start_gpu(worker, None);
    let area = Rect::new(0, 0, 160, 48);
    let mut buf = Buffer::empty(area);
    let mut times = Vec::new();
    let mut compiles = Vec::new();
    let seen = std::cell::RefCell::new(std::collections::BTreeMap::<String, usize>::new());
    let tally = |a: &Action| {
        if let Action::Run {
            index: v,
            event:
                RunEvent::Finished {
                    result,
                    provisional,
                    ..
                },
            ..
        } = a
        {
            if *v == index {
                let message = result.message.as_deref().unwrap_or("");
                let key = format!(
                    "{} {:?}{} {}",
                    result.size,
                    result.status,
                    if *provisional { " (quick look)" } else { "" },
                    message.lines().next().unwrap_or("")
                );
                *seen.borrow_mut().entry(key).or_default() += 1;
            }
        }
    };
    let busy = |app: &App| {
        let s = app.versions[index].status;
        matches!(
            s,
            VersionStatus::Compiling | VersionStatus::Checking | VersionStatus::Benchmarking
        ) || app.versions[index].stale()
    };
    let result = (|| {
        // The GPU first: once it is there (and the compiler retargeted to its arch), go.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!(app.gpu, GpuState::Present(_)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Msg::Action(a)) => engine.apply(&mut app, a),
                Ok(Msg::Term(_)) => {}
                Err(_) => return Err("no GPU worker within 60 s".to_string()),
            }
            if let GpuState::Absent(why) = &app.gpu {
                return Err(format!("no GPU: {why}"));
            }
        }
        for i in 0..=saves {
            // Let the previous save's runs finish (every size), as a reading user would.
            let deadline = Instant::now() + Duration::from_secs(120);
            while i > 0 && busy(&app) {
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(Msg::Action(a)) => {
                        tally(&a);
                        engine.apply(&mut app, a)
                    }
                    Ok(Msg::Term(_)) => {}
                    Err(_) => return Err(format!("save {i}: the version never settled")),
                }
            }
            let before = app.versions[index].generation;
            let t0 = Instant::now();
            std::fs::write(&file, edited(&file, &original, i)).map_err(|e| e.to_string())?;
            let deadline = t0 + Duration::from_secs(60);
            let mut compiled_ms = None;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let a = match rx.recv_timeout(left) {
                    Ok(Msg::Action(a)) => a,
                    Ok(Msg::Term(_)) => continue,
                    Err(_) => return Err(format!("save {i}: no timed result within 60 s")),
                };
                tally(&a);
                if let Action::Compiled(done) = &a {
                    if done.index == index && done.generation > before && compiled_ms.is_none() {
                        compiled_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
                    }
                }
                let timed = match &a {
                    Action::Run {
                        index: v,
                        generation,
                        size,
                        event: RunEvent::Finished { result, .. },
                    } if *v == index && *generation > before && *size == size_index => {
                        if result.timing.is_none() {
                            return Err(format!(
                                "save {i}: {} at {}: {:?} {}",
                                result.version,
                                result.size,
                                result.status,
                                result.message.as_deref().unwrap_or("")
                            ));
                        }
                        true
                    }
                    _ => false,
                };
                engine.apply(&mut app, a);
                if timed {
                    break;
                }
            }
            super::draw::render(&app, &theme, area, &mut buf);
            // The first save warms NVRTC and the worker up (and makes the inputs resident).
            if i > 0 {
                times.push(t0.elapsed().as_secs_f64() * 1e3);
                compiles.extend(compiled_ms);
            }
        }
        Ok(())
    })();
    let _ = std::fs::write(&file, &original);
    for (what, n) in seen.borrow().iter() {
        println!("  results seen: {n:>3} × {what}");
    }
    result?;
    if compiles.is_empty() {
        return Err("no compile was seen".into());
    }
    Ok((percentiles(compiles), percentiles(times)))
}

/// Renders a full frame of `app` `frames` times; the app is given `lines` lines of PTX.
pub fn frame_time(workspace: &Path, lines: usize, frames: usize) -> Result<Percentiles, String> {
    let ws = crate::workspace::load(workspace).map_err(|e| e.to_string())?;
    let arch = ws.arch.unwrap_or(Arch::DEFAULT);
    let compiler = Compiler::new(arch, Cache::default_location()).map_err(|e| e.to_string())?;
    let compiled = compiler.compile_workspace(&ws);
    let hl = super::highlight::Highlighter::new();
    let (themes, _) = super::themes::available(true);
    let theme = &themes[0];
    let mut app = App::new(ws, arch);
    app.gpu = GpuState::Absent("benchmark".into());
    for (v, c) in app.versions.iter_mut().zip(compiled) {
        let ptx: String = c
            .ptx
            .lines()
            .cycle()
            .take(lines)
            .collect::<Vec<_>>()
            .join("\n");
        v.ptx_lines =
            Arc::new(hl.highlight(&ptx, super::highlight::Lang::Ptx, &theme.code_theme, true));
        v.source_lines = Arc::new(hl.highlight(
            &v.source,
            super::highlight::Lang::Cuda,
            &theme.code_theme,
            true,
        ));
        v.compiled = Some(Arc::new(c));
        v.status = super::app::VersionStatus::Done;
    }
    app.tab = super::app::Tab::Ptx;
    app.scroll = (lines / 2) as u16;
    let area = Rect::new(0, 0, 200, 60);
    let mut times = Vec::new();
    for _ in 0..frames {
        let mut buf = Buffer::empty(area);
        let t = Instant::now();
        super::draw::render(&app, theme, area, &mut buf);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(percentiles(times))
}

/// CPU seconds used by process `pid` over `over` (Linux `/proc`), for the idle check.
pub fn cpu_seconds(pid: u32, over: Duration) -> Result<f64, String> {
    let read = || -> Result<f64, String> {
        let stat =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // Fields 14 and 15 (utime, stime) are at 11 and 12 after the command name.
        Ok((ticks(11) + ticks(12)) / 100.0)
    };
    let a = read()?;
    std::thread::sleep(over);
    Ok(read()? - a)
}

pub fn render_report(name: &str, p: &Percentiles) -> String {
    format!(
        "{name}: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms over {}",
        p.p50_ms, p.p95_ms, p.max_ms, p.n
    )
}

/// Runs `kwb watch --no-gpu` in a detached tmux session, lets it settle, and returns the share
/// of one core it uses while nothing happens.
pub fn idle_cpu(workspace: &Path, over: Duration) -> Result<f64, String> {
    use std::process::Command;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let name = format!("kwb-idle-{}", std::process::id());
    let cmd = format!("{} watch {} --no-gpu", exe.display(), workspace.display());
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "160",
            "-y",
            "48",
            &cmd,
        ])
        .status()
        .map_err(|e| format!("tmux: {e}"))?;
    if !ok.success() {
        return Err("tmux could not start a session".into());
    }
    let result = (|| {
        let out = Command::new("tmux")
            .args(["display-message", "-p", "-t", &name, "#{pane_pid}"])
            .output()
            .map_err(|e| e.to_string())?;
        let pid: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| "no pane pid".to_string())?;
        // Let the first compiles finish before measuring.
        std::thread::sleep(Duration::from_secs(3));
        Ok(cpu_seconds(pid, over)? / over.as_secs_f64())
    })();
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &name])
        .status();
    result
}

#[cfg(test)]
mod tests {
    use super::edited;
    use std::path::Path;

    #[test]
    fn a_save_appends_a_comment_the_file_kind_accepts() {
        let cu = edited(Path::new("k/v1.cu"), "int x;", 3);
        assert_eq!(cu, "int x;\n// kwb bench-ui save 3\n");
        for tile in ["k/v8.tile", "k/mod.py"] {
            assert_eq!(
                edited(Path::new(tile), "x = 1", 0),
                "x = 1\n# kwb bench-ui save 0\n"
            );
        }
        // And the tile front end accepts the edited file as it accepted the original.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/elementwise-add/v8.tile");
        let source = std::fs::read_to_string(&path).unwrap();
        use crate::tile::parse::{parse, FileKind};
        let (module, errors) = parse(&edited(&path, &source, 1), FileKind::of(&path));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(module.funcs.len(), 1);
    }
}
