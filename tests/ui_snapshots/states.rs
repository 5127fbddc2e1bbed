//! States a version can be in, whole screens at 80×24 and 120×40: no GPU, CPU-emulated checks,
//! compile errors, check failures, crashes, timeouts and full results.

use super::*;

#[test]
fn no_gpu() {
    let mut app = compiled_app();
    app.gpu = GpuState::Absent("cuInit failed: CUDA_ERROR_NO_DEVICE".into());
    // v1's PTX scrolled to the lines its cursor's source line produced.
    app.scroll = app.correlated_ptx[0].saturating_sub(4) as u16;
    both_sizes("no_gpu", &app);
    insta::assert_snapshot!(
        "panel_bandwidth_no_gpu",
        panel(&app, 36, 7, panels::bandwidth::render)
    );
    insta::assert_snapshot!(
        "panel_timing_no_gpu",
        panel(&app, 36, 7, panels::timing::render)
    );
    insta::assert_snapshot!(
        "panel_ptx_correlated",
        panel(&app, 60, 16, panels::tabs::render_body)
    );
    app.gpu = GpuState::Probing;
    insta::assert_snapshot!(
        "panel_timing_probing",
        panel(&app, 36, 5, panels::timing::render)
    );
}

/// No GPU: each version is checked on the CPU; v1 passed in the emulator at the odd size, v2
/// was caught writing past the end of `c`, with the finding in Diagnostics at its source line.
#[test]
fn emulated_checks_without_a_gpu() {
    let f = fixture();
    let mut app = compiled_app();
    app.gpu = GpuState::Absent("cuInit failed: CUDA_ERROR_NO_DEVICE".into());
    let odd = app
        .workspace
        .sizes
        .iter()
        .position(|s| s.emulate)
        .expect("the shipped workspace has a size for the CPU");
    let mut ok = RunResult::new("v1", "odd", Status::Ok);
    ok.backend = Some(kwb::report::Backend::Emulator);
    ok.check = Some(CheckSummary {
        passed: true,
        max_abs_error: 0.0,
        rel_l2_error: 0.0,
        failure: None,
    });
    app.versions[0].results[odd] = Some(ok);
    let mut bad = RunResult::new("v2", "odd", Status::CheckFailed);
    bad.backend = Some(kwb::report::Backend::Emulator);
    let finding = kwb::report::Finding {
        kind: "out-of-bounds".into(),
        message:
            "write of 4 bytes at byte 400012 of `c`, just past its end (`c` holds 400012 bytes)"
                .into(),
        cta: Some([390, 0, 0]),
        thread: Some([63, 0, 0]),
        ptx_line: Some(52),
        file: Some(f.ws.versions[1].file.display().to_string()),
        line: Some(14),
    };
    bad.message = Some(
        finding
            .to_string()
            .replace(&support::repo().display().to_string(), "."),
    );
    app.versions[1].results[odd] = Some(bad);
    app.versions[1].status = VersionStatus::CheckFailed;
    app.versions[1].diagnostics = vec![kwb::diag::Diagnostic::error(
        "out-of-bounds (emulated): write of 4 bytes at byte 400012 of `c`, just past its end",
    )
    .in_file("kernels/elementwise-add/v2_f32x4.cu")
    .at(14, None)];
    insta::assert_snapshot!(
        "panel_timing_emulated_ok",
        panel(&app, 40, 7, panels::timing::render)
    );
    app.selected = 1;
    insta::assert_snapshot!(
        "panel_timing_emulated_finding",
        panel(&app, 40, 9, panels::timing::render)
    );
    insta::assert_snapshot!(
        "panel_diagnostics_emulated_finding",
        panel(&app, 80, 5, panels::diagnostics::render)
    );
}

#[test]
fn compile_error() {
    let app = compile_error_app();
    both_sizes("compile_error", &app);
    insta::assert_snapshot!(
        "panel_diagnostics_source",
        panel(&app, 40, 10, panels::diagnostics::render)
    );
    insta::assert_snapshot!(
        "panel_versions_stale",
        panel(&app, 30, 9, panels::versions::render)
    );
    insta::assert_snapshot!(
        "panel_source_cursor",
        panel(&app, 60, 12, panels::tabs::render_body)
    );
    // A version that never compiled says so on every compiler tab.
    let mut never = app.clone();
    never.versions[2].compiled = None;
    never.versions[2].ptx_lines = Arc::default();
    never.tab = Tab::Ptx;
    insta::assert_snapshot!(
        "panel_ptx_never_compiled",
        panel(&never, 50, 5, panels::tabs::render_body)
    );
    insta::assert_snapshot!(
        "panel_resources_never_compiled",
        panel(&never, 36, 4, panels::resources::render)
    );
    insta::assert_snapshot!(
        "panel_occupancy_never_compiled",
        panel(&never, 36, 4, panels::occupancy::render)
    );
}

#[test]
fn check_failed() {
    let mut app = failures_app();
    app.selected = 1;
    insta::assert_snapshot!("check_failed_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!(
        "panel_timing_check_failed",
        panel(&app, 36, 7, panels::timing::render)
    );
}

#[test]
fn crashed() {
    let mut app = failures_app();
    app.selected = 3;
    insta::assert_snapshot!("crashed_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!(
        "panel_timing_crashed",
        panel(&app, 36, 7, panels::timing::render)
    );
    insta::assert_snapshot!(
        "panel_bandwidth_failures",
        panel(&app, 40, 11, panels::bandwidth::render)
    );
}

#[test]
fn timeout() {
    let app = failures_app(); // v7 selected
    insta::assert_snapshot!("timeout_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!(
        "panel_timing_timeout",
        panel(&app, 36, 7, panels::timing::render)
    );
}

#[test]
fn full_results() {
    let app = full_app();
    both_sizes("full_results", &app);
    insta::assert_snapshot!(
        "panel_versions",
        panel(&app, 28, 9, panels::versions::render)
    );
    insta::assert_snapshot!(
        "panel_resources",
        panel(&app, 40, 4, panels::resources::render)
    );
    insta::assert_snapshot!(
        "panel_occupancy",
        panel(&app, 40, 8, panels::occupancy::render)
    );
    insta::assert_snapshot!(
        "panel_bandwidth",
        panel(&app, 40, 10, panels::bandwidth::render)
    );
    insta::assert_snapshot!("panel_timing", panel(&app, 40, 8, panels::timing::render));
    insta::assert_snapshot!(
        "panel_tab_bar",
        panel(&app, 70, 1, panels::tabs::render_bar)
    );
    insta::assert_snapshot!("panel_status", panel(&app, 80, 1, panels::status::render));
    let mut messaged = app.clone();
    messaged.message = "v7 benchmarked at 256Mi".into();
    insta::assert_snapshot!(
        "panel_status_message",
        panel(&messaged, 80, 1, panels::status::render)
    );
    let mut sass = app.clone();
    sass.tab = Tab::Sass;
    insta::assert_snapshot!(
        "panel_sass_missing",
        panel(&sass, 50, 5, panels::tabs::render_body)
    );
    // A short bandwidth panel keeps the selected version in view.
    insta::assert_snapshot!(
        "panel_bandwidth_short",
        panel(&app, 40, 5, panels::bandwidth::render)
    );
}
