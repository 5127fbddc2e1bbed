//! The Resources panel: per kernel of the selected version, what the compiler allotted:
//! registers, static shared memory, the local (stack) frame, spill traffic and barriers.

use super::format::bytes;
use super::text::{frame, sentence, Pen};
use crate::compile::KernelResources;
use crate::ui::app::{App, VersionStatus};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// Narrowest inside width that fits a kernel's figures on two rows; below it they take three.
const WIDE: u16 = 32;

fn kernel_count(app: &App) -> usize {
    app.current()
        .and_then(|v| v.compiled.as_ref())
        .map_or(0, |c| c.kernels.len())
}

/// Rows per kernel at an inside width: its figures, and its name when there are several
/// kernels (one kernel's name is in the title).
fn rows_per_kernel(width: u16, named: bool) -> u16 {
    let figures = if width >= WIDE { 2 } else { 3 };
    figures + u16::from(named)
}

/// Rows the panel would like for the selected version at `width` columns (border included).
pub fn wanted_height(app: &App, width: u16) -> u16 {
    let n = kernel_count(app);
    if n == 0 {
        return 3;
    }
    let per = rows_per_kernel(width.saturating_sub(2), n > 1);
    u16::try_from(n.max(1))
        .unwrap_or(u16::MAX)
        .saturating_mul(per)
        .saturating_add(2)
}

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let v = app.current();
    let mut title = vec![Span::raw("Resources")];
    if let Some(v) = v {
        title.push(Span::raw(format!(" · {}", v.name)));
        if let Some(k) = v.compiled.as_ref().and_then(|c| c.kernels.first()) {
            if kernel_count(app) == 1 {
                title.push(Span::styled(
                    format!(" · {}", k.name),
                    theme.style(Role::Accent),
                ));
            }
        }
        if v.stale() && v.compiled.is_some() {
            title.push(Span::styled(" (stale)", theme.style(Role::Stale)));
        }
    }
    let inner = frame(buf, theme, area, title, false);
    if inner.is_empty() {
        return;
    }
    let dim = theme.style(Role::Dim);
    let Some(v) = v else {
        return sentence(buf, inner, "No version selected.", dim);
    };
    let Some(compiled) = &v.compiled else {
        let text = match v.status {
            VersionStatus::CompileError => format!("{} did not compile.", v.name),
            _ => format!("{} has not compiled yet.", v.name),
        };
        return sentence(buf, inner, &text, dim);
    };
    if compiled.kernels.is_empty() {
        return sentence(buf, inner, "No kernels in the CUBIN.", dim);
    }
    let named = compiled.kernels.len() > 1;
    let rows = rows_per_kernel(inner.width, named);
    for (i, k) in compiled.kernels.iter().enumerate() {
        let top = u16::try_from(i).unwrap_or(u16::MAX).saturating_mul(rows);
        if top >= inner.height {
            break;
        }
        kernel(app, theme, k, named, inner, top, buf);
    }
}

/// One kernel's rows from row `top`: its name when `named`, then its figures.
fn kernel(
    app: &App,
    theme: &Theme,
    k: &KernelResources,
    named: bool,
    area: Rect,
    top: u16,
    buf: &mut Buffer,
) {
    let (text, dim) = (theme.style(Role::Text), theme.style(Role::Dim));
    let warn_if = |bad: bool| if bad { theme.style(Role::Warn) } else { text };
    let mut row = top;
    if named {
        Pen::row(buf, area, row).text(buf, &k.name, theme.style(Role::Accent));
        row += 1;
    }
    let max_regs = app.arch.spec().max_registers_per_thread;
    let spills = k.spill_store_bytes > 0 || k.spill_load_bytes > 0;
    let wide = area.width >= WIDE;

    let mut pen = Pen::row(buf, area, row);
    pen.text(buf, "regs ", dim)
        .text(
            buf,
            &k.registers.to_string(),
            warn_if(k.registers >= max_regs),
        )
        .text(buf, " · smem ", dim)
        .text(buf, &bytes(k.static_shared_bytes.into()), text);
    if !wide {
        row += 1;
        pen = Pen::row(buf, area, row);
        pen.text(buf, "bar ", dim)
            .text(buf, &k.barriers.to_string(), text)
            .text(buf, " · ", dim);
    } else {
        pen.text(buf, " · ", dim);
    }
    pen.text(buf, "stack ", dim).text(
        buf,
        &bytes(k.local_bytes.into()),
        warn_if(k.local_bytes > 0),
    );

    let mut pen = Pen::row(buf, area, row + 1);
    pen.text(buf, "spills ", dim)
        .text(buf, &bytes(k.spill_store_bytes.into()), warn_if(spills))
        .text(buf, " st / ", dim)
        .text(buf, &bytes(k.spill_load_bytes.into()), warn_if(spills))
        .text(buf, " ld", dim);
    if wide {
        pen.text(buf, " · bar ", dim)
            .text(buf, &k.barriers.to_string(), text);
    }
}
