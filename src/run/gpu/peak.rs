//! The measured bandwidth peaks, cached per device and driver in the user's cache folder, so
//! every run reports "% of peak" against the same measured figures without re-measuring: the
//! device-to-device copy, and kwb's own streaming kernels (`stream_peak`). The peak is the best
//! of the two ([`crate::report::DeviceInfo::peak`]).

use crate::report::DeviceInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The measured figures, GB/s of bytes read plus written.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Peaks {
    /// A large device-to-device `cuMemcpy`.
    pub copy_gbps: Option<f64>,
    /// The best of kwb's streaming kernels.
    pub stream_kernel_gbps: Option<f64>,
}

impl Peaks {
    fn usable(&self) -> bool {
        let ok = |v: Option<f64>| v.is_some_and(|v| v.is_finite() && v > 0.0);
        ok(self.copy_gbps) || ok(self.stream_kernel_gbps)
    }
}

/// A new file name: the older `copy-peak.json` held the copy alone, and a peak without the
/// stream kernel must not be reused as if it had one.
fn cache_file() -> Option<PathBuf> {
    crate::cache_dir().map(|d| d.join("bandwidth-peak.json"))
}

fn key(f: &DeviceInfo) -> String {
    format!(
        "{} | {} | driver {} | {} bytes | {}",
        f.name,
        f.arch,
        f.driver_version,
        f.memory_bytes,
        crate::run::gpu::stream_peak::KERNELS_TAG
    )
}

/// The cached peaks for this device and driver, or `measure()`'s (then cached, when at least
/// one of them was measured).
pub fn cached_or_measure(f: &DeviceInfo, measure: impl FnOnce() -> Peaks) -> Peaks {
    cached_or_measure_in(cache_file(), f, measure)
}

fn cached_or_measure_in(
    path: Option<PathBuf>,
    f: &DeviceInfo,
    measure: impl FnOnce() -> Peaks,
) -> Peaks {
    let mut table: BTreeMap<String, Peaks> = path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    if let Some(v) = table.get(&key(f)).filter(|v| v.usable()) {
        return *v;
    }
    let v = measure();
    if !v.usable() {
        return v;
    }
    table.insert(key(f), v);
    if let (Some(p), Ok(text)) = (path, serde_json::to_string_pretty(&table)) {
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &p);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> DeviceInfo {
        DeviceInfo {
            name: "GPU".into(),
            arch: "sm_90".into(),
            sm_count: 132,
            l2_bytes: 50 << 20,
            memory_bytes: 80 << 30,
            sm_clock_khz: 1,
            memory_clock_khz: 1,
            theoretical_bandwidth_gbps: 3352.0,
            measured_copy_gbps: None,
            stream_kernel_gbps: None,
            driver_version: 13000,
            visible_gpus: None,
        }
    }

    #[test]
    fn measures_once_then_reads_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = Some(dir.path().join("peak.json"));
        let both = Peaks {
            copy_gbps: Some(2971.0),
            stream_kernel_gbps: Some(3210.0),
        };
        assert_eq!(cached_or_measure_in(path.clone(), &device(), || both), both);
        let again = cached_or_measure_in(path.clone(), &device(), || panic!("measured twice"));
        assert_eq!(again, both);
        // Another driver is another key.
        let newer = DeviceInfo {
            driver_version: 13010,
            ..device()
        };
        let other = Peaks {
            copy_gbps: Some(1.0),
            stream_kernel_gbps: None,
        };
        assert_eq!(cached_or_measure_in(path, &newer, || other), other);
    }

    #[test]
    fn a_failed_measurement_is_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let path = Some(dir.path().join("peak.json"));
        assert_eq!(
            cached_or_measure_in(path.clone(), &device(), Peaks::default),
            Peaks::default()
        );
        assert!(!dir.path().join("peak.json").exists());
    }
}
