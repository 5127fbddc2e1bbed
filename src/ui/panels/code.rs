//! The Source, PTX and SASS tabs: numbered lines, of which only the visible window is
//! touched, with the cursor's source line and the PTX lines it produced highlighted.

use super::text::{sentence, Pen};
use crate::ui::app::{App, VersionStatus, VersionView};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

/// The sentence shown for SASS when no disassembler was found.
pub const NO_DISASSEMBLER: &str =
    "SASS needs nvdisasm or cuobjdump (not found on PATH or under the CUDA roots).";

/// Lines to show: highlighted ones, or plain text while the highlighter has not run yet.
enum Text<'a> {
    Lines(&'a [Line<'static>]),
    Raw(&'a str),
}

impl Text<'_> {
    fn len(&self) -> usize {
        match self {
            Text::Lines(l) => l.len(),
            Text::Raw(s) => s.lines().count(),
        }
    }
}

pub fn source(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer, v: &VersionView) {
    let text = if v.source_lines.is_empty() {
        Text::Raw(&v.source)
    } else {
        Text::Lines(&v.source_lines)
    };
    if text.len() == 0 {
        let dim = theme.style(Role::Dim);
        sentence(
            buf,
            area,
            "The source file is empty or could not be read.",
            dim,
        );
        return;
    }
    let cursor = app.cursor_line as usize;
    numbered(buf, theme, area, text, app.scroll, &|i| i + 1 == cursor);
}

pub fn ptx(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer, v: &VersionView) {
    let text = match &v.compiled {
        _ if !v.ptx_lines.is_empty() => Text::Lines(&v.ptx_lines),
        Some(c) => Text::Raw(&c.ptx),
        None => return never_compiled(theme, area, buf, v, "PTX"),
    };
    let marked = &app.correlated_ptx;
    numbered(buf, theme, area, text, app.scroll, &|i| marked.contains(&i));
}

pub fn sass(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer, v: &VersionView) {
    match (&v.sass, &v.compiled) {
        (_, None) => never_compiled(theme, area, buf, v, "SASS"),
        (None, Some(_)) => sentence(buf, area, NO_DISASSEMBLER, theme.style(Role::Dim)),
        (Some(lines), Some(_)) => {
            numbered(buf, theme, area, Text::Lines(lines), app.scroll, &|_| false)
        }
    }
}

/// The CUDA C++ kwb generated from a tile-language version (what NVRTC compiled), with the
/// `#line` directives that point its PTX back at the tile source.
pub fn cuda(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer, v: &VersionView) {
    match &v.compiled {
        None => never_compiled(theme, area, buf, v, "generated CUDA"),
        Some(c) => match &c.generated {
            None if v.kind.is_tile() => sentence(
                buf,
                area,
                "The tile source did not compile to CUDA: see Diagnostics.",
                theme.style(Role::Error),
            ),
            None => sentence(
                buf,
                area,
                &format!(
                    "{} is CUDA already: the CUDA tab shows the code kwb generates for tile-language versions (.tile, .py).",
                    v.name
                ),
                theme.style(Role::Dim),
            ),
            Some(text) => {
                let text = if v.cuda_lines.is_empty() {
                    Text::Raw(text)
                } else {
                    Text::Lines(&v.cuda_lines)
                };
                numbered(buf, theme, area, text, app.scroll, &|_| false)
            }
        },
    }
}

/// Says plainly why a version has no compiler output to show.
fn never_compiled(theme: &Theme, area: Rect, buf: &mut Buffer, v: &VersionView, what: &str) {
    let name = &v.name;
    let (text, role) = match v.status {
        VersionStatus::CompileError => (
            format!("{name} has never compiled, so there is no {what}: see Diagnostics."),
            Role::Error,
        ),
        VersionStatus::Compiling => (
            format!("{name} is compiling; its {what} appears when it is done."),
            Role::Dim,
        ),
        _ => (format!("{name} has not been compiled yet."), Role::Dim),
    };
    sentence(buf, area, &text, theme.style(role));
}

/// Line numbers and lines from `scroll` on (held back so the last page stays full), with the
/// rows `marked` says highlighted.
fn numbered(
    buf: &mut Buffer,
    theme: &Theme,
    area: Rect,
    text: Text<'_>,
    scroll: u16,
    marked: &dyn Fn(usize) -> bool,
) {
    let total = text.len();
    let rows = usize::from(area.height);
    let first = usize::from(scroll).min(total.saturating_sub(rows));
    let digits = total.to_string().len();
    let number_style = theme.style(Role::Dim);
    let text_style = theme.style(Role::Text);
    let draw = |row: usize, i: usize, buf: &mut Buffer, write: &dyn Fn(&mut Pen, &mut Buffer)| {
        let row = row as u16; // < area.height
        let mut pen = Pen::row(buf, area, row);
        pen.text(buf, &format!("{:>digits$} ", i + 1), number_style);
        write(pen.tab_origin(), buf);
        if marked(i) {
            let line = Rect::new(area.x, area.y + row, area.width, 1);
            buf.set_style(line, theme.style(Role::Highlight));
        }
    };
    match text {
        Text::Lines(lines) => {
            for (row, line) in lines.iter().skip(first).take(rows).enumerate() {
                draw(row, first + row, buf, &|pen, buf| {
                    pen.line(buf, line);
                });
            }
        }
        Text::Raw(s) => {
            for (row, line) in s.lines().skip(first).take(rows).enumerate() {
                draw(row, first + row, buf, &|pen, buf| {
                    pen.text(buf, line, text_style);
                });
            }
        }
    }
}
