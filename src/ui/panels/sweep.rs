//! The Sweep tab: for the selected version's sweep (or the first sweep when the selected
//! version is not swept), a table of its configurations (rows) at every size (columns) with
//! time and GB/s, the best per size marked `★` and the version's own rule marked `R`, the
//! spread between best and worst, and skipped configurations with their reasons; for a sweep
//! of two axes, a heatmap of the viewed size (first axis down, second across) shaded by time
//! relative to the best. It fills in as results arrive, since configurations are versions.

use super::text::{sentence, truncate, width, Pen};
use crate::report::{fmt_us, reason, sweep::time_of, RunResult, Status};
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use crate::workspace::Sweep;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The sweep the tab shows: the selected version's, else the workspace's first.
pub fn current(app: &App) -> Option<&Sweep> {
    let selected = app
        .current()
        .and_then(|v| app.workspace.versions.iter().find(|w| w.name == v.name))
        .and_then(|v| v.sweep.as_ref())
        .and_then(|p| app.workspace.sweep(&p.parent));
    selected.or(app.workspace.sweeps.first())
}

/// The tab's title detail: the sweep's name and axes.
pub fn title(app: &App) -> Option<String> {
    current(app).map(|s| {
        let axes: Vec<&str> = s.axes.iter().map(|a| a.name.as_str()).collect();
        format!("{} · {}", s.parent, axes.join(" × "))
    })
}

/// One configuration's result at one size, as the table shows it: the main text (a time, or
/// what happened), GB/s when timed, and the marks.
struct Cell {
    text: String,
    gbps: Option<String>,
    marks: String,
    role: Role,
}

impl Cell {
    fn show(&self, with_gbps: bool) -> String {
        match (&self.gbps, with_gbps) {
            (Some(g), true) => format!("{} {g} {}", self.text, self.marks),
            _ => format!("{} {}", self.text, self.marks),
        }
    }
}

/// The result of configuration `name` at size index `s`, and whether it is being worked on.
fn result<'a>(app: &'a App, name: &str, s: usize) -> (Option<&'a RunResult>, bool) {
    match app.versions.iter().find(|v| v.name == name) {
        Some(v) => (v.results.get(s).and_then(Option::as_ref), v.status.busy()),
        None => (None, false),
    }
}

/// The best time among the sweep's configurations at size index `s`.
fn best_at(app: &App, sweep: &Sweep, s: usize) -> Option<(usize, f64)> {
    sweep
        .configs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| result(app, c, s).0.and_then(time_of).map(|t| (i, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn cell(app: &App, sweep: &Sweep, config: usize, s: usize) -> Cell {
    let size = &app.workspace.sizes[s];
    let best = best_at(app, sweep, s).map(|(i, _)| i) == Some(config);
    let rule = sweep.default_at(size) == Some(config);
    let marks = format!(
        "{}{}",
        if best { "★" } else { " " },
        if rule { "R" } else { " " }
    );
    let (r, busy) = result(app, &sweep.configs[config], s);
    let mut gbps = None;
    let (text, role) = match r {
        None if busy => ("…".to_string(), Role::Dim),
        None => ("·".to_string(), Role::Dim),
        Some(r) => match (time_of(r), r.status) {
            (Some(t), _) => {
                gbps = r.gbps.map(|g| format!("{g:>5.0} GB/s"));
                let role = if best { Role::Ok } else { Role::Text };
                (format!("{:>7} µs", fmt_us(t)), role)
            }
            (None, Status::Ok) => ("pass".to_string(), Role::Ok),
            (None, Status::Skipped) => ("skipped".to_string(), Role::Warn),
            (None, other) => (other.as_str().replace('_', " "), Role::Error),
        },
    };
    Cell {
        text,
        gbps,
        marks,
        role,
    }
}

/// A configuration's label: its values in axis order, `8, 2048` (the header names the axes).
fn label(sweep: &Sweep, config: usize, app: &App) -> String {
    app.workspace
        .versions
        .iter()
        .find(|v| v.name == sweep.configs[config])
        .and_then(|v| v.sweep.as_ref())
        .map(|p| {
            p.values
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| sweep.configs[config].clone())
}

/// Which size columns to show, and whether with GB/s: every size with GB/s if that fits, else
/// times only; when not even that fits, the sizes from the viewed one on.
fn columns_shown(widths: &dyn Fn(bool) -> Vec<u16>, room: u16, viewed: usize) -> (usize, bool) {
    for with_gbps in [true, false] {
        if widths(with_gbps).iter().sum::<u16>() <= room {
            return (0, with_gbps);
        }
    }
    (viewed, false)
}

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let Some(sweep) = current(app) else {
        return sentence(
            buf,
            area,
            "No version of this workspace is swept. Give a version `sweep: {NAME: [values…]}` \
             to compare its configurations here.",
            theme.style(Role::Dim),
        );
    };
    let dim = theme.style(Role::Dim);
    let mut row = 0u16;
    let mut line = |f: &mut dyn FnMut(&mut Pen, &mut Buffer)| {
        let mut pen = Pen::row(buf, area, row);
        f(&mut pen, buf);
        row += 1;
    };
    let selected_swept = app
        .current()
        .is_some_and(|v| sweep.configs.contains(&v.name));
    line(&mut |p, b| {
        p.text(b, &sweep.parent, theme.style(Role::Title));
        p.text(
            b,
            &format!(
                " · {} configurations · ★ best per size · R the version's own choice",
                sweep.configs.len()
            ),
            dim,
        );
        if !selected_swept {
            p.text(b, " · (the selected version is not swept)", dim);
        }
    });

    let sizes = &app.workspace.sizes;
    let axes: Vec<&str> = sweep.axes.iter().map(|a| a.name.as_str()).collect();
    let axes = axes.join(", ");
    let labels: Vec<String> = (0..sweep.configs.len())
        .map(|i| label(sweep, i, app))
        .collect();
    let label_w = labels
        .iter()
        .map(|l| width(l))
        .chain([width(&axes), width("spread")])
        .max()
        .unwrap_or(0)
        + 2;
    let cells: Vec<Vec<Cell>> = (0..sweep.configs.len())
        .map(|i| (0..sizes.len()).map(|s| cell(app, sweep, i, s)).collect())
        .collect();
    let widths = |with_gbps: bool| -> Vec<u16> {
        (0..sizes.len())
            .map(|s| {
                cells
                    .iter()
                    .map(|r| width(&r[s].show(with_gbps)))
                    .chain([width(&sizes[s].name)])
                    .max()
                    .unwrap_or(0)
                    + 2
            })
            .collect()
    };
    let (first, with_gbps) = columns_shown(
        &widths,
        area.width.saturating_sub(label_w),
        app.size.min(sizes.len().saturating_sub(1)),
    );
    let col_w = widths(with_gbps);
    let columns = |pen: &mut Pen, buf: &mut Buffer, texts: &[(String, Role)]| {
        let mut x = label_w;
        for (s, (text, role)) in texts.iter().enumerate().skip(first) {
            pen.skip_to(buf, x, ratatui::style::Style::new());
            pen.text(buf, text, theme.style(*role));
            x += col_w[s];
        }
    };
    line(&mut |p, b| {
        p.text(b, &axes, dim);
        let heads: Vec<(String, Role)> = sizes
            .iter()
            .enumerate()
            .map(|(s, size)| {
                let role = if s == app.size {
                    Role::Accent
                } else {
                    Role::Title
                };
                (size.name.clone(), role)
            })
            .collect();
        columns(p, b, &heads);
    });
    for (i, l) in labels.iter().enumerate() {
        let selected = app.current().is_some_and(|v| v.name == sweep.configs[i]);
        line(&mut |p, b| {
            let role = if selected { Role::Selected } else { Role::Text };
            p.text(b, l, theme.style(role));
            let texts: Vec<(String, Role)> = cells[i]
                .iter()
                .map(|c| (c.show(with_gbps), c.role))
                .collect();
            columns(p, b, &texts);
        });
    }
    line(&mut |p, b| {
        p.text(b, "spread", dim);
        let texts: Vec<(String, Role)> = (0..sizes.len())
            .map(|s| (spread(app, sweep, s), Role::Dim))
            .collect();
        columns(p, b, &texts);
    });
    // Skipped and failed configurations at the viewed size, with their reasons.
    for (i, c) in sweep.configs.iter().enumerate() {
        if let (Some(r), _) = result(app, c, app.size) {
            if r.status != Status::Ok {
                let why = format!("{}: {}", sweep.configs[i], reason(r));
                line(&mut |p, b| {
                    let role = if r.status == Status::Skipped {
                        Role::Warn
                    } else {
                        Role::Error
                    };
                    let room = p.room();
                    p.text(b, &truncate(&why, room), theme.style(role));
                });
            }
        }
    }
    if sweep.axes.len() == 2 && app.size < sizes.len() {
        row += 1;
        let rest = Rect::new(
            area.x,
            area.y.saturating_add(row),
            area.width,
            area.height.saturating_sub(row),
        );
        heatmap(app, theme, sweep, rest, buf);
    }
}

/// Worst over best time at size index `s`, e.g. `1.33×`, or `-` with fewer than two times.
fn spread(app: &App, sweep: &Sweep, s: usize) -> String {
    let times: Vec<f64> = sweep
        .configs
        .iter()
        .filter_map(|c| result(app, c, s).0.and_then(time_of))
        .collect();
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = times.iter().copied().fold(0.0, f64::max);
    if times.len() < 2 {
        "-".into()
    } else {
        format!("{:.2}×", worst / best)
    }
}

/// The two-axis heatmap at the viewed size: a shade and the time over the best per cell.
fn heatmap(app: &App, theme: &Theme, sweep: &Sweep, area: Rect, buf: &mut Buffer) {
    let (down, across) = (&sweep.axes[0], &sweep.axes[1]);
    let s = app.size;
    let best = best_at(app, sweep, s).map(|(_, t)| t);
    let rule = sweep.default_at(&app.workspace.sizes[s]);
    let mut pen = Pen::row(buf, area, 0);
    pen.text(
        buf,
        &format!(
            "{} × {} at {}: time over the best (█ ≤1.02 ▓ ≤1.10 ▒ ≤1.25 ░ ≤1.50)",
            down.name, across.name, app.workspace.sizes[s].name
        ),
        theme.style(Role::Title),
    );
    let label_w = down
        .values
        .iter()
        .map(|v| width(&format!("{}={v}", down.name)))
        .max()
        .unwrap_or(0)
        + 2;
    let col_w = across
        .values
        .iter()
        .map(|v| width(&format!("{}={v}", across.name)))
        .max()
        .unwrap_or(0)
        .max(10)
        + 2;
    let mut pen = Pen::row(buf, area, 1);
    for (j, v) in across.values.iter().enumerate() {
        pen.skip_to(
            buf,
            label_w + col_w * j as u16,
            ratatui::style::Style::new(),
        );
        pen.text(
            buf,
            &format!("{}={v}", across.name),
            theme.style(Role::Title),
        );
    }
    for (i, v) in down.values.iter().enumerate() {
        let mut pen = Pen::row(buf, area, 2 + i as u16);
        pen.text(buf, &format!("{}={v}", down.name), theme.style(Role::Title));
        for j in 0..across.values.len() {
            let config = i * across.values.len() + j;
            let (r, busy) = result(app, &sweep.configs[config], s);
            let (text, role) = match (r.and_then(time_of), best, r) {
                (Some(t), Some(b), _) => {
                    let ratio = t / b;
                    let (shade, role) = match ratio {
                        x if x <= 1.02 => ("█", Role::Ok),
                        x if x <= 1.10 => ("▓", Role::Ok),
                        x if x <= 1.25 => ("▒", Role::Warn),
                        x if x <= 1.50 => ("░", Role::Warn),
                        _ => (" ", Role::Error),
                    };
                    (format!("{shade} {ratio:.2}×"), role)
                }
                (_, _, Some(r)) if r.status == Status::Ok => ("pass".into(), Role::Ok),
                (_, _, Some(r)) if r.status == Status::Skipped => ("skipped".into(), Role::Warn),
                (_, _, Some(r)) => (r.status.as_str().replace('_', " "), Role::Error),
                _ if busy => ("…".into(), Role::Dim),
                _ => ("·".into(), Role::Dim),
            };
            let text = if rule == Some(config) {
                format!("{text} R")
            } else {
                text
            };
            pen.skip_to(
                buf,
                label_w + col_w * j as u16,
                ratatui::style::Style::new(),
            );
            pen.text(buf, &text, theme.style(role));
        }
    }
}
