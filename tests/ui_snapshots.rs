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
    support::ui_results::h100()
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

#[path = "ui_snapshots/at_80x24.rs"]
mod at_80x24;
#[path = "ui_snapshots/layout.rs"]
mod layout;
#[path = "ui_snapshots/states.rs"]
mod states;
#[path = "ui_snapshots/timing.rs"]
mod timing;
