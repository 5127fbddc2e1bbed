//! `kwb watch`'s event loop and its workers. Every input (terminal, file watcher, compile jobs,
//! the GPU thread) arrives as a message on one channel; the loop drains what is queued, applies
//! it with `update`, carries out the resulting effects and draws once. It blocks when idle.
//! Compiles run in parallel, one in flight and one pending per version (the latest save wins);
//! GPU work goes through the isolated worker, so a faulting kernel only marks its version.

use super::action::{update, Action, CompileDone, Effect, RunEvent};
use super::app::{App, GpuState};
use super::highlight::{Highlighter, Lang};
use super::start_error::StartError;
use super::theme::Theme;
use crate::compile::{Arch, Cache, Compiler};
use crate::engine::latest::{LatestWins, Offer};
use crate::engine::plan::{fresh_seed, reference_index};
use crate::engine::{
    plan_runs, CpuBackend, CpuEngine, Event, GpuBackend, Order, Planning, Pool, Request, Target,
};
use crate::run::protocol::{BenchMode, BenchSpec};
use crate::run::stats::StopRule;
use crate::run::supervisor::{Supervisor, WorkerCommand};
use crate::workspace::Workspace;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How `kwb watch` was asked to run.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How to start the GPU worker (here, `--worker-cmd`, or `--remote HOST`).
    pub worker: WorkerCommand,
    pub workspace: PathBuf,
    pub arch: Option<Arch>,
    pub theme: Option<String>,
    pub gpu: bool,
    /// Several GPUs (`--devices`): a worker each, the saved version on the first idle one.
    pub devices: Option<crate::engine::Devices>,
    pub color: bool,
}

/// Everything that wakes the loop.
pub enum Msg {
    Term(crossterm::event::Event),
    Action(Action),
}

/// Resources the loop's effects need: the compiler, highlighter, themes and worker channels.
pub struct Engine {
    pub tx: Sender<Msg>,
    compiler: Arc<Compiler>,
    highlighter: Arc<Highlighter>,
    pub themes: Vec<Theme>,
    color: bool,
    sass: Option<Arc<super::sass::Disassembler>>,
    pub keymap: super::keys::Keymap,
    /// Compiles: one in flight and one pending per version (by generation).
    compiles: LatestWins<usize, u64>,
    /// Runs: the GPU once its worker answers, or with none the CPU.
    pool: Arc<Pool>,
    cpu_started: bool,
    /// To the GPU's starter and its recovery: the reconnect key was pressed.
    reconnect: Option<Sender<()>>,
    /// The folder several GPUs' workers share references in, removed when watch ends.
    shared: Option<crate::run::host::shared::SharedDir>,
    /// The inputs' seed, the same across saves (so the worker keeps a size's inputs and
    /// reference resident) until the reseed key draws a fresh one.
    seed: u64,
}

impl Engine {
    pub fn new(tx: Sender<Msg>, compiler: Compiler, themes: Vec<Theme>, color: bool) -> Engine {
        let events = tx.clone();
        let sink = move |e: Event| events.send(Msg::Action(run_action(e))).is_ok();
        Engine {
            tx,
            compiler: Arc::new(compiler),
            highlighter: Arc::new(Highlighter::new()),
            themes,
            color,
            sass: super::sass::find_disassembler().map(Arc::new),
            keymap: super::keys::Keymap::default(),
            compiles: LatestWins::new(),
            pool: Arc::new(Pool::new(Order::Watch, Arc::new(sink))),
            cpu_started: false,
            reconnect: None,
            shared: None,
            seed: fresh_seed(),
        }
    }

    pub fn theme<'a>(&'a self, app: &App) -> &'a Theme {
        &self.themes[app.theme % self.themes.len().max(1)]
    }

    /// Looks for the GPU on a thread of its own; it reports what it found as an `Action::Gpu`
    /// and, once found, serves runs. With `devices`, the other GPUs join once the first is
    /// found, each with a worker of its own.
    pub fn start_gpu(&mut self, worker: WorkerCommand, devices: Option<crate::engine::Devices>) {
        let (worker, shared) = crate::engine::gpus::share_references(worker, devices.as_ref());
        self.shared = shared;
        let (rtx, rrx) = channel();
        let (tx, pool) = (self.tx.clone(), self.pool.clone());
        std::thread::spawn(move || find_gpu(worker, devices, rrx, tx, pool));
        self.reconnect = Some(rtx);
    }

    /// Applies an action and carries out its effects.
    pub fn apply(&mut self, app: &mut App, action: Action) {
        if let Action::Compiled(done) = &action {
            if let Some(generation) = self.compiles.finished(&done.index) {
                self.spawn_compile(app, done.index, generation);
            }
        }
        for effect in update(app, action) {
            self.effect(app, effect);
        }
        // The scheduler serves what the user looks at first.
        self.pool.set_focus(crate::engine::Focus {
            selected: app.selected,
            size: app.size,
        });
    }

    pub(super) fn effect(&mut self, app: &mut App, effect: Effect) {
        match effect {
            Effect::Compile { index, generation } => {
                if let Offer::Start(g) = self.compiles.offer(index, generation) {
                    self.spawn_compile(app, index, g);
                }
            }
            Effect::Run { index, generation } => self.request_run(app, index, generation),
            Effect::ReloadWorkspace => {
                let r = crate::workspace::load(&app.workspace.path)
                    .map(Box::new)
                    .map_err(|e| e.diagnostics);
                self.apply(app, Action::WorkspaceReloaded(r));
            }
            Effect::Reconnect => {
                if let Some(r) = &self.reconnect {
                    let _ = r.send(());
                }
            }
            Effect::Reseed => {
                self.seed = fresh_seed();
                app.message = format!("new inputs: seed {}", self.seed);
            }
            Effect::Retarget(arch) => match Compiler::new(arch, Cache::default_location()) {
                Ok(c) => self.compiler = Arc::new(c),
                Err(e) => app.message = format!("cannot compile for {arch}: {e}"),
            },
            Effect::Rehighlight => {
                for index in 0..app.versions.len() {
                    let generation = app.versions[index].generation;
                    self.effect(app, Effect::Compile { index, generation });
                }
            }
        }
    }

    /// Start-up: every version compiles as generation 1 (its runs follow each compile).
    pub(super) fn first_pass(&mut self, app: &mut App) {
        for index in 0..app.versions.len() {
            app.versions[index].generation = 1;
            app.versions[index].status = super::app::VersionStatus::Compiling;
            self.effect(
                app,
                Effect::Compile {
                    index,
                    generation: 1,
                },
            );
        }
    }

    fn spawn_compile(&mut self, app: &App, index: usize, generation: u64) {
        let Some(version) = app.workspace.versions.get(index).cloned() else {
            self.compiles.finished(&index);
            return;
        };
        let (compiler, hl, tx, sass) = (
            self.compiler.clone(),
            self.highlighter.clone(),
            self.tx.clone(),
            self.sass.clone(),
        );
        let code_theme = self.theme(app).code_theme.clone();
        let color = self.color;
        // Only the sizes this backend runs: a GPU run leaves out the sizes meant for the CPU,
        // so a save does not wait for a specialisation (often the slowest: scalar, masked
        // accesses) that no run takes.
        let mut ws = app.workspace.clone();
        ws.sizes = run_sizes(app)
            .into_iter()
            .map(|i| app.workspace.sizes[i].clone())
            .collect();
        let some_sizes = ws.sizes.len() < app.workspace.sizes.len();
        rayon::spawn(move || {
            let source: Arc<str> = std::fs::read_to_string(&version.file)
                .unwrap_or_default()
                .into();
            let mut result = compiler.compile_version(Some(&ws), &version);
            if some_sizes && result.generated.is_some() && result.sizes.is_empty() {
                // One specialisation served the sizes asked for, not every size.
                result.sizes = ws.sizes.iter().map(|s| s.name.clone()).collect();
            }
            let source_lines =
                Arc::new(hl.highlight(&source, Lang::for_path(&version.file), &code_theme, color));
            let ptx_lines = Arc::new(hl.highlight(&result.ptx, Lang::Ptx, &code_theme, color));
            let cuda_lines = Arc::new(result.generated.as_deref().map_or_else(Vec::new, |g| {
                hl.highlight(g, Lang::Cuda, &code_theme, color)
            }));
            let map = super::linemap::LineMap::from_ptx(&result.ptx);
            let name = version
                .file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let main_file: Option<u32> = map
                .files()
                .iter()
                .find(|(_, p)| p.ends_with(&name))
                .map(|(i, _)| *i);
            let ptx_source_lines = Arc::new(
                (0..result.ptx.lines().count())
                    .map(|i| {
                        map.source_of(i)
                            .filter(|(f, _)| Some(*f) == main_file)
                            .map(|(_, l)| l)
                    })
                    .collect(),
            );
            let result = Arc::new(result);
            let done = CompileDone {
                index,
                generation,
                source,
                source_lines,
                result: result.clone(),
                ptx_lines,
                sass: None,
                cuda_lines,
                ptx_source_lines,
            };
            let _ = tx.send(Msg::Action(Action::Compiled(Box::new(done))));
            // The SASS after: disassembling and highlighting it must not delay the run.
            if let Some(text) = sass
                .filter(|_| result.ok)
                .and_then(|d| d.disassemble(&result.cubin).ok())
            {
                let lines = Arc::new(hl.highlight(&text, Lang::Sass, &code_theme, color));
                let _ = tx.send(Msg::Action(Action::Sass {
                    index,
                    generation,
                    lines,
                }));
            }
        });
    }

    /// Plans a version's runs at every size its backend takes, and submits them: to the GPU
    /// when there is one, else to the CPU (checks only, labelled emulated). On the GPU the size
    /// on screen gets a quick look (checked, with a few timed samples, shown as provisional)
    /// before its full run; the scheduler puts the user's save and selection first.
    fn request_run(&mut self, app: &mut App, index: usize, generation: u64) {
        let on_gpu = matches!(app.gpu, GpuState::Present(_));
        if !on_gpu {
            self.start_cpu();
        }
        let Some(compiled) = app.versions.get(index).and_then(|v| v.compiled.clone()) else {
            return;
        };
        let sizes = run_sizes(app);
        if !sizes
            .iter()
            .all(|&i| compiled.serves(&app.workspace.sizes[i].name))
        {
            // Compiled while the backend was unknown or another: compile for this one, which
            // then runs.
            self.effect(app, Effect::Compile { index, generation });
            return;
        }
        let reference = reference_index(&app.workspace)
            .and_then(|i| app.versions.get(i))
            .and_then(|v| v.compiled.clone());
        let planning = Planning {
            ws: &app.workspace,
            arch: app.arch.spec(),
            seed: self.seed,
            bench: watch_bench(on_gpu),
            quick_look_at: (on_gpu && sizes.contains(&app.size)).then_some(app.size),
        };
        let runs = plan_runs(
            &planning,
            index,
            &compiled,
            reference.as_ref(),
            &sizes,
            false,
        );
        self.pool.submit(Request {
            version: index,
            generation,
            target: if on_gpu { Target::Gpu } else { Target::Cpu },
            runs,
            saved: generation > 1,
        });
    }

    /// With no GPU, runs go to the CPU: two backends, so that one runaway kernel (stopped by
    /// its watchdog, or by the next save of its version) does not hold up every other version.
    fn start_cpu(&mut self) {
        if !std::mem::replace(&mut self.cpu_started, true) {
            for _ in 0..CPU_BACKENDS {
                self.pool.add(Box::new(CpuBackend::new(CpuEngine::Auto, 0)));
            }
        }
    }
}

/// How many jobs watch runs at once on the CPU.
const CPU_BACKENDS: usize = 2;

/// An engine event as the action the UI applies.
fn run_action(e: Event) -> Action {
    match e {
        Event::Phase {
            version,
            generation,
            size,
            phase,
        } => Action::Run {
            index: version,
            generation,
            size,
            event: RunEvent::Phase(phase),
        },
        Event::Finished {
            version,
            generation,
            size,
            result,
            samples,
            last,
            provisional,
        } => Action::Run {
            index: version,
            generation,
            size,
            event: RunEvent::Finished {
                result,
                samples,
                last,
                provisional,
            },
        },
        Event::Dropped { backend, why } => Action::Message(format!("{backend} dropped: {why}")),
    }
}

/// Watch mode favours quick feedback over the last digit: a shorter time budget per size.
/// On the CPU there is nothing to time.
fn watch_bench(gpu: bool) -> BenchSpec {
    BenchSpec {
        check: true,
        benchmark: gpu,
        mode: BenchMode::Cold,
        warmup_ms: 25.0,
        stop: StopRule {
            max_time_s: 1.0,
            ..StopRule::default()
        },
        watchdog_ms: if gpu {
            crate::run::supervisor::GPU_WATCHDOG_MS
        } else {
            crate::run::cpu::CPU_WATCHDOG_MS
        },
        rtol: None,
        atol: None,
        guard_bytes: None,
    }
}

/// Starts the GPU worker, telling the UI how it went; until it answers, each press of the
/// reconnect key tries again. Once it does, the GPU joins the pool, and the same key brings
/// back a remote worker whose connection is lost (the job in flight then runs again).
fn find_gpu(
    cmd: WorkerCommand,
    devices: Option<crate::engine::Devices>,
    reconnect: Receiver<()>,
    tx: Sender<Msg>,
    pool: Arc<Pool>,
) {
    let send = move |a: Action| tx.send(Msg::Action(a)).is_ok();
    let first = devices.as_ref().map_or(0, |d| d.first());
    loop {
        let started = Supervisor::start(cmd.clone())
            .and_then(|mut s| s.device(first).map(|d| (s, d)))
            .map_err(|e| e.to_string());
        match started {
            Ok((sup, device)) => {
                send(Action::Gpu(GpuState::Present(device.clone())));
                let send2 = send.clone();
                let recover = move |sup: &mut Supervisor| wait_reconnect(sup, &reconnect, &send);
                let gpu = GpuBackend::new(sup, first, device.clone());
                pool.add(Box::new(gpu.with_recovery(Box::new(recover))));
                if let Some(rest) = devices.map(|d| d.rest(&device)).filter(|r| !r.is_empty()) {
                    add_gpus(&cmd, first, &device, &rest, &pool, &send2);
                }
                return;
            }
            Err(e) => {
                send(Action::Gpu(GpuState::Absent(format!(
                    "{e} (c tries again)"
                ))));
                if reconnect.recv().is_err() {
                    return;
                }
                send(Action::Gpu(GpuState::Probing));
            }
        }
    }
}

/// Adds the GPUs after the first to the pool; says which serve runs, and why any does not.
fn add_gpus(
    cmd: &WorkerCommand,
    first: u32,
    device: &crate::report::DeviceInfo,
    rest: &[u32],
    pool: &Pool,
    send: &dyn Fn(Action) -> bool,
) {
    let (joined, left_out) = crate::engine::gpus::open_more(cmd, device, rest);
    let mut serving = vec![first.to_string()];
    for (k, g) in joined {
        serving.push(k.to_string());
        pool.add(Box::new(g));
    }
    let mut msg = format!("runs on {} GPUs ({})", serving.len(), serving.join(", "));
    for why in left_out {
        msg += &format!("; {why}");
    }
    send(Action::Message(msg));
}

/// Waits for the reconnect key, then tries, saying how it went; tries again on the next press.
/// False when the UI is gone.
fn wait_reconnect(
    sup: &mut Supervisor,
    keys: &Receiver<()>,
    send: &dyn Fn(Action) -> bool,
) -> bool {
    let label = sup.command().label();
    send(Action::Message(format!(
        "the GPU worker `{label}` is gone; press c to reconnect"
    )));
    while keys.try_recv().is_ok() {} // presses from before the loss do not count
    loop {
        if keys.recv().is_err() {
            return false;
        }
        send(Action::Message(format!("reconnecting to `{label}`...")));
        match sup.reconnect() {
            Ok(()) => {
                send(Action::Message(format!("reconnected to `{label}`")));
                return true;
            }
            Err(e) => {
                send(Action::Message(format!(
                    "cannot reconnect: {e}; press c to try again"
                )));
            }
        }
    }
}

/// Runs the TUI until the user quits.
pub fn run(opts: WatchOptions) -> Result<(), StartError> {
    let ws: Workspace = crate::workspace::load(&opts.workspace)?;
    let arch = opts.arch.or(ws.arch).unwrap_or(Arch::DEFAULT);
    let compiler = Compiler::new(arch, Cache::default_location())?;
    let (mut themes, theme_warnings) = super::themes::available(opts.color);
    let mut app = App::new(ws, arch);
    if let Some(name) = &opts.theme {
        match super::themes::pick(&mut themes, name) {
            Ok(i) => app.theme = i,
            Err(e) => app.message = e,
        }
    }
    if let Some(w) = theme_warnings.first() {
        app.message = w.to_string();
    }
    let (tx, rx) = channel();
    let mut engine = Engine::new(tx.clone(), compiler, themes, opts.color);
    let (keymap, keys_problem) = super::keys::Keymap::load();
    app.help_lines = keymap.help().to_vec();
    engine.keymap = keymap;
    if let Some(p) = keys_problem {
        app.message = p;
    }
    let mut watcher = watch(&tx, &watched_files(&app)).map_err(StartError::Watch)?;
    if opts.gpu {
        engine.start_gpu(opts.worker.clone(), opts.devices.clone());
    } else {
        app.gpu = GpuState::Absent("disabled with --no-gpu".into());
    }
    let mut terminal = super::terminal::enter().map_err(StartError::Terminal)?;
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            while let Ok(ev) = crossterm::event::read() {
                if tx.send(Msg::Term(ev)).is_err() {
                    return;
                }
            }
        });
    }
    if let Ok(size) = terminal.size() {
        let screen = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        engine.apply(&mut app, Action::Resize(screen));
    }
    engine.first_pass(&mut app);
    let frame_gap = Duration::from_millis(16);
    let mut last_draw = Instant::now() - frame_gap;
    let mut watched = watched_files(&app);
    let mut dirty = true;
    while !app.quit {
        let screen = terminal
            .size()
            .map(|s| ratatui::layout::Rect::new(0, 0, s.width, s.height))
            .unwrap_or_default();
        if dirty {
            let wait = frame_gap.saturating_sub(last_draw.elapsed());
            if wait.is_zero() {
                let theme = engine.theme(&app).clone();
                let _ = terminal.draw(|f| super::draw::draw(f, &app, &theme));
                last_draw = Instant::now();
                dirty = false;
                continue;
            }
            match rx.recv_timeout(wait) {
                Ok(m) => handle(&mut engine, &mut app, m, screen),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(_) => break,
            }
        } else {
            match rx.recv() {
                Ok(m) => handle(&mut engine, &mut app, m, screen),
                Err(_) => break,
            }
        }
        // Drain everything queued, then draw once.
        while let Ok(m) = rx.try_recv() {
            handle(&mut engine, &mut app, m, screen);
        }
        dirty = true;
        let now = watched_files(&app);
        if now != watched {
            let _ = watcher.set_files(&now);
            watched = now;
        }
    }
    super::terminal::leave();
    Ok(())
}

fn handle(engine: &mut Engine, app: &mut App, m: Msg, screen: ratatui::layout::Rect) {
    match m {
        Msg::Term(crossterm::event::Event::Mouse(me))
            if matches!(
                me.kind,
                crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left)
            ) =>
        {
            // A click on a version selects it; the layout says where the list is.
            if let Some(i) = super::draw::version_at(app, screen, me.column, me.row) {
                engine.apply(app, Action::SelectVersion(i));
            }
        }
        Msg::Term(ev) => {
            if let Some(a) = engine.keymap.action_for(&ev) {
                engine.apply(app, a);
            }
        }
        Msg::Action(a) => engine.apply(app, a),
    }
}

/// How the watcher groups file events into saves (`crate::watch` says what each figure does):
/// writes less than about 0.1 s apart (an editor's steps, a formatter rewriting the file, a tool
/// writing it in pieces) are one save, compiled once from the last write about 0.12 s after it;
/// a file that never stops changing is still compiled every 2 s.
pub const SAVE_TIMING: crate::watch::Timing = crate::watch::Timing {
    stitch: Duration::from_millis(15),
    quiet: Duration::from_millis(100),
    max_delay: Duration::from_secs(2),
};

/// A file watcher that sends every change of `files` to the loop as `FilesChanged`.
pub fn watch(tx: &Sender<Msg>, files: &[PathBuf]) -> Result<crate::watch::FileWatcher, String> {
    let tx = tx.clone();
    let mut w =
        crate::watch::FileWatcher::with_timing(SAVE_TIMING, move |c: crate::watch::Changed| {
            let _ = tx.send(Msg::Action(Action::FilesChanged(c.paths)));
        })
        .map_err(|e| e.to_string())?;
    w.set_files(files).map_err(|e| e.to_string())?;
    Ok(w)
}

/// The workspace file, every version's source and the files they include.
fn watched_files(app: &App) -> Vec<PathBuf> {
    let mut files = vec![app.workspace.path.clone()];
    for v in &app.versions {
        files.push(v.file.clone());
        if let Some(c) = &v.compiled {
            files.extend(c.includes.iter().cloned());
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The sizes the current backend runs, as indices into the workspace's sizes: the GPU sizes on
/// a GPU, the CPU sizes without one, and every size while that is not known yet (or when the
/// backend's list would be empty).
fn run_sizes(app: &App) -> Vec<usize> {
    let sizes = match app.gpu {
        GpuState::Present(_) => app.workspace.gpu_sizes(),
        GpuState::Absent(_) => app.workspace.cpu_sizes(),
        GpuState::Probing => Vec::new(),
    };
    if sizes.is_empty() {
        (0..app.workspace.sizes.len()).collect()
    } else {
        sizes
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
