//! Layout at every size: the help overlay, the what-if, tiny terminals, clicks, highlighting,
//! theme roles and the frame time.

use super::*;

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
