//! The Compare tab: a delta table of the two marked versions (registers, occupancy at the
//! launch, median and GB/s at the selected size, speedup) above their side-by-side PTX diff.

use super::format::{fit_name, gbps, micros, percent};
use super::launch::launch_at;
use super::text::{sentence, truncate, width, Pen};
use crate::report::RunResult;
use crate::ui::app::{App, CompareRow, CompareView, RowKind, WhatIf};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// What the tab says before two versions are marked.
pub const NOT_MARKED: &str = "Mark two versions with `m` to compare them.";

/// Rows of the delta table: a header, four metrics and the speedup.
const TABLE_ROWS: u16 = 6;
const LABEL_WIDTH: u16 = 11;

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let Some(cmp) = &app.compare else {
        return sentence(buf, area, NOT_MARKED, theme.style(Role::Dim));
    };
    if cmp.left >= app.versions.len() || cmp.right >= app.versions.len() {
        return sentence(buf, area, NOT_MARKED, theme.style(Role::Dim));
    }
    table(app, theme, cmp, area, buf);
    if area.height > TABLE_ROWS + 1 {
        let rest = Rect::new(
            area.x,
            area.y + TABLE_ROWS,
            area.width,
            area.height - TABLE_ROWS,
        );
        diff(app, theme, cmp, rest, buf);
    }
}

/// The title's suffix in at most `room` cells: `v1 ↔ v2` (long swept names by their values).
pub fn title(app: &App, room: u16) -> Option<String> {
    let cmp = app.compare.as_ref()?;
    if cmp.left >= app.versions.len() || cmp.right >= app.versions.len() {
        return None;
    }
    let (l, r) = (&app.versions[cmp.left].name, &app.versions[cmp.right].name);
    let full = format!("{l} ↔ {r}");
    if width(&full) <= room {
        return Some(full);
    }
    let half = room.saturating_sub(3) / 2;
    Some(format!(
        "{} ↔ {}",
        fit_name(app, cmp.left, half),
        fit_name(app, cmp.right, half)
    ))
}

fn result(app: &App, index: usize) -> Option<&RunResult> {
    app.versions.get(index)?.results.get(app.size)?.as_ref()
}

fn table(app: &App, theme: &Theme, cmp: &CompareView, area: Rect, buf: &mut Buffer) {
    let size = app
        .workspace
        .sizes
        .get(app.size)
        .map_or("", |s| s.name.as_str());
    let metric = |index: usize| -> [String; 4] {
        let launch = launch_at(app, index, WhatIf::default()).ok();
        let run = result(app, index);
        let median = run.and_then(|r| r.timing.as_ref()).map(|t| t.median_us);
        [
            launch
                .as_ref()
                .map_or("–".into(), |l| l.kernel.registers.to_string()),
            launch
                .and_then(|l| l.occupancy.ok())
                .map_or("–".into(), |o| percent(o.occupancy * 100.0)),
            median.map_or("–".into(), micros),
            run.and_then(|r| r.gbps)
                .map_or("–".into(), |g| format!("{} GB/s", gbps(g))),
        ]
    };
    let (left, right) = (metric(cmp.left), metric(cmp.right));
    let labels = ["registers", "occupancy", "median", "GB/s"];
    let column = area.width.saturating_sub(LABEL_WIDTH) / 2;
    let text = theme.style(Role::Text);
    // Each cell is cut to its column, so a long value never runs into the next one.
    let cells = |row: u16, label: &str, l: &str, r: &str, style: Style, buf: &mut Buffer| {
        let mut pen = Pen::row(buf, area, row);
        pen.text(
            buf,
            &truncate(label, LABEL_WIDTH - 1),
            theme.style(Role::Dim),
        );
        pen.skip_to(buf, LABEL_WIDTH, text).text(
            buf,
            &truncate(l, column.saturating_sub(1)),
            style,
        );
        pen.skip_to(buf, LABEL_WIDTH + column, text)
            .text(buf, r, style);
    };
    // A long (swept) name shows its values; its mark follows where the name then fits whole.
    let name = |i: usize, mark: usize| {
        let short = fit_name(app, i, column.saturating_sub(5));
        if short.ends_with('…') {
            fit_name(app, i, column.saturating_sub(1))
        } else {
            format!("{short} [{mark}]")
        }
    };
    let title = theme.style(Role::Title);
    cells(0, size, &name(cmp.left, 1), &name(cmp.right, 2), title, buf);
    for (i, label) in labels.iter().enumerate() {
        cells(i as u16 + 1, label, &left[i], &right[i], text, buf);
    }
    let median = |i: usize| {
        result(app, i)
            .and_then(|r| r.timing.as_ref())
            .map(|t| t.median_us)
    };
    let mut pen = Pen::row(buf, area, 5);
    pen.text(buf, "speedup", theme.style(Role::Dim))
        .skip_to(buf, LABEL_WIDTH, text);
    match (median(cmp.left), median(cmp.right)) {
        (Some(l), Some(r)) if l > 0.0 && r > 0.0 => {
            let s = l / r;
            let role = if s >= 1.0 { Role::Ok } else { Role::Warn };
            let (a, b) = (&app.versions[cmp.right].name, &app.versions[cmp.left].name);
            let mut text = format!("{s:.2}× ({a} vs {b})");
            if width(&text) > pen.room() {
                // Narrow: the marks stand for the names, as in the header.
                text = format!("{s:.2}× ([2] vs [1])");
            }
            pen.text(buf, &text, theme.style(role));
        }
        _ => {
            let long = "– (needs both timed at this size)";
            let text = if width(long) <= pen.room() {
                long
            } else {
                "– (needs both timed)"
            };
            pen.text(buf, text, theme.style(Role::Dim));
        }
    }
}

/// The side-by-side rows from the scroll offset on; only the visible ones are drawn.
fn diff(app: &App, theme: &Theme, cmp: &CompareView, area: Rect, buf: &mut Buffer) {
    let half = area.width.saturating_sub(1) / 2;
    let left = Rect::new(area.x, area.y, half, area.height);
    let right_x = area.x + half + 1;
    let right = Rect::new(
        right_x,
        area.y,
        area.right().saturating_sub(right_x),
        area.height,
    );
    let dim = theme.style(Role::Dim);
    // `── PTX v1 `, or without `PTX` where that leaves a long name whole.
    let header = |i: usize, side: Rect| {
        let name = fit_name(app, i, side.width.saturating_sub(8));
        if name.ends_with('…') {
            format!("── {} ", fit_name(app, i, side.width.saturating_sub(4)))
        } else {
            format!("── PTX {name} ")
        }
    };
    Pen::row(buf, left, 0).text(buf, &header(cmp.left, left), dim);
    Pen::row(buf, Rect::new(area.x + half, area.y, 1, 1), 0).text(buf, "│", dim);
    Pen::row(buf, right, 0).text(buf, &header(cmp.right, right), dim);
    if cmp.rows.is_empty() {
        let body = Rect::new(
            area.x,
            area.y + 1,
            area.width,
            area.height.saturating_sub(1),
        );
        return sentence(buf, body, "Both PTX texts are empty.", dim);
    }
    let rows = usize::from(area.height.saturating_sub(1));
    let first = usize::from(app.scroll).min(cmp.rows.len().saturating_sub(rows));
    for (i, row) in cmp.rows.iter().skip(first).take(rows).enumerate() {
        let y = i as u16 + 1; // < area.height
        side(buf, theme, left, y, row, true);
        Pen::row(buf, Rect::new(area.x + half, area.y, 1, area.height), y).text(buf, "│", dim);
        side(buf, theme, right, y, row, false);
    }
}

fn side(buf: &mut Buffer, theme: &Theme, area: Rect, y: u16, row: &CompareRow, left: bool) {
    let text = if left { &row.left } else { &row.right };
    let changed = match row.kind {
        RowKind::Same => false,
        RowKind::Removed => left,
        RowKind::Added => !left,
        RowKind::Changed => true,
    };
    let (sign, role) = match (changed, left) {
        (false, _) => (" ", Role::Text),
        (true, true) => ("-", Role::DiffRemove),
        (true, false) => ("+", Role::DiffAdd),
    };
    let mut pen = Pen::row(buf, area, y);
    pen.text(buf, sign, theme.style(role)).tab_origin();
    if let Some(t) = text {
        pen.text(buf, t, theme.style(role));
    }
}
