//! The help overlay: a centred box over everything listing the key bindings in force (from
//! `ui::keys::Keymap`, carried in `App::help_lines`) and what the mouse does.

use super::text::{frame, width, wrap, Pen};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Clear, Widget};

/// The mouse, after the keys.
pub const MOUSE: &[(&str, &str)] = &[("click", "select the version under the pointer")];

/// The widest the box grows.
const MAX_WIDTH: u16 = 84;

fn entries(lines: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> + Clone {
    lines
        .iter()
        .map(|(k, w)| (k.as_str(), w.as_str()))
        .chain(MOUSE.iter().copied())
}

/// Draws the box centred in `area`, clearing what is under it. Descriptions wrap under
/// themselves when the box is narrow.
pub fn render(lines: &[(String, String)], theme: &Theme, area: Rect, buf: &mut Buffer) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let key_width = entries(lines).map(|(k, _)| width(k)).max().unwrap_or(0) + 2;
    let text_width = entries(lines).map(|(_, d)| width(d)).max().unwrap_or(0);
    // Border and one column of padding on each side.
    let w = (key_width + text_width + 4).min(MAX_WIDTH).min(area.width);
    let inner_w = w.saturating_sub(4);
    let key_width = key_width.min(inner_w / 2);
    let mut rows: Vec<(&str, String)> = Vec::new();
    for (keys, what) in entries(lines) {
        for (i, line) in wrap(what, inner_w - key_width).into_iter().enumerate() {
            rows.push((if i == 0 { keys } else { "" }, line));
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
    Clear.render(boxed, buf);
    let title = vec![Span::raw("Help · ? closes")];
    let inner = frame(buf, theme, boxed, title, true);
    let inner = Rect::new(
        inner.x.saturating_add(1).min(inner.right()),
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    let (accent, text) = (theme.style(Role::Accent), theme.style(Role::Text));
    for (row, (keys, what)) in rows.iter().enumerate().take(usize::from(inner.height)) {
        let mut pen = Pen::row(buf, inner, row as u16);
        pen.text(buf, keys, accent);
        pen.skip_to(buf, key_width, text).text(buf, what, text);
    }
}
