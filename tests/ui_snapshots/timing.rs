//! The Timing and Bandwidth panels: Triton's time beside kwb's, provisional results, the timer
//! and L2 residency, compute-bound work against the tensor peak; and Compare.

use super::*;

/// Every version timed at the first size (1Mi, L2-resident) on a GPU whose peak is kwb's stream
/// kernel; v1 with CUPTI (events beside it), v2 with events alone. Independent of `GBPS`.
fn clocked_app() -> App {
    let mut app = compiled_app();
    let dev = DeviceInfo {
        stream_kernel_gbps: Some(3210.0),
        ..device()
    };
    let peak = dev.peak().0;
    app.gpu = GpuState::Present(dev);
    let n = app.workspace.sizes[0].vars[0].1 as u64;
    for (i, v) in app.versions.iter_mut().enumerate() {
        let bytes = 3 * n * if i < 2 { 4 } else { 2 };
        let median = 4.58 + i as f64 * 0.5;
        let samples: Vec<f64> = (0..40)
            .map(|k| median * (1.0 + (k % 5) as f64 * 0.002))
            .collect();
        let mut t = summarize(&samples).unwrap();
        t.timer = Some(if i == 1 { Timer::Events } else { Timer::Cupti });
        t.event_median_us = Some(if i == 1 { t.median_us } else { median + 1.76 });
        t.l2_resident = Some(true);
        let mut r = RunResult::new(
            v.name.clone(),
            app.workspace.sizes[0].name.clone(),
            Status::Ok,
        );
        (r.bytes, r.flops) = (Some(bytes), Some(n));
        r.set_timing(t, StopReason::Converged, peak);
        v.results[0] = Some(r);
        v.samples[0] = samples;
    }
    app.size = 0;
    app
}

/// A captured workspace's baseline: Triton's time for the same launch, beside kwb's.
#[test]
fn the_timing_panel_shows_tritons_time_for_the_same_launch() {
    let mut app = full_app();
    let (v, s) = (app.selected, app.size);
    let r = app.versions[v].results[s].as_mut().unwrap();
    let median = r.timing.as_ref().unwrap().median_us;
    r.baseline = Some(kwb::report::BaselineTime {
        name: "Triton 3.6.0".into(),
        us: median / 1.25,
        note: None,
    });
    let text = panel(&app, 40, 8, panels::timing::render);
    assert!(text.contains("Triton 3.6.0"), "{text}");
    assert!(text.contains("kwb 1.25×"), "{text}");
    insta::assert_snapshot!("panel_timing_baseline", text);
}

#[test]
fn a_quick_look_is_marked_provisional_until_refined() {
    let mut app = full_app();
    let (v, size) = (app.selected, app.size);
    app.versions[v].provisional[size] = true;
    app.versions[v].status = VersionStatus::Benchmarking;
    insta::assert_snapshot!(
        "panel_timing_provisional",
        panel(&app, 40, 8, panels::timing::render)
    );
    insta::assert_snapshot!(
        "panel_versions_provisional",
        panel(&app, 36, 11, panels::versions::render)
    );
}

#[test]
fn timer_and_l2_residency() {
    let mut app = clocked_app();
    app.selected = 0;
    insta::assert_snapshot!(
        "panel_timing_cupti",
        panel(&app, 40, 8, panels::timing::render)
    );
    app.selected = 1;
    insta::assert_snapshot!(
        "panel_timing_events",
        panel(&app, 40, 8, panels::timing::render)
    );
    insta::assert_snapshot!(
        "panel_bandwidth_l2",
        panel(&app, 44, 11, panels::bandwidth::render)
    );
}

/// The matmul ladder at 4096³ on the H100 fixture: v1..v4 timed (H200 medians), the rest not.
fn matmul_app() -> App {
    let ws = kwb::workspace::load(std::path::Path::new("workspaces/matmul.yaml")).unwrap();
    let mut app = App::new(ws, Arch::DEFAULT);
    let peak = device().peak().0;
    app.gpu = GpuState::Present(device());
    app.size = 1;
    let (m, n, k) = (4096u64, 4096u64, 4096u64);
    for (i, median) in [29980.3, 7552.8, 436.6, 382.4].into_iter().enumerate() {
        let samples: Vec<f64> = (0..20)
            .map(|j| median * (1.0 + (j % 3) as f64 * 0.001))
            .collect();
        let v = &mut app.versions[i];
        let mut r = RunResult::new(v.name.clone(), "4096x4096x4096", Status::Ok);
        (r.bytes, r.flops) = (Some(2 * (m * k + k * n + m * n)), Some(2 * m * n * k));
        r.set_timing(summarize(&samples).unwrap(), StopReason::Converged, peak);
        v.results[1] = Some(r);
    }
    app.selected = 3;
    app
}

#[test]
fn compute_bound_work_shows_tflops_against_the_tensor_peak_beside_gbps() {
    // Matmul (1,365 flops per byte at 4096³): TFLOP/s and % of the tensor-core peak too.
    let app = matmul_app();
    let text = panel(&app, 64, 8, panels::bandwidth::render);
    assert!(text.contains("Compute · 4096x4096x4096"), "{text}");
    assert!(
        text.contains("1071 TFLOP/s dense fp16 tensor-core peak"),
        "{text}"
    );
    assert!(text.contains("359.1  34%   263 GB/s"), "{text}");
    insta::assert_snapshot!("panel_bandwidth_matmul", text);
    // Elementwise add (1/6 flop per byte): bandwidth only.
    let add = panel(&full_app(), 40, 10, panels::bandwidth::render);
    assert!(add.contains("Bandwidth") && !add.contains("TF"), "{add}");
}

#[test]
fn compare() {
    let app = compare_app();
    both_sizes("compare", &app);
    insta::assert_snapshot!(
        "panel_compare",
        panel(&app, 70, 16, panels::tabs::render_body)
    );
    let mut unmarked = full_app();
    unmarked.tab = Tab::Compare;
    insta::assert_snapshot!(
        "panel_compare_unmarked",
        panel(&unmarked, 50, 4, panels::tabs::render_body)
    );
}
