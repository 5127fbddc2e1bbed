//! The Timing panel: the selected version at the selected size: first its check (passed, or
//! its verdict and why), then its median, spread and sample count, the clock it was timed with
//! (CUPTI's kernel timestamps, with the CUDA events' figure beside it, or events alone, said so),
//! and a sparkline of the benchmark's samples (the latest that fit). The check comes first so
//! that it stays in view when the panel is short (80×24 gives it two rows). With no GPU: the
//! CPU's check, then why there is no GPU, in full.

use super::format::{micros, percent, result_label, result_status};
use super::gpu::{absent, device, STILL_WORKS};
use super::text::{frame, sentence, truncate, width, wrap, Pen};
use crate::report::{RunResult, Status};
use crate::run::stats::Timer;
use crate::ui::app::{App, VersionStatus, VersionView};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// Rows the panel would like with a GPU: the check, two lines of figures, a sparkline of three
/// rows, the border.
pub const WANTED_HEIGHT: u16 = 8;
/// The fewest rows the layout gives it: the check and the median (or, with no GPU, the CPU's
/// check) stay in view.
pub const MIN_HEIGHT: u16 = 4;
/// The sparkline grows with the panel up to this many rows.
const SPARKLINE_MAX_ROWS: u16 = 8;
/// A failed check's reason takes at most this many rows when more follows it.
const VERDICT_ROWS: usize = 3;

/// Sparkline cells from empty to full, in eighths.
const LEVELS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/// One row of text: its pieces and their roles.
type Row = Vec<(String, Role)>;

/// Rows the panel would like at `width` columns (border included): with no GPU, the CPU's
/// check and the whole reason (what still works is said in rows left over).
pub fn wanted_height(app: &App, width: u16) -> u16 {
    match (absent(app), app.current()) {
        (Some(why), Some(v)) => {
            let (rows, _) = no_gpu_rows(app, v, &why, width.saturating_sub(2));
            u16::try_from(rows.len())
                .unwrap_or(u16::MAX)
                .saturating_add(2)
        }
        _ => WANTED_HEIGHT,
    }
}

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let v = app.current();
    let size = app.workspace.sizes.get(app.size).map(|s| s.name.as_str());
    let mut title = vec![Span::raw("Timing")];
    if let Some(v) = v {
        title.push(Span::raw(format!(" · {}", v.name)));
        if let Some(s) = size {
            title.push(Span::raw(format!(" @ {s}")));
        }
        // Only a result on show can be stale.
        let shown = match absent(app) {
            Some(_) => v.results.iter().flatten().any(|r| r.backend.is_some()),
            None => v.results.get(app.size).is_some_and(Option::is_some),
        };
        if v.stale() && shown {
            title.push(Span::styled(" (stale)", theme.style(Role::Stale)));
        }
        // A quick look's few samples, shown at once while the full run refines them.
        if v.provisional.get(app.size) == Some(&true) {
            title.push(Span::styled(" (provisional)", theme.style(Role::Warn)));
        }
    }
    let inner = frame(buf, theme, area, title, false);
    if inner.is_empty() {
        return;
    }
    let dim = theme.style(Role::Dim);
    if let (Some(why), Some(v)) = (absent(app), v) {
        let (rows, optional) = no_gpu_rows(app, v, &why, inner.width);
        // What still works is said only when all of it fits.
        let fits = rows.len() + optional.len() <= usize::from(inner.height);
        let shown = rows.iter().chain(optional.iter().filter(|_| fits));
        for (y, row) in shown.take(usize::from(inner.height)).enumerate() {
            let mut pen = Pen::row(buf, inner, y as u16);
            for (text, role) in row {
                pen.text(buf, text, theme.style(*role));
            }
        }
        return;
    }
    if let Err(why) = device(app) {
        return sentence(buf, inner, &why, dim);
    }
    let Some(v) = v else {
        return sentence(buf, inner, "No version selected.", dim);
    };
    let Some(r) = v.results.get(app.size).and_then(Option::as_ref) else {
        let text = if v.status.busy() {
            format!("{} is {}…", v.name, v.status.label())
        } else {
            format!(
                "No result for {} at {} yet.",
                v.name,
                size.unwrap_or("this size")
            )
        };
        return sentence(buf, inner, &text, dim);
    };
    let most = if r.timing.is_some() {
        VERDICT_ROWS
    } else {
        usize::from(inner.height)
    };
    let check = check_rows(r, inner.width, most);
    let mut row = 0;
    for line in &check {
        let mut pen = Pen::row(buf, inner, row);
        for (text, role) in line {
            pen.text(buf, text, theme.style(*role));
        }
        row += 1;
    }
    if let Some(t) = &r.timing {
        let (text, dim) = (theme.style(Role::Text), theme.style(Role::Dim));
        let noisy = if t.cv > 0.05 {
            theme.style(Role::Warn)
        } else {
            text
        };
        Pen::row(buf, inner, row)
            .text(buf, "median ", dim)
            .text(buf, &micros(t.median_us), theme.style(Role::Title))
            .text(buf, " · cv ", dim)
            .text(buf, &percent(t.cv * 100.0), noisy)
            .text(buf, " · n ", dim)
            .text(buf, &t.samples.to_string(), text);
        Pen::row(buf, inner, row + 1)
            .text(buf, "min ", dim)
            .text(buf, &micros(t.min_us), text)
            .text(buf, " · max ", dim)
            .text(buf, &micros(t.max_us), text);
        row += 2;
        // Another tool's time for the same launch: Triton's, when `kwb capture` recorded it.
        if let (Some(b), Some(x)) = (r.baseline.as_ref(), r.baseline_ratio()) {
            if row < inner.height {
                let style = if x > 1.05 {
                    theme.style(Role::Warn)
                } else {
                    text
                };
                Pen::row(buf, inner, row)
                    .text(buf, &b.name, dim)
                    .text(buf, " ", dim)
                    .text(buf, &micros(b.us), text)
                    .text(buf, " · kwb ", dim)
                    .text(buf, &format!("{x:.2}×"), style);
                row += 1;
            }
        }
        if let Some(timer) = t.timer.filter(|_| row < inner.height) {
            clock_line(
                theme,
                timer,
                t.event_median_us,
                Pen::row(buf, inner, row),
                buf,
            );
            row += 1;
        }
    }
    let samples = v.samples.get(app.size).map_or(&[][..], Vec::as_slice);
    if row < inner.height && !samples.is_empty() {
        let rows = (inner.height - row).min(SPARKLINE_MAX_ROWS);
        let rest = Rect::new(inner.x, inner.y + row, inner.width, rows);
        sparkline(buf, theme, rest, samples);
    }
}

/// `cupti · events 6.34 µs`: the median is the kernels' own GPU time, and what CUDA events
/// around the launches read; or `events · launch overhead included` without CUPTI.
fn clock_line(theme: &Theme, timer: Timer, events: Option<f64>, mut pen: Pen, buf: &mut Buffer) {
    let dim = theme.style(Role::Dim);
    match timer {
        Timer::Cupti => {
            pen.text(buf, "cupti", theme.style(Role::Accent));
            if let Some(e) = events {
                pen.text(buf, " · events ", dim)
                    .text(buf, &micros(e), theme.style(Role::Text));
            }
        }
        Timer::Events => {
            pen.text(buf, "events", theme.style(Role::Warn)).text(
                buf,
                " · launch overhead included",
                dim,
            );
        }
    }
}

/// With no GPU, at `cols` columns: the check the CPU made (emulator or tile interpreter, at
/// the size it ran) or that it is being made, then why there is no GPU; and, apart, what still
/// works (shown only where all of it fits).
fn no_gpu_rows(app: &App, v: &VersionView, why: &str, cols: u16) -> (Vec<Row>, Vec<Row>) {
    let plain = |text: &str, role: Role| -> Vec<Row> {
        wrap(text, cols)
            .into_iter()
            .map(|line| vec![(line, role)])
            .collect()
    };
    let found = v
        .results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
        .find(|(_, r)| r.backend.is_some());
    let mut rows = match found {
        Some((i, r)) => {
            let size = app.workspace.sizes.get(i).map_or("?", |s| s.name.as_str());
            let backend = r.backend.map_or("cpu".to_string(), |b| b.to_string());
            let mut rows = vec![vec![
                ("emulated".to_string(), Role::Accent),
                (format!(" ({backend}) @ {size}"), Role::Dim),
            ]];
            rows.extend(check_rows(r, cols, VERDICT_ROWS));
            rows
        }
        None if v.status == VersionStatus::Compiling => {
            plain(&format!("{} is compiling…", v.name), Role::Dim)
        }
        None if v.status.busy() => plain(
            &format!("{} is being checked on the CPU…", v.name),
            Role::Dim,
        ),
        None => Vec::new(),
    };
    rows.extend(plain(why, Role::Dim));
    (rows, plain(STILL_WORKS, Role::Dim))
}

/// The check's rows at `cols` columns: `check passed · max abs err 0.00e0` (the error where it
/// fits), or the status and why, wrapped into at most `most` rows.
fn check_rows(r: &RunResult, cols: u16, most: usize) -> Vec<Row> {
    if r.status == Status::Ok {
        let (head, role) = match &r.check {
            Some(c) if c.passed => ("check passed".to_string(), Role::Ok),
            Some(_) => ("check failed".to_string(), Role::Error),
            None => ("not checked: no reference".to_string(), Role::Dim),
        };
        let mut row = vec![(head, role)];
        if let Some(c) = r.check.as_ref().filter(|c| c.passed) {
            let err = format!(" · max abs err {:.2e}", c.max_abs_error);
            if width(&row[0].0) + width(&err) <= cols {
                row.push((err, Role::Dim));
            }
        }
        return vec![row];
    }
    let role = result_status(r.status);
    let why = r
        .check
        .as_ref()
        .and_then(|c| c.failure.clone())
        .or_else(|| r.message.clone());
    let text = match why {
        Some(why) => format!("{}: {why}", result_label(r.status)),
        None => result_label(r.status),
    };
    let lines = wrap(&text, cols);
    let cut = lines.len() > most;
    let mut rows: Vec<Row> = lines
        .into_iter()
        .take(most)
        .map(|line| vec![(line, role)])
        .collect();
    // A reason cut short says so.
    if let Some(last) = rows.last_mut().filter(|_| cut) {
        last[0].0 = truncate(&format!("{} …", last[0].0), cols);
    }
    rows
}

/// Samples as columns scaled from their minimum to their maximum, the latest on the right.
fn sparkline(buf: &mut Buffer, theme: &Theme, area: Rect, samples: &[f64]) {
    let shown = &samples[samples.len().saturating_sub(usize::from(area.width))..];
    let finite = || shown.iter().copied().filter(|x| x.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let levels = u32::from(area.height) * 8;
    let style = theme.style(Role::Bar);
    for (col, &x) in shown.iter().enumerate() {
        if !x.is_finite() {
            continue;
        }
        let f = if hi > lo { (x - lo) / (hi - lo) } else { 0.5 };
        // At least one eighth, so the fastest sample still shows.
        let eighths = 1 + (f * f64::from(levels - 1)).round() as u32;
        for row in 0..area.height {
            let from_bottom = u32::from(area.height - 1 - row) * 8;
            let level = eighths.saturating_sub(from_bottom).min(8) as usize;
            let cell = Rect::new(area.x + col as u16, area.y + row, 1, 1);
            Pen::row(buf, cell, 0).text(buf, LEVELS[level], style);
        }
    }
}
