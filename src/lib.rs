//! kwb, the kernel workbench: compile, inspect, check and benchmark CUDA kernels side by side.
//!
//! The library holds the engine; `src/main.rs` is the command-line edge that turns its typed
//! errors into diagnostics. Stages know nothing of the UI: a workspace is read and validated
//! (`workspace`), compiled with NVRTC (`compile`), and reported (`inspect`).

pub mod batch;
pub mod capture;
pub mod common;
pub mod compile;
pub mod diag;
pub mod emu;
pub mod engine;
pub mod exit;
pub mod expr;
pub mod inspect;
pub mod report;
pub mod run;
pub mod tile;
pub mod ui;
pub mod watch;
pub mod watchdog;
pub mod workspace;

use std::path::PathBuf;

/// kwb's cache folder: `$KWB_CACHE_DIR`, else `$XDG_CACHE_HOME/kwb`, else `~/.cache/kwb`.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("KWB_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("kwb")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/kwb")))
}
