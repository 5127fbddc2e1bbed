//! `kwb merge`: shard reports (`kwb batch --shard K/N`) back into the report one run would have
//! given: every job exactly once, in plan order, with the sweeps' best worked out over the
//! whole. Shards of different workspaces, modes or shard counts, a missing or repeated shard,
//! and a job in two reports are errors that say which files.

use crate::report::{sweep, BatchReport, RunResult};
use std::collections::HashMap;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("nothing to merge")]
    Empty,
    #[error("{0}: not a shard report (made without --shard)")]
    NotAShard(String),
    #[error("{0} and {1}: {2}")]
    Mismatch(String, String, String),
    #[error("shard {0} of {1} is missing")]
    Missing(u32, u32),
    #[error("{0} and {1} are both shard {2}")]
    Repeated(String, String, u32),
    #[error("{file}: {version} @ {size} is not in the plan its shard mark gives")]
    Stray {
        file: String,
        version: String,
        size: String,
    },
}

/// Merges `reports` (each with the name of its file, for messages).
pub fn merge(reports: Vec<(String, BatchReport)>) -> Result<BatchReport, MergeError> {
    let (first_name, first) = reports.first().ok_or(MergeError::Empty)?;
    let mark = first
        .shard
        .clone()
        .ok_or_else(|| MergeError::NotAShard(first_name.clone()))?;
    let mut seen: HashMap<u32, &str> = HashMap::new();
    for (name, r) in &reports {
        let m = r
            .shard
            .as_ref()
            .ok_or_else(|| MergeError::NotAShard(name.clone()))?;
        let differ =
            |what: &str| MergeError::Mismatch(first_name.clone(), name.clone(), what.into());
        if r.workspace != first.workspace {
            return Err(differ("different workspaces"));
        }
        if r.mode != first.mode {
            return Err(differ("different modes"));
        }
        if m.count != mark.count || m.sizes != mark.sizes || m.versions != mark.versions {
            return Err(differ("different plans (shard count, sizes or versions)"));
        }
        if r.backend != first.backend {
            return Err(differ("one ran on the GPU, the other on the CPU"));
        }
        if let Some(other) = seen.insert(m.index, name) {
            return Err(MergeError::Repeated(other.into(), name.clone(), m.index));
        }
    }
    if let Some(k) = (0..mark.count).find(|k| !seen.contains_key(k)) {
        return Err(MergeError::Missing(k, mark.count));
    }
    let place = |r: &RunResult| {
        let s = mark.sizes.iter().position(|x| *x == r.size)?;
        let v = mark.versions.iter().position(|x| *x == r.version)?;
        Some(s * mark.versions.len() + v)
    };
    let mut slots: Vec<Option<RunResult>> = vec![None; mark.sizes.len() * mark.versions.len()];
    let mut device = None;
    for (name, r) in reports.iter() {
        device = device.or_else(|| r.device.clone());
        for result in &r.results {
            let stray = || MergeError::Stray {
                file: name.clone(),
                version: result.version.clone(),
                size: result.size.clone(),
            };
            let at = place(result).ok_or_else(stray)?;
            if slots[at].replace(result.clone()).is_some() {
                return Err(stray());
            }
        }
    }
    let mut results: Vec<RunResult> = slots.into_iter().flatten().collect();
    // The sweeps' best and spread over every shard's results.
    for r in &mut results {
        if let Some(m) = &mut r.sweep {
            m.best = false;
        }
    }
    let sweeps = sweep::summarize(&mut results);
    let mut out = first.clone();
    out.device = device;
    out.results = results;
    out.sweeps = sweeps;
    out.shard = None;
    Ok(out)
}
