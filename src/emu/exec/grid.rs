//! A launch from start to finish: checking it against the kernel, placing the module-scope
//! `.global` variables, running every CTA (in parallel across cores, unless told otherwise)
//! and merging their findings into one [`Report`].

use super::Cta;
use crate::emu::checks::Findings;
use crate::emu::memory::Memory;
use crate::emu::{EmuError, Entry, Launch, Module, Options, Report, SymbolKind};
use rayon::prelude::*;
use std::collections::BTreeSet;

struct CtaOut {
    findings: Findings,
    count: u64,
    approx: BTreeSet<&'static str>,
}

pub fn run(
    module: &Module,
    launch: &Launch,
    mem: &mut Memory,
    opts: &Options,
) -> Result<Report, EmuError> {
    let e = module.entry(launch.entry).ok_or_else(|| {
        EmuError::BadLaunch(format!(
            "no kernel `{}` in the PTX; kernels: {}",
            launch.entry,
            module.entries().join(", ")
        ))
    })?;
    if launch.params.len() != e.params.len() {
        return Err(EmuError::BadLaunch(format!(
            "`{}` takes {} parameters, the launch gives {}",
            e.name,
            e.params.len(),
            launch.params.len()
        )));
    }
    let threads: u64 = launch.block.iter().map(|&d| u64::from(d)).product();
    if threads == 0 || threads > 1024 {
        return Err(EmuError::BadLaunch(format!(
            "a block of {threads} threads (1 to 1024 allowed)"
        )));
    }
    if launch.grid.contains(&0) {
        return Err(EmuError::BadLaunch("a grid with a zero dimension".into()));
    }
    let shared = u64::from(e.static_shared) + u64::from(launch.dynamic_shared);
    if shared > 227 * 1024 {
        return Err(EmuError::BadLaunch(format!(
            "{shared} bytes of shared memory per block (227 KiB at most)"
        )));
    }
    let params = crate::emu::param_space(e, launch.params)?;
    let globals = place_globals(e, mem);
    let [gx, gy, gz] = launch.grid.map(u64::from);
    let total = gx * gy * gz;
    let mem: &Memory = mem;
    let files = &module.files;
    let deadline = crate::watchdog::Watchdog::start(opts.watchdog_ms, opts.cancel.as_ref());
    let one = |i: u64| -> Result<CtaOut, EmuError> {
        if let Some(w) = &deadline {
            w.check()?;
        }
        let ctaid = [
            (i % gx) as u32,
            ((i / gx) % gy) as u32,
            (i / (gx * gy)) as u32,
        ];
        let mut cta = Cta::new(e, files, mem, &params, launch, ctaid);
        cta.globals = &globals;
        cta.deadline = deadline.clone();
        cta.run()?;
        Ok(CtaOut {
            findings: cta.findings,
            count: cta.count,
            approx: cta.approx,
        })
    };
    let outs: Vec<Result<CtaOut, EmuError>> = if opts.threads == 1 {
        (0..total).map(one).collect()
    } else if opts.threads > 1 {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
        {
            Ok(pool) => pool.install(|| (0..total).into_par_iter().map(one).collect()),
            Err(_) => (0..total).into_par_iter().map(one).collect(),
        }
    } else {
        (0..total).into_par_iter().map(one).collect()
    };
    let mut findings = Findings::default();
    let mut instructions = 0u64;
    let mut approx = BTreeSet::new();
    for o in outs {
        let o = o?;
        findings.merge(o.findings);
        instructions += o.count;
        approx.extend(o.approx);
    }
    let mut list = findings.list;
    list.sort_by_key(|f| (f.cta[2], f.cta[1], f.cta[0], f.ptx_line));
    let kept = list.len().min(opts.max_findings.max(1));
    let dropped = (list.len() - kept) as u64 + findings.repeats;
    list.truncate(kept);
    if dropped > 0 {
        if let Some(last) = list.last_mut() {
            last.message
                .push_str(&format!(" ({dropped} more like these elsewhere)"));
        }
    }
    Ok(Report {
        findings: list,
        instructions,
        approx: approx.into_iter().map(str::to_string).collect(),
    })
}

/// The module-scope `.global` variables `e` names (a CUDA `__device__` variable), each a
/// buffer of `mem` that keeps its value from launch to launch, as on the GPU: its initialiser,
/// else zeros. Indexed by the entry's symbols (0 for the others).
fn place_globals(e: &Entry, mem: &mut Memory) -> Vec<u64> {
    e.symbols
        .iter()
        .map(|s| match s.kind {
            SymbolKind::Global => {
                let name = format!("the PTX variable `{}`", s.name);
                mem.named(&name).unwrap_or_else(|| {
                    let mut bytes = s.init.clone();
                    bytes.resize((s.size as usize).max(bytes.len()).max(1), 0);
                    mem.alloc(&name, &bytes, crate::emu::InitState::Initialized)
                })
            }
            _ => 0,
        })
        .collect()
}
