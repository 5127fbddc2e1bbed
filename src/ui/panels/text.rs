//! Writing text into a buffer for the panels: clipped to a width and to the buffer, tabs
//! expanded, long sentences wrapped. Every panel writes through these, so no panel can write
//! outside its rectangle or panic on a tiny terminal.

use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};

/// Tab stops, in cells, for PTX and source text.
pub const TAB_WIDTH: u16 = 4;

/// A cursor along one row: it writes left to right and never past `end`.
pub struct Pen {
    start: u16,
    x: u16,
    y: u16,
    end: u16,
}

impl Pen {
    /// A pen at row `row` of `area` (0-based); writes nothing when that row is outside the
    /// area or the buffer.
    pub fn row(buf: &Buffer, area: Rect, row: u16) -> Pen {
        let area = area.intersection(buf.area);
        let y = area.y.saturating_add(row);
        let end = if row < area.height {
            area.right()
        } else {
            area.x
        };
        Pen {
            start: area.x,
            x: area.x,
            y,
            end,
        }
    }

    /// Counts tab stops (and [`Pen::column`]) from where the pen is now, so text after a
    /// gutter lines up the same whatever the gutter's width.
    pub fn tab_origin(&mut self) -> &mut Pen {
        self.start = self.x;
        self
    }

    /// Cells still free on this row.
    pub fn room(&self) -> u16 {
        self.end.saturating_sub(self.x)
    }

    /// The column the pen is at, counted from the start of its row.
    pub fn column(&self) -> u16 {
        self.x - self.start
    }

    /// Writes `text`; tabs advance to the next stop of [`TAB_WIDTH`] cells.
    pub fn text(&mut self, buf: &mut Buffer, text: &str, style: Style) -> &mut Pen {
        for (i, piece) in text.split('\t').enumerate() {
            if i > 0 {
                let stop = (self.column() / TAB_WIDTH + 1) * TAB_WIDTH;
                self.skip_to(buf, stop, style);
            }
            if self.x >= self.end {
                break;
            }
            if !piece.is_empty() {
                let room = usize::from(self.room());
                self.x = buf.set_stringn(self.x, self.y, piece, room, style).0;
            }
        }
        self
    }

    /// Writes a styled line (the line's own style under each span's).
    pub fn line(&mut self, buf: &mut Buffer, line: &Line<'_>) -> &mut Pen {
        for span in &line.spans {
            self.text(buf, &span.content, line.style.patch(span.style));
        }
        self
    }

    /// Writes spaces up to column `column` of the row (no-op when already past it).
    pub fn skip_to(&mut self, buf: &mut Buffer, column: u16, style: Style) -> &mut Pen {
        let target = self.start.saturating_add(column).min(self.end);
        while self.x < target {
            buf[(self.x, self.y)].set_symbol(" ").set_style(style);
            self.x += 1;
        }
        self
    }

    /// Writes `text` so that it ends at the row's end, if it fits after the pen.
    pub fn right(&mut self, buf: &mut Buffer, text: &str, style: Style) -> &mut Pen {
        let w = width(text);
        if w <= self.room() {
            let column = self.end - w - self.start;
            self.skip_to(buf, column, Style::new());
            self.text(buf, text, style);
        }
        self
    }
}

/// Display width of `text` in cells (tabs count as one cell here).
pub fn width(text: &str) -> u16 {
    u16::try_from(Span::raw(text).width()).unwrap_or(u16::MAX)
}

/// `text` cut to `max` cells, with `…` as the last cell when something was cut.
pub fn truncate(text: &str, max: u16) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// Greedy word wrap of `text` (its own newlines kept) into lines of at most `max` cells; a
/// word longer than a line is split.
pub fn wrap(text: &str, max: u16) -> Vec<String> {
    let max = max.max(1);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        let mut used = 0u16;
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            let w = width(word);
            if used > 0 && used + 1 + w <= max {
                line.push(' ');
                line.push_str(word);
                used += 1 + w;
                continue;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            for c in word.chars() {
                let cw = width(c.encode_utf8(&mut [0; 4]));
                if used + cw > max && used > 0 {
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                }
                line.push(c);
                used += cw;
            }
        }
        lines.push(line);
    }
    lines
}

/// Draws a panel's border and title and returns the inside. `focused` picks the border role.
pub fn frame(
    buf: &mut Buffer,
    theme: &Theme,
    area: Rect,
    title: Vec<Span<'_>>,
    focused: bool,
) -> Rect {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return area;
    }
    let border = theme.style(if focused {
        Role::BorderFocused
    } else {
        Role::Border
    });
    let mut spans = vec![Span::raw(" ")];
    spans.extend(title);
    spans.push(Span::raw(" "));
    let block = Block::bordered()
        .border_style(border)
        .title(Line::from(spans).style(theme.style(Role::Title)));
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

/// A plain sentence, wrapped into `area`, one style.
pub fn sentence(buf: &mut Buffer, area: Rect, text: &str, style: Style) {
    for (row, line) in wrap(text, area.width).iter().enumerate() {
        let Ok(row) = u16::try_from(row) else { break };
        if row >= area.height {
            break;
        }
        Pen::row(buf, area, row).text(buf, line, style);
    }
}

/// Rows needed by [`sentence`] for `text` at `width`.
pub fn sentence_rows(text: &str, width: u16) -> u16 {
    u16::try_from(wrap(text, width).len()).unwrap_or(u16::MAX)
}
