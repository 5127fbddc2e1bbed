//! The human-readable `kwb inspect` output: one block per version, one row per kernel and
//! distinct launch configuration, diagnostics underneath.

use super::{InspectReport, LaunchReport};
use crate::compile::occupancy::Limiter;
use std::fmt::Write;

pub fn render(r: &InspectReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} · {} · NVRTC {}",
        r.workspace, r.arch, r.nvrtc_version
    );
    for v in &r.versions {
        let status = match (v.ok, v.kernels.is_empty()) {
            (true, false) => "ok",
            (true, true) => "ok, no kernels",
            (false, _) => "FAILED",
        };
        let how = if v.cached { "cached" } else { "compiled" };
        let _ = writeln!(
            s,
            "\n{}  {}  [{status}, {how} in {:.1} ms]",
            v.name, v.file, v.compile_ms
        );
        if !v.kernels.is_empty() {
            let _ = writeln!(
                s,
                "  {:<22} {:>4} {:>6} {:>6} {:>11} {:>3} {:>6} {:>8}  {:<22} limited by",
                "kernel",
                "regs",
                "smem",
                "local",
                "spill st/ld",
                "bar",
                "block",
                "dyn smem",
                "occupancy",
            );
        }
        for k in &v.kernels {
            let res = &k.resources;
            let rows = distinct(&k.launches);
            for (i, l) in rows.iter().enumerate() {
                let name = if i == 0 { res.name.as_str() } else { "" };
                let threads = l.block[0] * l.block[1] * l.block[2];
                let (occ, lim) = match (&l.occupancy, &l.error) {
                    (Some(o), _) => (
                        format!(
                            "{}/{} warps {:.0}%",
                            o.active_warps_per_sm,
                            o.max_warps_per_sm,
                            o.occupancy * 100.0
                        ),
                        o.limiters
                            .iter()
                            .map(limiter_name)
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    (None, Some(e)) => ("-".to_string(), e.clone()),
                    (None, None) => ("-".to_string(), String::new()),
                };
                let sizes = if l.size.is_empty() {
                    String::new()
                } else {
                    format!("  @ {}", sizes_of(&k.launches, l))
                };
                if i == 0 {
                    let _ = write!(
                        s,
                        "  {:<22} {:>4} {:>6} {:>6} {:>11} {:>3}",
                        name,
                        res.registers,
                        res.static_shared_bytes,
                        res.local_bytes,
                        format!("{}/{}", res.spill_store_bytes, res.spill_load_bytes),
                        res.barriers
                    );
                } else {
                    let _ = write!(
                        s,
                        "  {:<22} {:>4} {:>6} {:>6} {:>11} {:>3}",
                        "", "", "", "", "", ""
                    );
                }
                let _ = writeln!(
                    s,
                    " {threads:>6} {:>8}  {occ:<22} {lim}{sizes}",
                    l.dynamic_shared_bytes
                );
            }
        }
        for d in &v.diagnostics {
            for line in crate::diag::with_snippet(d).lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
        for g in &v.cuda {
            let sizes = if g.sizes.is_empty() {
                String::new()
            } else {
                format!(" (sizes {})", g.sizes.join(", "))
            };
            let _ = writeln!(
                s,
                "\n--- generated CUDA of {}{sizes} ---\n{}",
                v.name, g.source
            );
        }
        if let Some(ptx) = &v.ptx {
            let _ = writeln!(s, "\n--- PTX of {} ---\n{ptx}", v.name);
        }
    }
    s
}

/// Launches that differ in block size or shared memory, each once.
fn distinct(launches: &[LaunchReport]) -> Vec<&LaunchReport> {
    let mut out: Vec<&LaunchReport> = Vec::new();
    for l in launches {
        if !out.iter().any(|o| same_config(o, l)) {
            out.push(l);
        }
    }
    out
}

fn same_config(a: &LaunchReport, b: &LaunchReport) -> bool {
    a.block == b.block && a.dynamic_shared_bytes == b.dynamic_shared_bytes && a.error == b.error
}

fn sizes_of(all: &[LaunchReport], l: &LaunchReport) -> String {
    let mut names: Vec<&str> = Vec::new();
    for x in all.iter().filter(|x| same_config(x, l)) {
        if !names.contains(&x.size.as_str()) {
            names.push(&x.size);
        }
    }
    names.join(", ")
}

pub fn limiter_name(l: &Limiter) -> &'static str {
    match l {
        Limiter::Warps => "warps",
        Limiter::Registers => "registers",
        Limiter::SharedMemory => "shared memory",
        Limiter::Blocks => "blocks",
        Limiter::Barriers => "barriers",
    }
}
