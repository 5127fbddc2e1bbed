//! The Timing panel: the selected version at the selected size: its verdict, median, spread
//! and sample count, the clock it was timed with (CUPTI's kernel timestamps, with the CUDA
//! events' figure beside it, or events alone, said so), and a sparkline of the benchmark's
//! samples (the latest that fit).

use super::format::{micros, percent, result_label, result_status};
use super::gpu::device;
use super::text::{frame, sentence, wrap, Pen};
use crate::report::RunResult;
use crate::run::stats::Timer;
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// Rows the panel would like: two lines of figures, a sparkline of three rows, the border.
pub const WANTED_HEIGHT: u16 = 7;
/// The sparkline grows with the panel up to this many rows.
const SPARKLINE_MAX_ROWS: u16 = 8;

/// Sparkline cells from empty to full, in eighths.
const LEVELS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let v = app.current();
    let size = app.workspace.sizes.get(app.size).map(|s| s.name.as_str());
    let mut title = vec![Span::raw("Timing")];
    if let Some(v) = v {
        title.push(Span::raw(format!(" · {}", v.name)));
        if let Some(s) = size {
            title.push(Span::raw(format!(" @ {s}")));
        }
        if v.stale() {
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
    if let Err(why) = device(app) {
        if let (crate::ui::app::GpuState::Absent(_), Some(v)) = (&app.gpu, v) {
            return emulated(app, theme, v, &why, inner, buf);
        }
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
    let mut row = verdict(theme, r, inner, buf);
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

/// With no GPU: the check the CPU made (emulator or tile interpreter), at the size it ran, and
/// why there is no timing.
fn emulated(
    app: &App,
    theme: &Theme,
    v: &crate::ui::app::VersionView,
    why: &str,
    area: Rect,
    buf: &mut Buffer,
) {
    let dim = theme.style(Role::Dim);
    let found = v
        .results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
        .find(|(_, r)| r.backend.is_some());
    let Some((i, r)) = found else {
        let text = if v.status.busy() {
            format!("{} is being checked on the CPU…", v.name)
        } else {
            why.to_string()
        };
        return sentence(buf, area, &text, dim);
    };
    let size = app.workspace.sizes.get(i).map_or("?", |s| s.name.as_str());
    let backend = r.backend.map_or("cpu".to_string(), |b| b.to_string());
    Pen::row(buf, area, 0)
        .text(buf, "emulated", theme.style(Role::Accent))
        .text(buf, &format!(" ({backend}) @ {size}"), dim);
    let rest = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(1),
    );
    let mut row = verdict(theme, r, rest, buf);
    if r.status == crate::report::Status::Ok {
        let err = r.check.as_ref().map_or(String::new(), |c| {
            format!(" · max abs err {:.2e}", c.max_abs_error)
        });
        Pen::row(buf, rest, 0)
            .text(buf, "check passed", theme.style(Role::Ok))
            .text(buf, &err, dim);
        row = 1;
    }
    if row < rest.height {
        let below = Rect::new(rest.x, rest.y + row, rest.width, rest.height - row);
        sentence(buf, below, "No timing without a GPU.", dim);
    }
}

/// For a result that is not ok: its status and why (up to three rows when timings follow).
/// Returns the next free row.
fn verdict(theme: &Theme, r: &RunResult, area: Rect, buf: &mut Buffer) -> u16 {
    let role = result_status(r.status);
    let why = r
        .check
        .as_ref()
        .and_then(|c| c.failure.clone())
        .or_else(|| r.message.clone());
    if r.status == crate::report::Status::Ok {
        return 0;
    }
    let Some(why) = why else {
        Pen::row(buf, area, 0).text(buf, &result_label(r.status), theme.style(role));
        return 1;
    };
    let text = format!("{}: {why}", result_label(r.status));
    let lines = wrap(&text, area.width);
    let most = if r.timing.is_some() {
        3
    } else {
        usize::from(area.height)
    };
    let shown = lines.len().min(most);
    for (row, line) in lines.iter().take(shown).enumerate() {
        Pen::row(buf, area, row as u16).text(buf, line, theme.style(role));
    }
    shown as u16
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
