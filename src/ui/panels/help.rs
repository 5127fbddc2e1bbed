//! The help overlay: a centred box over everything listing the key bindings in force (from
//! `ui::keys::Keymap`, carried in `App::help_lines`) and what the mouse does. Long key lists
//! and descriptions wrap in their columns, which keeps the default list whole at 80×24; where
//! it still does not fit, the movement keys scroll it (`App::help_scroll`) and the bottom
//! border says how much is above and below.

use super::text::{frame, width, wrap, Pen};
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Clear, Widget};

/// The mouse, after the keys.
pub const MOUSE: &[(&str, &str)] = &[("click", "select the version under the pointer")];

/// The widest the box grows.
const MAX_WIDTH: u16 = 84;
/// The key column's widest (a longer list of keys wraps in it), gap included.
const MAX_KEY_WIDTH: u16 = 22;

fn entries(lines: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> + Clone {
    lines
        .iter()
        .map(|(k, w)| (k.as_str(), w.as_str()))
        .chain(MOUSE.iter().copied())
}

/// Where the box goes in an area and what its rows say.
struct Layout {
    boxed: Rect,
    /// Inside the border and the padding.
    inner: Rect,
    key_width: u16,
    /// (keys, what they do), one screen row each.
    rows: Vec<(String, String)>,
}

fn layout(lines: &[(String, String)], area: Rect) -> Layout {
    let widest_key = entries(lines).map(|(k, _)| width(k)).max().unwrap_or(0) + 2;
    let text_width = entries(lines).map(|(_, d)| width(d)).max().unwrap_or(0);
    // Border and one column of padding on each side.
    let w = (widest_key + text_width + 4).min(MAX_WIDTH).min(area.width);
    let inner_w = w.saturating_sub(4);
    let key_width = widest_key.min(MAX_KEY_WIDTH).min(inner_w / 2);
    let mut rows = Vec::new();
    for (keys, what) in entries(lines) {
        let keys = wrap(keys, key_width.saturating_sub(2));
        let what = wrap(what, inner_w - key_width);
        for i in 0..keys.len().max(what.len()) {
            let cell = |c: &[String]| c.get(i).cloned().unwrap_or_default();
            rows.push((cell(&keys), cell(&what)));
        }
    }
    let h = u16::try_from(rows.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let boxed = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let inner = Rect::new(
        boxed.x.saturating_add(2).min(boxed.right()),
        boxed.y.saturating_add(1).min(boxed.bottom()),
        w.saturating_sub(4),
        h.saturating_sub(2),
    );
    Layout {
        boxed,
        inner,
        key_width,
        rows,
    }
}

/// The furthest the help scrolls on a screen of `area`: 0 when it fits.
pub fn max_scroll(lines: &[(String, String)], area: Rect) -> u16 {
    let l = layout(lines, area);
    u16::try_from(l.rows.len())
        .unwrap_or(u16::MAX)
        .saturating_sub(l.inner.height)
}

/// Rows the help scrolls by a page on a screen of `area`.
pub fn page(lines: &[(String, String)], area: Rect) -> u16 {
    layout(lines, area).inner.height.max(1)
}

/// Draws the box centred in `area`, clearing what is under it, scrolled by `app.help_scroll`
/// (as far as it goes).
pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let l = layout(&app.help_lines, area);
    Clear.render(l.boxed, buf);
    let title = vec![Span::raw("Help · ? closes")];
    frame(buf, theme, l.boxed, title, true);
    let total = u16::try_from(l.rows.len()).unwrap_or(u16::MAX);
    let first = app.help_scroll.min(total.saturating_sub(l.inner.height));
    let (accent, text) = (theme.style(Role::Accent), theme.style(Role::Text));
    let shown = l.rows.iter().skip(usize::from(first));
    for (row, (keys, what)) in shown.take(usize::from(l.inner.height)).enumerate() {
        let mut pen = Pen::row(buf, l.inner, row as u16);
        pen.text(buf, keys, accent);
        pen.skip_to(buf, l.key_width, text).text(buf, what, text);
    }
    // What is cut, on the bottom border.
    let below = total.saturating_sub(first + l.inner.height);
    let hint = match (first, below) {
        (0, 0) => return,
        (0, b) => format!(" ↓ {b} more "),
        (a, 0) => format!(" ↑ {a} more "),
        (a, b) => format!(" ↑ {a} · ↓ {b} more "),
    };
    // Right-aligned on the border, two cells in from the corner, where it fits.
    let w = width(&hint);
    if l.boxed.height >= 2 && l.boxed.width >= w + 4 {
        let at = Rect::new(l.boxed.right() - 2 - w, l.boxed.bottom() - 1, w, 1);
        Pen::row(buf, at, 0).text(buf, &hint, theme.style(Role::Warn));
    }
}
