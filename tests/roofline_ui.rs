//! Snapshot tests of `kwb watch`'s Roofline tab on ratatui's `TestBackend` (insta), at 80×24
//! and 120×40: the matmul ladder placed against an H100's ceilings (compute-bound, one version
//! not placed), the elementwise-add ladder (memory-bound, under the bandwidth slope), points
//! with no device to give the ceilings, nothing to draw, and `s` changing the viewed size.
//! Each snapshot also has assertions on what must be in it. Results are made up but plausible;
//! nothing is compiled.

mod support;

use kwb::compile::Arch;
use kwb::report::{RunResult, Status};
use kwb::ui::action::{update, Action};
use kwb::ui::app::{App, GpuState, Tab, VersionStatus};
use kwb::ui::draw::{draw, layout};
use kwb::ui::theme::Theme;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

fn screen(app: &App, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| draw(f, app, &Theme::builtin())).unwrap();
    support::buffer_text(terminal.backend().buffer())
}

/// The tab body's rows (inside its frame) on a `w`×`h` screen.
fn body(app: &App, w: u16, h: u16) -> Vec<String> {
    let text = screen(app, w, h);
    let rect = layout(app, Rect::new(0, 0, w, h)).body.unwrap();
    let rows = text.lines().skip(usize::from(rect.y) + 1);
    rows.take(usize::from(rect.height - 2))
        .map(|l| {
            l.chars()
                .skip(usize::from(rect.x) + 1)
                .take(usize::from(rect.width - 2))
                .collect::<String>()
        })
        .collect()
}

fn app_for(workspace: &str) -> App {
    let path = support::repo().join(workspace);
    let ws = kwb::workspace::load(&path).unwrap_or_else(|e| panic!("{workspace}: {e}"));
    let mut app = App::new(ws, Arch::parse("sm_90").unwrap());
    app.gpu = GpuState::Present(support::ui_results::h100());
    app.tab = Tab::Roofline;
    app
}

/// A passed result of `bytes` and `flops` per launch, timed at `tflops`.
fn timed(version: &str, size: &str, bytes: u64, flops: u64, tflops: f64) -> RunResult {
    let median = flops as f64 / (tflops * 1e6);
    support::ui_results::passed(version, size, Some(bytes), Some(flops), median)
}

/// The matmul ladder at 4096³ (its second size): naive, tiled, tensor cores, the tile
/// language, and its sweeps' configurations, v3's check failed.
fn matmul_app() -> App {
    let mut app = app_for("workspaces/matmul.yaml");
    app.size = 1;
    let size = app.workspace.sizes[1].clone();
    let (m, n, k) = (4096u64, 4096u64, 4096u64);
    let (flops, bytes) = (2 * m * n * k, 2 * (m * k + k * n + m * n));
    let sweep_at = |name: &str| -> Option<f64> {
        let base = match name.split('[').next()? {
            "v5" => 640.0,
            "v6" => 690.0,
            "v7" => 700.0,
            _ => return None,
        };
        // A configuration's spread: the length of its name stands in for its tiles.
        Some(base - (name.len() % 7) as f64 * 25.0)
    };
    for v in app.versions.iter_mut() {
        let tflops = match v.name.as_str() {
            "v1" => 3.1,
            "v2" => 24.0,
            "v3" => {
                let mut r = RunResult::new("v3", size.name.clone(), Status::CheckFailed);
                (r.bytes, r.flops) = (Some(bytes), Some(flops));
                v.results[1] = Some(r);
                v.status = VersionStatus::CheckFailed;
                continue;
            }
            "v4" => 560.0,
            other => match sweep_at(other) {
                Some(t) => t,
                None => continue,
            },
        };
        v.results[1] = Some(timed(&v.name, &size.name, bytes, flops, tflops));
        v.status = VersionStatus::Done;
    }
    app.selected = 3;
    app
}

/// The elementwise-add ladder at 256Mi: fp32 (12 bytes a flop) and fp16 (6), near the
/// bandwidth peak.
fn add_app() -> App {
    let mut app = app_for("workspaces/elementwise-add.yaml");
    app.size = 2;
    let n = 256u64 << 20;
    let gbps = [
        2652.0, 2781.0, 2290.0, 2498.0, 1905.0, 2603.0, 2857.0, 2861.0,
    ];
    for (i, v) in app.versions.iter_mut().enumerate() {
        let per = if i < 2 || v.name.starts_with("v9") {
            12
        } else {
            6
        };
        let g = gbps.get(i).copied().unwrap_or(2700.0 - 10.0 * i as f64);
        let tflops = g / per as f64 / 1e3;
        v.results[2] = Some(timed(&v.name, "256Mi", per * n, n, tflops));
        v.status = VersionStatus::Done;
    }
    app.selected = 6;
    app
}

fn contains(rows: &[String], text: &str) -> bool {
    rows.iter().any(|r| r.contains(text))
}

/// The column (within the body) of the row holding `label`'s first character, and the row.
fn find(rows: &[String], label: &str) -> Option<(usize, usize)> {
    rows.iter().enumerate().find_map(|(y, r)| {
        let byte = r.find(label)?;
        Some((r[..byte].chars().count(), y))
    })
}

#[test]
fn matmul_is_compute_bound_under_the_tensor_core_roof() {
    let app = matmul_app();
    let narrow = body(&app, 80, 24);
    insta::assert_snapshot!("roofline_matmul_80x24", screen(&app, 80, 24));
    insta::assert_snapshot!("roofline_matmul_120x40", screen(&app, 120, 40));
    let wide = body(&app, 120, 40);
    for rows in [&narrow, &wide] {
        let all = rows.join("\n");
        assert!(contains(rows, "from flops/bytes"), "{all}");
        assert!(contains(rows, "tensor 1071T"), "{all}");
        assert!(contains(rows, "FP32 66.9T"), "{all}");
        assert!(contains(rows, "2962 GB/s"), "{all}");
        assert!(contains(rows, "not placed: v3 (check failed)"), "{all}");
    }
    let all = wide.join("\n");
    // 1365 flop/B is right of both ridges (22.6 and 361): every point lies right of where the
    // slope ends, under the flat tensor-core roof, v4 (560 TFLOP/s) above v2 (24 TFLOP/s).
    let (v4_col, v4_row) = find(&wide, "v4").expect(&all);
    let (v2_col, v2_row) = find(&wide, "v2").expect(&all);
    let (_, tensor_row) = find(&wide, "tensor").expect(&all);
    assert!(v4_row < v2_row && tensor_row < v4_row, "{all}");
    let (gbs_col, _) = find(&wide, "2962 GB/s").expect(&all);
    assert!(v4_col > gbs_col + 10 && v2_col > gbs_col + 10, "{all}");
    // The sweeps go by their best configuration.
    assert!(
        contains(&wide, "v7") && contains(&wide, "sweeps: their best configuration"),
        "{all}"
    );
    assert!(wide[0].contains("measured copy peak"), "{all}");
}

#[test]
fn elementwise_add_is_memory_bound_under_the_slope() {
    let app = add_app();
    insta::assert_snapshot!("roofline_add_80x24", screen(&app, 80, 24));
    let rows = body(&app, 120, 40);
    insta::assert_snapshot!("roofline_add_120x40", rows.join("\n"));
    let all = rows.join("\n");
    // 0.083 and 0.167 flop/B, far left of the FP32 ridge at 22.6: the points sit left of where
    // the FP32 roof starts, and below it.
    let (fp32_col, fp32_row) = find(&rows, "FP32").expect(&all);
    let (v1_col, v1_row) = find(&rows, "v1").expect(&all);
    let (v7_col, v7_row) = find(&rows, "v7").expect(&all);
    assert!(v1_col < fp32_col && v7_col < fp32_col, "{all}");
    assert!(v1_row > fp32_row + 3 && v7_row > fp32_row + 3, "{all}");
    // fp16 (0.167 flop/B) lies right of fp32 (0.083) and higher (twice the FLOP/s).
    assert!(v7_row < v1_row, "{all}");
    // The x axis labels its decades, 0.1 .. 1k, on a row of their own under the axis.
    let axis = rows.iter().position(|r| r.contains('└')).expect(&all);
    let ticks: Vec<&str> = rows[axis + 1].split_whitespace().collect();
    assert_eq!(ticks, ["0.1", "1", "10", "100", "1k"], "{all}");
}

#[test]
fn without_a_device_points_are_placed_with_no_ceilings() {
    let mut app = add_app();
    app.gpu = GpuState::Absent("the worker's connection dropped (c tries again)".into());
    let rows = body(&app, 80, 24);
    insta::assert_snapshot!("roofline_no_device_80x24", rows.join("\n"));
    let all = rows.join("\n");
    assert!(all.contains("No GPU (see Timing): no ceilings"), "{all}");
    assert!(!all.contains("FP32") && !all.contains("GB/s"), "{all}");
    assert!(contains(&rows, "v1") || contains(&rows, "1 v1"), "{all}");
    // With nothing timed either, it says why nothing is drawn.
    for v in app.versions.iter_mut() {
        v.results.iter_mut().for_each(|r| *r = None);
    }
    let rows = body(&app, 80, 24);
    let words: Vec<&str> = rows.iter().map(|r| r.trim()).collect();
    let all = words.join(" ");
    assert!(
        all.contains("Nothing to draw: no version has a timed result at 256Mi."),
        "{all}"
    );
    let why = "not placed: v1, v2, v3, v4, v5, v6, v7, v8, v9 (no result at 256Mi)";
    assert!(all.contains(why), "{all}");
}

#[test]
fn s_changes_the_viewed_size() {
    let mut app = matmul_app();
    assert!(screen(&app, 120, 40).contains("Roofline · 4096x4096x4096"));
    update(&mut app, Action::NextSize);
    let text = screen(&app, 120, 40);
    assert!(text.contains("Roofline · 8192x8192x1024"), "{text}");
    // Nothing was run at that size: the ceilings alone, and every version listed once.
    let rows = body(&app, 120, 40);
    let words: Vec<&str> = rows.iter().map(|r| r.trim()).collect();
    let all = words.join(" ");
    let why = "not placed: v1, v2, v3, v4, v5, v6, v7 (no result at 8192x8192x1024)";
    assert!(all.contains(why), "{}", rows.join("\n"));
    assert!(contains(&rows, "tensor 1071T"));
}

#[test]
fn the_roofline_tab_is_in_the_bar_and_on_key_7() {
    let mut app = add_app();
    app.tab = Tab::Ptx;
    let bar = screen(&app, 80, 24);
    assert!(bar.lines().next().unwrap().contains("Roof"), "{bar}");
    let keys = kwb::ui::keys::Keymap::default();
    let seven = crossterm::event::Event::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('7'),
        crossterm::event::KeyModifiers::NONE,
    ));
    let action = keys.action_for(&seven).unwrap();
    update(&mut app, action);
    assert_eq!(app.tab, Tab::Roofline);
    // Numbered by their keys where there is room: Sweep's 6 before Roofline's 7.
    let wide = screen(&app, 200, 40);
    assert!(wide.contains(" 6 Sweep │ 7 Roofline "), "{wide}");
}

#[test]
fn no_size_panics_with_the_roofline_on_screen() {
    let mut no_device = add_app();
    no_device.gpu = GpuState::Probing;
    let mut few = matmul_app();
    few.versions.truncate(2);
    for app in [matmul_app(), add_app(), no_device, few] {
        for w in 0..=70 {
            for h in 0..=30 {
                let area = Rect::new(0, 0, w, h);
                let mut buf = ratatui::buffer::Buffer::empty(area);
                kwb::ui::panels::tabs::render_body(&app, &Theme::builtin(), area, &mut buf);
            }
        }
    }
}
