//! Every input the TUI reacts to, as one enum, and the one `update` that applies it to the
//! state. Key presses, file changes, compile results and GPU events all arrive here; what must
//! happen outside the state (compiles, GPU runs, reloading the workspace) comes back as
//! [`Effect`]s for the runtime to carry out.

#[cfg(test)]
use super::app::WhatIf;
use super::app::{App, CompareRow, CompareView, Focus, GpuState, RowKind, Tab, VersionStatus};
use crate::compile::CompiledVersion;
use crate::diag::Diagnostic;
use crate::report::{RunResult, Status};
use crate::run::protocol::Phase;
use crate::workspace::Workspace;
use ratatui::text::Line;
use std::path::PathBuf;
use std::sync::Arc;

/// A finished compile, with everything the screen needs already computed off the UI thread.
#[derive(Debug, Clone)]
pub struct CompileDone {
    pub index: usize,
    pub generation: u64,
    pub source: Arc<str>,
    pub source_lines: Arc<Vec<Line<'static>>>,
    pub result: Arc<CompiledVersion>,
    pub ptx_lines: Arc<Vec<Line<'static>>>,
    pub sass: Option<Arc<Vec<Line<'static>>>>,
    /// Tile versions: the generated CUDA, highlighted.
    pub cuda_lines: Arc<Vec<Line<'static>>>,
    /// For source ↔ PTX correlation: per PTX line, the source line it came from (1-based).
    pub ptx_source_lines: Arc<Vec<Option<u32>>>,
}

/// What happened to one (version, size) on the GPU.
#[derive(Debug, Clone)]
pub enum RunEvent {
    Phase(Phase),
    Finished {
        result: Box<RunResult>,
        samples: Vec<f64>,
        /// The last size of this run: the version is done once it is in.
        last: bool,
        /// A quick look at the viewed size, to be refined by a full run that follows.
        provisional: bool,
    },
}

#[derive(Debug, Clone)]
pub enum Action {
    Quit,
    ToggleHelp,
    /// The terminal's size changed (or is first known).
    Resize(ratatui::layout::Rect),
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    NextTab,
    PrevTab,
    SelectTab(Tab),
    FocusNext,
    SelectVersion(usize),
    ToggleMark,
    NextSize,
    CycleTheme,
    /// Start the GPU worker again after its connection dropped (or it could not start).
    Reconnect,
    /// Draw a fresh seed for the inputs and run every version again. Watch keeps one seed
    /// across saves, so the worker can keep a size's inputs and reference resident.
    Reseed,
    /// Doubles (`+1`) or halves (`-1`) the what-if block size.
    WhatIfBlock(i32),
    /// Adds or removes 4 KiB of what-if dynamic shared memory.
    WhatIfShared(i32),
    /// Lowers or raises the what-if register cap by 8.
    WhatIfRegisters(i32),
    WhatIfReset,
    ToggleDiagnosticSource,
    Scroll(i32),
    /// Files on disk changed (from the watcher).
    FilesChanged(Vec<PathBuf>),
    /// The workspace file was re-read.
    WorkspaceReloaded(Result<Box<Workspace>, Vec<Diagnostic>>),
    Compiled(Box<CompileDone>),
    /// A compile's SASS, disassembled and highlighted after the compile itself was announced
    /// (so the GPU run does not wait for the disassembler).
    Sass {
        index: usize,
        generation: u64,
        lines: Arc<Vec<Line<'static>>>,
    },
    Run {
        index: usize,
        generation: u64,
        size: usize,
        event: RunEvent,
    },
    Gpu(GpuState),
    Message(String),
}

/// Work for the runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Compile {
        index: usize,
        generation: u64,
    },
    /// Check and benchmark a version at every size, from its current compile.
    Run {
        index: usize,
        generation: u64,
    },
    ReloadWorkspace,
    /// Highlighting depends on the theme: redo it for every version.
    Rehighlight,
    /// Compile for another arch from now on (the GPU's).
    Retarget(crate::compile::Arch),
    /// Ask the GPU thread to start its worker again.
    Reconnect,
    /// A fresh seed for the inputs, then every compiled version runs again.
    Reseed,
}

pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    let mut effects = Vec::new();
    match action {
        Action::Quit => app.quit = true,
        Action::ToggleHelp => {
            app.help = !app.help;
            app.help_scroll = 0;
        }
        Action::Resize(area) => {
            app.screen = area;
            scroll_help(app, 0);
        }
        // While the help is open, the movement keys scroll it.
        Action::Up
        | Action::Down
        | Action::Scroll(_)
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
            if app.help =>
        {
            let page = i32::from(super::panels::help::page(&app.help_lines, app.screen));
            let by = match action {
                Action::Up => -1,
                Action::Down => 1,
                Action::Scroll(d) => d,
                Action::PageUp => -page,
                Action::PageDown => page,
                Action::Top => -i32::from(u16::MAX),
                _ => i32::from(u16::MAX),
            };
            scroll_help(app, by);
        }
        Action::Up => step(app, -1),
        Action::Down => step(app, 1),
        Action::PageUp => app.scroll = app.scroll.saturating_sub(20),
        Action::PageDown => app.scroll = app.scroll.saturating_add(20),
        Action::Top => app.scroll = 0,
        Action::Bottom => app.scroll = u16::MAX / 2,
        Action::Scroll(d) => {
            app.scroll = (i32::from(app.scroll) + d).clamp(0, i32::from(u16::MAX / 2)) as u16
        }
        Action::NextTab | Action::PrevTab => {
            let tabs = app.tabs();
            let i = tabs.iter().position(|t| *t == app.tab).unwrap_or(0) as i32;
            let d = if matches!(action, Action::NextTab) {
                1
            } else {
                -1
            };
            app.tab = tabs[(i + d).rem_euclid(tabs.len() as i32) as usize];
            app.scroll = 0;
        }
        Action::SelectTab(t) => {
            app.tab = t;
            app.scroll = 0;
        }
        Action::FocusNext => {
            app.focus = match app.focus {
                Focus::Versions => Focus::Main,
                Focus::Main => Focus::Diagnostics,
                Focus::Diagnostics => Focus::Versions,
            }
        }
        Action::SelectVersion(i) if i < app.versions.len() => {
            app.selected = i;
            app.scroll = 0;
            correlate(app);
        }
        Action::SelectVersion(_) => {}
        Action::ToggleMark => {
            let i = app.selected;
            if let Some(p) = app.marks.iter().position(|m| *m == i) {
                app.marks.remove(p);
            } else {
                if app.marks.len() == 2 {
                    app.marks.remove(0);
                }
                app.marks.push(i);
            }
            recompare(app);
            if app.compare.is_some() {
                app.tab = Tab::Compare;
            }
        }
        Action::NextSize => {
            if !app.workspace.sizes.is_empty() {
                app.size = (app.size + 1) % app.workspace.sizes.len();
            }
        }
        Action::Reconnect => effects.push(Effect::Reconnect),
        Action::Reseed => {
            effects.push(Effect::Reseed);
            for (index, v) in app.versions.iter().enumerate() {
                if v.compiled.is_some() {
                    effects.push(Effect::Run {
                        index,
                        generation: v.generation,
                    });
                }
            }
        }
        Action::CycleTheme => {
            app.theme = app.theme.wrapping_add(1);
            effects.push(Effect::Rehighlight);
        }
        Action::WhatIfBlock(d) => {
            let base = app
                .what_if
                .block
                .unwrap_or_else(|| launched_block(app).unwrap_or(256));
            let next = if d > 0 {
                base.saturating_mul(2)
            } else {
                base / 2
            };
            app.what_if.block = Some(next.clamp(32, 1024));
        }
        Action::WhatIfShared(d) => {
            let base = app.what_if.dynamic_shared.unwrap_or(0) as i64;
            app.what_if.dynamic_shared =
                Some((base + i64::from(d) * 4096).clamp(0, 227 * 1024) as u32);
        }
        Action::WhatIfRegisters(d) => {
            let base = app.what_if.register_cap.unwrap_or(255) as i64;
            app.what_if.register_cap = Some((base + i64::from(d) * 8).clamp(16, 255) as u32);
        }
        Action::WhatIfReset => app.what_if = Default::default(),
        Action::ToggleDiagnosticSource => app.show_diagnostic_source = !app.show_diagnostic_source,
        Action::FilesChanged(paths) => files_changed(app, &paths, &mut effects),
        Action::WorkspaceReloaded(r) => reloaded(app, r, &mut effects),
        Action::Compiled(done) => compiled(app, *done, &mut effects),
        Action::Sass {
            index,
            generation,
            lines,
        } => {
            if let Some(v) = app.versions.get_mut(index) {
                if v.shown_generation == generation {
                    v.sass = Some(lines);
                }
            }
        }
        Action::Run {
            index,
            generation,
            size,
            event,
        } => run_event(app, index, generation, size, event),
        Action::Gpu(g) => {
            // The GPU's arch, in the architecture-specific form (sm_90a) when that is the
            // form of the same chip the workspace targets.
            let device_arch = match &g {
                GpuState::Present(d) => crate::compile::Arch::parse(&d.arch)
                    .ok()
                    .map(|gpu| crate::compile::Arch::for_gpu(gpu, Some(app.arch))),
                _ => None,
            };
            app.gpu = g;
            if let Some(arch) = device_arch.filter(|a| *a != app.arch) {
                // A CUBIN runs only on its own arch: recompile everything for the GPU's.
                app.message = format!(
                    "compiling for {arch}, the GPU's arch, instead of {}",
                    app.arch
                );
                app.arch = arch;
                effects.push(Effect::Retarget(arch));
                recompile_all(app, &mut effects);
            } else {
                // Versions compiled before the GPU answered get their runs now (on the CPU
                // when there is none).
                for (index, v) in app.versions.iter_mut().enumerate() {
                    let waiting = matches!(v.status, VersionStatus::Queued | VersionStatus::Done);
                    if waiting && v.compiled.is_some() {
                        v.status = VersionStatus::Checking;
                        effects.push(Effect::Run {
                            index,
                            generation: v.generation,
                        });
                    }
                }
            }
        }
        Action::Message(m) => app.message = m,
    }
    effects
}

/// Scrolls the help overlay by `by` rows, as far as it goes on the screen.
fn scroll_help(app: &mut App, by: i32) {
    let most = super::panels::help::max_scroll(&app.help_lines, app.screen);
    app.help_scroll = (i32::from(app.help_scroll) + by).clamp(0, i32::from(most)) as u16;
}

/// Moves the selection in the focused list, or the cursor/scroll in the main tab.
fn step(app: &mut App, d: i32) {
    match app.focus {
        Focus::Versions => {
            let n = app.versions.len() as i32;
            if n > 0 {
                app.selected = (app.selected as i32 + d).clamp(0, n - 1) as usize;
                app.scroll = 0;
            }
        }
        Focus::Main => {
            if app.tab == Tab::Source {
                app.cursor_line = (app.cursor_line as i32 + d).max(1) as u32;
                let top = u32::from(app.scroll) + 1;
                if app.cursor_line < top {
                    app.scroll = (app.cursor_line - 1) as u16;
                }
            } else if app.tab == Tab::Ptx {
                let n = app.current().map_or(0, |v| v.ptx_lines.len());
                app.ptx_cursor = (app.ptx_cursor as i64 + i64::from(d))
                    .clamp(0, n.saturating_sub(1) as i64) as usize;
                // Keep the cursor in view (about twenty lines of context below the top).
                let top = usize::from(app.scroll);
                if app.ptx_cursor < top {
                    app.scroll = app.ptx_cursor as u16;
                } else if app.ptx_cursor > top + 20 {
                    app.scroll = (app.ptx_cursor - 20) as u16;
                }
                // The reverse correlation: the source line this PTX line came from.
                if let Some(Some(line)) = app
                    .current()
                    .and_then(|v| v.ptx_source_lines.get(app.ptx_cursor))
                {
                    app.cursor_line = *line;
                }
            } else {
                app.scroll = (i32::from(app.scroll) + d).max(0) as u16;
            }
        }
        Focus::Diagnostics => {
            let n = app.all_diagnostics().len() as i32;
            if n > 0 {
                app.diagnostic = (app.diagnostic as i32 + d).clamp(0, n - 1) as usize;
            }
        }
    }
    correlate(app);
}

/// The selected version's first launch block size at the selected size.
fn launched_block(app: &App) -> Option<u32> {
    let v = app.workspace.versions.get(app.selected)?;
    let l = v.launches.first()?;
    let size = app.workspace.sizes.get(app.size)?;
    let env = crate::workspace::SizeEnv::vars(&size.vars);
    let threads = l
        .block
        .iter()
        .map(|f| f.eval_u64(&env).ok())
        .product::<Option<u64>>()?;
    u32::try_from(threads).ok()
}

fn files_changed(app: &mut App, paths: &[PathBuf], effects: &mut Vec<Effect>) {
    // (A bare kernel file is its own "workspace": it recompiles, it does not reload.)
    let is_yaml = !app.versions.iter().any(|v| v.file == app.workspace.path);
    if is_yaml && paths.iter().any(|p| same_file(p, &app.workspace.path)) {
        effects.push(Effect::ReloadWorkspace);
    }
    for (index, v) in app.versions.iter_mut().enumerate() {
        let deps = v
            .compiled
            .as_ref()
            .map(|c| c.includes.clone())
            .unwrap_or_default();
        if paths
            .iter()
            .any(|p| same_file(p, &v.file) || deps.iter().any(|d| same_file(p, d)))
        {
            v.generation += 1;
            v.status = VersionStatus::Compiling;
            effects.push(Effect::Compile {
                index,
                generation: v.generation,
            });
        }
    }
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

fn reloaded(app: &mut App, r: Result<Box<Workspace>, Vec<Diagnostic>>, effects: &mut Vec<Effect>) {
    match r {
        Err(diags) => {
            // Keep running the last good configuration; show what is wrong.
            app.workspace_errors = diags;
            app.message = "workspace has errors: the previous configuration stays in use".into();
        }
        Ok(ws) => {
            app.workspace_errors.clear();
            app.workspace = *ws;
            // Versions are rebuilt from the new file, keeping each surviving version's last
            // compile and results on screen (marked stale) until its recompile lands.
            let fresh = App::new(app.workspace.clone(), app.arch).versions;
            let old = std::mem::take(&mut app.versions);
            app.versions = fresh
                .into_iter()
                .map(|mut v| {
                    if let Some(prev) = old.iter().find(|p| p.name == v.name && p.file == v.file) {
                        let sizes = v.results.len();
                        v = prev.clone();
                        v.results.resize(sizes, None);
                        v.samples.resize(sizes, Vec::new());
                    }
                    v
                })
                .collect();
            app.selected = app.selected.min(app.versions.len().saturating_sub(1));
            app.size = app.size.min(app.workspace.sizes.len().saturating_sub(1));
            app.marks.clear();
            app.compare = None;
            app.message = "workspace reloaded".into();
            recompile_all(app, effects);
        }
    }
}

/// Every version starts over: a new generation and a compile each.
fn recompile_all(app: &mut App, effects: &mut Vec<Effect>) {
    for (index, v) in app.versions.iter_mut().enumerate() {
        v.generation += 1;
        v.status = VersionStatus::Compiling;
        effects.push(Effect::Compile {
            index,
            generation: v.generation,
        });
    }
}

fn compiled(app: &mut App, done: CompileDone, effects: &mut Vec<Effect>) {
    // Runs go to the GPU, or with none to the CPU (emulator, tile interpreter); while the GPU
    // is still being looked for, they wait for its answer.
    let gpu = !matches!(app.gpu, GpuState::Probing);
    let Some(v) = app.versions.get_mut(done.index) else {
        return;
    };
    if done.generation < v.generation {
        return; // superseded by a newer save
    }
    v.source = done.source;
    v.source_lines = done.source_lines;
    v.diagnostics = done.result.diagnostics.clone();
    if done.result.ok {
        v.compiled = Some(done.result);
        v.ptx_lines = done.ptx_lines;
        // SASS may follow in its own action; until then the last one stays on screen.
        if done.sass.is_some() {
            v.sass = done.sass;
        }
        v.cuda_lines = done.cuda_lines;
        v.ptx_source_lines = done.ptx_source_lines;
        v.shown_generation = done.generation;
        if gpu {
            v.status = VersionStatus::Checking;
            effects.push(Effect::Run {
                index: done.index,
                generation: done.generation,
            });
        } else {
            v.status = VersionStatus::Queued;
        }
    } else {
        v.status = VersionStatus::CompileError;
        app.diagnostic = 0;
        app.message = format!("{}: compile error", v.name);
    }
    correlate(app);
    recompare(app);
}

fn run_event(app: &mut App, index: usize, generation: u64, size: usize, event: RunEvent) {
    let Some(v) = app.versions.get_mut(index) else {
        return;
    };
    if generation < v.generation {
        return;
    }
    match event {
        RunEvent::Phase(Phase::Checking) | RunEvent::Phase(Phase::Preparing) => {
            v.status = VersionStatus::Checking
        }
        RunEvent::Phase(Phase::Benchmarking) => v.status = VersionStatus::Benchmarking,
        RunEvent::Finished {
            result,
            samples,
            last,
            provisional,
        } => {
            // Only a good quick look is refined by a full run (the GPU thread skips the rest).
            let refining = provisional && result.status == Status::Ok;
            v.status = match result.status {
                Status::Ok | Status::Skipped => VersionStatus::Done,
                Status::CheckFailed => VersionStatus::CheckFailed,
                Status::Crashed => VersionStatus::Crashed,
                Status::Timeout => VersionStatus::Timeout,
                Status::CompileError | Status::Error => VersionStatus::CheckFailed,
            };
            // What the emulator found, where the diagnostics panel can jump to its line.
            for f in &result.findings {
                let mut d = Diagnostic::error(format!("{} (emulated): {}", f.kind, f.message));
                if let Some(file) = &f.file {
                    d = d.in_file(file.clone());
                    if let Some(line) = f.line {
                        d = d.at(line, None);
                    }
                }
                if !v.diagnostics.contains(&d) {
                    v.diagnostics.push(d);
                }
            }
            if let Some(slot) = v.results.get_mut(size) {
                *slot = Some(*result);
            }
            if let Some(slot) = v.samples.get_mut(size) {
                *slot = samples;
            }
            if let Some(slot) = v.provisional.get_mut(size) {
                *slot = refining;
            }
            // A quick look is being refined, and later sizes may still come: stay busy until
            // the last one.
            if v.status == VersionStatus::Done && refining {
                v.status = VersionStatus::Benchmarking;
            } else if v.status == VersionStatus::Done && !last {
                v.status = VersionStatus::Checking;
            }
        }
    }
}

/// Recomputes the PTX lines produced by the cursor's source line.
pub fn correlate(app: &mut App) {
    app.correlated_ptx = match app.current() {
        Some(v) => v
            .ptx_source_lines
            .iter()
            .enumerate()
            .filter(|(_, l)| **l == Some(app.cursor_line))
            .map(|(i, _)| i)
            .collect(),
        None => Vec::new(),
    };
}

/// Rebuilds the Compare view from the two marks.
pub fn recompare(app: &mut App) {
    app.compare = match app.marks.as_slice() {
        [a, b] => {
            let ptx = |i: usize| {
                app.versions
                    .get(i)
                    .and_then(|v| v.compiled.as_ref())
                    .map(|c| c.ptx.clone())
            };
            match (ptx(*a), ptx(*b)) {
                (Some(l), Some(r)) => Some(CompareView {
                    left: *a,
                    right: *b,
                    rows: diff_rows(&l, &r),
                }),
                _ => None,
            }
        }
        _ => None,
    };
}

fn diff_rows(left: &str, right: &str) -> Vec<CompareRow> {
    super::ptxdiff::diff(left, right)
        .into_iter()
        .map(|r| {
            let kind = match (&r.left, &r.right) {
                (Some(_), Some(_)) if r.kind == super::ptxdiff::Side::Both => RowKind::Same,
                (Some(_), Some(_)) => RowKind::Changed,
                (Some(_), None) => RowKind::Removed,
                _ => RowKind::Added,
            };
            CompareRow {
                left: r.left.map(|(_, t)| t),
                right: r.right.map(|(_, t)| t),
                kind,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "action_tests.rs"]
mod tests;
