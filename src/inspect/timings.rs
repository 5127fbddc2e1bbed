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
    /// The same compiles. CPU time, all threads (NVRTC runs on the threads that call it), in
    /// milliseconds: unlike the wall time, other load on the machine barely moves it.
    pub one_at_a_time_cpu_ms: Vec<(String, f64)>,
    /// How many CUBINs each version is (a tile version compiles once per specialisation).
    pub specialisations: Vec<(String, usize)>,
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
    let mut one_cpu = Vec::new();
    let mut specialisations = Vec::new();
    for v in &ws.versions {
        let (mut best, mut best_cpu, mut cubins) = (f64::INFINITY, f64::INFINITY, 1);
        for _ in 0..repeats {
            let cpu = process_cpu_ms();
            let t = Instant::now();
            let c = std::hint::black_box(cold.compile_version(Some(ws), v));
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
            best_cpu = best_cpu.min(process_cpu_ms() - cpu);
            cubins = 1 + c.variants.len();
        }
        specialisations.push((v.name.clone(), cubins));
        one.push((v.name.clone(), best));
        one_cpu.push((v.name.clone(), best_cpu));
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
        one_at_a_time_cpu_ms: one_cpu,
        specialisations,
        one_at_a_time_sum_ms: sum,
        cold_parallel_ms: cold_parallel,
        cold_ratio: cold_parallel / sum,
        warm_ms: warm_runs[warm_runs.len() / 2],
        threads: rayon::current_num_threads(),
        repeats,
    })
}

/// CPU time the process has used so far, all threads, in milliseconds.
fn process_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_PROCESS_CPUTIME_ID exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

fn timed<T>(f: impl FnOnce() -> T) -> f64 {
    let t = Instant::now();
    std::hint::black_box(f());
    t.elapsed().as_secs_f64() * 1e3
}

pub fn render(t: &CompileTimings) -> String {
    let mut s = String::from("compile timings\n");
    for (i, (v, ms)) in t.one_at_a_time_ms.iter().enumerate() {
        let cpu = t.one_at_a_time_cpu_ms.get(i).map_or(f64::NAN, |c| c.1);
        let n = t.specialisations.get(i).map_or(1, |c| c.1);
        let per = if n > 1 {
            format!(", {n} specialisations: {:.1} ms CPU each", cpu / n as f64)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "  {v:<12} {ms:>9.1} ms alone  (CPU {cpu:.1} ms{per})\n"
        ));
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
