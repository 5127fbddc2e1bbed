//! A batch on the engine: compile every version, plan every (version, size), submit them all,
//! and gather the results in plan order while a progress line follows the events. The GPU and
//! CPU batches differ only in the backends they hand in.

use super::{compile_diagnostics, BatchError, BatchOptions, ProgressLine};
use crate::compile::{Arch, Cache, CompiledVersion, Compiler};
use crate::diag::Diagnostic;
use crate::engine::plan::{config_compile_failures, fresh_seed, reference_index};
use crate::engine::{plan_runs, Backend, Event, Order, Planning, Pool, Request, Target};
use crate::report::{RunResult, Status};
use crate::run::protocol::BenchSpec;
use crate::workspace::Workspace;
use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// What compiling the workspace came to, for the outcome.
pub(super) struct Compiled {
    pub compile_errors: bool,
    pub diagnostics: Vec<Diagnostic>,
}

/// Backends that serve from the start, and ones still opening (they join as they come).
pub(super) type Backends = (
    Vec<Box<dyn Backend>>,
    Option<std::thread::JoinHandle<Vec<Box<dyn Backend>>>>,
);

/// Compiles `ws` for `arch` and runs every version at every size on `backends`: the results,
/// sizes in order and each size's versions in order.
pub(super) fn drive(
    ws: &Workspace,
    opts: &BatchOptions,
    arch: Arch,
    bench: BenchSpec,
    (target, order): (Target, Order),
    (backends, late): Backends,
) -> Result<(Vec<RunResult>, Compiled), BatchError> {
    let cache = if opts.cache {
        Cache::default_location()
    } else {
        Cache::disabled()
    };
    let compiler = Compiler::new(arch, cache).map_err(|e| BatchError::Compile(e.to_string()))?;
    let compiled: Vec<Arc<CompiledVersion>> = compiler
        .compile_workspace(ws)
        .into_iter()
        .map(Arc::new)
        .collect();
    let config_failures = config_compile_failures(ws, &compiled);
    let compiled_info = Compiled {
        compile_errors: compiled
            .iter()
            .zip(&config_failures)
            .any(|(c, skip)| !c.ok && !skip),
        diagnostics: compile_diagnostics(&compiled, &config_failures),
    };
    let planning = Planning {
        ws,
        arch: arch.spec(),
        seed: opts.seed.unwrap_or_else(fresh_seed),
        bench,
        quick_look_at: None,
    };
    let reference = reference_index(ws).map(|i| compiled[i].clone());
    let sizes: Vec<usize> = (0..ws.sizes.len()).collect();
    let (tx, rx) = channel();
    let pool = Pool::new(order, Arc::new(move |e| tx.send(e).is_ok()));
    for b in backends {
        pool.add(b);
    }
    let versions = ws.versions.len();
    let owned = |v: usize, size: usize| opts.shard.is_none_or(|s| s.owns(size * versions + v));
    // Every planned run, by its place in the plan (sizes outer, versions inner).
    let mut planned: Vec<(usize, usize, RunResult)> = Vec::new();
    for (v, c) in compiled.iter().enumerate() {
        let mut runs = plan_runs(
            &planning,
            v,
            c,
            reference.as_ref(),
            &sizes,
            config_failures[v],
        );
        runs.retain(|r| owned(r.version, r.size));
        planned.extend(runs.iter().map(|r| (r.size, r.version, r.result.clone())));
        pool.submit(Request {
            version: v,
            generation: 1,
            target,
            runs,
            saved: false,
        });
    }
    if let Some(late) = late {
        for b in late.join().unwrap_or_default() {
            pool.add(b);
        }
    }
    planned.sort_by_key(|(size, v, _)| (*size, *v));
    let total = planned.len();
    let mut progress = ProgressLine::new(total);
    let mut results: HashMap<(usize, usize), RunResult> = HashMap::new();
    let mut started: HashSet<(usize, usize)> = HashSet::new();
    let mut label = |progress: &mut ProgressLine, v: usize, size: usize| {
        if started.insert((v, size)) {
            progress.start(&ws.versions[v].name, &ws.sizes[size].name);
        }
    };
    while results.len() < total {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(Event::Phase {
                version,
                size,
                phase,
                ..
            }) => {
                label(&mut progress, version, size);
                progress.phase(phase);
            }
            Ok(Event::Finished {
                version,
                size,
                result,
                provisional: false,
                ..
            }) => {
                label(&mut progress, version, size);
                results.insert((version, size), *result);
            }
            Ok(Event::Finished { .. }) => {}
            Ok(Event::Dropped { backend, why }) => {
                progress.finish();
                eprintln!("kwb: {backend} left the run ({why}); the other GPUs finish it");
            }
            Err(RecvTimeoutError::Timeout) if pool.alive() => {}
            Err(_) => break,
        }
    }
    progress.finish();
    for b in pool.stop() {
        b.shutdown();
    }
    let out = planned
        .into_iter()
        .map(|(size, v, mut r)| {
            results.remove(&(v, size)).unwrap_or_else(|| {
                r.status = Status::Error;
                r.message = Some("the engine stopped before this run".into());
                r
            })
        })
        .collect();
    Ok((out, compiled_info))
}
