//! The bottom line: the key hint on the left and the latest message on the right; when both
//! do not fit, the message wins and the hint is cut.

use super::text::{truncate, width, Pen};
use crate::ui::app::App;
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The keys worth knowing first; `?` shows the rest.
pub const HINT: &str = "? help · q quit · ↑↓/jk versions · tab/1-7 tabs · m mark · s size · \
                        b/B block · h/H shared · r/R reg cap · t theme";

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let message = app.message.lines().next().unwrap_or_default().trim();
    let message = truncate(message, area.width);
    let room = area
        .width
        .saturating_sub(width(&message) + u16::from(!message.is_empty()));
    let mut pen = Pen::row(buf, area, 0);
    pen.text(buf, &truncate(HINT, room), theme.style(Role::Dim));
    if !message.is_empty() {
        pen.right(buf, &message, theme.style(Role::Accent));
    }
}
