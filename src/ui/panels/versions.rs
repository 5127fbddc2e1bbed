//! The version list: one row per version with its live status (`provisional, refining` while a
//! quick look at the viewed size is being refined), a `(stale)` marker while the shown results
//! come from an older save, and the Compare marks `[1]` `[2]`. In a narrow list
//! the status word is cut first: the icon, name, marks and `(stale)` always show.

use super::format::{fit_name, version_status};
use super::text::{frame, truncate, width, Pen};
use crate::ui::app::{App, Focus};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// Rows the list would like: one per version plus its border.
pub fn wanted_height(app: &App) -> u16 {
    u16::try_from(app.versions.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2)
}

/// The first version shown when `rows` rows are available: scrolled just enough to keep the
/// selected one in view.
pub fn first_visible(app: &App, rows: u16) -> usize {
    let rows = usize::from(rows.max(1));
    app.selected
        .saturating_sub(rows - 1)
        .min(app.versions.len().saturating_sub(1))
}

/// The version drawn at screen row `y` of a list drawn into `area`, for mouse clicks.
pub fn version_at_row(app: &App, area: Rect, y: u16) -> Option<usize> {
    let inner = area.inner(ratatui::layout::Margin::new(1, 1));
    if y < inner.y || y >= inner.bottom() {
        return None;
    }
    let i = first_visible(app, inner.height) + usize::from(y - inner.y);
    (i < app.versions.len()).then_some(i)
}

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let title = vec![Span::raw("Versions")];
    let inner = frame(buf, theme, area, title, app.focus == Focus::Versions);
    if inner.is_empty() {
        return;
    }
    if app.versions.is_empty() {
        Pen::row(buf, inner, 0).text(buf, "No versions.", theme.style(Role::Dim));
        return;
    }
    // Names come before the status word; a long (swept) name shows its values alone.
    let room = inner.width.saturating_sub(2);
    let names: Vec<String> = (0..app.versions.len())
        .map(|i| fit_name(app, i, room))
        .collect();
    let name_width = names.iter().map(|n| width(n)).max().unwrap_or(0);
    let first = first_visible(app, inner.height);
    for (row, (i, v)) in app.versions.iter().enumerate().skip(first).enumerate() {
        let Ok(row) = u16::try_from(row) else { break };
        if row >= inner.height {
            break;
        }
        let (icon, role) = version_status(v.status);
        let mut pen = Pen::row(buf, inner, row);
        pen.text(buf, icon, theme.style(role))
            .text(buf, " ", theme.style(Role::Text));
        let start = pen.column();
        pen.text(buf, &names[i], theme.style(Role::Text));
        pen.skip_to(buf, start + name_width, theme.style(Role::Text));
        if let Some(m) = app.marks.iter().position(|&m| m == i) {
            pen.text(buf, &format!(" [{}]", m + 1), theme.style(Role::Accent));
        }
        if v.stale() {
            pen.text(buf, " (stale)", theme.style(Role::Stale));
        }
        // The viewed size shows a quick look's figures while its full run refines them.
        let status = if v.provisional.get(app.size) == Some(&true) {
            "provisional, refining"
        } else {
            v.status.label()
        };
        let label = truncate(status, pen.room().saturating_sub(1));
        pen.text(buf, " ", theme.style(Role::Text))
            .text(buf, &label, theme.style(role));
        if i == app.selected {
            let line = Rect::new(inner.x, inner.y + row, inner.width, 1);
            buf.set_style(line, theme.style(Role::Selected));
        }
    }
}
