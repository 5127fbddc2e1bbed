//! The version list: one row per version with its live status (`provisional, refining` while a
//! quick look at the viewed size is being refined), a `(stale)` marker while the shown results
//! come from an older save, and the Compare marks `[1]` `[2]`. In a narrow list the status word
//! is cut first (and left out where too little of it would show), then `(stale)`; names shrink
//! (a swept name to its values) to leave room for the marks, so the icon, the name and the marks
//! always show.

use super::format::{fit_name, version_status};
use super::text::{frame, truncate, width, Pen};
use crate::ui::app::{App, Focus};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// ` [1]`: a Compare mark's width.
const MARK_WIDTH: u16 = 4;
/// The marker of a version whose shown results are older than its source, and its width.
const STALE: &str = " (stale)";
const STALE_WIDTH: u16 = 8;
/// Names are not cut below this to make room for `(stale)` (a swept name's values, `v9[1024]`).
const MIN_NAME: u16 = 8;

/// A status word cut shorter than this (`…` included) is left out.
const MIN_STATUS: u16 = 6;

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
    // Names come before the status word; a long (swept) name shows its values alone, and
    // gives way to the Compare marks (` [1]`) and, where names can stay readable, `(stale)`.
    let room = inner.width.saturating_sub(2);
    let marks = if app.marks.is_empty() { 0 } else { MARK_WIDTH };
    let stale = if app.versions.iter().any(|v| v.stale()) {
        STALE_WIDTH
    } else {
        0
    };
    let name_room = match room.saturating_sub(marks + stale) {
        r if r >= MIN_NAME => r,
        _ => room.saturating_sub(marks),
    };
    let names: Vec<String> = (0..app.versions.len())
        .map(|i| fit_name(app, i, name_room))
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
            pen.text(buf, STALE, theme.style(Role::Stale));
        }
        // The viewed size shows a quick look's figures while its full run refines them.
        let status = if v.provisional.get(app.size) == Some(&true) {
            "provisional, refining"
        } else {
            v.status.label()
        };
        // Cut, the word must still say something; else the icon alone tells.
        let room = pen.room().saturating_sub(1);
        if width(status) <= room || room >= MIN_STATUS {
            pen.text(buf, " ", theme.style(Role::Text)).text(
                buf,
                &truncate(status, room),
                theme.style(role),
            );
        }
        if i == app.selected {
            let line = Rect::new(inner.x, inner.y + row, inner.width, 1);
            buf.set_style(line, theme.style(Role::Selected));
        }
    }
}
