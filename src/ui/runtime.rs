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
use crate::compile::{Arch, Cache, CompiledVersion, Compiler};
use crate::report::RunResult;
use crate::run::plan::{plan_job, work, PlanOptions};
use crate::run::protocol::{BenchMode, BenchSpec, RunJob};
use crate::run::stats::StopRule;
use crate::run::supervisor::{JobResult, Supervisor, WorkerCommand};
use crate::workspace::Workspace;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
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
    in_flight: HashSet<usize>,
    pending: HashMap<usize, u64>,
    gpu: Option<Sender<GpuRequest>>,
    /// To the GPU thread: the reconnect key was pressed.
    reconnect: Option<Sender<()>>,
    /// With no GPU: the thread that checks versions on the CPU, started on first use.
    cpu: Option<Sender<GpuRequest>>,
    /// The inputs' seed, the same across saves (so the worker keeps a size's inputs and
    /// reference resident) until the reseed key draws a fresh one.
    seed: u64,
}

impl Engine {
    pub fn new(tx: Sender<Msg>, compiler: Compiler, themes: Vec<Theme>, color: bool) -> Engine {
        Engine {
            tx,
            compiler: Arc::new(compiler),
            highlighter: Arc::new(Highlighter::new()),
            themes,
            color,
            sass: super::sass::find_disassembler().map(Arc::new),
            keymap: super::keys::Keymap::default(),
            in_flight: HashSet::new(),
            pending: HashMap::new(),
            gpu: None,
            reconnect: None,
            cpu: None,
            seed: fresh_seed(),
        }
    }

    pub fn theme<'a>(&'a self, app: &App) -> &'a Theme {
        &self.themes[app.theme % self.themes.len().max(1)]
    }

    /// Starts the GPU thread; it reports what it found as an `Action::Gpu`.
    pub fn start_gpu(&mut self, worker: WorkerCommand) {
        let (gtx, grx) = channel();
        let (rtx, rrx) = channel();
        let tx = self.tx.clone();
        std::thread::spawn(move || gpu_thread(worker, grx, rrx, tx));
        self.gpu = Some(gtx);
        self.reconnect = Some(rtx);
    }

    /// Applies an action and carries out its effects.
    pub fn apply(&mut self, app: &mut App, action: Action) {
        if let Action::Compiled(done) = &action {
            let index = done.index;
            self.in_flight.remove(&index);
            if let Some(generation) = self.pending.remove(&index) {
                self.spawn_compile(app, index, generation);
            }
        }
        for effect in update(app, action) {
            self.effect(app, effect);
        }
    }

    fn effect(&mut self, app: &mut App, effect: Effect) {
        match effect {
            Effect::Compile { index, generation } => {
                if self.in_flight.contains(&index) {
                    // One in flight, one pending: a newer save replaces the pending job.
                    self.pending.insert(index, generation);
                } else {
                    self.spawn_compile(app, index, generation);
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

    fn spawn_compile(&mut self, app: &App, index: usize, generation: u64) {
        let Some(version) = app.workspace.versions.get(index).cloned() else {
            return;
        };
        self.in_flight.insert(index);
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

    /// Plans a version's runs at every size its backend takes, and queues them: on the GPU
    /// when there is one, else on the CPU (checks only, labelled emulated). The size on screen
    /// goes first, and on the GPU as a quick look (checked, with a few timed samples, shown as
    /// provisional) before its full run and then the other sizes.
    fn request_run(&mut self, app: &mut App, index: usize, generation: u64) {
        let on_gpu = matches!(app.gpu, GpuState::Present(_));
        let queue = if on_gpu {
            self.gpu.clone()
        } else {
            Some(self.cpu_queue())
        };
        let Some(queue) = queue else { return };
        let (Some(v), Some(view)) = (app.workspace.versions.get(index), app.versions.get(index))
        else {
            return;
        };
        let Some(compiled) = view.compiled.clone() else {
            return;
        };
        let reference = match &app.workspace.reference {
            crate::workspace::Reference::Version(name) => app
                .workspace
                .versions
                .iter()
                .zip(&app.versions)
                .find(|(x, _)| &x.name == name)
                .and_then(|(x, xv)| xv.compiled.clone().map(|c| (x.clone(), c))),
            _ => None,
        };
        let opts = PlanOptions {
            seed: self.seed,
            bench: watch_bench(on_gpu),
        };
        let mut sizes = run_sizes(app);
        if !sizes
            .iter()
            .all(|&i| compiled.serves(&app.workspace.sizes[i].name))
        {
            // Compiled while the backend was unknown or another: compile for this one, which
            // then runs.
            self.spawn_compile(app, index, generation);
            return;
        }
        let quick_look = on_gpu && sizes.contains(&app.size);
        if let Some(p) = sizes.iter().position(|s| *s == app.size) {
            sizes[..=p].rotate_right(1);
        }
        let mut jobs = Vec::new();
        for (k, size_index) in sizes.into_iter().enumerate() {
            let size = &app.workspace.sizes[size_index];
            let c = compiled.for_size(&size.name);
            let r = reference
                .as_ref()
                .map(|(x, rc)| (x, rc.for_size(&size.name)));
            let planned = plan_job(
                &app.workspace,
                v,
                c,
                size,
                app.arch.spec(),
                r,
                size_index as u64,
                &opts,
            )
            .map_err(|e| e.to_string());
            let (bytes, flops) = work(&app.workspace, v, size).unwrap_or((None, None));
            let run = PlannedRun {
                size: size_index,
                size_name: size.name.clone(),
                bytes,
                flops,
                job: planned,
                cpu: (!on_gpu).then(|| CpuJob {
                    code: c.clone(),
                    reference: r.map(|(_, rc)| rc.clone()),
                }),
                provisional: false,
            };
            if k == 0 && quick_look {
                jobs.push(run.quick_look());
            }
            jobs.push(run);
        }
        let peak = match &app.gpu {
            GpuState::Present(d) => d.peak().0,
            _ => None,
        };
        let _ = queue.send(GpuRequest {
            index,
            generation,
            version: v.name.clone(),
            jobs,
            peak,
        });
    }

    /// The CPU thread's queue, started on first use.
    fn cpu_queue(&mut self) -> Sender<GpuRequest> {
        self.cpu
            .get_or_insert_with(|| {
                let (ctx, crx) = channel();
                let tx = self.tx.clone();
                std::thread::spawn(move || super::cpu_runs::cpu_thread(crx, tx));
                ctx
            })
            .clone()
    }
}

/// The quick look's stop rule: a handful of samples, tens of milliseconds at most.
const QUICK_LOOK: StopRule = StopRule {
    min_samples: 3,
    min_time_s: 0.0,
    max_time_s: 0.03,
    target_rel_std_error: 0.02,
    max_samples: 64,
};

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

fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

#[derive(Clone)]
pub(super) struct PlannedRun {
    pub size: usize,
    pub size_name: String,
    pub bytes: Option<u64>,
    pub flops: Option<u64>,
    pub job: Result<RunJob, String>,
    /// For a CPU run: the compiles whose code runs (the version's and its reference's).
    pub cpu: Option<CpuJob>,
    /// A quick look, refined by the run that follows it in the request.
    pub provisional: bool,
}

impl PlannedRun {
    /// This run as a quick look: checked, with a short warm-up and a few samples. The full run
    /// after it needs no second check of the same inputs; it keeps the quick look's.
    fn quick_look(&self) -> PlannedRun {
        let mut quick = self.clone();
        quick.provisional = true;
        if let Ok(job) = &mut quick.job {
            job.bench.warmup_ms = 2.0;
            job.bench.stop = QUICK_LOOK;
        }
        quick
    }
}

#[derive(Clone)]
pub(super) struct CpuJob {
    pub code: CompiledVersion,
    pub reference: Option<CompiledVersion>,
}

/// The runs of one version, for the GPU thread or the CPU thread.
pub(super) struct GpuRequest {
    pub index: usize,
    pub generation: u64,
    pub version: String,
    pub jobs: Vec<PlannedRun>,
    pub peak: Option<f64>,
}

/// Owns the supervisor. Requests queue up; before each job, newer requests for the same version
/// replace older ones, so a superseded source is never benchmarked after a newer save arrives.
/// When the worker is lost for good (a dropped connection to a remote one), the job in flight is
/// marked, the rest wait, and the reconnect key (`reconnect`) resumes them.
fn gpu_thread(
    cmd: WorkerCommand,
    rx: Receiver<GpuRequest>,
    reconnect: Receiver<()>,
    tx: Sender<Msg>,
) {
    let send = |a: Action| tx.send(Msg::Action(a)).is_ok();
    let mut sup = loop {
        let started = Supervisor::start(cmd.clone())
            .and_then(|mut s| s.device(0).map(|d| (s, d)))
            .map_err(|e| e.to_string());
        match started {
            Ok((s, d)) => {
                send(Action::Gpu(GpuState::Present(d)));
                break s;
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
    };
    let queue: RefCell<Vec<GpuRequest>> = RefCell::new(Vec::new());
    // Newer requests replace queued ones for the same version.
    let pull = || {
        while let Ok(r) = rx.try_recv() {
            let mut q = queue.borrow_mut();
            q.retain(|x| x.index != r.index);
            q.push(r);
        }
    };
    let superseded = |index: usize| {
        pull();
        queue.borrow().iter().any(|q| q.index == index)
    };
    loop {
        if queue.borrow().is_empty() {
            match rx.recv() {
                Ok(r) => queue.borrow_mut().push(r),
                Err(_) => return,
            }
        }
        pull();
        let req = queue.borrow_mut().remove(0);
        let n = req.jobs.len();
        // The last quick look's result and samples: its check stands for the full run that
        // refines it.
        let mut quick: Option<(RunResult, Vec<f64>)> = None;
        for (k, p) in req.jobs.iter().enumerate() {
            // A newer save of this version arrived: drop the rest of this request.
            if superseded(req.index) {
                break;
            }
            let refines = quick
                .take()
                .filter(|(q, _)| !p.provisional && q.size == p.size_name);
            if let Some((q, samples)) = refines
                .as_ref()
                .filter(|(q, _)| q.status != crate::report::Status::Ok)
            {
                // The quick look failed or was skipped: nothing to refine, and its result is
                // final (sent again as such, so the version knows when its last size is in).
                let final_result = Action::Run {
                    index: req.index,
                    generation: req.generation,
                    size: p.size,
                    event: RunEvent::Finished {
                        result: Box::new(q.clone()),
                        samples: samples.clone(),
                        last: k + 1 == n,
                        provisional: false,
                    },
                };
                if !send(final_result) {
                    return;
                }
                continue;
            }
            let mut result = RunResult::new(&req.version, &p.size_name, crate::report::Status::Ok);
            (result.bytes, result.flops) = (p.bytes, p.flops);
            let mut samples = Vec::new();
            match &p.job {
                Err(e) => {
                    result.status = crate::report::Status::Error;
                    result.message = Some(e.clone());
                }
                Ok(job) => {
                    let (index, generation, size) = (req.index, req.generation, p.size);
                    let cancel = || superseded(index);
                    let mut phase = |phase| {
                        send(Action::Run {
                            index,
                            generation,
                            size,
                            event: RunEvent::Phase(phase),
                        });
                    };
                    let refined;
                    let job = match &refines {
                        Some(_) => {
                            refined = RunJob {
                                bench: BenchSpec {
                                    check: false,
                                    ..job.bench.clone()
                                },
                                ..job.clone()
                            };
                            &refined
                        }
                        None => job,
                    };
                    let outcome = sup.run_cancellable(job, &mut phase, &cancel);
                    if outcome == JobResult::Cancelled {
                        // An in-flight benchmark of a superseded source: the newer one runs next.
                        break;
                    }
                    if let JobResult::Done(o) = &outcome {
                        samples = o.samples_us.clone();
                    }
                    crate::batch::fill_result(&mut result, outcome, req.peak);
                    if let Some((q, _)) = &refines {
                        if result.check.is_none() {
                            result.check = q.check.clone();
                        }
                    }
                }
            }
            if p.provisional {
                quick = Some((result.clone(), samples.clone()));
            }
            let lost = !sup.connected();
            if lost {
                let why = result.message.take().unwrap_or_default();
                result.status = crate::report::Status::Crashed;
                result.message = Some(format!(
                    "connection to the worker lost: {why}\npress c to reconnect and resume"
                ));
            }
            if !send(Action::Run {
                index: req.index,
                generation: req.generation,
                size: p.size,
                event: RunEvent::Finished {
                    result: Box::new(result),
                    samples,
                    last: k + 1 == n,
                    provisional: p.provisional,
                },
            }) {
                return;
            }
            if lost {
                // This job and the rest of its request run again once reconnected, unless a
                // newer save of the version comes first.
                if !superseded(req.index) {
                    let rest = GpuRequest {
                        jobs: req.jobs[k..].to_vec(),
                        version: req.version.clone(),
                        ..req
                    };
                    queue.borrow_mut().insert(0, rest);
                }
                if !wait_reconnect(&mut sup, &reconnect, &send) {
                    return;
                }
                break;
            }
        }
    }
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
        engine.start_gpu(opts.worker.clone());
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
    for index in 0..app.versions.len() {
        app.versions[index].generation = 1;
        app.versions[index].status = super::app::VersionStatus::Compiling;
        engine.effect(
            &mut app,
            Effect::Compile {
                index,
                generation: 1,
            },
        );
    }
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

/// A file watcher that sends every change of `files` to the loop as `FilesChanged`.
pub fn watch(tx: &Sender<Msg>, files: &[PathBuf]) -> Result<crate::watch::FileWatcher, String> {
    let tx = tx.clone();
    let mut w = crate::watch::FileWatcher::new(
        Duration::from_millis(30),
        move |c: crate::watch::Changed| {
            let _ = tx.send(Msg::Action(Action::FilesChanged(c.paths)));
        },
    )
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
