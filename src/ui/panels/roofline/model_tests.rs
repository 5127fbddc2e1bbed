//! The Roofline's model: which versions are placed where, why the others are not, sweeps by
//! their best configuration, and the ceilings with what is missing of them.

use super::*;
use crate::compile::Arch;
use crate::report::{Backend, DeviceInfo};

/// The shipped elementwise-add ladder (v1..v8 and v9's four block sizes) at 256Mi, nothing run.
fn app() -> App {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workspaces/elementwise-add.yaml");
    let ws = crate::workspace::load(&path).unwrap();
    let mut app = App::new(ws, Arch::DEFAULT);
    app.size = 2;
    app
}

fn index(app: &App, name: &str) -> usize {
    app.versions.iter().position(|v| v.name == name).unwrap()
}

/// A passed result at the viewed size: `bytes` and `flops` per launch at `gflops`.
fn give(app: &mut App, name: &str, bytes: u64, flops: Option<u64>, gflops: Option<f64>) {
    let i = index(app, name);
    let mut r = RunResult::new(name, "256Mi", Status::Ok);
    (r.bytes, r.flops, r.gflops) = (Some(bytes), flops, gflops);
    app.versions[i].status = VersionStatus::Done;
    app.versions[i].results[2] = Some(r);
}

fn h100() -> DeviceInfo {
    DeviceInfo {
        sm_count: 132,
        sm_clock_khz: 1_980_000,
        measured_copy_gbps: Some(2962.5),
        ..DeviceInfo::stand_in("sm_90")
    }
}

const N: u64 = 256 << 20;

#[test]
fn timed_versions_are_placed_at_flops_over_bytes_and_their_flop_rate() {
    let mut app = app();
    app.gpu = GpuState::Present(h100());
    give(&mut app, "v1", 12 * N, Some(N), Some(230.0));
    give(&mut app, "v3", 6 * N, Some(N), Some(470.0));
    let r = build(&app);
    let names: Vec<&str> = r.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["v1", "v3"]);
    let v1 = &r.points[0];
    assert!((v1.intensity - 1.0 / 12.0).abs() < 1e-12, "{v1:?}");
    assert_eq!(v1.flops_per_s, 230e9);
    assert_eq!(v1.source, IntensitySource::FlopsBytes);
    assert!((r.points[1].intensity - 1.0 / 6.0).abs() < 1e-12);
    assert_eq!(r.sources(), [IntensitySource::FlopsBytes]);
    // The H100's ceilings: its measured copy, and the FP32 and tensor-core peaks.
    assert_eq!(r.ceilings.bytes_per_s, Some(2962.5e9));
    assert!((r.ceilings.fp32.unwrap() - 66.9e12).abs() < 0.05e12);
    assert!((r.ceilings.tensor.unwrap() - 1070.5e12).abs() < 0.1e12);
    assert_eq!(r.bandwidth_kind, Some("measured copy peak"));
    assert_eq!(r.device_note, None);
    // FP32's ridge: 66.9 TFLOP/s over 2962.5 GB/s.
    assert!((r.ceilings.ridge(r.ceilings.fp32.unwrap()).unwrap() - 22.58).abs() < 0.01);
}

#[test]
fn every_version_without_a_point_says_why() {
    let mut app = app();
    app.gpu = GpuState::Present(h100());
    give(&mut app, "v1", 12 * N, Some(N), Some(230.0));
    let compile_error = index(&app, "v2");
    app.versions[compile_error].status = VersionStatus::CompileError;
    let busy = index(&app, "v3");
    app.versions[busy].status = VersionStatus::Benchmarking;
    give(&mut app, "v4", 6 * N, Some(N), Some(400.0));
    let crashed = index(&app, "v4");
    app.versions[crashed].results[2].as_mut().unwrap().status = Status::Crashed;
    give(&mut app, "v5", 6 * N, Some(N), None);
    let cpu = index(&app, "v5");
    app.versions[cpu].results[2].as_mut().unwrap().backend = Some(Backend::Emulator);
    give(&mut app, "v6", 6 * N, Some(N), None);
    // Done, but with no result at this size (a size the GPU does not run).
    let elsewhere = index(&app, "v7");
    app.versions[elsewhere].status = VersionStatus::Done;
    let why: Vec<(String, String)> = build(&app)
        .unplaced
        .into_iter()
        .map(|u| (u.name, u.why))
        .collect();
    let expected = [
        ("v2", "compile error"),
        ("v3", "benchmarking…"),
        ("v4", "crashed"),
        ("v5", "checked on the CPU, not timed"),
        ("v6", "not timed"),
        ("v7", "no result at 256Mi"),
        ("v8", "not run yet"),
        ("v9", "not run yet"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, w)| (n.to_string(), w.to_string()))
        .collect();
    assert_eq!(why, expected);
    // Without a `flops` expression nothing is placed, and each version says so.
    app.workspace.flops = None;
    let r = build(&app);
    assert!(r.points.is_empty());
    assert!(r
        .unplaced
        .iter()
        .all(|u| u.why == "the workspace has no `flops`"));
    assert_eq!(r.unplaced.len(), 9, "v1..v8 and the v9 sweep once");
    // Without bytes (a version with no buffers), neither.
    app.workspace.flops = Some(crate::workspace::Formula::parse("N").unwrap());
    app.versions[0].results[2].as_mut().unwrap().bytes = None;
    assert_eq!(build(&app).unplaced[0].why, "no flops or bytes at 256Mi");
}

#[test]
fn a_sweep_is_one_point_its_fastest_configuration() {
    let mut app = app();
    app.gpu = GpuState::Present(h100());
    give(&mut app, "v9[block=128]", 12 * N, Some(N), Some(200.0));
    give(&mut app, "v9[block=512]", 12 * N, Some(N), Some(240.0));
    give(&mut app, "v9[block=1024]", 12 * N, Some(N), Some(220.0));
    let r = build(&app);
    assert!(r.swept);
    assert_eq!(r.points.len(), 1);
    assert_eq!(r.points[0].name, "v9");
    assert_eq!(r.points[0].version, index(&app, "v9[block=512]"));
    assert_eq!(r.points[0].flops_per_s, 240e9);
    // Its unplaced configuration is not listed; a sweep with none placed is listed once.
    assert!(r.unplaced.iter().all(|u| u.name != "v9"));
    let r = build(&self::app());
    let v9: Vec<&Unplaced> = r.unplaced.iter().filter(|u| u.name == "v9").collect();
    assert_eq!(v9.len(), 1);
}

#[test]
fn missing_ceilings_are_said_and_points_stay() {
    let mut app = app();
    give(&mut app, "v1", 12 * N, Some(N), Some(230.0));
    app.gpu = GpuState::Absent("cuInit failed".into());
    let r = build(&app);
    assert!(!r.ceilings.any());
    assert_eq!(r.points.len(), 1);
    assert_eq!(
        r.device_note.as_deref(),
        Some("No GPU (see Timing): no ceilings")
    );
    app.gpu = GpuState::Probing;
    assert_eq!(
        build(&app).device_note.as_deref(),
        Some("Looking for a GPU…: no ceilings yet")
    );
    // A GPU kwb knows no compute peaks for: the bandwidth slope alone.
    app.gpu = GpuState::Present(DeviceInfo {
        arch: "sm_120".into(),
        ..h100()
    });
    let r = build(&app);
    assert_eq!(r.ceilings.bytes_per_s, Some(2962.5e9));
    assert_eq!((r.ceilings.fp32, r.ceilings.tensor), (None, None));
    assert_eq!(
        r.device_note.as_deref(),
        Some("No FP32 or tensor-core peak known for sm_120")
    );
}

#[test]
fn a_counted_intensity_is_named_as_such() {
    assert_eq!(IntensitySource::FlopsBytes.label(), "from flops/bytes");
    assert_eq!(IntensitySource::Counted.label(), "counted");
    let mut r = RunResult::new("v1", "1Mi", Status::Ok);
    assert_eq!(intensity(&r), None);
    (r.flops, r.bytes) = (Some(10), Some(0));
    assert_eq!(intensity(&r), None);
    r.bytes = Some(4);
    assert_eq!(intensity(&r), Some((2.5, IntensitySource::FlopsBytes)));
}
