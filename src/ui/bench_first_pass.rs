//! `kwb bench-ui --gpu --first-pass-save-ms T`: kwb watch's start as a user lives it, on a GPU.
//! Every version compiles and runs; one version is saved T ms after start, while the first
//! pass is still going. Measured: the save to that version's first result at the viewed size
//! (its quick look), and the start to the moment every version has a figure at the viewed size.

use super::super::action::{Action, RunEvent};
use super::super::app::{GpuState, VersionStatus};
use super::super::runtime::Msg;
use super::{edited, Bench};
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the first pass came to, in ms.
pub struct FirstPass {
    /// Start to the GPU worker's answer.
    pub gpu_ready_ms: f64,
    /// The save to the saved version's first result at the viewed size.
    pub save_to_result_ms: f64,
    /// Whether that result was a quick look (provisional).
    pub provisional: bool,
    /// Start to every version that compiles having a result at the viewed size.
    pub every_version_ms: f64,
    pub versions: usize,
    /// What happened between the save and its result, one line per event, with its time
    /// after the save.
    pub timeline: Vec<String>,
}

pub fn first_pass(
    workspace: &Path,
    version: &str,
    size: &str,
    save_after: Duration,
    worker: crate::run::supervisor::WorkerCommand,
) -> Result<FirstPass, String> {
    let Bench {
        mut engine,
        mut app,
        rx,
        index,
        file,
        original,
        _watcher,
        ..
    } = Bench::new(workspace, version)?;
    // The user looks at the first version; the save comes to another.
    app.selected = 0;
    app.size = (app.workspace.sizes.iter())
        .position(|s| s.name == size)
        .ok_or_else(|| format!("no size `{size}`"))?;
    let viewed = app.size;
    let start = Instant::now();
    engine.start_gpu(worker, None);
    engine.first_pass(&mut app);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let (mut gpu_ready, mut saved_at, mut save_result) = (None, None, None);
    let mut every = None;
    let mut seen: HashSet<usize> = HashSet::new();
    let mut timeline = Vec::new();
    let deadline = start + Duration::from_secs(180);
    let result = (|| {
        while save_result.is_none() || every.is_none() {
            if saved_at.is_none() && start.elapsed() >= save_after {
                std::fs::write(&file, edited(&file, &original, 1)).map_err(|e| e.to_string())?;
                saved_at = Some(Instant::now());
            }
            let wait = if saved_at.is_none() {
                save_after.saturating_sub(start.elapsed())
            } else {
                deadline.saturating_duration_since(Instant::now())
            };
            let a = match rx.recv_timeout(wait.max(Duration::from_millis(1))) {
                Ok(Msg::Action(a)) => a,
                Ok(Msg::Term(_)) => continue,
                Err(_) if Instant::now() < deadline => continue,
                Err(_) => return Err("the first pass did not settle within 180 s".to_string()),
            };
            if let (Some(t), None) = (saved_at, save_result) {
                if let Some(l) = describe(&app, &a) {
                    timeline.push(format!("{:8.1} ms  {l}", ms(t)));
                }
            }
            if let Action::Run {
                index: v,
                generation,
                size,
                event:
                    RunEvent::Finished {
                        result,
                        provisional,
                        ..
                    },
            } = &a
            {
                if *size == viewed {
                    seen.insert(*v);
                    if let (Some(t), None) = (saved_at, save_result) {
                        if *v == index && *generation > 1 {
                            if result.timing.is_none() {
                                return Err(format!(
                                    "{} at {}: {:?} {}",
                                    result.version,
                                    result.size,
                                    result.status,
                                    result.message.as_deref().unwrap_or("")
                                ));
                            }
                            save_result = Some((ms(t), *provisional));
                        }
                    }
                }
            }
            engine.apply(&mut app, a);
            if gpu_ready.is_none() {
                match &app.gpu {
                    GpuState::Present(_) => gpu_ready = Some(ms(start)),
                    GpuState::Absent(why) => return Err(format!("no GPU: {why}")),
                    GpuState::Probing => {}
                }
            }
            let waiting = (0..app.versions.len()).any(|i| {
                !seen.contains(&i) && app.versions[i].status != VersionStatus::CompileError
            });
            if every.is_none() && !waiting {
                every = Some(ms(start));
            }
        }
        Ok(())
    })();
    let _ = std::fs::write(&file, &original);
    result?;
    let (save_to_result_ms, provisional) = save_result.unwrap_or((f64::NAN, false));
    Ok(FirstPass {
        gpu_ready_ms: gpu_ready.unwrap_or(f64::NAN),
        save_to_result_ms,
        provisional,
        every_version_ms: every.unwrap_or(f64::NAN),
        versions: app.versions.len(),
        timeline,
    })
}

/// A compile or run event, in a line.
fn describe(app: &super::super::app::App, a: &Action) -> Option<String> {
    let name = |v: usize| {
        app.workspace
            .versions
            .get(v)
            .map_or("?", |x| x.name.as_str())
    };
    match a {
        Action::Compiled(d) => Some(format!("{} compiled (gen {})", name(d.index), d.generation)),
        Action::Run {
            index,
            generation,
            size,
            event,
        } => Some(format!(
            "{} gen {generation} @ {}: {}",
            name(*index),
            app.workspace
                .sizes
                .get(*size)
                .map_or("?", |s| s.name.as_str()),
            match event {
                RunEvent::Phase(p) => format!("{p:?}"),
                RunEvent::Finished {
                    result,
                    provisional,
                    ..
                } => format!(
                    "{:?}{}",
                    result.status,
                    if *provisional { " (quick look)" } else { "" }
                ),
            }
        )),
        _ => None,
    }
}
