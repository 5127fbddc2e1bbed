//! The Bandwidth panel: one bar per version of GB/s at the selected size, against the
//! device's peak (the best of the measured copy and kwb's stream kernel, with which one),
//! drawn as a marker, with % of peak. A version that L2 serves in part (`l2_resident`) is
//! marked `L2`: its % is not DRAM bandwidth. Where the work is compute-bound (at least
//! [`COMPUTE_INTENSITY`] flops per byte, as matmul is), the panel is Compute: bars of TFLOP/s
//! against the dense fp16 tensor-core peak ([`crate::report::DeviceInfo::tensor_peak_tflops`]),
//! with % of it and GB/s beside them.

use super::format::{fit_name, gbps, percent, result_label, result_status};
use super::gpu::device;
use super::text::{frame, sentence, sentence_rows, width, Pen};
use crate::report::RunResult;
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// Partial bar cells, in eighths.
const EIGHTHS: [&str; 8] = [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
/// `" 2841  94%"`: the value column's width.
const VALUE_WIDTH: u16 = 11;
/// The fewest bar cells a row keeps when names are long.
const MIN_BAR: u16 = 4;
/// `" 2841 GB/s"`: the GB/s column's width beside TFLOP/s.
const GBPS_WIDTH: u16 = 11;
/// Flops per byte from which a size's TFLOP/s are shown: far above elementwise work and
/// softmax (under 3), far below a matmul's (16 at 67×45×40, over 300 at 1000³).
pub const COMPUTE_INTENSITY: f64 = 10.0;

/// Rows the panel would like at `width` columns (border included).
pub fn wanted_height(app: &App, width: u16) -> u16 {
    match device(app) {
        Ok(_) => u16::try_from(app.versions.len())
            .unwrap_or(u16::MAX)
            .saturating_add(3),
        Err(why) => sentence_rows(&why, width.saturating_sub(2)).saturating_add(2),
    }
}

fn result(app: &App, index: usize) -> Option<&RunResult> {
    app.versions.get(index)?.results.get(app.size)?.as_ref()
}

/// What the bars measure at this size: GB/s against the bandwidth peak, or, for compute-bound
/// work, TFLOP/s against the tensor-core peak (GB/s then beside them).
#[derive(Clone, Copy)]
enum Measure {
    Bandwidth,
    Compute { tensor_tflops: f64 },
}

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let dev = device(app);
    // The tensor-core peak, where this size's work is compute-bound.
    let measure = (dev.as_ref().ok())
        .and_then(|d| d.tensor_peak_tflops())
        .filter(|_| {
            (0..app.versions.len())
                .filter_map(|i| result(app, i)?.intensity)
                .any(|x| x >= COMPUTE_INTENSITY)
        })
        .map_or(Measure::Bandwidth, |t| Measure::Compute {
            tensor_tflops: t,
        });
    let mut title = vec![Span::raw(match measure {
        Measure::Bandwidth => "Bandwidth",
        Measure::Compute { .. } => "Compute",
    })];
    if let Some(s) = app.workspace.sizes.get(app.size) {
        title.push(Span::raw(format!(" · {}", s.name)));
    }
    let inner = frame(buf, theme, area, title, false);
    if inner.is_empty() {
        return;
    }
    let dev = match dev {
        Ok(d) => d,
        Err(why) => return sentence(buf, inner, &why, theme.style(Role::Dim)),
    };
    let (gb_peak, label) = dev.peak();
    let mut pen = Pen::row(buf, inner, 0);
    let peak = match measure {
        Measure::Bandwidth => {
            match gb_peak {
                Some(p) => {
                    let long = format!("│ {} GB/s {label}", gbps(p));
                    let text = if width(&long) <= inner.width {
                        long
                    } else {
                        format!("│ peak {} GB/s", gbps(p))
                    };
                    pen.text(buf, &text, theme.style(Role::Peak));
                }
                None => {
                    pen.text(buf, "no bandwidth peak known", theme.style(Role::Dim));
                }
            }
            gb_peak
        }
        Measure::Compute { tensor_tflops: t } => {
            let long = format!("│ {t:.0} TFLOP/s dense fp16 tensor-core peak");
            let text = if width(&long) <= inner.width {
                long
            } else {
                format!("│ peak {t:.0} TFLOP/s")
            };
            pen.text(buf, &text, theme.style(Role::Peak));
            Some(t)
        }
    };
    // A row's bar value: GB/s, or TFLOP/s for compute-bound work.
    let value = |r: &RunResult| match measure {
        Measure::Bandwidth => r.gbps,
        Measure::Compute { .. } => r.gflops.map(|g| g / 1e3),
    };
    let fastest = (0..app.versions.len())
        .filter_map(|i| value(result(app, i)?))
        .fold(0.0_f64, f64::max);
    let scale = fastest.max(peak.unwrap_or(0.0));
    // Room for an `L2` mark after the % when any version at this size is L2-resident.
    let resident =
        |r: Option<&RunResult>| r.and_then(|r| r.timing.as_ref()?.l2_resident) == Some(true);
    let any_l2 = (0..app.versions.len()).any(|i| resident(result(app, i)));
    let value_width = VALUE_WIDTH
        + if any_l2 { 3 } else { 0 }
        + match measure {
            Measure::Bandwidth => 0,
            Measure::Compute { .. } => GBPS_WIDTH,
        };
    let rows = usize::from(inner.height.saturating_sub(1));
    if rows == 0 {
        return;
    }
    let first = app.selected.saturating_sub(rows - 1);
    // Long (swept) names give way (their values alone, else cut with `…`) before the figures
    // and a short bar do.
    let name_room = inner.width.saturating_sub(value_width + MIN_BAR + 1);
    let names: Vec<String> = (0..app.versions.len())
        .map(|i| fit_name(app, i, name_room))
        .collect();
    let name_width = names.iter().map(|n| width(n)).max().unwrap_or(0);
    for (row, (i, name)) in names.iter().enumerate().skip(first).take(rows).enumerate() {
        let y = row as u16 + 1; // < inner.height
        let mut pen = Pen::row(buf, inner, y);
        let role = if i == app.selected {
            Role::Accent
        } else {
            Role::Text
        };
        pen.text(buf, name, theme.style(role)).skip_to(
            buf,
            name_width + 1,
            theme.style(Role::Text),
        );
        let r = result(app, i);
        let Some(x) = r.and_then(value) else {
            pen.text(buf, "–", theme.style(Role::Dim));
            if let Some(r) = r {
                let label = format!(" {}", result_label(r.status));
                pen.text(buf, &label, theme.style(result_status(r.status)));
            }
            continue;
        };
        let cells = pen.room().saturating_sub(value_width);
        let bar_x = pen.column();
        bar(buf, theme, &mut pen, x / scale, cells);
        if let Some(p) = peak.filter(|_| cells > 0) {
            let at = ((p / scale * f64::from(cells)).round() as u16).min(cells - 1);
            let marker = Rect::new(inner.x + bar_x + at, inner.y + y, 1, 1);
            Pen::row(buf, marker, 0).text(buf, "│", theme.style(Role::Peak));
        }
        pen.skip_to(buf, bar_x + cells, theme.style(Role::Text));
        let text = match measure {
            Measure::Bandwidth => {
                let pct = r
                    .and_then(|r| r.pct_of_peak)
                    .or_else(|| peak.map(|p| x / p * 100.0))
                    .map_or("–".into(), percent);
                format!("{:>6} {:>4}", gbps(x), pct)
            }
            Measure::Compute { tensor_tflops: t } => {
                let gb = r.and_then(|r| r.gbps).map_or("–".into(), gbps);
                format!("{x:>6.1} {:>4} {gb:>5} GB/s", percent(x / t * 100.0))
            }
        };
        pen.text(buf, &text, theme.style(Role::Text));
        if resident(r) {
            pen.text(buf, " L2", theme.style(Role::Warn));
        }
    }
}

/// A horizontal bar of `fraction` × `cells`, in eighths of a cell.
fn bar(buf: &mut Buffer, theme: &Theme, pen: &mut Pen, fraction: f64, cells: u16) {
    let eighths = (fraction.clamp(0.0, 1.0) * f64::from(cells) * 8.0).round() as usize;
    let (full, part) = (eighths / 8, eighths % 8);
    let style = theme.style(Role::Bar);
    pen.text(buf, &"█".repeat(full), style);
    if part > 0 {
        pen.text(buf, EIGHTHS[part], style);
    }
}
