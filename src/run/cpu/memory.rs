//! How much host memory a CPU run may take, and whether a job fits. Checked before any buffer
//! is drawn: a size too large for this machine is skipped with the figures, where allocating
//! it would abort the process (Rust aborts on a failed allocation) or wake the OOM killer.
//!
//! The limit is half the machine's physical memory ([`DEFAULT_SHARE`]), or what
//! `KWB_CPU_MEMORY` says (bytes, with the size suffixes of workspace formulas: `8Gi`, `512Mi`).

use super::super::protocol::{BufferSpec, ReferenceSpec, Role, RunJob};
use crate::workspace::{Formula, SizeEnv};

/// The share of physical memory a CPU run allows itself by default.
pub const DEFAULT_SHARE: f64 = 0.5;
/// The variable that sets the limit instead, in bytes (`8Gi`).
pub const MEMORY_VAR: &str = "KWB_CPU_MEMORY";

/// The most host memory a CPU run may hold, and where that figure comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct HostLimit {
    pub bytes: u64,
    /// E.g. "half of 62.7 GiB of physical memory", or "KWB_CPU_MEMORY=8Gi".
    pub source: String,
}

/// The limit from `KWB_CPU_MEMORY`, else from physical memory; an unreadable variable is an
/// error that says what it takes.
pub fn host_limit() -> Result<HostLimit, String> {
    match std::env::var(MEMORY_VAR) {
        Ok(v) if !v.trim().is_empty() => limit_from_var(&v),
        _ => Ok(from_physical(physical_bytes())),
    }
}

fn limit_from_var(v: &str) -> Result<HostLimit, String> {
    let n = Formula::parse(v.trim())
        .and_then(|f| f.eval_int(&SizeEnv::vars(&[])))
        .map_err(|e| format!("{MEMORY_VAR}={v}: {e}"))?;
    if n <= 0 {
        return Err(format!(
            "{MEMORY_VAR}={v}: expected a number of bytes above 0, e.g. 8Gi"
        ));
    }
    Ok(HostLimit {
        bytes: n as u64,
        source: format!("{MEMORY_VAR}={}", v.trim()),
    })
}

fn from_physical(physical: u64) -> HostLimit {
    HostLimit {
        bytes: (physical as f64 * DEFAULT_SHARE) as u64,
        source: format!(
            "half of {} of physical memory; {MEMORY_VAR} sets another limit",
            human(physical)
        ),
    }
}

/// This machine's physical memory in bytes (0 when the system will not say, which lets no
/// size run: set `KWB_CPU_MEMORY` then).
fn physical_bytes() -> u64 {
    // SAFETY: sysconf takes a name and touches no memory of ours.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page <= 0 {
        return 0;
    }
    (pages as u64).saturating_mul(page as u64)
}

/// Host bytes a CPU run of `job` holds at its peak, an estimate on the high side: every buffer
/// three times (drawn or poisoned, the copy the run starts from, the engine's own memory), the
/// outputs once more (read back), the f64 reference at 8 bytes for every element of every
/// buffer (an expression reads its inputs as f64), and, for a reference version, its own run.
pub fn host_bytes(job: &RunJob) -> u64 {
    let elems = |b: &BufferSpec| (b.shape.iter()).fold(1u64, |n, &d| n.saturating_mul(d as u64));
    let bytes = |b: &BufferSpec| elems(b).saturating_mul(b.dtype.size());
    let sum = |f: &dyn Fn(&BufferSpec) -> u64, outputs_only: bool| {
        (job.buffers.iter())
            .filter(|b| !outputs_only || b.role == Role::Output)
            .map(f)
            .fold(0u64, u64::saturating_add)
    };
    let (all, outs, all_elems) = (sum(&bytes, false), sum(&bytes, true), sum(&elems, false));
    let mut need = all
        .saturating_mul(3)
        .saturating_add(outs)
        .saturating_add(all_elems.saturating_mul(8));
    if matches!(job.reference, ReferenceSpec::Version { .. }) {
        need = need.saturating_add(all).saturating_add(outs);
    }
    need
}

/// Why `job` may not run on the CPU under `limit`, with the figures; `None` when it fits.
pub fn shortfall(job: &RunJob, limit: &HostLimit) -> Option<String> {
    let need = host_bytes(job);
    let buffers = (job.buffers.iter())
        .map(|b| (b.shape.iter()).fold(b.dtype.size(), |n, &d| n.saturating_mul(d as u64)))
        .fold(0u64, u64::saturating_add);
    (need > limit.bytes).then(|| {
        format!(
            "does not fit in host memory: needs about {} ({} of buffers, with the copies and \
             the f64 reference a CPU run keeps), kwb allows itself {} ({})",
            human(need),
            human(buffers),
            human(limit.bytes),
            limit.source
        )
    })
}

/// Bytes in binary units: `12.00 TiB`, `512.00 MiB`.
fn human(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{b} B"),
        _ => format!("{v:.2} {}", units[u]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_sets_the_limit_in_bytes_with_size_suffixes() {
        assert_eq!(limit_from_var("8Gi").unwrap().bytes, 8 << 30);
        assert_eq!(limit_from_var(" 1000000 ").unwrap().bytes, 1_000_000);
        assert_eq!(limit_from_var("8Gi").unwrap().source, "KWB_CPU_MEMORY=8Gi");
        let e = limit_from_var("0").unwrap_err();
        assert!(e.contains("above 0"), "{e}");
        let e = limit_from_var("lots").unwrap_err();
        assert!(e.starts_with("KWB_CPU_MEMORY=lots: "), "{e}");
    }

    #[test]
    fn the_default_is_half_of_physical_memory() {
        let l = from_physical(64 << 30);
        assert_eq!(l.bytes, 32 << 30);
        assert!(
            l.source.starts_with("half of 64.00 GiB of physical memory"),
            "{l:?}"
        );
        assert!(physical_bytes() > 0, "this machine's memory is readable");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 19), "1.50 MiB");
        assert_eq!(human(12 << 40), "12.00 TiB");
    }
}
