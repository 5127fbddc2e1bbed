//! Drawing `kwb watch`: decides where each panel goes for the terminal's size, then lets each
//! panel (`ui::panels`) render itself. Pure: it reads the [`App`] and writes a [`Buffer`];
//! nothing here does I/O or changes state, so a frame can be rendered into any buffer (tests,
//! benchmarks) and the runtime can ask the same layout where a mouse click landed.
//!
//! Layout, from wide to small:
//! * 80 columns and more: versions over diagnostics on the left, the tabs in the centre,
//!   Resources, Occupancy, Bandwidth and Timing stacked on the right;
//! * 48 to 79 columns: the right column is dropped;
//! * under 48 columns: the tabs alone, with a strip of the version list on top when there
//!   are 12 rows or more;
//! * the last row is the status line; a terminal of one row shows only that.
//!
//! Stacked panels get their wanted height when it fits; when it does not, each shrinks
//! towards a minimum, the more important ones keeping their height longest, and the least
//! important are dropped when not even the minimums fit. With no GPU, Bandwidth (which then
//! has nothing to show) is dropped as soon as the right column cannot give every panel its
//! wanted height, so that Timing can say in full why there is no GPU.

use crate::ui::app::{App, GpuState};
use crate::ui::panels::{
    bandwidth, diagnostics, help, occupancy, resources, status, tabs, timing, versions,
};
use crate::ui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::Frame;

/// Narrowest terminal that gets the right column.
const THREE_COLUMNS: u16 = 80;
/// Narrowest terminal that gets the left column.
const TWO_COLUMNS: u16 = 48;
/// Shortest terminal that gets the version strip when there is no left column.
const STRIP_ROWS: u16 = 12;

/// Every panel's render function has this shape.
type PanelFn = fn(&App, &Theme, Rect, &mut Buffer);

/// Where each panel goes; `None` for a panel left out at this size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Screen {
    pub versions: Option<Rect>,
    pub diagnostics: Option<Rect>,
    pub tab_bar: Option<Rect>,
    pub body: Option<Rect>,
    pub resources: Option<Rect>,
    pub occupancy: Option<Rect>,
    pub bandwidth: Option<Rect>,
    pub timing: Option<Rect>,
    pub status: Option<Rect>,
}

/// Draws the whole screen into the frame.
pub fn draw(frame: &mut Frame, app: &App, theme: &Theme) {
    let area = frame.area();
    render(app, theme, area, frame.buffer_mut());
}

/// Renders the whole screen into `area` of `buf` (clipped to the buffer).
pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let s = layout(app, area);
    let panels: [(Option<Rect>, PanelFn); 9] = [
        (s.versions, versions::render),
        (s.diagnostics, diagnostics::render),
        (s.tab_bar, tabs::render_bar),
        (s.body, tabs::render_body),
        (s.resources, resources::render),
        (s.occupancy, occupancy::render),
        (s.bandwidth, bandwidth::render),
        (s.timing, timing::render),
        (s.status, status::render),
    ];
    for (rect, render) in panels {
        if let Some(rect) = rect.filter(|r| !r.is_empty()) {
            render(app, theme, rect, buf);
        }
    }
    if app.help {
        help::render(app, theme, area, buf);
    }
}

/// The version under the terminal cell (`column`, `row`), for a mouse click, when the screen
/// is `area`.
pub fn version_at(app: &App, area: Rect, column: u16, row: u16) -> Option<usize> {
    let list = layout(app, area).versions?;
    if !list.contains(Position::new(column, row)) {
        return None;
    }
    versions::version_at_row(app, list, row)
}

/// Where each panel goes on a screen of `area` (see the module doc for the rules).
pub fn layout(app: &App, area: Rect) -> Screen {
    let mut s = Screen::default();
    if area.is_empty() {
        return s;
    }
    let main = Rect::new(area.x, area.y, area.width, area.height - 1);
    s.status = Some(Rect::new(area.x, area.bottom() - 1, area.width, 1));
    if main.is_empty() {
        return s;
    }
    let w = main.width;
    let (left_w, right_w) = if w >= THREE_COLUMNS {
        ((w * 22 / 100).clamp(18, 30), (w * 30 / 100).clamp(28, 44))
    } else if w >= TWO_COLUMNS {
        ((w * 28 / 100).clamp(16, 22), 0)
    } else {
        (0, 0)
    };
    let centre_x = main.x + left_w;
    let mut centre = Rect::new(centre_x, main.y, w - left_w - right_w, main.height);
    if left_w > 0 {
        let left = Rect::new(main.x, main.y, left_w, main.height);
        let wants = [
            Want::new(versions::wanted_height(app), 3, 0),
            Want::new(3, 3, 1),
        ];
        [s.versions, s.diagnostics] = stack(left, &wants);
    } else if main.height >= STRIP_ROWS {
        let rows = versions::wanted_height(app).min(main.height / 3);
        s.versions = Some(Rect::new(main.x, main.y, w, rows));
        centre = Rect::new(main.x, main.y + rows, w, main.height - rows);
    }
    if right_w > 0 {
        let right = Rect::new(centre.right(), main.y, right_w, main.height);
        let resources = Want::new(resources::wanted_height(app, right_w), 3, 1);
        let occupancy = Want::new(occupancy::WANTED_HEIGHT, 5, 0);
        let bandwidth = Want::new(bandwidth::wanted_height(app, right_w), 3, 2);
        let timing = Want::new(timing::wanted_height(app, right_w), timing::MIN_HEIGHT, 3);
        let preferred = [resources, occupancy, bandwidth, timing]
            .iter()
            .map(|w| w.preferred)
            .sum::<u16>();
        if matches!(app.gpu, GpuState::Absent(_)) && preferred > right.height {
            // Without a GPU, Bandwidth has nothing to show: its rows go to Timing, which keeps
            // the CPU's check and says why there is no GPU.
            [s.resources, s.occupancy, s.timing] = stack(right, &[resources, occupancy, timing]);
        } else {
            [s.resources, s.occupancy, s.bandwidth, s.timing] =
                stack(right, &[resources, occupancy, bandwidth, timing]);
        }
    }
    if centre.height >= 4 {
        s.tab_bar = Some(Rect::new(centre.x, centre.y, centre.width, 1));
        s.body = Some(Rect::new(
            centre.x,
            centre.y + 1,
            centre.width,
            centre.height - 1,
        ));
    } else {
        s.body = Some(centre);
    }
    s
}

/// A stacked panel's wish: its preferred and minimum heights, and its rank (0 = the most
/// important: it grows first and is dropped last).
#[derive(Debug, Clone, Copy)]
struct Want {
    preferred: u16,
    min: u16,
    rank: u8,
}

impl Want {
    fn new(preferred: u16, min: u16, rank: u8) -> Want {
        Want {
            preferred: preferred.max(min),
            min,
            rank,
        }
    }
}

/// Splits `area` top to bottom among `wants` (see the module doc); rows left over go to the
/// last panel shown.
fn stack<const N: usize>(area: Rect, wants: &[Want; N]) -> [Option<Rect>; N] {
    let mut by_rank: Vec<usize> = (0..N).collect();
    by_rank.sort_by_key(|&i| wants[i].rank);
    let mut shown = [true; N];
    let mins = |shown: &[bool; N]| -> u32 {
        (0..N)
            .filter(|&i| shown[i])
            .map(|i| u32::from(wants[i].min))
            .sum()
    };
    // The most important panel stays, shrunk below its minimum if it must.
    for &i in by_rank.iter().skip(1).rev() {
        if mins(&shown) <= u32::from(area.height) {
            break;
        }
        shown[i] = false;
    }
    let mut heights = [0u16; N];
    let mut spare = area.height;
    for i in (0..N).filter(|&i| shown[i]) {
        heights[i] = wants[i].min.min(spare);
        spare -= heights[i];
    }
    for &i in by_rank.iter().filter(|&&i| shown[i]) {
        let grow = (wants[i].preferred - wants[i].min).min(spare);
        heights[i] += grow;
        spare -= grow;
    }
    if let Some(last) = (0..N).rev().find(|&i| shown[i]) {
        heights[last] += spare;
    }
    let mut y = area.y;
    let mut out = [None; N];
    for i in (0..N).filter(|&i| shown[i]) {
        out[i] = Some(Rect::new(area.x, y, area.width, heights[i]));
        y += heights[i];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_shrinks_then_drops_the_least_important() {
        let wants = [Want::new(6, 3, 1), Want::new(8, 5, 0), Want::new(10, 3, 2)];
        let heights = |h: u16| stack(Rect::new(0, 0, 10, h), &wants).map(|r| r.map(|r| r.height));
        assert_eq!(heights(40), [Some(6), Some(8), Some(26)]);
        assert_eq!(heights(12), [Some(3), Some(6), Some(3)]);
        assert_eq!(heights(10), [Some(3), Some(7), None]);
        assert_eq!(heights(4), [None, Some(4), None]);
        assert_eq!(heights(0), [None, Some(0), None]);
    }
}
