//! Opening the GPUs a run asks for, for `kwb batch` and `kwb watch` alike: one worker per GPU,
//! started side by side, and a folder the local workers share so that each size's host
//! reference is made once (see [`crate::run::host::shared`]).

use super::GpuBackend;
use crate::report::DeviceInfo;
use crate::run::host::shared::{SharedDir, SHARED_DATA_VAR};
use crate::run::supervisor::{Supervisor, WorkerCommand};

/// The GPUs `--devices` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devices {
    /// Every GPU the worker's machine has.
    All,
    These(Vec<u32>),
}

impl Devices {
    /// `all`, or ordinals separated by commas.
    pub fn parse(text: &str) -> Result<Devices, String> {
        if text.trim() == "all" {
            return Ok(Devices::All);
        }
        let mut these = Vec::new();
        for part in text.split(',') {
            let k: u32 = part.trim().parse().map_err(|_| {
                format!("--devices `{text}`: expected `all` or GPU ordinals like 0,1,3")
            })?;
            if these.contains(&k) {
                return Err(format!("--devices `{text}`: GPU {k} is named twice"));
            }
            these.push(k);
        }
        Ok(Devices::These(these))
    }

    /// The GPU opened first (whose worker says how many GPUs `all` means).
    pub fn first(&self) -> u32 {
        match self {
            Devices::All => 0,
            Devices::These(these) => these.first().copied().unwrap_or(0),
        }
    }

    /// The GPUs after the first, once the first's worker has told what its machine has.
    pub fn rest(&self, first: &DeviceInfo) -> Vec<u32> {
        match self {
            Devices::All => (1..first.visible_gpus.unwrap_or(1).max(1)).collect(),
            Devices::These(these) => these.iter().skip(1).copied().collect(),
        }
    }
}

/// The worker command for several GPUs: its workers share a folder (removed when the returned
/// guard drops) where each size's host reference is made once. One GPU needs no folder.
pub fn share_references(
    worker: WorkerCommand,
    devices: Option<&Devices>,
) -> (WorkerCommand, Option<SharedDir>) {
    match devices.map(|_| SharedDir::create()) {
        Some(Ok(dir)) => (
            worker.with_env(SHARED_DATA_VAR, &dir.path.to_string_lossy()),
            Some(dir),
        ),
        _ => (worker, None),
    }
}

/// Starts a worker and opens GPU `k` in it.
pub fn open_gpu(worker: &WorkerCommand, k: u32) -> Result<GpuBackend, String> {
    let mut sup = Supervisor::start(worker.clone()).map_err(|e| e.to_string())?;
    let device = sup.device(k).map_err(|e| format!("GPU {k}: {e}"))?;
    Ok(GpuBackend::new(sup, k, device))
}

/// Opens each of `these` in a worker of its own, side by side (each measures its GPU's peaks).
pub fn open_side_by_side(worker: &WorkerCommand, these: &[u32]) -> Vec<Result<GpuBackend, String>> {
    std::thread::scope(|s| {
        let started: Vec<_> = (these.iter())
            .map(|&k| s.spawn(move || open_gpu(worker, k)))
            .collect();
        started
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("a worker start panicked".into()))
            })
            .collect()
    })
}

/// The GPUs after the first, opened side by side: those that open and share the first's arch
/// (a run compiles for one), each with its ordinal, and why each other one was left out.
pub fn open_more(
    worker: &WorkerCommand,
    first: &DeviceInfo,
    rest: &[u32],
) -> (Vec<(u32, GpuBackend)>, Vec<String>) {
    let (mut joined, mut left_out) = (Vec::new(), Vec::new());
    for (&k, g) in rest.iter().zip(open_side_by_side(worker, rest)) {
        match g {
            Ok(g) if g.device().arch != first.arch => left_out.push(format!(
                "GPU {k} is {} ({}), not {} like {}: left out (one run compiles for one arch; \
                 run each kind with its own --devices)",
                g.device().name,
                g.device().arch,
                first.arch,
                first.name
            )),
            Ok(g) => joined.push((k, g)),
            Err(e) => left_out.push(e),
        }
    }
    (joined, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_all_or_distinct_ordinals() {
        assert_eq!(Devices::parse("all"), Ok(Devices::All));
        assert_eq!(Devices::parse("0, 1,3"), Ok(Devices::These(vec![0, 1, 3])));
        assert!(Devices::parse("0,0").unwrap_err().contains("named twice"));
        assert!(Devices::parse("gpu1").is_err());
    }

    #[test]
    fn all_means_every_gpu_the_first_worker_sees() {
        let info = |n| DeviceInfo {
            visible_gpus: Some(n),
            ..DeviceInfo::stand_in("sm_90")
        };
        assert_eq!(Devices::All.first(), 0);
        assert_eq!(Devices::All.rest(&info(4)), [1, 2, 3]);
        assert_eq!(Devices::All.rest(&info(1)), Vec::<u32>::new());
        let these = Devices::These(vec![3, 1]);
        assert_eq!((these.first(), these.rest(&info(8))), (3, vec![1]));
    }
}
