//! Snapshot tests of `kwb watch`'s Sweep tab on ratatui's `TestBackend` (insta): the softmax
//! workspace's two-axis sweep (num_warps × BLOCK) with a table per size and the heatmap at the
//! viewed size, a configuration skipped with its reason, and the elementwise-add workspace's
//! one-axis block sweep. Results are made up but plausible; nothing is compiled.

mod support;

use kwb::compile::Arch;
use kwb::report::{RunResult, Status};
use kwb::ui::action::{update, Action};
use kwb::ui::app::{App, CompareRow, CompareView, GpuState, RowKind, Tab, VersionStatus};
use kwb::ui::draw::draw;
use kwb::ui::panels::tabs;
use kwb::ui::theme::Theme;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Terminal;

fn body(app: &App, w: u16, h: u16) -> String {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    tabs::render_body(app, &Theme::builtin(), area, &mut buf);
    support::buffer_text(&buf)
}

fn screen(app: &App, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| draw(f, app, &Theme::builtin())).unwrap();
    support::buffer_text(terminal.backend().buffer())
}

fn app_for(workspace: &str) -> App {
    let path = support::repo().join(workspace);
    let ws = kwb::workspace::load(&path).unwrap_or_else(|e| panic!("{workspace}: {e}"));
    let mut app = App::new(ws, Arch::parse("sm_90").unwrap());
    app.gpu = GpuState::Probing;
    app
}

/// A passed, timed result of `bytes` at `gbps`.
fn timed(version: &str, size: &str, bytes: u64, gbps: f64) -> RunResult {
    support::ui_results::passed(
        version,
        size,
        Some(bytes),
        None,
        bytes as f64 / (gbps * 1e3),
    )
}

/// The softmax sweep timed at its three GPU sizes: bandwidth best near 8-16 warps and a
/// 2048-column chunk, one configuration skipped at the widest rows.
fn softmax_app() -> App {
    let mut app = app_for("workspaces/softmax.yaml");
    let sizes = app.workspace.sizes.clone();
    let configs: Vec<(String, i64, i64)> = app
        .workspace
        .versions
        .iter()
        .filter_map(|v| {
            let p = v.sweep.as_ref()?;
            let get = |k: &str| {
                p.values
                    .iter()
                    .find(|(n, _)| n == k)
                    .and_then(|(_, x)| x.parse::<i64>().ok())
            };
            Some((v.name.clone(), get("num_warps")?, get("BLOCK")?))
        })
        .collect();
    assert_eq!(configs.len(), 12);
    for v in app.versions.iter_mut() {
        let Some((_, warps, block)) = configs.iter().find(|(n, _, _)| *n == v.name) else {
            continue;
        };
        v.status = VersionStatus::Done;
        for (s, size) in sizes.iter().enumerate().filter(|(_, s)| !s.emulate) {
            let (m, n) = (size.vars[0].1, size.vars[1].1);
            if s == 2 && *warps == 4 && *block == 4096 {
                let mut r = RunResult::new(v.name.clone(), size.name.clone(), Status::Skipped);
                r.message = Some(
                    "this configuration cannot launch: 200 registers per thread × 128 threads \
                     leave no room for a second block"
                        .into(),
                );
                v.results[s] = Some(r);
                continue;
            }
            let best_warps = [8.0, 16.0, 16.0][s];
            let off_w = ((*warps as f64).log2() - f64::log2(best_warps)).abs();
            let off_b = ((*block as f64).log2() - 11.0).abs();
            let gbps = 2900.0 - 260.0 * off_w - 180.0 * off_b - 40.0 * s as f64;
            v.results[s] = Some(timed(&v.name, &size.name, (2 * m * n * 4) as u64, gbps));
        }
    }
    app.selected = app
        .versions
        .iter()
        .position(|v| v.name == "v8[num_warps=8,BLOCK=2048]")
        .unwrap();
    app.tab = Tab::Sweep;
    app
}

#[test]
fn two_axis_sweep_table_and_heatmap() {
    let mut app = softmax_app();
    insta::assert_snapshot!("panel_sweep_two_axes", body(&app, 110, 36));
    // The widest rows, where one configuration was skipped; the heatmap follows the size.
    app.size = 2;
    insta::assert_snapshot!("panel_sweep_skipped", body(&app, 110, 36));
    insta::assert_snapshot!("sweep_screen_120x40", screen(&app, 120, 40));
}

#[test]
fn one_axis_sweep_table() {
    let mut app = app_for("workspaces/elementwise-add.yaml");
    let sizes = app.workspace.sizes.clone();
    for v in app.versions.iter_mut() {
        let Some(block) = v
            .name
            .strip_prefix("v9[block=")
            .and_then(|b| b.trim_end_matches(']').parse::<f64>().ok())
        else {
            continue;
        };
        for (s, size) in sizes.iter().enumerate().filter(|(_, s)| !s.emulate) {
            let n = size.vars[0].1 as u64;
            let gbps = [1500.0, 2600.0, 3000.0][s] - 200.0 * (block.log2() - 9.0 + s as f64).abs();
            v.results[s] = Some(timed(&v.name, &size.name, 12 * n, gbps));
        }
    }
    app.selected = app
        .versions
        .iter()
        .position(|v| v.name == "v9[block=512]")
        .unwrap();
    app.tab = Tab::Sweep;
    insta::assert_snapshot!("panel_sweep_one_axis", body(&app, 96, 12));
}

/// The shipped elementwise-add workspace at 80×24: thirteen versions, four of them swept with
/// long names (`v9[block=1024]`), two marked for Compare. The narrow list shortens the swept
/// names to their values so the marks show; the Compare table and the Sweep tab stay readable.
#[test]
fn marks_and_sweeps_at_80x24() {
    let mut app = app_for("workspaces/elementwise-add.yaml");
    let pick = |app: &App, name: &str| app.versions.iter().position(|v| v.name == name).unwrap();
    let (a, b) = (pick(&app, "v9[block=1024]"), pick(&app, "v9[block=512]"));
    app.marks = vec![a, b];
    let ptx = |kind: &str| Some(format!("\tmov.u32 \t%r1, {kind};"));
    app.compare = Some(CompareView {
        left: a,
        right: b,
        rows: vec![
            CompareRow {
                left: ptx("1024"),
                right: ptx("512"),
                kind: RowKind::Changed,
            },
            CompareRow {
                left: Some("\tret;".into()),
                right: Some("\tret;".into()),
                kind: RowKind::Same,
            },
        ],
    });
    app.selected = b;
    app.tab = Tab::Compare;
    let text = screen(&app, 80, 24);
    let list: Vec<&str> = text.lines().take(15).collect();
    assert!(
        list.iter().any(|l| l.starts_with("│· v9[1024] [1]")),
        "{text}"
    );
    assert!(
        list.iter().any(|l| l.starts_with("│· v9[512]  [2]")),
        "{text}"
    );
    insta::assert_snapshot!("compare_swept_80x24", text);
    app.tab = Tab::Sweep;
    insta::assert_snapshot!("sweep_screen_80x24", screen(&app, 80, 24));
}

#[test]
fn the_sweep_tab_is_offered_only_when_a_version_is_swept() {
    let mut app = softmax_app();
    app.tab = Tab::Cuda;
    update(&mut app, Action::NextTab);
    assert_eq!(app.tab, Tab::Sweep);
    let mut ws = app.workspace.clone();
    ws.versions.retain(|v| v.sweep.is_none());
    ws.sweeps.clear();
    let mut plain = App::new(ws, Arch::parse("sm_90").unwrap());
    plain.tab = Tab::Cuda;
    update(&mut plain, Action::NextTab);
    assert_eq!(plain.tab, Tab::Roofline, "Sweep is skipped");
    update(&mut plain, Action::NextTab);
    assert_eq!(plain.tab, Tab::Source);
    assert!(!plain.tabs().contains(&Tab::Sweep));
    // Asked for anyway (key 6), it says why it is empty.
    plain.tab = Tab::Sweep;
    assert!(body(&plain, 80, 6).contains("No version of this workspace is swept."));
}
