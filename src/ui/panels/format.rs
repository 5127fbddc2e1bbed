//! How numbers, paths and statuses read on screen, shared by the panels so that the same
//! quantity looks the same everywhere (a median in Timing and in Compare, say).

use super::text::{truncate, width};
use crate::report::Status;
use crate::ui::app::{App, VersionStatus};
use crate::ui::theme::Role;
use crate::workspace::SweepPoint;
use std::path::Path;

/// Bytes as `0 B`, `512 B`, `48 KiB`, `1.5 KiB`, `2 MiB`.
pub fn bytes(n: u64) -> String {
    const KIB: u64 = 1024;
    let scaled = |unit: u64, name: &str| {
        if n.is_multiple_of(unit) {
            format!("{} {name}", n / unit)
        } else {
            format!("{:.1} {name}", n as f64 / unit as f64)
        }
    };
    match n {
        _ if n < KIB => format!("{n} B"),
        _ if n < KIB * KIB => scaled(KIB, "KiB"),
        _ => scaled(KIB * KIB, "MiB"),
    }
}

/// A time in µs with about four significant digits, switching to ms from 10 ms.
pub fn micros(us: f64) -> String {
    match us {
        _ if !us.is_finite() => "–".into(),
        _ if us < 10.0 => format!("{us:.2} µs"),
        _ if us < 100.0 => format!("{us:.1} µs"),
        _ if us < 10_000.0 => format!("{us:.0} µs"),
        _ => format!("{:.1} ms", us / 1e3),
    }
}

/// GB/s without the unit: `2841`, `97.3`.
pub fn gbps(g: f64) -> String {
    if g >= 100.0 {
        format!("{g:.0}")
    } else {
        format!("{g:.1}")
    }
}

/// A percentage: `94%`, `7.5%` below 10.
pub fn percent(p: f64) -> String {
    if p.abs() < 10.0 && p != 0.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A path as shown: relative to the workspace's folder when inside it, else its file name, so
/// the screen never shows a machine's absolute paths.
pub fn short_path(app: &App, path: &Path) -> String {
    let inside = app
        .workspace
        .path
        .parent()
        .and_then(|dir| path.strip_prefix(dir).ok())
        .filter(|rel| !rel.as_os_str().is_empty());
    match inside {
        Some(rel) => rel.display().to_string(),
        None => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string()),
    }
}

/// The icon and colour of a version's status in the list.
pub fn version_status(status: VersionStatus) -> (&'static str, Role) {
    match status {
        VersionStatus::Idle | VersionStatus::Queued => ("·", Role::Dim),
        VersionStatus::Compiling | VersionStatus::Checking | VersionStatus::Benchmarking => {
            ("…", Role::Accent)
        }
        VersionStatus::CompileError => ("✗", Role::Error),
        VersionStatus::CheckFailed => ("≠", Role::Error),
        VersionStatus::Done => ("✓", Role::Ok),
        VersionStatus::Crashed => ("!", Role::Error),
        VersionStatus::Timeout => ("⧗", Role::Warn),
    }
}

/// The colour of a run result's status.
pub fn result_status(status: Status) -> Role {
    match status {
        Status::Ok => Role::Ok,
        Status::Timeout | Status::Skipped => Role::Warn,
        _ => Role::Error,
    }
}

/// A result status as words: `check failed`, not `check_failed`.
pub fn result_label(status: Status) -> String {
    status.as_str().replace('_', " ")
}

/// Version `i`'s name in at most `max` cells: as it is when it fits; a swept configuration
/// (`v5[BM=64,BN=128]`) by its values alone ([`SweepPoint::short_name`], `v5[64,128]`) when
/// that fits; else cut with `…`.
pub fn fit_name(app: &App, i: usize, max: u16) -> String {
    let name = &app.versions[i].name;
    if width(name) <= max {
        return name.clone();
    }
    let short = app
        .workspace
        .versions
        .get(i)
        .filter(|w| &w.name == name)
        .and_then(|w| w.sweep.as_ref())
        .map(SweepPoint::short_name);
    truncate(short.as_deref().unwrap_or(name), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(49152), "48 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(micros(4.256), "4.26 µs");
        assert_eq!(micros(123.4), "123 µs");
        assert_eq!(micros(12345.0), "12.3 ms");
        assert_eq!(gbps(2841.4), "2841");
        assert_eq!(percent(94.4), "94%");
        assert_eq!(percent(7.46), "7.5%");
    }

    #[test]
    fn a_long_swept_name_shows_its_values_alone_before_it_is_cut() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workspaces/matmul.yaml");
        let ws = crate::workspace::load(&path).unwrap();
        let mut app = App::new(ws, crate::compile::Arch::DEFAULT);
        let name = "v5[BM=64,BN=128,BK=32,STAGES=3,GROUP=16]";
        let i = app.versions.iter().position(|v| v.name == name).unwrap();
        assert_eq!(super::fit_name(&app, i, 60), name);
        assert_eq!(super::fit_name(&app, i, 22), "v5[64,128,32,3,16]");
        assert_eq!(super::fit_name(&app, i, 10), "v5[64,128…");
        app.versions[0].name = "a_very_long_plain_name".into();
        assert_eq!(super::fit_name(&app, 0, 8), "a_very_…");
    }
}
