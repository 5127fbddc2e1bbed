//! The `kwb` command line: parses arguments, runs the engine, prints diagnostics and maps
//! outcomes to the documented exit codes (see `kwb::exit`).

use clap::{Parser, Subcommand, ValueEnum};
use kwb::compile::{Arch, Cache, Compiler};
use kwb::workspace::{self, Workspace};
use kwb::{exit, inspect};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kwb",
    version,
    about = "The kernel workbench: compile, inspect, check and benchmark CUDA kernels side by side"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// A workspace to watch: `kwb W.yaml` is `kwb watch W.yaml`.
    workspace: Option<PathBuf>,
    /// Never install anything: without NVRTC, stop and say how to install it (as
    /// KWB_NO_INSTALL=1 does). By default kwb installs the NVRTC wheels into its cache folder.
    #[arg(long, global = true)]
    offline: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Compile every version with NVRTC and report registers, shared memory, spills, barriers
    /// and occupancy (no GPU needed).
    Inspect(InspectArgs),
    /// Compile, check and benchmark every version on the GPU, headless, for CI.
    Batch(BatchArgs),
    /// The live workbench: recompile, re-check and re-benchmark on every save.
    Watch(WatchArgs),
    /// Joins the JSON reports of `kwb batch --shard K/N` into the report of the whole run.
    Merge(MergeArgs),
    /// Runs a Python program unchanged and writes a workspace for each Triton launch it makes
    /// (its inputs, Triton's outputs as the reference, Triton's time as a baseline).
    Capture(CaptureArgs),
    /// The isolated GPU worker (speaks docs/worker-protocol.md on stdin/stdout).
    #[command(hide = true)]
    Worker,
    /// Benchmarks the TUI: save-to-screen latency, frame render time, and idle CPU.
    #[command(name = "bench-ui")]
    BenchUi(BenchUiArgs),
}

#[derive(clap::Args)]
struct BenchUiArgs {
    /// The workspace to measure with.
    #[arg(default_value = "workspaces/elementwise-add.yaml")]
    workspace: PathBuf,
    /// The version whose kernel is saved.
    #[arg(long, default_value = "v1")]
    version: String,
    /// Saves to time (after one warm-up save).
    #[arg(long, default_value_t = 20)]
    saves: usize,
    /// PTX lines per version for the frame benchmark.
    #[arg(long, default_value_t = 5000)]
    ptx_lines: usize,
    /// Frames to render.
    #[arg(long, default_value_t = 200)]
    frames: usize,
    /// Seconds of idle CPU to measure (needs tmux; 0 skips it).
    #[arg(long, default_value_t = 5.0)]
    idle_seconds: f64,
    /// Also measure, on the GPU, each save to the version's checked and timed (provisional)
    /// result at `--size`, through the real watch engine and GPU worker.
    #[arg(long)]
    gpu: bool,
    /// The size on screen for `--gpu`.
    #[arg(long, default_value = "16Mi")]
    size: String,
    /// With `--gpu`, first measure watch's start: `--version` is saved this many ms after
    /// start, during the first pass (its result's latency, and when every version has a figure
    /// at `--size`).
    #[arg(long)]
    first_pass_save_ms: Option<u64>,
}

#[derive(clap::Args)]
struct WatchArgs {
    /// The workspace YAML file.
    workspace: PathBuf,
    /// Target architecture (default: the workspace's, else sm_90).
    #[arg(long)]
    arch: Option<String>,
    /// A theme name (dark, light, high-contrast, or one in ~/.config/kwb/themes) or a theme file.
    #[arg(long)]
    theme: Option<String>,
    /// Do not look for a GPU: compile, PTX, resources and occupancy only.
    #[arg(long)]
    no_gpu: bool,
    /// Several GPUs, one worker each: `all`, or ordinals like 0,1,3. The saved version's runs
    /// go to the first idle GPU.
    #[arg(long, conflicts_with = "no_gpu", value_parser = |s: &str| kwb::engine::Devices::parse(s))]
    devices: Option<kwb::engine::Devices>,
    #[command(flatten)]
    worker: WorkerArgs,
}

/// Where the GPU worker runs: here by default, or on another machine.
#[derive(clap::Args, Default)]
struct WorkerArgs {
    /// Run the GPU worker on HOST: `ssh HOST kwb worker` (your ssh config and agent; kwb
    /// stores no credentials). Compiling stays here.
    #[arg(long, value_name = "HOST", conflicts_with = "worker_cmd")]
    remote: Option<String>,
    /// Run this command (through `sh -c`) as the GPU worker; it must speak kwb's worker
    /// protocol on stdin/stdout (docs/worker-protocol.md).
    #[arg(long, value_name = "CMD")]
    worker_cmd: Option<String>,
}

impl WorkerArgs {
    fn command(&self) -> std::io::Result<kwb::run::supervisor::WorkerCommand> {
        use kwb::run::supervisor::WorkerCommand;
        match (&self.remote, &self.worker_cmd) {
            (Some(host), _) => Ok(WorkerCommand::ssh(host)),
            (None, Some(cmd)) => Ok(WorkerCommand::shell(cmd)),
            (None, None) => WorkerCommand::current_exe(),
        }
    }
}

#[derive(clap::Args)]
struct BatchArgs {
    /// The workspace YAML file.
    workspace: PathBuf,
    /// Only these problem sizes (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
    /// Only these versions (comma-separated names; a swept version's name selects all its
    /// configurations, and one configuration is named like `v8[num_warps=4,BLOCK=1024]`).
    #[arg(long)]
    versions: Vec<String>,
    #[command(flatten)]
    report: ReportArgs,
    #[arg(long, value_enum, default_value_t = ModeArg::Cold)]
    mode: ModeArg,
    /// The GPU to use.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Several GPUs, one worker each: `all`, or ordinals like 0,1,3. Jobs go to the first idle
    /// GPU, the largest first; each result names its GPU.
    #[arg(long, conflicts_with = "device", value_parser = |s: &str| kwb::batch::Devices::parse(s))]
    devices: Option<kwb::batch::Devices>,
    /// Skip the correctness check (benchmark only).
    #[arg(long)]
    no_check: bool,
    /// Warm-up time per configuration, ms.
    #[arg(long, default_value_t = 25.0)]
    warmup_ms: f64,
    /// Stop when the relative standard error of the mean falls below this...
    #[arg(long, default_value_t = 0.005)]
    target_rse: f64,
    /// ...after at least this many samples...
    #[arg(long, default_value_t = 10)]
    min_samples: usize,
    /// ...and at least this much time (s),
    #[arg(long, default_value_t = 0.2)]
    min_time: f64,
    /// or at this time limit per configuration (s).
    #[arg(long, default_value_t = 5.0)]
    max_time: f64,
    /// Per-launch watchdog (ms): on a GPU a run silent for longer is killed, on the CPU a launch
    /// running longer is stopped; either is marked timeout [default: 10000 on a GPU, 120000 on
    /// the CPU, which runs kernels thousands of times slower]
    #[arg(long)]
    watchdog_ms: Option<u64>,
    /// Input seed (default: fresh for every run).
    #[arg(long)]
    seed: Option<u64>,
    /// Skip the compile cache.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    worker: WorkerArgs,
    /// Bytes of red zone before and after every buffer, checked for stray writes (0: off).
    #[arg(long, default_value_t = kwb::run::protocol::DEFAULT_GUARD_BYTES as u64)]
    guard_bytes: u64,
    /// Run on the CPU, no GPU needed: CUDA versions in kwb's PTX emulator (with memory, race,
    /// initialisation and sync checks), tile versions in the tile interpreter; checks, no timing.
    /// Without --sizes, runs the workspace's `emulate: true` sizes, else its smallest.
    #[arg(long)]
    cpu: bool,
    /// With --cpu: `emulator` runs tile versions' generated PTX in the emulator too.
    #[arg(long, value_enum, default_value_t = CpuEngineArg::Auto, requires = "cpu")]
    cpu_engine: CpuEngineArg,
    /// With --cpu: the arch to compile for (default: the workspace's, else sm_90).
    #[arg(long, requires = "cpu")]
    arch: Option<String>,
    /// Run shard K of N (0 <= K < N) of the jobs, for a cluster; `kwb merge` joins the
    /// shards' JSON reports (docs/cluster.md). Give every shard the same --seed.
    #[arg(long, value_parser = |s: &str| kwb::batch::Shard::parse(s))]
    shard: Option<kwb::batch::Shard>,
}

#[derive(clap::Args)]
struct CaptureArgs {
    /// The folder for the workspaces and recorded arrays (made if missing; an earlier
    /// capture's folder is replaced; any other folder is refused).
    #[arg(long, default_value = "kwb-capture")]
    out: PathBuf,
    /// Only kernels whose name matches one of these comma-separated patterns (`*`, `?`).
    #[arg(long)]
    kernels: Option<String>,
    /// Distinct specialisations recorded per kernel.
    #[arg(long, default_value_t = 1)]
    max_per_kernel: u32,
    /// Cap on the bytes of recorded arrays (`2Gi`, `500M`, or bytes).
    #[arg(long, default_value = "2Gi")]
    max_bytes: String,
    /// Do not time Triton's kernels (on a GPU they are timed by default).
    #[arg(long)]
    no_time: bool,
    /// Samples per timed kernel.
    #[arg(long, default_value_t = 20)]
    reps: u32,
    /// The program and its arguments, after `--`: `kwb capture -- python train.py --steps 1`.
    #[arg(last = true, required = true)]
    program: Vec<String>,
}

#[derive(clap::Args)]
struct MergeArgs {
    /// The shard reports (`kwb batch --shard K/N --format json`), every shard once.
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    #[command(flatten)]
    report: ReportArgs,
}

/// How `kwb batch` and `kwb merge` write their report.
#[derive(clap::Args)]
struct ReportArgs {
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    format: ReportFormat,
    /// Write the report here instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// An earlier `--format json` report to compare timings with.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// A slowdown must exceed this percentage (and the measured noise) to count.
    #[arg(long, default_value_t = 5.0)]
    max_regression: f64,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum CpuEngineArg {
    Auto,
    Emulator,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum ReportFormat {
    Table,
    Json,
    Junit,
    Markdown,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum ModeArg {
    Cold,
    Hot,
    Graph,
}

#[derive(clap::Args)]
struct InspectArgs {
    /// A workspace YAML file, or a single `.cu`, `.tile` or `.py` kernel file.
    path: PathBuf,
    /// Only this version (repeatable).
    #[arg(long = "version", value_name = "V")]
    versions: Vec<String>,
    /// Target architecture, e.g. sm_90, or sm_90a for Hopper-only instructions such as wgmma (default: the workspace's, else the GPU's, else sm_90).
    #[arg(long)]
    arch: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Include each version's PTX.
    #[arg(long)]
    ptx: bool,
    /// Include the CUDA C++ generated for each tile-language version (each specialisation).
    #[arg(long)]
    cuda: bool,
    /// Also write each version's CUBIN into DIR: `VERSION.cubin`, or `VERSION@SIZE.cubin` for
    /// each size of a specialised tile version. Existing files are never overwritten.
    #[arg(long, value_name = "DIR")]
    cubin_dir: Option<PathBuf>,
    /// Block size for kernels that no launch names (bare `.cu` files).
    #[arg(long, default_value_t = 256)]
    block: u32,
    /// Skip the compile cache.
    #[arg(long)]
    no_cache: bool,
    /// Benchmark compilation instead: one-at-a-time, cold parallel, and warm-cache times.
    #[arg(long)]
    timings: bool,
    /// A bare `.tile`/`.py` file: the value of a `tl.constexpr` parameter (repeatable).
    #[arg(long = "constexpr", value_name = "NAME=VALUE")]
    constexprs: Vec<String>,
    /// A bare `.tile`/`.py` file: warps per program (default 4).
    #[arg(long)]
    num_warps: Option<u32>,
    /// Only these problem sizes (comma-separated names): a tile version is then specialised
    /// for these alone, as a GPU run that leaves out the `emulate: true` sizes compiles it.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap's own exit code for bad usage is 2, which kwb's table gives to a regression:
        // bad usage is 4 here, as everywhere; `--help` and `--version` are no error.
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            return ExitCode::from(code as u8);
        }
    };
    kwb::compile::provision::set_offline(cli.offline);
    let command = match (cli.command, cli.workspace) {
        (Some(_), Some(stray)) => {
            let msg = format!(
                "unexpected argument `{}` before the subcommand; a workspace goes after it \
                 (`kwb watch W.yaml`), or alone (`kwb W.yaml` watches it)",
                stray.display()
            );
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let _ = cmd
                .error(clap::error::ErrorKind::ArgumentConflict, msg)
                .print();
            return ExitCode::from(exit::USAGE as u8);
        }
        (Some(c), None) => c,
        (None, Some(workspace)) => Command::Watch(WatchArgs {
            workspace,
            arch: None,
            theme: None,
            no_gpu: false,
            devices: None,
            worker: WorkerArgs::default(),
        }),
        (None, None) => {
            let _ = <Cli as clap::CommandFactory>::command().print_help();
            return ExitCode::from(exit::USAGE as u8);
        }
    };
    let code = match command {
        Command::Watch(args) => run_watch(args),
        Command::BenchUi(args) => run_bench_ui(args),
        Command::Inspect(args) => run_inspect(args),
        Command::Batch(args) => run_batch(args),
        Command::Merge(args) => run_merge(args),
        Command::Capture(args) => run_capture(args),
        Command::Worker => {
            kwb::run::gpu::worker::serve(std::io::stdin(), Box::new(std::io::stdout()))
        }
    };
    ExitCode::from(code as u8)
}

fn load_any(path: &Path) -> Result<Workspace, workspace::WorkspaceError> {
    let kernel_file = ["cu", "cuh", "tile", "py"];
    if path
        .extension()
        .is_some_and(|e| kernel_file.iter().any(|k| e == *k))
    {
        Workspace::for_kernel_file(path)
    } else {
        workspace::load(path)
    }
}

/// Diagnostics on stderr, each with its source line and a caret where it has them.
fn eprint_with_snippets<'a>(diags: impl Iterator<Item = &'a kwb::diag::Diagnostic>) {
    for d in diags {
        eprintln!("{}", kwb::diag::with_snippet(d));
    }
}

/// An optional `--arch sm_XX`; a bad one is reported and is a usage error.
fn arch_flag(flag: Option<&str>) -> Result<Option<Arch>, i32> {
    flag.map(Arch::parse).transpose().map_err(|e| {
        eprintln!("error: --arch: {e}");
        exit::USAGE
    })
}

/// `--constexpr NAME=VALUE` and `--num-warps N` for a bare tile-language file.
fn bare_tile_settings(
    ws: &mut Workspace,
    constexprs: &[String],
    num_warps: Option<u32>,
) -> Result<(), String> {
    use kwb::workspace::{Constexpr, Formula};
    let bare_tile = ws.versions.len() == 1
        && ws.versions[0].launches.is_empty()
        && ws.versions[0].kind.is_tile();
    if !bare_tile {
        if !constexprs.is_empty() || num_warps.is_some() {
            return Err("--constexpr and --num-warps are for a bare .tile or .py file; a workspace sets `constexprs` and `num_warps` per version".into());
        }
        return Ok(());
    }
    let v = &mut ws.versions[0];
    for c in constexprs {
        let (name, value) = c
            .split_once('=')
            .ok_or_else(|| format!("--constexpr {c}: expected NAME=VALUE, e.g. BLOCK=1024"))?;
        let f = Constexpr::parse(value).map_err(|e| format!("--constexpr {c}: {e}"))?;
        v.constexprs.push((name.trim().to_string(), f));
    }
    if let Some(n) = num_warps {
        v.num_warps = Some(Formula::parse(&n.to_string()).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// The target: `--arch`, else the workspace's, else the GPU's (if there is one kwb knows),
/// else sm_90.
fn resolve_arch(flag: Option<&str>, ws: &Workspace) -> Result<Arch, String> {
    match (flag, ws.arch) {
        (Some(a), _) => Arch::parse(a).map_err(|e| format!("--arch: {e}")),
        (None, Some(arch)) => Ok(arch),
        (None, None) => Ok(detected_arch().unwrap_or(Arch::DEFAULT)),
    }
}

/// The arch of GPU 0, asked of the driver only when nothing else names one.
fn detected_arch() -> Option<Arch> {
    kwb::run::gpu::open::Gpu::open(0)
        .ok()?
        .arch()
        .ok()
        .flatten()
}

fn run_inspect(args: InspectArgs) -> i32 {
    let mut ws = match load_any(&args.path) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("{e}");
            return exit::USAGE;
        }
    };
    if let Err(e) = bare_tile_settings(&mut ws, &args.constexprs, args.num_warps) {
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    if !args.versions.is_empty() {
        let mut known: Vec<String> = ws.sweeps.iter().map(|s| s.parent.clone()).collect();
        known.extend(ws.versions.iter().map(|v| v.name.clone()));
        if let Some(bad) = args.versions.iter().find(|v| !known.contains(v)) {
            eprintln!(
                "error: --version {bad}: no such version; versions: {}",
                known.join(", ")
            );
            return exit::USAGE;
        }
        ws.versions.retain(|v| {
            args.versions.contains(&v.name) || args.versions.iter().any(|a| a == v.family())
        });
    }
    if !args.sizes.is_empty() {
        if ws.sizes.is_empty() {
            eprintln!(
                "error: --sizes: {} has no sizes (only a workspace YAML names them)",
                args.path.display()
            );
            return exit::USAGE;
        }
        let known: Vec<String> = ws.sizes.iter().map(|s| s.name.clone()).collect();
        if let Some(bad) = args.sizes.iter().find(|s| !known.contains(s)) {
            eprintln!(
                "error: --sizes {bad}: no such size; sizes: {}",
                known.join(", ")
            );
            return exit::USAGE;
        }
        ws.sizes.retain(|s| args.sizes.contains(&s.name));
    }
    let arch = match resolve_arch(args.arch.as_deref(), &ws) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    if args.timings {
        return match inspect::timings::measure(&ws, arch, 3) {
            Ok(t) => {
                match args.format {
                    Format::Text => print!("{}", inspect::timings::render(&t)),
                    Format::Json => {
                        println!("{}", serde_json::to_string_pretty(&t).unwrap_or_default())
                    }
                }
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::COMPILE_ERROR
            }
        };
    }
    let cache = if args.no_cache {
        Cache::disabled()
    } else {
        Cache::default_location()
    };
    let compiler = match Compiler::new(arch, cache) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::COMPILE_ERROR;
        }
    };
    let compiled = compiler.compile_workspace(&ws);
    if let Some(dir) = &args.cubin_dir {
        match inspect::cubins::write(&compiled, dir) {
            Ok(paths) => {
                for p in paths {
                    eprintln!("wrote {}", p.display());
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return exit::USAGE;
            }
        }
    }
    let report = inspect::report(
        &ws,
        &compiled,
        arch,
        compiler.nvrtc_version(),
        args.ptx,
        args.cuda,
        args.block,
    );
    match args.format {
        Format::Text => print!("{}", inspect::text::render(&report)),
        Format::Json => match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: cannot write JSON: {e}");
                return exit::USAGE;
            }
        },
    }
    // The report holds the diagnostics; stderr repeats the errors, so they reach the log
    // when stdout is JSON or goes elsewhere.
    eprint_with_snippets(compiled.iter().flat_map(|c| c.errors()));
    for w in compiled.iter().filter_map(inspect::no_kernels) {
        eprintln!("{w}");
    }
    if compiled.iter().all(|c| c.ok) {
        exit::OK
    } else {
        exit::COMPILE_ERROR
    }
}

fn run_batch(a: BatchArgs) -> i32 {
    use kwb::batch::{self, BatchError, BatchOptions};
    use kwb::run::protocol::BenchMode;
    let mut ws = match workspace::load(&a.workspace) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("{e}");
            return exit::USAGE;
        }
    };
    let opts = BatchOptions {
        sizes: a.sizes,
        versions: kwb::batch::split_names(&a.versions),
        mode: match a.mode {
            ModeArg::Cold => BenchMode::Cold,
            ModeArg::Hot => BenchMode::Hot,
            ModeArg::Graph => BenchMode::Graph,
        },
        device: a.device,
        check: !a.no_check,
        warmup_ms: a.warmup_ms,
        stop: kwb::run::stats::StopRule {
            min_samples: a.min_samples,
            min_time_s: a.min_time,
            max_time_s: a.max_time,
            target_rel_std_error: a.target_rse,
            ..Default::default()
        },
        watchdog_ms: a.watchdog_ms,
        seed: a.seed,
        cache: !a.no_cache,
        guard_bytes: Some(a.guard_bytes),
        cpu: a.cpu,
        shard: a.shard,
        devices: a.devices,
    };
    let baseline = match read_baseline(a.report.baseline.as_deref()) {
        Ok(b) => b,
        Err(code) => return code,
    };
    if let Err(e) = batch::select(&mut ws, &opts) {
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    let arch = match arch_flag(a.arch.as_deref()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let result = if a.cpu {
        let engine = match a.cpu_engine {
            CpuEngineArg::Auto => batch::CpuEngine::Auto,
            CpuEngineArg::Emulator => batch::CpuEngine::Emulator,
        };
        batch::run_cpu(&ws, &opts, engine, arch)
    } else {
        match a.worker.command() {
            Ok(worker) => batch::run(&ws, &opts, worker),
            Err(e) => {
                eprintln!("error: cannot find the kwb executable to start its worker: {e}");
                return exit::NO_GPU;
            }
        }
    };
    let outcome = match result {
        Ok(o) => o,
        Err(e @ BatchError::NoGpu(_)) => {
            eprintln!("error: {e}\n(without a GPU: `kwb batch --cpu` checks every version in kwb's emulator; `kwb inspect` compiles and reports resources and occupancy)");
            return exit::NO_GPU;
        }
        Err(e @ BatchError::Compile(_)) => {
            eprintln!("error: {e}");
            return exit::COMPILE_ERROR;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    // The report says each failed version's first error; stderr gets them all, with their
    // source lines, where a CI log shows them even when the report goes to a file.
    eprint_with_snippets(outcome.compile_diagnostics.iter());
    let regressions = match emit(&outcome.report, baseline.as_ref(), &a.report) {
        Ok(r) => r,
        Err(code) => return code,
    };
    batch::exit_code(&outcome, regressions.len())
}

/// The `--baseline` report, read; an unreadable one is bad usage.
fn read_baseline(path: Option<&Path>) -> Result<Option<kwb::report::BatchReport>, i32> {
    let Some(p) = path else { return Ok(None) };
    std::fs::read_to_string(p)
        .map_err(|e| e.to_string())
        .and_then(|t| kwb::report::json::from_json(&t).map_err(|e| e.to_string()))
        .map(Some)
        .map_err(|e| {
            eprintln!("error: --baseline {}: {e}", p.display());
            exit::USAGE
        })
}

/// Compares `report` with the baseline, writes it in `format` (to `output` or stdout) and says
/// each regression on stderr; the regressions, or the exit code of a failed write.
fn emit(
    report: &kwb::report::BatchReport,
    baseline: Option<&kwb::report::BatchReport>,
    how: &ReportArgs,
) -> Result<Vec<kwb::report::baseline::Regression>, i32> {
    let (max_regression, format, output) = (how.max_regression, how.format, how.output.as_deref());
    let regressions = match baseline {
        Some(b) => {
            for w in kwb::report::baseline::incompatibilities(report, b) {
                eprintln!("warning: {w}");
            }
            kwb::report::baseline::compare(report, b, max_regression)
        }
        None => Vec::new(),
    };
    let format = match format {
        ReportFormat::Table => kwb::report::Format::Table,
        ReportFormat::Json => kwb::report::Format::Json,
        ReportFormat::Junit => kwb::report::Format::Junit,
        ReportFormat::Markdown => kwb::report::Format::Markdown,
    };
    let text = kwb::report::render(report, format, &regressions);
    match output {
        Some(p) => {
            if let Err(e) = std::fs::write(p, &text) {
                eprintln!("error: cannot write {}: {e}", p.display());
                return Err(exit::USAGE);
            }
        }
        None => print!("{text}"),
    }
    for r in &regressions {
        eprintln!(
            "regression: {}",
            kwb::report::baseline::render_regression(r)
        );
    }
    Ok(regressions)
}

fn run_capture(a: CaptureArgs) -> i32 {
    let max_bytes = match kwb::workspace::Formula::parse(&a.max_bytes)
        .and_then(|f| f.eval_u64(&kwb::workspace::SizeEnv::vars(&[])))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "error: --max-bytes `{}`: expected a size such as 2Gi, 500M or a number of bytes ({e})",
                a.max_bytes
            );
            return exit::USAGE;
        }
    };
    let options = kwb::capture::Options {
        argv: a.program,
        out: a.out.clone(),
        hook: kwb::capture::HookSettings {
            kernels: a.kernels,
            max_per_kernel: a.max_per_kernel.max(1),
            max_bytes,
            time: !a.no_time,
            reps: a.reps.max(1),
        },
    };
    match kwb::capture::capture(&options) {
        Ok(outcome) => {
            let (out, err, code) = kwb::capture::report::render(&outcome, &a.out);
            eprint!("{err}");
            print!("{out}");
            code
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
    }
}

fn run_merge(a: MergeArgs) -> i32 {
    let mut reports = Vec::new();
    for p in &a.reports {
        match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| kwb::report::json::from_json(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => reports.push((p.display().to_string(), r)),
            Err(e) => {
                eprintln!("error: {}: {e}", p.display());
                return exit::USAGE;
            }
        }
    }
    let merged = match kwb::batch::merge::merge(reports) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let baseline = match read_baseline(a.report.baseline.as_deref()) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let regressions = match emit(&merged, baseline.as_ref(), &a.report) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let outcome = kwb::batch::BatchOutcome {
        compile_errors: merged
            .results
            .iter()
            .any(|r| r.status == kwb::report::Status::CompileError),
        report: merged,
        compile_diagnostics: Vec::new(),
    };
    kwb::batch::exit_code(&outcome, regressions.len())
}

fn run_watch(a: WatchArgs) -> i32 {
    let arch = match arch_flag(a.arch.as_deref()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let worker = match a.worker.command() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: cannot find the kwb executable to start its worker: {e}");
            return exit::NO_GPU;
        }
    };
    let opts = kwb::ui::runtime::WatchOptions {
        worker,
        workspace: a.workspace,
        arch,
        theme: a.theme,
        gpu: !a.no_gpu,
        devices: a.devices,
        // https://no-color.org: any non-empty NO_COLOR turns colour off.
        color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    match kwb::ui::runtime::run(opts) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("{e}");
            e.exit_code()
        }
    }
}

fn run_bench_ui(a: BenchUiArgs) -> i32 {
    use kwb::ui::bench;
    println!(
        "kwb bench-ui on {} ({} cores)",
        a.workspace.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    match bench::save_to_screen(&a.workspace, &a.version, a.saves) {
        Ok(p) => println!(
            "{}",
            bench::render_report(&format!("save to screen ({})", a.version), &p)
        ),
        Err(e) => {
            eprintln!("error: {e}");
            return exit::COMPILE_ERROR;
        }
    }
    if a.gpu {
        let worker = match kwb::run::supervisor::WorkerCommand::current_exe() {
            Ok(w) => w,
            Err(e) => {
                eprintln!("error: cannot find this kwb to start its worker: {e}");
                return exit::NO_GPU;
            }
        };
        if let Some(after) = a.first_pass_save_ms {
            let after = std::time::Duration::from_millis(after);
            match bench::first_pass(&a.workspace, &a.version, &a.size, after, worker.clone()) {
                Ok(f) => {
                    for l in &f.timeline {
                        println!("  after the save: {l}");
                    }
                    println!(
                        "first pass: GPU ready {:.0} ms after start; {} saved {} ms after start: \
                     its result at {} {:.0} ms after the save{}; every one of {} versions \
                     had a figure at {} {:.0} ms after start",
                        f.gpu_ready_ms,
                        a.version,
                        after.as_millis(),
                        a.size,
                        f.save_to_result_ms,
                        if f.provisional { " (quick look)" } else { "" },
                        f.versions,
                        a.size,
                        f.every_version_ms
                    )
                }
                Err(e) => {
                    eprintln!("error: first pass: {e}");
                    return exit::NO_GPU;
                }
            }
        }
        match bench::save_to_result(&a.workspace, &a.version, &a.size, a.saves, worker) {
            Ok((compiled, result)) => {
                let compiled_name = format!("save to compile on screen ({})", a.version);
                println!("{}", bench::render_report(&compiled_name, &compiled));
                let result_name = format!(
                    "save to checked, timed result ({} @ {}, GPU)",
                    a.version, a.size
                );
                println!("{}", bench::render_report(&result_name, &result));
            }
            Err(e) => {
                eprintln!("error: {e}");
                return exit::NO_GPU;
            }
        }
    }
    match bench::frame_time(&a.workspace, a.ptx_lines, a.frames) {
        Ok(p) => println!(
            "{}",
            bench::render_report(
                &format!("frame render (7 versions, {}-line PTX)", a.ptx_lines),
                &p
            )
        ),
        Err(e) => {
            eprintln!("error: {e}");
            return exit::COMPILE_ERROR;
        }
    }
    if a.idle_seconds > 0.0 {
        match bench::idle_cpu(
            &a.workspace,
            std::time::Duration::from_secs_f64(a.idle_seconds),
        ) {
            Ok(share) => println!(
                "idle CPU: {:.2}% of one core over {:.0} s",
                share * 100.0,
                a.idle_seconds
            ),
            Err(e) => println!("idle CPU: not measured ({e})"),
        }
    }
    exit::OK
}
