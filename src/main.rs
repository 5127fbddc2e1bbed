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
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile every version with NVRTC and report registers, shared memory, spills, barriers
    /// and occupancy (no GPU needed).
    Inspect(InspectArgs),
}

#[derive(clap::Args)]
struct InspectArgs {
    /// A workspace YAML file, or a single `.cu` file.
    path: PathBuf,
    /// Only this version (repeatable).
    #[arg(long = "version", value_name = "V")]
    versions: Vec<String>,
    /// Target architecture, e.g. sm_90 (default: the workspace's, else the GPU's, else sm_90).
    #[arg(long)]
    arch: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Include each version's PTX.
    #[arg(long)]
    ptx: bool,
    /// Block size for kernels that no launch names (bare `.cu` files).
    #[arg(long, default_value_t = 256)]
    block: u32,
    /// Skip the compile cache.
    #[arg(long)]
    no_cache: bool,
    /// Benchmark compilation instead: one-at-a-time, cold parallel, and warm-cache times.
    #[arg(long)]
    timings: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Inspect(args) => run_inspect(args),
    };
    ExitCode::from(code as u8)
}

fn load_any(path: &Path) -> Result<Workspace, workspace::WorkspaceError> {
    if path.extension().is_some_and(|e| e == "cu" || e == "cuh") {
        Workspace::for_kernel_file(path)
    } else {
        workspace::load(path)
    }
}

/// The target: `--arch`, else the workspace's, else sm_90.
fn resolve_arch(flag: Option<&str>, ws: &Workspace) -> Result<Arch, String> {
    match flag {
        Some(a) => Arch::parse(a).map_err(|e| format!("--arch: {e}")),
        None => Ok(ws.arch.unwrap_or(Arch::DEFAULT)),
    }
}

fn run_inspect(args: InspectArgs) -> i32 {
    let mut ws = match load_any(&args.path) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("{e}");
            return exit::USAGE;
        }
    };
    if !args.versions.is_empty() {
        let known: Vec<String> = ws.versions.iter().map(|v| v.name.clone()).collect();
        if let Some(bad) = args.versions.iter().find(|v| !known.contains(v)) {
            eprintln!(
                "error: --version {bad}: no such version; versions: {}",
                known.join(", ")
            );
            return exit::USAGE;
        }
        ws.versions.retain(|v| args.versions.contains(&v.name));
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
    let report = inspect::report(
        &ws,
        &compiled,
        arch,
        compiler.nvrtc_version(),
        args.ptx,
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
    if compiled.iter().all(|c| c.ok) {
        exit::OK
    } else {
        exit::COMPILE_ERROR
    }
}
