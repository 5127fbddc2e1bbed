//! The Roofline tab: every version a point at its arithmetic intensity (flop/B, across) and its
//! achieved FLOP/s (up), on log-log axes, under the device's ceilings: the measured bandwidth
//! peak's slope and the flat FP32 and dense fp16 tensor-core peaks, each labelled, at the
//! viewed size (`s` steps through the sizes). The header says where the intensities came from
//! ([`model::IntensitySource`]) and what is missing of the ceilings; under the plot come the
//! markers too crowded to be labelled beside them (by number), ceilings whose label found no
//! room, and every version that is not placed with why. That list scrolls with the main tab.
//!
//! The model (`model`), the axes (`scale`) and the plot area (`plot`) are pure functions of the
//! state; this file lays them out and writes the buffer.

pub mod model;
pub mod plot;
pub mod scale;

use super::text::{sentence, sentence_rows, truncate, width, wrap, Pen};
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use model::Roofline;
use plot::Chart;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Rows the plot keeps (axis and tick labels included) before the list under it gets any.
const MIN_CHART_ROWS: u16 = 9;
/// The smallest plot drawn at all: rows with its axis, and columns.
const TINY_ROWS: u16 = 4;
const TINY_COLUMNS: u16 = 16;

/// One row of text under the plot, in styled pieces.
type Row = Vec<(String, Role)>;

/// The tab's body inside its frame.
pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let r = model::build(app);
    let axes = plot::axes(&r);
    let mut y = 0;
    for (text, role) in header(&r, area.width, axes.is_some()) {
        let rows = sentence_rows(&text, area.width).min(area.height.saturating_sub(y));
        sentence(
            buf,
            Rect {
                y: area.y + y,
                height: rows,
                ..area
            },
            &text,
            theme.style(role),
        );
        y += rows;
    }
    let rest = Rect::new(area.x, area.y + y, area.width, area.height - y);
    let axes = axes.filter(|_| rest.width >= TINY_COLUMNS && rest.height >= TINY_ROWS);
    let Some((x_axis, y_axis)) = axes else {
        let why = nothing_to_draw(app, &r);
        let rows = sentence_rows(&why, rest.width).min(rest.height);
        sentence(
            buf,
            Rect {
                height: rows,
                ..rest
            },
            &why,
            theme.style(Role::Dim),
        );
        let below = Rect::new(rest.x, rest.y + rows, rest.width, rest.height - rows);
        return list(app, theme, below, buf, &rows_under(&r, None, below.width));
    };
    // The y tick labels' column, then the plot, the x axis and its labels.
    let label_width = y_axis
        .decades()
        .map(|e| width(&scale::flops_label(e)))
        .max()
        .unwrap_or(0)
        + 1;
    // The plot gives rows to the list under it down to its minimum; markers it must number
    // add rows to that list, so it is drawn again, shorter each time, until the list fits or
    // the plot is at its minimum.
    let plot_w = rest.width - label_width;
    let mut under = rows_under(&r, None, rest.width).len() as u16;
    let (chart, chart_rows) = loop {
        let rows = rest
            .height
            .saturating_sub(under)
            .max(MIN_CHART_ROWS)
            .min(rest.height);
        let chart = plot::plot(&r, x_axis, y_axis, plot_w, rows - 2, app.selected);
        let wanted = rows_under(&r, Some(&chart), rest.width).len() as u16;
        if wanted <= under || rows == MIN_CHART_ROWS.min(rest.height) {
            break (chart, rows);
        }
        under = wanted;
    };
    let plot_h = chart_rows - 2;
    draw_axes(theme, rest, buf, &chart, label_width);
    for row in 0..plot_h {
        for col in 0..plot_w {
            let (symbol, role) = chart.grid.show(col, row);
            if let Some(role) = role {
                let cell = &mut buf[(rest.x + label_width + col, rest.y + row)];
                cell.set_char(symbol).set_style(theme.style(role));
            }
        }
    }
    let below = Rect::new(
        rest.x,
        rest.y + chart_rows,
        rest.width,
        rest.height - chart_rows,
    );
    list(
        app,
        theme,
        below,
        buf,
        &rows_under(&r, Some(&chart), below.width),
    );
}

/// What the header says: what is missing of the ceilings, then, over a plot, the axes' units
/// with where the intensities came from (and the bandwidth peak's kind where it fits).
fn header(r: &Roofline, w: u16, plot: bool) -> Vec<(String, Role)> {
    let mut out = Vec::new();
    if let Some(note) = &r.device_note {
        out.push((note.clone(), Role::Warn));
    }
    if plot {
        let sources: Vec<&str> = r.sources().iter().map(|s| s.label()).collect();
        let mut units = "FLOP/s · flop/B".to_string();
        if !sources.is_empty() {
            units = format!("{units} {}", sources.join(" and "));
        }
        let longer = r.bandwidth_kind.into_iter().flat_map(|k| {
            [
                format!("{units} · bandwidth: {k}"),
                format!("{units} · {k}"),
            ]
        });
        let line = longer.into_iter().find(|l| width(l) <= w).unwrap_or(units);
        out.push((line, Role::Dim));
    }
    out
}

/// Why there is no plot: nothing to place and no ceilings to draw.
fn nothing_to_draw(app: &App, r: &Roofline) -> String {
    let size = app
        .workspace
        .sizes
        .get(app.size)
        .map_or("this size".into(), |s| s.name.clone());
    if !r.points.is_empty() || r.ceilings.any() {
        return "Too small for the plot.".into();
    }
    format!("Nothing to draw: no version has a timed result at {size}.")
}

/// The rows under the plot, `w` wide: numbered markers, unlabelled ceilings, the versions not
/// placed, and a note on sweeps.
fn rows_under(r: &Roofline, chart: Option<&Chart>, w: u16) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for n in chart.map_or(&[][..], |c| &c.numbered[..]) {
        let names: Vec<&str> = n
            .points
            .iter()
            .map(|&i| r.points[i].name.as_str())
            .collect();
        let mut row = vec![
            (n.symbol.to_string(), Role::Bar),
            (format!(" {}", names.join(", ")), Role::Text),
        ];
        // A marker of one version gets its figures (several share a cell, not their figures).
        if let [i] = n.points[..] {
            let p = &r.points[i];
            let rate = scale::flops_text(p.flops_per_s);
            let at = intensity_text(p.intensity);
            row.push((format!("  {rate} at {at} flop/B"), Role::Dim));
        }
        rows.push(row);
    }
    for text in chart.map_or(&[][..], |c| &c.unlabelled[..]) {
        rows.push(vec![(format!("ceiling: {text}"), Role::Peak)]);
    }
    rows.extend(unplaced_rows(r, w));
    if r.swept && !r.points.is_empty() {
        rows.push(vec![("sweeps: their best configuration".into(), Role::Dim)]);
    }
    rows
}

/// The versions not placed, those with the same reason together: `v3 (check failed)` on the
/// heading's row when it is the only one and fits, else a row (wrapped) per reason under it.
fn unplaced_rows(r: &Roofline, w: u16) -> Vec<Row> {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for u in &r.unplaced {
        match groups.iter_mut().find(|(why, _)| *why == u.why) {
            Some((_, names)) => names.push(&u.name),
            None => groups.push((&u.why, vec![&u.name])),
        }
    }
    let text = |(why, names): &(&str, Vec<&str>)| format!("{} ({why})", names.join(", "));
    if let [one] = &groups[..] {
        let line = format!("not placed: {}", text(one));
        if width(&line) <= w {
            return vec![vec![
                ("not placed: ".into(), Role::Dim),
                (text(one), Role::Text),
            ]];
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    if !groups.is_empty() {
        rows.push(vec![("not placed:".into(), Role::Dim)]);
    }
    for g in &groups {
        for (i, line) in wrap(&text(g), w.saturating_sub(4)).into_iter().enumerate() {
            let indent = if i == 0 { "  " } else { "    " };
            rows.push(vec![(format!("{indent}{line}"), Role::Text)]);
        }
    }
    rows
}

/// An intensity as read: `0.083`, `1.25`, `22.6`, `1365`.
fn intensity_text(i: f64) -> String {
    match i {
        _ if i >= 100.0 => format!("{i:.0}"),
        _ if i >= 10.0 => format!("{i:.1}"),
        _ if i >= 1.0 => format!("{i:.2}"),
        _ => format!("{i:.3}"),
    }
}

/// `rows` into `area`, scrolled by the main tab's scroll (as far as it goes).
fn list(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer, rows: &[Row]) {
    let first = usize::from(app.scroll).min(rows.len().saturating_sub(usize::from(area.height)));
    for (y, row) in rows
        .iter()
        .skip(first)
        .take(usize::from(area.height))
        .enumerate()
    {
        let mut pen = Pen::row(buf, area, y as u16);
        for (text, role) in row {
            pen.text(buf, &truncate(text, pen.room()), theme.style(*role));
        }
    }
}

/// The y axis with its decade labels left of the plot, the x axis and its labels under it.
fn draw_axes(theme: &Theme, area: Rect, buf: &mut Buffer, chart: &Chart, label_width: u16) {
    let dim = theme.style(Role::Dim);
    let (w, h) = (chart.grid.width, chart.grid.height);
    let axis_x = area.x + label_width - 1;
    for row in 0..h {
        buf[(axis_x, area.y + row)].set_char('│').set_style(dim);
    }
    let mut labelled = Vec::new();
    for e in chart.y.decades() {
        // On a short plot two decades may share a row: the first keeps it.
        let Some(row) = plot::row(&chart.y, 10f64.powi(e), h).filter(|r| !labelled.contains(r))
        else {
            continue;
        };
        labelled.push(row);
        buf[(axis_x, area.y + row)].set_char('┤').set_style(dim);
        let label = scale::flops_label(e);
        let at = Rect::new(area.x, area.y + row, label_width - 1, 1);
        Pen::row(buf, at, 0).right(buf, &label, dim);
    }
    let axis_y = area.y + h;
    buf[(axis_x, axis_y)].set_char('└').set_style(dim);
    for col in 0..w {
        buf[(axis_x + 1 + col, axis_y)].set_char('─').set_style(dim);
    }
    let mut free_from = 0u16;
    for e in chart.x.decades() {
        let Some(col) = plot::column(&chart.x, 10f64.powi(e), w) else {
            continue;
        };
        buf[(axis_x + 1 + col, axis_y)].set_char('┬').set_style(dim);
        let label = scale::intensity_label(e);
        let len = width(&label);
        let start = (label_width + col)
            .saturating_sub(len / 2)
            .min(area.width - len.min(area.width));
        if start >= free_from {
            let at = Rect::new(area.x + start, axis_y + 1, len, 1);
            Pen::row(buf, at, 0).text(buf, &label, dim);
            free_from = start + len + 1;
        }
    }
}
