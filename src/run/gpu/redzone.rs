//! Red zones on the device: after a checked run, every buffer's guards are read back and
//! scanned for canary damage, and every input is compared with the bytes that were uploaded, so
//! a write past the end, before the start, or far away into another of the job's buffers fails
//! the check with the buffer and the element it landed on. The scan itself is
//! [`crate::run::gpu::canary`], which needs no GPU.

use super::canary::{scan_input, Damage, Named, DEFAULT_GUARD_BYTES};
use super::device::DevBuf;
use crate::run::protocol::{BufferSpec, Role, RunJob};
use cudarc::driver::result::DriverError as CuError;
use std::collections::HashMap;

/// The largest guard kwb lays down, whatever a job asks for.
const MAX_GUARD_BYTES: u64 = 1 << 30;

/// The guard size a job asks for (0: none), at most 1 GiB.
pub fn guard_bytes(job: &RunJob) -> usize {
    job.bench
        .guard_bytes
        .map_or(DEFAULT_GUARD_BYTES, |g| g.min(MAX_GUARD_BYTES) as usize)
}

/// Device bytes the red zones add to a job's buffers (each buffer's two guards and padding).
pub fn extra_bytes(job: &RunJob) -> u64 {
    let per = crate::run::gpu::canary::GuardLayout::new(0, guard_bytes(job)).total() as u64 + 256;
    per.saturating_mul(job.buffers.len() as u64)
}

/// Allocates a buffer of `bytes` with the job's red zones around it.
pub fn alloc(job: &RunJob, bytes: usize) -> Result<DevBuf, CuError> {
    match guard_bytes(job) {
        0 => DevBuf::alloc(bytes),
        g => DevBuf::alloc_guarded(bytes, g),
    }
}

fn named(b: &BufferSpec) -> Named {
    Named {
        name: b.name.clone(),
        elem_size: b.dtype.size() as usize,
        elems: b.shape.iter().product(),
    }
}

/// Scans the red zones of `buffers` (by name, as in `specs`), and compares every input in
/// `uploaded` with what the device holds now. Damage comes in the order of `specs`.
pub fn inspect(
    specs: &[BufferSpec],
    buffers: &HashMap<String, DevBuf>,
    uploaded: &HashMap<String, &[u8]>,
) -> Result<Vec<Damage>, CuError> {
    let mut found = Vec::new();
    for b in specs {
        let Some(buf) = buffers.get(&b.name) else {
            continue;
        };
        let who = named(b);
        if let Some(layout) = buf.guards() {
            let (before, after) = buf.read_guards()?;
            found.extend(layout.scan(&who, &before, &after));
        }
        if b.role == Role::Input {
            if let Some(bytes) = uploaded.get(&b.name) {
                found.extend(scan_input(&who, bytes, &buf.download()?));
            }
        }
    }
    Ok(found)
}

/// One line for a check failure: every damaged buffer, the first three in full.
pub fn describe(damage: &[Damage]) -> Option<String> {
    let first = damage.first()?;
    let mut text = first.to_string();
    for d in damage.iter().skip(1).take(2) {
        text += &format!("; {d}");
    }
    if damage.len() > 3 {
        text += &format!("; and {} more", damage.len() - 3);
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::gpu::canary::Where;

    fn damage(buffer: &str, first_elem: i64) -> Damage {
        Damage {
            buffer: buffer.into(),
            side: Where::Before,
            first_elem,
            bytes: 4,
            elems: 8,
        }
    }

    #[test]
    fn one_line_names_three_and_counts_the_rest() {
        assert_eq!(describe(&[]), None);
        let one = describe(&[damage("a", -1)]).unwrap();
        assert_eq!(
            one,
            "wrote 4 bytes before the start of `a` (first at a[-1])"
        );
        let all: Vec<Damage> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| damage(n, -2))
            .collect();
        let text = describe(&all).unwrap();
        assert!(
            text.starts_with("wrote 4 bytes before the start of `a`"),
            "{text}"
        );
        assert!(
            text.contains("; wrote 4 bytes before the start of `c`"),
            "{text}"
        );
        assert!(
            !text.contains("`d`") && text.ends_with("; and 2 more"),
            "{text}"
        );
    }

    #[test]
    fn guard_sizes_default_clamp_and_turn_off() {
        use crate::run::protocol::{BenchMode, BenchSpec, Blob, Program, ReferenceSpec};
        let mut job = RunJob {
            id: 1,
            version: "v".into(),
            size: "s".into(),
            program: Program {
                cubin: Blob(vec![]),
                launches: vec![],
            },
            buffers: vec![],
            reference: ReferenceSpec::None,
            seed: 0,
            bench: BenchSpec {
                check: true,
                benchmark: false,
                mode: BenchMode::Cold,
                warmup_ms: 0.0,
                stop: Default::default(),
                watchdog_ms: 1000,
                rtol: None,
                atol: None,
                guard_bytes: None,
            },
        };
        assert_eq!(guard_bytes(&job), DEFAULT_GUARD_BYTES);
        job.bench.guard_bytes = Some(0);
        assert_eq!(guard_bytes(&job), 0);
        job.bench.guard_bytes = Some(u64::MAX);
        assert_eq!(guard_bytes(&job), 1 << 30);
    }
}
