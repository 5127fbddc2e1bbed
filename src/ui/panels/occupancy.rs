//! The Occupancy panel: the selected version's first launch at the selected size, run
//! through the pure occupancy calculator right here, with the what-if inputs (block size,
//! dynamic shared memory, register cap) applied and marked.

use super::format::{bytes, percent};
use super::launch::{launch_at, LaunchAt};
use super::text::{frame, sentence, wrap, Pen};
use crate::compile::occupancy::{Limiter, Occupancy};
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// Rows the panel would like: six lines and the border.
pub const WANTED_HEIGHT: u16 = 8;

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let w = app.what_if;
    let mut title = vec![Span::raw("Occupancy")];
    if let Some(v) = app.current() {
        title.push(Span::raw(format!(" · {}", v.name)));
    }
    if let Some(s) = app.workspace.sizes.get(app.size) {
        title.push(Span::raw(format!(" @ {}", s.name)));
    }
    if w.block.is_some() || w.dynamic_shared.is_some() || w.register_cap.is_some() {
        title.push(Span::styled(" (what-if)", theme.style(Role::Warn)));
    }
    let inner = frame(buf, theme, area, title, false);
    if inner.is_empty() {
        return;
    }
    match launch_at(app, app.selected, w) {
        Ok(launch) => body(theme, &launch, inner, buf),
        Err(why) => sentence(buf, inner, &why, theme.style(Role::Dim)),
    }
}

fn body(theme: &Theme, l: &LaunchAt<'_>, area: Rect, buf: &mut Buffer) {
    let (text, dim) = (theme.style(Role::Text), theme.style(Role::Dim));
    match &l.occupancy {
        Ok(o) => result(theme, o, area, buf),
        Err(e) => {
            let lines = wrap(&e.to_string(), area.width);
            for (row, line) in lines.iter().take(3).enumerate() {
                Pen::row(buf, area, row as u16).text(buf, line, theme.style(Role::Error));
            }
        }
    }
    let what_if = theme.style(Role::Warn);
    let u = &l.usage;
    let mut pen = Pen::row(buf, area, 3);
    pen.text(buf, "block ", dim)
        .text(buf, &u.threads_per_block.to_string(), text);
    if l.block_overridden() {
        pen.text(
            buf,
            &format!(" (what-if, was {})", l.launched_block),
            what_if,
        );
    } else if l.default_block {
        pen.text(buf, " (default: no launch)", dim);
    }
    let mut pen = Pen::row(buf, area, 4);
    pen.text(buf, "dyn smem ", dim)
        .text(buf, &bytes(u.dynamic_shared_bytes.into()), text);
    if l.shared_overridden() {
        let launched = bytes(l.launched_dynamic.into());
        pen.text(buf, &format!(" (what-if, was {launched})"), what_if);
    }
    let mut pen = Pen::row(buf, area, 5);
    pen.text(buf, "regs ", dim);
    match l.what_if.register_cap {
        Some(cap) => {
            let (regs, used) = (l.kernel.registers, u.registers_per_thread);
            pen.text(buf, &format!("{regs} → {used}"), text);
            pen.text(buf, &format!(" (cap {cap}, what-if)"), what_if);
        }
        None => {
            pen.text(buf, &u.registers_per_thread.to_string(), text);
        }
    }
}

/// Rows 0-2: the percentage with a gauge, warps and blocks per SM, and the limiter(s).
fn result(theme: &Theme, o: &Occupancy, area: Rect, buf: &mut Buffer) {
    let (text, dim) = (theme.style(Role::Text), theme.style(Role::Dim));
    let pct = format!("{:>4} ", percent(o.occupancy * 100.0));
    let mut pen = Pen::row(buf, area, 0);
    pen.text(buf, &pct, theme.style(Role::Title));
    let cells = usize::from(pen.room());
    let filled = ((o.occupancy.clamp(0.0, 1.0) * cells as f64).round() as usize).min(cells);
    pen.text(buf, &"█".repeat(filled), theme.style(Role::Bar));
    pen.text(buf, &"░".repeat(cells - filled), dim);

    let mut pen = Pen::row(buf, area, 1);
    pen.text(
        buf,
        &format!("{}/{}", o.active_warps_per_sm, o.max_warps_per_sm),
        text,
    )
    .text(buf, " warps · ", dim)
    .text(buf, &o.active_blocks_per_sm.to_string(), text)
    .text(buf, " blocks/SM", dim);

    let names: Vec<&str> = o.limiters.iter().map(|l| limiter(*l)).collect();
    let (label, role) = if o.active_blocks_per_sm == 0 {
        ("does not fit: ", Role::Error)
    } else {
        ("limited by ", Role::Text)
    };
    Pen::row(buf, area, 2)
        .text(buf, label, dim)
        .text(buf, &names.join(", "), theme.style(role));
}

fn limiter(l: Limiter) -> &'static str {
    match l {
        Limiter::Warps => "warps",
        Limiter::Registers => "registers",
        Limiter::SharedMemory => "shared memory",
        Limiter::Blocks => "block slots",
        Limiter::Barriers => "barriers",
    }
}
