//! `kwb inspect --timings`: the compile benchmark. It times each version compiled alone, the
//! whole workspace compiled cold in parallel, and the whole workspace reloaded from a warm
//! cache, so the parallel speed-up and the cache's worth are numbers, not claims.

use crate::compile::nvrtc::NvrtcError;
use crate::compile::{Arch, Cache, Compiler};
use crate::workspace::Workspace;
use serde::Serialize;
use std::time::Instant;

#[derive(Debug, Clone, Serialize)]
pub struct CompileTimings {
    /// Each version compiled alone with no cache, in milliseconds.
    pub one_at_a_time_ms: Vec<(String, f64)>,
    pub one_at_a_time_sum_ms: f64,
    /// The whole workspace, no cache, versions in parallel (best of `repeats`).
    pub cold_parallel_ms: f64,
    /// `cold_parallel_ms / one_at_a_time_sum_ms`.
    pub cold_ratio: f64,
    /// The whole workspace from a warm cache (median of `repeats`).
    pub warm_ms: f64,
    pub threads: usize,
    pub repeats: usize,
}

pub fn measure(ws: &Workspace, arch: Arch, repeats: usize) -> Result<CompileTimings, NvrtcError> {
    let repeats = repeats.max(1);
    let cold = Compiler::new(arch, Cache::disabled())?;
    // NVRTC's first compile in a process pays for loading its builtins; keep that out.
    if let Some(v) = ws.versions.first() {
        cold.compile_version(Some(ws), v);
    }
    let mut one = Vec::new();
    for v in &ws.versions {
        let best = (0..repeats)
            .map(|_| timed(|| cold.compile_version(Some(ws), v)))
            .fold(f64::INFINITY, f64::min);
        one.push((v.name.clone(), best));
    }
    let sum: f64 = one.iter().map(|(_, t)| t).sum();
    let cold_parallel = (0..repeats)
        .map(|_| timed(|| cold.compile_workspace(ws)))
        .fold(f64::INFINITY, f64::min);

    let dir = std::env::temp_dir().join(format!("kwb-timings-{}", std::process::id()));
    let warm = Compiler::new(arch, Cache::at(&dir))?;
    warm.compile_workspace(ws);
    let mut warm_runs: Vec<f64> = (0..repeats.max(5))
        .map(|_| timed(|| warm.compile_workspace(ws)))
        .collect();
    warm_runs.sort_by(f64::total_cmp);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(CompileTimings {
        one_at_a_time_ms: one,
        one_at_a_time_sum_ms: sum,
        cold_parallel_ms: cold_parallel,
        cold_ratio: cold_parallel / sum,
        warm_ms: warm_runs[warm_runs.len() / 2],
        threads: rayon::current_num_threads(),
        repeats,
    })
}

fn timed<T>(f: impl FnOnce() -> T) -> f64 {
    let t = Instant::now();
    std::hint::black_box(f());
    t.elapsed().as_secs_f64() * 1e3
}

pub fn render(t: &CompileTimings) -> String {
    let mut s = String::from("compile timings\n");
    for (v, ms) in &t.one_at_a_time_ms {
        s.push_str(&format!("  {v:<12} {ms:>9.1} ms alone\n"));
    }
    s.push_str(&format!(
        "  sum of one-at-a-time    {:>9.1} ms\n",
        t.one_at_a_time_sum_ms
    ));
    s.push_str(&format!(
        "  cold, parallel          {:>9.1} ms  ({:.0}% of the sum, {} threads)\n",
        t.cold_parallel_ms,
        t.cold_ratio * 100.0,
        t.threads
    ));
    s.push_str(&format!(
        "  warm (cached)           {:>9.2} ms  (median)\n",
        t.warm_ms
    ));
    s
}
