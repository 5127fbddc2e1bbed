//! Snapshot tests of `kwb watch`'s screen on ratatui's `TestBackend` (insta): the whole screen
//! at 120×40 and 80×24 in each state the TUI must show well, each panel alone in a small
//! rectangle, and tiny terminals that must not panic.
//!
//! States are built by hand from the shipped `workspaces/elementwise-add.yaml` and real NVRTC
//! compiles (sm_90, no GPU needed); run results are made up but plausible. Highlighting is
//! plain `Line::raw` per line: the highlighter has its own tests. Lines of PTX that name the
//! compiler build or an absolute path are rewritten so the snapshots hold on any machine.
//!
//! Review changed snapshots with `cargo insta review`, or accept with `INSTA_UPDATE=always`.

mod support;

use kwb::compile::{Arch, CompiledVersion};
use kwb::report::{CheckSummary, DeviceInfo, RunResult, Status};
use kwb::run::stats::{summarize, StopReason, Timer};
use kwb::ui::app::{
    App, CompareRow, CompareView, Focus, GpuState, RowKind, Tab, VersionStatus, WhatIf,
};
use kwb::ui::draw::{draw, layout, render, version_at};
use kwb::ui::panels;
use kwb::ui::theme::{Role, Theme};
use kwb::workspace::Workspace;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::Terminal;
use std::sync::{Arc, OnceLock};

/// The workspace and its compiles, made once for all tests.
struct Fixture {
    ws: Workspace,
    compiled: Vec<Arc<CompiledVersion>>,
    /// v3 saved with a syntax error: `kernels/tests/broken_syntax.cu` compiled in its place.
    broken: CompiledVersion,
    broken_source: String,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let path = support::repo().join("workspaces/elementwise-add.yaml");
        let mut ws = kwb::workspace::load(&path)
            .unwrap_or_else(|e| panic!("the shipped workspace must load:\n{e}"));
        // The seed ladder v1..v8; the swept version has its own snapshots (tests/sweep_ui.rs).
        ws.versions.retain(|v| v.sweep.is_none());
        ws.sweeps.clear();
        // Panics with the reason when NVRTC cannot be found or provisioned.
        let compiler = support::compiler("sm_90");
        let compiled: Vec<_> = compiler
            .compile_workspace(&ws)
            .into_iter()
            .map(Arc::new)
            .collect();
        for c in &compiled {
            assert!(
                c.ok,
                "{} must compile for the UI snapshots; NVRTC said:\n{}",
                c.version,
                kwb::diag::render_all(&c.diagnostics)
            );
        }
        let mut v3 = ws.versions[2].clone();
        v3.file = support::repo().join("kernels/tests/broken_syntax.cu");
        let broken = compiler.compile_version(Some(&ws), &v3);
        assert!(!broken.ok, "the broken fixture compiled");
        let broken_source = std::fs::read_to_string(&v3.file).unwrap();
        Fixture {
            ws,
            compiled,
            broken,
            broken_source,
        }
    })
}

/// Plain lines, with the compiler's build and absolute paths taken out.
fn lines(text: &str) -> Arc<Vec<Line<'static>>> {
    Arc::new(text.lines().map(|l| Line::raw(portable(l))).collect())
}

fn portable(line: &str) -> String {
    let t = line.trim_start();
    if t.starts_with("// Compiler Build ID")
        || t.starts_with("// Cuda compilation tools")
        || t.starts_with("// Based on NVVM")
    {
        return "// (compiler build: left out of the snapshot)".into();
    }
    if let (true, Some(q)) = (t.starts_with(".file"), line.find('"')) {
        let path = line[q + 1..].split('"').next().unwrap_or_default();
        let name = path.rsplit('/').next().unwrap_or(path);
        return format!("{}\"{name}\"", &line[..q]);
    }
    line.to_string()
}

/// Every version compiled and shown; no GPU known yet; the PTX tab with the cursor on the
/// kernel's add line and its PTX lines marked.
fn compiled_app() -> App {
    let f = fixture();
    let mut app = App::new(f.ws.clone(), Arch::parse("sm_90").unwrap());
    for (v, c) in app.versions.iter_mut().zip(&f.compiled) {
        v.status = VersionStatus::Done;
        v.source_lines = lines(&v.source);
        v.ptx_lines = lines(&c.ptx);
        v.diagnostics = c.diagnostics.clone();
        v.compiled = Some(c.clone());
        (v.generation, v.shown_generation) = (1, 1);
    }
    app.cursor_line = 11;
    app.correlated_ptx = correlated(&f.compiled[0].ptx, app.cursor_line);
    app
}

/// PTX lines (0-based) from each `.loc 1 <line>` up to the next `.loc`: the instructions a
/// source line produced, as `update` derives them.
fn correlated(ptx: &str, line: u32) -> Vec<usize> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, l) in ptx.lines().enumerate() {
        let mut words = l.split_whitespace();
        if words.next() == Some(".loc") {
            inside = words.next() == Some("1") && words.next() == Some(&line.to_string());
        }
        if inside {
            out.push(i);
        }
    }
    out
}

fn device() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H100 80GB HBM3".into(),
        arch: "sm_90".into(),
        sm_count: 132,
        l2_bytes: 50 << 20,
        memory_bytes: 80 << 30,
        sm_clock_khz: 1_980_000,
        memory_clock_khz: 2_619_000,
        theoretical_bandwidth_gbps: 3352.3,
        measured_copy_gbps: Some(2962.5),
        stream_kernel_gbps: None,
        driver_version: 13000,
        visible_gpus: None,
    }
}

/// GB/s per version (v1..v8) at 1Mi, 16Mi, 256Mi and the odd size.
const GBPS: [[f64; 4]; 8] = [
    [640.0, 2410.0, 2652.0, 160.0],
    [880.0, 2890.0, 2781.0, 190.0],
    [350.0, 1720.0, 2290.0, 90.0],
    [410.0, 2050.0, 2498.0, 100.0],
    [520.0, 2210.0, 1905.0, 120.0],
    [700.0, 3010.0, 2603.0, 150.0],
    [760.0, 3540.0, 2857.0, 170.0],
    [750.0, 3480.0, 2861.0, 165.0],
];

/// A GPU with a measured peak and every version timed at every size.
fn full_app() -> App {
    let mut app = compiled_app();
    let peak = device().peak().0;
    app.gpu = GpuState::Present(device());
    let sizes = app.workspace.sizes.clone();
    for (i, v) in app.versions.iter_mut().enumerate() {
        let element = if i < 2 { 4 } else { 2 };
        for (s, size) in sizes.iter().enumerate() {
            let n = size.vars[0].1 as u64;
            let bytes = 3 * n * element;
            let median = bytes as f64 / (GBPS[i][s] * 1e3);
            let samples: Vec<f64> = (0..90)
                .map(|k| {
                    let wobble = ((k * 7 % 13) as f64 / 13.0 - 0.5) * 0.02;
                    let spike = if k % 17 == 5 { 0.06 } else { 0.0 };
                    median * (1.0 + wobble + spike)
                })
                .collect();
            let mut r = RunResult::new(v.name.clone(), size.name.clone(), Status::Ok);
            (r.bytes, r.flops) = (Some(bytes), Some(n));
            r.check = Some(CheckSummary {
                passed: true,
                max_abs_error: 0.0,
                rel_l2_error: 0.0,
                failure: None,
            });
            r.set_timing(summarize(&samples).unwrap(), StopReason::Converged, peak);
            v.results[s] = Some(r);
            v.samples[s] = samples;
        }
    }
    app.selected = 6;
    app.size = 2;
    app
}

/// v2's check failed, v4 crashed and v7 timed out, at every size.
fn failures_app() -> App {
    let mut app = full_app();
    let fail = |app: &mut App, i: usize, status: VersionStatus, run: Status, message: &str| {
        let v = &mut app.versions[i];
        v.status = status;
        for r in v.results.iter_mut().flatten() {
            let mut failed = RunResult::new(r.version.clone(), r.size.clone(), run);
            failed.bytes = r.bytes;
            if run == Status::CheckFailed {
                failed.check = Some(CheckSummary {
                    passed: false,
                    max_abs_error: 0.046875,
                    rel_l2_error: 0.0123,
                    failure: Some(message.into()),
                });
            } else {
                failed.message = Some(message.into());
            }
            *r = failed;
        }
        v.samples.iter_mut().for_each(Vec::clear);
    };
    let check =
        "c[4095] = 1.953125, expected 2.0: |error| 0.046875 > atol 1e-05 + rtol 1e-05 × |2.0|";
    fail(
        &mut app,
        1,
        VersionStatus::CheckFailed,
        Status::CheckFailed,
        check,
    );
    let crash = "the worker died: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was \
                 encountered) in add_f16x2";
    fail(&mut app, 3, VersionStatus::Crashed, Status::Crashed, crash);
    let slow = "no result within 30 s; the worker was stopped";
    fail(&mut app, 6, VersionStatus::Timeout, Status::Timeout, slow);
    app
}

/// v3 saved with a syntax error: its old compile still shown (stale), the error selected
/// with its source line, focus on the diagnostics.
fn compile_error_app() -> App {
    let f = fixture();
    let mut app = compiled_app();
    app.gpu = GpuState::Absent("cuInit failed: CUDA_ERROR_NO_DEVICE".into());
    let v = &mut app.versions[2];
    v.status = VersionStatus::CompileError;
    v.file = f.broken.file.clone();
    v.source = f.broken_source.as_str().into();
    v.source_lines = lines(&f.broken_source);
    v.diagnostics = f.broken.diagnostics.clone();
    v.generation = 2;
    app.selected = 2;
    app.diagnostic = app.versions[..2].iter().map(|v| v.diagnostics.len()).sum();
    app.show_diagnostic_source = true;
    app.focus = Focus::Diagnostics;
    app.tab = Tab::Source;
    app.cursor_line = 7;
    app
}

/// v1 against v2, paired line by line (equal lines are the same, others changed).
fn compare_app() -> App {
    let mut app = full_app();
    let text = |i: usize| -> Vec<String> {
        let v = &app.versions[i];
        v.ptx_lines.iter().map(|l| l.to_string()).collect()
    };
    let (left, right) = (text(0), text(1));
    let rows = (0..left.len().max(right.len()))
        .map(|i| {
            let (l, r) = (left.get(i).cloned(), right.get(i).cloned());
            let kind = match (&l, &r) {
                (Some(a), Some(b)) if a == b => RowKind::Same,
                (Some(_), Some(_)) => RowKind::Changed,
                (Some(_), None) => RowKind::Removed,
                _ => RowKind::Added,
            };
            CompareRow {
                left: l,
                right: r,
                kind,
            }
        })
        .collect();
    app.marks = vec![0, 1];
    app.compare = Some(CompareView {
        left: 0,
        right: 1,
        rows,
    });
    app.tab = Tab::Compare;
    app.selected = 1;
    app.size = 1;
    app.scroll = 10;
    app
}

/// The whole screen at `w`×`h`, drawn through a terminal as the TUI does.
fn screen(app: &App, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| draw(f, app, &Theme::builtin())).unwrap();
    support::buffer_text(terminal.backend().buffer())
}

/// One panel rendered alone into a `w`×`h` buffer.
fn panel(app: &App, w: u16, h: u16, render: fn(&App, &Theme, Rect, &mut Buffer)) -> String {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    render(app, &Theme::builtin(), area, &mut buf);
    support::buffer_text(&buf)
}

fn both_sizes(name: &str, app: &App) {
    insta::assert_snapshot!(format!("{name}_120x40"), screen(app, 120, 40));
    insta::assert_snapshot!(format!("{name}_80x24"), screen(app, 80, 24));
}

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

#[test]
fn help_overlay() {
    let mut app = full_app();
    app.help = true;
    both_sizes("help", &app);
    let area = Rect::new(0, 0, 64, 16);
    let mut buf = Buffer::empty(area);
    panels::help::render(&app, &Theme::builtin(), area, &mut buf);
    insta::assert_snapshot!("panel_help", support::buffer_text(&buf));
}

#[test]
fn what_if() {
    let mut app = full_app();
    app.selected = 0;
    app.what_if = WhatIf {
        block: Some(1024),
        dynamic_shared: Some(96 * 1024),
        register_cap: Some(8),
    };
    insta::assert_snapshot!("what_if_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!(
        "panel_occupancy_what_if",
        panel(&app, 44, 8, panels::occupancy::render)
    );
    // Over the hardware's limit, the calculator's reason is shown instead of a number.
    app.what_if.dynamic_shared = Some(300 * 1024);
    insta::assert_snapshot!(
        "panel_occupancy_what_if_invalid",
        panel(&app, 44, 8, panels::occupancy::render)
    );
}

#[test]
fn tiny_terminals() {
    let app = full_app();
    insta::assert_snapshot!("tiny_10x5", screen(&app, 10, 5));
    insta::assert_snapshot!("tiny_1x1", screen(&app, 1, 1));
    insta::assert_snapshot!("narrow_60x20", screen(&app, 60, 20));
    insta::assert_snapshot!("narrow_40x16", screen(&app, 40, 16));
    screen(&app, 0, 0);
}

#[test]
fn no_size_panics_in_any_state() {
    let mut help = compare_app();
    help.help = true;
    let mut whatif = failures_app();
    whatif.what_if.block = Some(2048);
    let states = [compiled_app(), compile_error_app(), whatif, help];
    let theme = Theme::monochrome();
    for app in &states {
        for w in (0..=130).step_by(3).chain([1, 2, 79, 80, 81]) {
            for h in (0..=45).step_by(2).chain([1, 3, 23, 24]) {
                let area = Rect::new(0, 0, w, h);
                let mut buf = Buffer::empty(area);
                render(app, &theme, area, &mut buf);
                // An area larger than the buffer, or off it, is clipped, not a panic.
                render(app, &theme, Rect::new(w / 2, h / 2, w + 5, h + 5), &mut buf);
            }
        }
    }
}

#[test]
fn no_panel_panics_alone_at_any_small_size() {
    let mut help = compare_app();
    help.help = true;
    let mut probing = compile_error_app();
    probing.gpu = GpuState::Probing;
    let states = [
        full_app(),
        compile_error_app(),
        failures_app(),
        help,
        probing,
    ];
    let renders: [fn(&App, &Theme, Rect, &mut Buffer); 10] = [
        panels::versions::render,
        panels::diagnostics::render,
        panels::tabs::render_bar,
        panels::tabs::render_body,
        panels::resources::render,
        panels::occupancy::render,
        panels::bandwidth::render,
        panels::timing::render,
        panels::status::render,
        panels::help::render,
    ];
    let theme = Theme::builtin();
    for app in &states {
        for tab in Tab::ALL {
            let app = App { tab, ..app.clone() };
            for render in renders {
                for w in 0..=44 {
                    for h in 0..=12 {
                        let area = Rect::new(0, 0, w, h);
                        render(&app, &theme, area, &mut Buffer::empty(area));
                    }
                }
            }
        }
    }
}

#[test]
fn layout_keeps_every_panel_at_80x24_and_drops_the_right_column_below() {
    let app = full_app();
    let s = layout(&app, Rect::new(0, 0, 80, 24));
    for (name, rect) in [
        ("versions", s.versions),
        ("diagnostics", s.diagnostics),
        ("tab bar", s.tab_bar),
        ("body", s.body),
        ("resources", s.resources),
        ("occupancy", s.occupancy),
        ("bandwidth", s.bandwidth),
        ("timing", s.timing),
        ("status", s.status),
    ] {
        assert!(
            rect.is_some_and(|r| !r.is_empty()),
            "{name} missing at 80x24: {s:?}"
        );
    }
    let s = layout(&app, Rect::new(0, 0, 79, 24));
    assert!(s.occupancy.is_none() && s.versions.is_some());
    assert_eq!(layout(&app, Rect::new(0, 0, 1, 1)).body, None);
}

#[test]
fn a_click_on_a_version_row_selects_that_version() {
    let app = full_app();
    let area = Rect::new(0, 0, 120, 40);
    let list = layout(&app, area).versions.unwrap();
    // Row 0 of the list is its border; version i is on row i + 1.
    assert_eq!(version_at(&app, area, list.x + 2, list.y + 1), Some(0));
    assert_eq!(version_at(&app, area, list.x + 2, list.y + 4), Some(3));
    assert_eq!(version_at(&app, area, list.x + 2, list.y), None);
    assert_eq!(version_at(&app, area, list.right() + 5, list.y + 1), None);
}

/// The cell already looks as `role` makes it (applying the role's style changes nothing).
fn carries(buf: &Buffer, x: u16, y: u16, theme: &Theme, role: Role) -> bool {
    let style = buf[(x, y)].style();
    style.patch(theme.style(role)) == style
}

/// Rows of `area` (counted from its top) whose every cell carries `role`.
fn rows_in(buf: &Buffer, area: Rect, theme: &Theme, role: Role) -> Vec<u16> {
    assert_ne!(
        theme.style(role),
        Style::default(),
        "{role:?} must look like something"
    );
    (area.top()..area.bottom())
        .filter(|&y| (area.left()..area.right()).all(|x| carries(buf, x, y, theme, role)))
        .map(|y| y - area.top())
        .collect()
}

#[test]
fn the_cursor_line_and_its_ptx_lines_are_highlighted() {
    let theme = Theme::builtin();
    let mut app = compiled_app();
    let marked = app.correlated_ptx.clone();
    assert!(
        !marked.is_empty(),
        "v1's PTX has no .loc for source line 11"
    );
    app.scroll = (marked[0] - 2) as u16;
    let area = Rect::new(0, 0, 60, 20);
    let mut buf = Buffer::empty(area);
    panels::tabs::render_body(&app, &theme, area, &mut buf);
    let inner = Rect::new(1, 1, 58, 18);
    let expected: Vec<u16> = marked
        .iter()
        .map(|&i| (i - usize::from(app.scroll)) as u16)
        .filter(|&row| row < inner.height)
        .collect();
    assert_eq!(rows_in(&buf, inner, &theme, Role::Highlight), expected);

    app.tab = Tab::Source;
    app.scroll = 0;
    let mut buf = Buffer::empty(area);
    panels::tabs::render_body(&app, &theme, area, &mut buf);
    let row = app.cursor_line as u16 - 1;
    assert_eq!(rows_in(&buf, inner, &theme, Role::Highlight), vec![row]);
}

#[test]
fn colours_come_from_the_theme_roles() {
    let theme = Theme::builtin();
    let app = compare_app();
    let area = Rect::new(0, 0, 120, 40);
    let mut buf = Buffer::empty(area);
    render(&app, &theme, area, &mut buf);
    // The selected version's row carries the Selected role.
    let list = layout(&app, area).versions.unwrap();
    let inner = Rect::new(list.x + 1, list.y + 1, list.width - 2, list.height - 2);
    let rows = rows_in(&buf, inner, &theme, Role::Selected);
    assert_eq!(rows, vec![app.selected as u16]);
    // A changed diff row: the left side in DiffRemove, the right in DiffAdd.
    let body = layout(&app, area).body.unwrap();
    let cmp = app.compare.as_ref().unwrap();
    let first_changed = cmp.rows[usize::from(app.scroll)..]
        .iter()
        .position(|r| r.kind == RowKind::Changed)
        .expect("v1 and v2 differ in the visible rows");
    // Inside the frame: the delta table (6 rows), the PTX header row, then the rows.
    let y = body.y + 1 + 6 + 1 + first_changed as u16;
    let right = body.x + 1 + (body.width - 2 - 1) / 2 + 1;
    assert_eq!(buf[(body.x + 1, y)].symbol(), "-");
    assert_eq!(buf[(right, y)].symbol(), "+");
    assert!(carries(&buf, body.x + 3, y, &theme, Role::DiffRemove));
    assert!(carries(&buf, right + 2, y, &theme, Role::DiffAdd));
}

/// Prints how long one full frame takes with 7 versions and a 5,000-line PTX (PTX tab, then
/// Compare with 5,000 diff rows); the bound is for release builds:
/// `cargo test --release --test ui_snapshots frame_render_time -- --ignored --nocapture`.
#[test]
#[ignore = "timing: run in release"]
fn frame_render_time() {
    let mut app = compare_app();
    let text: Vec<String> = (0..5000)
        .map(|i| format!("\tadd.f32 \t%f{i}, %f{}, %f{};", i + 1, i + 2))
        .collect();
    let ptx = Arc::new(
        text.iter()
            .map(|l| Line::raw(l.clone()))
            .collect::<Vec<_>>(),
    );
    for v in &mut app.versions {
        v.ptx_lines = ptx.clone();
    }
    let rows = text.iter().map(|l| CompareRow {
        left: Some(l.clone()),
        right: Some(l.replace("add", "sub")),
        kind: RowKind::Changed,
    });
    app.compare.as_mut().unwrap().rows = rows.collect();
    app.scroll = 2500;
    app.correlated_ptx = (2500..2520).collect();
    let theme = Theme::builtin();
    for (tab, size) in [
        (Tab::Ptx, (200, 60)),
        (Tab::Compare, (200, 60)),
        (Tab::Ptx, (120, 40)),
    ] {
        app.tab = tab;
        let area = Rect::new(0, 0, size.0, size.1);
        let mut buf = Buffer::empty(area);
        let frames = 500;
        let start = std::time::Instant::now();
        for _ in 0..frames {
            buf.reset();
            render(&app, &theme, area, &mut buf);
        }
        let per_frame = start.elapsed() / frames;
        println!(
            "{tab:?} tab, {}x{}, 7 versions, 5,000 lines: {per_frame:?} a frame",
            size.0, size.1
        );
        assert!(per_frame.as_millis() < 5, "a frame took {per_frame:?}");
    }
}

#[test]
fn tile_versions_show_their_generated_cuda_and_diagnostics_at_tile_lines() {
    let f = fixture();
    let mut app = compiled_app();
    app.gpu = GpuState::Absent("cuInit failed: CUDA_ERROR_NO_DEVICE".into());
    let i = app.versions.iter().position(|v| v.name == "v8").unwrap();
    let generated = f.compiled[i]
        .generated
        .clone()
        .expect("v8 is a tile version");
    app.versions[i].cuda_lines = lines(&generated);
    app.selected = i;
    app.tab = Tab::Cuda;
    // The kernel itself, past the helper functions the writer puts first.
    app.scroll = generated
        .lines()
        .position(|l| l.contains("__global__"))
        .unwrap() as u16;
    insta::assert_snapshot!(
        "panel_cuda_tab",
        panel(&app, 100, 16, panels::tabs::render_body)
    );
    // A typo in the tile source: the diagnostic names the tile file, line and column.
    let mut broken = f.ws.versions[i].clone();
    broken.file = support::repo().join("kernels/tests/broken_tile.tile");
    let out = support::compiler("sm_90").compile_version(Some(&f.ws), &broken);
    assert!(!out.ok, "the broken tile fixture compiled");
    let source = std::fs::read_to_string(&broken.file).unwrap();
    let v = &mut app.versions[i];
    v.status = VersionStatus::CompileError;
    v.file = broken.file.clone();
    v.source = source.as_str().into();
    v.source_lines = lines(&source);
    v.diagnostics = out.diagnostics.clone();
    v.generation = 2;
    app.diagnostic = app.versions[..i].iter().map(|v| v.diagnostics.len()).sum();
    app.show_diagnostic_source = true;
    app.focus = Focus::Diagnostics;
    insta::assert_snapshot!(
        "panel_diagnostics_tile",
        panel(&app, 70, 10, panels::diagnostics::render)
    );
}

#[test]
fn every_tab_shows_in_the_tab_bar_at_80x24() {
    let app = compiled_app();
    let s = screen(&app, 80, 24);
    let bar = s.lines().next().unwrap_or_default();
    for tab in app.tabs() {
        assert!(
            bar.contains(tab.short()),
            "{} is missing from the tab bar: {bar}",
            tab.title()
        );
    }
}

/// The text of the panel at `rect` of a rendered screen, rows joined by spaces (for asserting
/// that a wrapped sentence is on screen whole).
fn panel_text(screen: &str, rect: Rect) -> String {
    let rows = screen.lines().skip(usize::from(rect.y) + 1);
    let inside = rows
        .take(usize::from(rect.height.saturating_sub(2)))
        .map(|l| {
            let cells: String = l
                .chars()
                .skip(usize::from(rect.x) + 1)
                .take(usize::from(rect.width.saturating_sub(2)))
                .collect();
            cells.trim().to_string()
        });
    inside.collect::<Vec<_>>().join(" ")
}

/// The tabs the other 80×24 screens do not show: Source, SASS (no disassembler) and CUDA.
#[test]
fn every_tab_at_80x24() {
    let f = fixture();
    let mut app = full_app();
    app.tab = Tab::Source;
    app.focus = Focus::Main;
    insta::assert_snapshot!("tab_source_80x24", screen(&app, 80, 24));
    app.tab = Tab::Sass;
    insta::assert_snapshot!("tab_sass_80x24", screen(&app, 80, 24));
    let v8 = app.versions.iter().position(|v| v.name == "v8").unwrap();
    let generated = f.compiled[v8].generated.clone().unwrap();
    app.versions[v8].cuda_lines = lines(&generated);
    app.selected = v8;
    app.tab = Tab::Cuda;
    insta::assert_snapshot!("tab_cuda_80x24", screen(&app, 80, 24));
}

/// The no-GPU message as a machine without a driver gives it: at 80×24 the Timing panel keeps
/// the CPU's check and shows the whole reason, the retry key included; Bandwidth, which has
/// nothing to show, gives up its rows.
#[test]
fn the_whole_no_gpu_reason_and_the_cpu_check_show_at_80x24() {
    let mut app = compiled_app();
    let reason = "the worker reported: no CUDA driver: libcuda.so.1 could not be loaded (is the \
                  NVIDIA driver installed?) (c tries again)";
    app.gpu = GpuState::Absent(reason.into());
    let odd = app.workspace.sizes.iter().position(|s| s.emulate).unwrap();
    let mut ok = RunResult::new("v1", "odd", Status::Ok);
    ok.backend = Some(kwb::report::Backend::Emulator);
    ok.check = Some(CheckSummary {
        passed: true,
        max_abs_error: 0.0,
        rel_l2_error: 0.0,
        failure: None,
    });
    app.versions[0].results[odd] = Some(ok);
    let text = screen(&app, 80, 24);
    let timing = layout(&app, Rect::new(0, 0, 80, 24)).timing.unwrap();
    let said = panel_text(&text, timing);
    assert!(said.contains("check passed"), "{said}");
    assert!(said.contains(&format!("No GPU: {reason}.")), "{said}");
    insta::assert_snapshot!("no_gpu_reason_80x24", text);
    // With room to spare, Bandwidth stays and Timing says what still works.
    let wide = screen(&app, 120, 40);
    assert!(wide.contains("No GPU: see Timing."), "{wide}");
    assert!(wide.contains("CPU checks work."), "{wide}");
    // While the version compiles, then while the CPU checks it, the reason is whole too.
    app.versions[0].results[odd] = None;
    app.versions[0].status = VersionStatus::Compiling;
    let text = screen(&app, 80, 24);
    let said = panel_text(&text, layout(&app, Rect::new(0, 0, 80, 24)).timing.unwrap());
    assert!(said.starts_with("v1 is compiling…"), "{said}");
    assert!(said.contains(&format!("No GPU: {reason}.")), "{said}");
    app.versions[0].status = VersionStatus::Checking;
    let text = screen(&app, 80, 24);
    let said = panel_text(&text, layout(&app, Rect::new(0, 0, 80, 24)).timing.unwrap());
    assert!(
        said.starts_with("v1 is being checked on the CPU…"),
        "{said}"
    );
    assert!(said.contains(&format!("No GPU: {reason}.")), "{said}");
}

/// At start-up nothing has run: no version, panel or title says `(stale)`; the list says what
/// each version is doing (compiling, or compiled and waiting for the GPU's answer).
#[test]
fn versions_that_never_ran_are_not_stale() {
    let f = fixture();
    let mut app = App::new(f.ws.clone(), Arch::parse("sm_90").unwrap());
    for v in &mut app.versions {
        // What the first pass does: generation 1, a compile for each.
        (v.generation, v.status) = (1, VersionStatus::Compiling);
    }
    let (v1, c) = (&mut app.versions[0], &f.compiled[0]);
    (v1.compiled, v1.ptx_lines) = (Some(c.clone()), lines(&c.ptx));
    (v1.shown_generation, v1.status) = (1, VersionStatus::Queued);
    app.selected = 1;
    let text = screen(&app, 80, 24);
    assert!(!text.contains("stale"), "{text}");
    insta::assert_snapshot!("startup_80x24", text);
    let list = panel(&app, 30, 10, panels::versions::render);
    assert!(
        list.contains("v1 queued") && list.contains("v2 compiling"),
        "{list}"
    );
    // A save after that: v1's PTX is now older than its source.
    app.versions[0].generation = 2;
    app.versions[0].status = VersionStatus::Compiling;
    app.selected = 0;
    assert!(screen(&app, 80, 24).contains("PTX · v1 (stale)"));
}

/// Where the help does not fit, the bottom border says how much is cut, and the movement keys
/// scroll it as far as it goes (and no further).
#[test]
fn the_help_scrolls_where_it_does_not_fit() {
    use kwb::ui::action::{update, Action};
    let mut app = full_app();
    update(&mut app, Action::ToggleHelp);
    update(&mut app, Action::Resize(Rect::new(0, 0, 80, 16)));
    let top = screen(&app, 80, 16);
    assert!(top.contains("↓ 7 more"), "{top}");
    insta::assert_snapshot!("help_top_80x16", top);
    update(&mut app, Action::Down);
    update(&mut app, Action::Down);
    assert!(screen(&app, 80, 16).contains("↑ 2 · ↓ 5 more"));
    update(&mut app, Action::PageDown);
    update(&mut app, Action::PageDown);
    assert_eq!(app.help_scroll, 7, "scrolled past the end");
    let bottom = screen(&app, 80, 16);
    assert!(
        bottom.contains("select the version under the pointer"),
        "{bottom}"
    );
    insta::assert_snapshot!("help_bottom_80x16", bottom);
    update(&mut app, Action::Top);
    assert_eq!(app.help_scroll, 0);
    // The selection did not move while the help was scrolled.
    assert_eq!(app.selected, 6);
    // Closed and opened again, it starts at the top; at 80×24 it fits whole.
    update(&mut app, Action::Bottom);
    update(&mut app, Action::ToggleHelp);
    update(&mut app, Action::ToggleHelp);
    assert_eq!(app.help_scroll, 0);
    update(&mut app, Action::Resize(Rect::new(0, 0, 80, 24)));
    update(&mut app, Action::Bottom);
    assert_eq!(app.help_scroll, 0);
    assert!(!screen(&app, 80, 24).contains("more ─"));
}
