//! Tile versions' CUDA tab, and the 80×24 fixes: every tab in the bar and on screen, the whole
//! no-GPU reason, versions that never ran, and the help's scrolling.

use super::*;

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
