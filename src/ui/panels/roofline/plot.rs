//! The Roofline's plot area as a grid of cells, drawn before anything touches a buffer: the
//! ceilings as braille dots (two columns and four rows of dots a cell), each labelled where its
//! label fits, then a marker per placed point, labelled with its version's name beside it
//! where that fits and otherwise numbered for the legend under the plot. Pure, so that the
//! unit tests can read a marker's column off the grid.

use super::model::Roofline;
use super::scale::{flops_text, LogAxis};
use crate::ui::panels::text::width as width_of;
use crate::ui::theme::Role;

/// A marker labelled beside it on the plot.
pub const LABELLED: char = '●';
/// Markers for the legend, in order; past them every marker is `+`.
const SYMBOLS: &str = "123456789abcdefghijklmnopqrstuvwxyz";

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Cell {
    /// Braille dots, in the bit order of U+2800.
    dots: u8,
    text: Option<(char, Role)>,
}

/// A `width` × `height` grid of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub width: u16,
    pub height: u16,
    cells: Vec<Cell>,
}

impl Grid {
    fn new(width: u16, height: u16) -> Grid {
        let n = usize::from(width) * usize::from(height);
        Grid {
            width,
            height,
            cells: vec![Cell::default(); n],
        }
    }

    fn at(&self, x: u16, y: u16) -> Cell {
        self.cells[usize::from(y) * usize::from(self.width) + usize::from(x)]
    }

    fn at_mut(&mut self, x: u16, y: u16) -> &mut Cell {
        &mut self.cells[usize::from(y) * usize::from(self.width) + usize::from(x)]
    }

    /// Sets the dot at (`dx`, `dy`) of the grid's dots, `dy` counted up from the bottom.
    fn dot(&mut self, dx: i64, dy: i64) {
        let (w, h) = (i64::from(self.width) * 2, i64::from(self.height) * 4);
        if !(0..w).contains(&dx) || !(0..h).contains(&dy) {
            return;
        }
        let from_top = h - 1 - dy;
        const BITS: [[u8; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
        let bit = BITS[(dx % 2) as usize][(from_top % 4) as usize];
        self.at_mut((dx / 2) as u16, (from_top / 4) as u16).dots |= bit;
    }

    /// Whether `len` cells from (`x`, `y`) are inside and hold no text (and, unless
    /// `over_dots`, no dots).
    fn free(&self, x: i32, y: i32, len: u16, over_dots: bool) -> bool {
        let inside = x >= 0 && y >= 0 && y < i32::from(self.height);
        inside
            && x + i32::from(len) <= i32::from(self.width)
            && (0..len).all(|i| {
                let c = self.at(x as u16 + i, y as u16);
                c.text.is_none() && (over_dots || c.dots == 0)
            })
    }

    fn put(&mut self, x: u16, y: u16, text: &str, role: Role) {
        for (i, ch) in text.chars().enumerate() {
            if let Some(col) = x.checked_add(i as u16).filter(|c| *c < self.width) {
                self.at_mut(col, y).text = Some((ch, role));
            }
        }
    }

    /// What cell (`x`, `y`) shows, and in which role (`None` for an empty cell).
    pub fn show(&self, x: u16, y: u16) -> (char, Option<Role>) {
        let c = self.at(x, y);
        match c.text {
            Some((ch, role)) => (ch, Some(role)),
            None if c.dots != 0 => (
                char::from_u32(0x2800 + u32::from(c.dots)).unwrap_or(' '),
                Some(Role::Peak),
            ),
            None => (' ', None),
        }
    }

    /// Row `y` as text, for tests.
    pub fn row_text(&self, y: u16) -> String {
        (0..self.width).map(|x| self.show(x, y).0).collect()
    }
}

/// One marker that is numbered rather than labelled: its symbol and the points it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct Numbered {
    pub symbol: char,
    /// Indexes into `Roofline::points`.
    pub points: Vec<usize>,
}

/// The plot area drawn, with what it could not label.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub grid: Grid,
    pub x: LogAxis,
    pub y: LogAxis,
    pub numbered: Vec<Numbered>,
    /// Ceilings whose label found no room on the plot, as text for under it.
    pub unlabelled: Vec<String>,
}

/// The axes that hold every point and ceiling: the intensities and the ridges across, the
/// achieved FLOP/s and the compute peaks up. `None` when that leaves an axis empty.
pub fn axes(r: &Roofline) -> Option<(LogAxis, LogAxis)> {
    let c = &r.ceilings;
    let peaks = [c.fp32, c.tensor].into_iter().flatten();
    let ridges = peaks.clone().filter_map(|p| c.ridge(p));
    let x = LogAxis::fit(r.points.iter().map(|p| p.intensity).chain(ridges), 2.0)?;
    let y = LogAxis::fit(r.points.iter().map(|p| p.flops_per_s).chain(peaks), 2.0)?;
    Some((x, y))
}

/// The column of a plot `width` cells wide that holds intensity `v`: the cell of its dot, so
/// that a point on a ceiling shares the ceiling's cell. `None` off the axis.
pub fn column(x: &LogAxis, v: f64, width: u16) -> Option<u16> {
    x.step(v, width.checked_mul(2)?).map(|dot| dot / 2)
}

/// The row (from the top) of a plot `height` cells high that holds `v` FLOP/s, as [`column`].
pub fn row(y: &LogAxis, v: f64, height: u16) -> Option<u16> {
    y.step(v, height.checked_mul(4)?)
        .map(|dot| height - 1 - dot / 4)
}

/// `v` in TFLOP/s for a ceiling's label: `66.9T`, `1071T`.
fn tera(v: f64) -> String {
    let t = v / 1e12;
    if t >= 100.0 {
        format!("{t:.0}T")
    } else {
        format!("{t:.1}T")
    }
}

/// A line between two points in dot coordinates (y up), the parts off the grid left out.
fn segment(g: &mut Grid, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
    let n = (x1 - x0).abs().max((y1 - y0).abs()).ceil().max(1.0) as i64;
    for k in 0..=n {
        let t = k as f64 / n as f64;
        let (x, y) = (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
        g.dot(x.round() as i64, y.round() as i64);
    }
}

/// Draws the ceilings and the points of `r` on `x` × `y` into a `width` × `height` plot.
/// `selected` (an index into `App::versions`) is drawn and labelled first.
pub fn plot(
    r: &Roofline,
    x: LogAxis,
    y: LogAxis,
    width: u16,
    height: u16,
    selected: usize,
) -> Chart {
    let mut g = Grid::new(width, height);
    let unlabelled = ceilings(&mut g, r, &x, &y);
    let numbered = points(&mut g, r, &x, &y, selected);
    Chart {
        grid: g,
        x,
        y,
        numbered,
        unlabelled,
    }
}

/// Draws the ceilings and labels them; returns the labels that found no room, as text.
fn ceilings(g: &mut Grid, r: &Roofline, x: &LogAxis, y: &LogAxis) -> Vec<String> {
    let (width, height) = (g.width, g.height);
    let (dw, dh) = (f64::from(width) * 2.0 - 1.0, f64::from(height) * 4.0 - 1.0);
    let dot = |v: f64, axis: &LogAxis, span: f64| axis.fraction(v) * span;
    let c = r.ceilings;
    // The bandwidth slope, from the left edge to where it meets the highest compute ceiling.
    if let Some(bw) = c.bytes_per_s {
        let left = 10f64.powf(x.lo);
        let top = c.tensor.or(c.fp32);
        let end = top.and_then(|t| c.ridge(t)).unwrap_or(10f64.powf(x.hi));
        let from = (0.0, dot(bw * left, y, dh));
        let to = (dot(end, x, dw), dot(bw * end, y, dh));
        segment(g, from, to);
    }
    // The flat compute ceilings, from their ridge (the left edge without a bandwidth peak).
    let flats: Vec<(&str, f64, f64)> = [("FP32", c.fp32), ("tensor", c.tensor)]
        .into_iter()
        .filter_map(|(name, peak)| Some((name, peak?, dot(peak?, y, dh))))
        .collect();
    for &(_, peak, level) in &flats {
        let start = c.ridge(peak).map_or(0.0, |i| dot(i, x, dw).max(0.0));
        segment(g, (start, level), (dw, level));
    }
    // Their labels: a flat line's right-aligned above it (else on it), the slope's left of it.
    let mut unlabelled = Vec::new();
    for (name, peak, level) in flats {
        let label = format!("{name} {}", tera(peak));
        let len = width_of(&label);
        let row = i32::from(height) - 1 - (level.round() / 4.0).floor() as i32;
        let at = i32::from(width) - i32::from(len);
        if g.free(at, row - 1, len, false) {
            g.put(at as u16, (row - 1) as u16, &label, Role::Peak);
        } else if g.free(at, row, len, true) {
            g.put(at as u16, row as u16, &label, Role::Peak);
        } else {
            unlabelled.push(format!("{name} {}", flops_text(peak)));
        }
    }
    if let Some(bw) = c.bytes_per_s {
        let label = format!("{:.0} GB/s", bw / 1e9);
        if !label_slope(g, &label) {
            unlabelled.push(format!("bandwidth {label}"));
        }
    }
    unlabelled
}

/// Draws a marker per cell holding points, the selected version's first, each labelled with
/// its versions' names beside it where they fit; returns the markers numbered instead.
fn points(g: &mut Grid, r: &Roofline, x: &LogAxis, y: &LogAxis, selected: usize) -> Vec<Numbered> {
    let mut groups: Vec<((u16, u16), Vec<usize>)> = Vec::new();
    for (i, p) in r.points.iter().enumerate() {
        let (Some(col), Some(row)) = (
            column(x, p.intensity, g.width),
            row(y, p.flops_per_s, g.height),
        ) else {
            continue;
        };
        match groups.iter_mut().find(|(cell, _)| *cell == (col, row)) {
            Some((_, members)) => members.push(i),
            None => groups.push(((col, row), vec![i])),
        }
    }
    let is_selected = |members: &[usize]| members.iter().any(|&i| r.points[i].version == selected);
    groups.sort_by_key(|(_, members)| !is_selected(members));
    for ((cx, cy), members) in &groups {
        let role = if is_selected(members) {
            Role::Selected
        } else {
            Role::Bar
        };
        g.put(*cx, *cy, &LABELLED.to_string(), role);
    }
    let mut numbered = Vec::new();
    for ((cx, cy), members) in groups {
        let names: Vec<&str> = members.iter().map(|&i| r.points[i].name.as_str()).collect();
        let label = names.join(",");
        let len = width_of(&label);
        let (cx_, cy_) = (i32::from(cx), i32::from(cy));
        let role = if is_selected(&members) {
            Role::Accent
        } else {
            Role::Text
        };
        // Right of the marker, else left; clear of the ceilings if it can be, else over them.
        let right = (cx_ + 1, format!(" {label}"));
        let left = (cx_ - 1 - i32::from(len), format!("{label} "));
        let spot = [
            (&right, false),
            (&left, false),
            (&right, true),
            (&left, true),
        ]
        .into_iter()
        .find(|&(&(at, _), over)| g.free(at, cy_, len + 1, over));
        if let Some((&(at, ref text), _)) = spot {
            g.put(at as u16, cy, text, role);
        } else {
            let symbol = SYMBOLS.chars().nth(numbered.len()).unwrap_or('+');
            let (_, marker) = g.at(cx, cy).text.unwrap_or((LABELLED, Role::Bar));
            g.put(cx, cy, &symbol.to_string(), marker);
            numbered.push(Numbered {
                symbol,
                points: members,
            });
        }
    }
    numbered
}

/// Puts `label` above-left of the slope, on the first row (from the middle of the slope's rows
/// upwards, then downwards) where it fits between the plot's left edge and the slope.
fn label_slope(g: &mut Grid, label: &str) -> bool {
    let len = width_of(label);
    // Per row, the leftmost cell of the slope.
    let rows: Vec<(u16, u16)> = (0..g.height)
        .filter_map(|y| (0..g.width).find(|&x| g.at(x, y).dots != 0).map(|x| (y, x)))
        .collect();
    let mid = rows.len() / 2;
    let order = rows[..mid.min(rows.len())]
        .iter()
        .rev()
        .chain(rows[mid..].iter());
    for &(y, x) in order {
        let at = i32::from(x) - 1 - i32::from(len);
        if g.free(at, i32::from(y), len + 1, false) {
            g.put(at as u16, y, label, Role::Peak);
            return true;
        }
    }
    false
}

#[cfg(test)]
#[path = "plot_tests.rs"]
mod tests;
