//! The measured copy-bandwidth peak, cached per device and driver in the user's cache folder,
//! so every run reports "% of peak" against the same measured figure without re-measuring.

use crate::report::DeviceInfo;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn cache_file() -> Option<PathBuf> {
    crate::cache_dir().map(|d| d.join("copy-peak.json"))
}

fn key(f: &DeviceInfo) -> String {
    format!(
        "{} | {} | driver {} | {} bytes",
        f.name, f.arch, f.driver_version, f.memory_bytes
    )
}

/// The cached peak for this device and driver, or `measure()`'s result (then cached).
pub fn cached_or_measure(
    f: &DeviceInfo,
    measure: impl FnOnce() -> Result<f64, String>,
) -> Result<f64, String> {
    let path = cache_file();
    let mut table: BTreeMap<String, f64> = path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    if let Some(v) = table.get(&key(f)).filter(|v| v.is_finite() && **v > 0.0) {
        return Ok(*v);
    }
    let v = measure()?;
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
    Ok(v)
}
