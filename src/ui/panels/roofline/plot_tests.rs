//! The plot area: markers in the columns and rows the log axes give them, the ridge where the
//! slope meets a ceiling, labels beside markers or numbers when they do not fit, and the
//! ceilings' labels.

use super::*;
use crate::ui::panels::roofline::model::{Ceilings, IntensitySource, Point};

/// An H100's ceilings: 2962.5 GB/s, 66.9 TFLOP/s FP32, 1070.5 TFLOP/s tensor cores.
fn h100() -> Ceilings {
    Ceilings {
        bytes_per_s: Some(2962.5e9),
        fp32: Some(132.0 * 1.98e9 * 256.0),
        tensor: Some(132.0 * 1.98e9 * 4096.0),
    }
}

fn point(name: &str, version: usize, intensity: f64, flops_per_s: f64) -> Point {
    Point {
        name: name.into(),
        version,
        intensity,
        flops_per_s,
        source: IntensitySource::FlopsBytes,
    }
}

fn roofline(ceilings: Ceilings, points: Vec<Point>) -> Roofline {
    Roofline {
        ceilings,
        bandwidth_kind: None,
        device_note: None,
        points,
        unplaced: Vec::new(),
        swept: false,
    }
}

/// The cells of the grid showing `ch`, as (column, row).
fn find(g: &Grid, ch: char) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    for y in 0..g.height {
        for x in 0..g.width {
            if g.show(x, y).0 == ch {
                out.push((x, y));
            }
        }
    }
    out
}

/// The whole grid as text, for failure messages.
fn dump(g: &Grid) -> String {
    (0..g.height).map(|y| g.row_text(y) + "|\n").collect()
}

fn draw(r: &Roofline, width: u16, height: u16) -> Chart {
    let (x, y) = axes(r).unwrap();
    plot(r, x, y, width, height, usize::MAX)
}

#[test]
fn the_axes_hold_the_points_and_the_ridges() {
    let r = roofline(
        h100(),
        vec![
            point("v1", 0, 1.0 / 12.0, 200e9),
            point("mm", 1, 1300.0, 600e12),
        ],
    );
    let (x, y) = axes(&r).unwrap();
    // 0.083 .. 1300 flop/B (10^-1.08 .. 10^3.11); the ridges (22.6, 361) lie inside.
    assert_eq!(x, LogAxis { lo: -1.5, hi: 3.5 });
    // 200 GFLOP/s .. the tensor peak, 1.07 PFLOP/s (10^11.3 .. 10^15.03).
    assert_eq!(y, LogAxis { lo: 11.0, hi: 15.5 });
    // No ceilings and no points: nothing to fit.
    assert_eq!(axes(&roofline(Ceilings::default(), Vec::new())), None);
    // A bandwidth peak alone has no ridge: without points, no axes either.
    let bw = Ceilings {
        bytes_per_s: Some(1e12),
        ..Ceilings::default()
    };
    assert_eq!(axes(&roofline(bw, Vec::new())), None);
}

#[test]
fn markers_sit_in_the_columns_and_rows_of_their_values() {
    let r = roofline(
        h100(),
        vec![
            point("v1", 0, 1.0 / 12.0, 200e9),
            point("mm", 1, 1300.0, 600e12),
        ],
    );
    let c = draw(&r, 60, 20);
    let markers = find(&c.grid, LABELLED);
    assert_eq!(markers.len(), 2);
    // A marker goes in the cell of its braille dot (two a cell across, four up). 0.083 flop/B
    // is 0.42 of the 5 decades: dot 10 of 0..=119, column 5; 200 GFLOP/s is 0.30 of 4.5
    // decades: dot 5 of 0..=79, the second row from the bottom.
    assert!(markers.contains(&(5, 18)), "{markers:?}\n{}", dump(&c.grid));
    assert_eq!(column(&c.x, 1.0 / 12.0, 60), Some(5));
    // 1300 flop/B: 4.61 of 5 decades, dot 110, column 55; 600 TFLOP/s, 3.78 of 4.5 decades,
    // dot 66, the 17th row from the bottom.
    assert!(markers.contains(&(55, 3)), "{markers:?}");
    // Each labelled beside its marker, to the right.
    let row: String = c.grid.row_text(18).chars().skip(5).take(5).collect();
    assert_eq!(row, "● v1 ", "{}", dump(&c.grid));
    assert!(c.grid.row_text(3).contains("● mm"), "{}", dump(&c.grid));
    assert!(c.numbered.is_empty());
}

#[test]
fn points_on_the_axes_ends_land_in_the_first_and_last_columns() {
    // No ceilings: the axes are the points' decades exactly.
    let r = roofline(
        Ceilings::default(),
        vec![point("lo", 0, 0.1, 1e9), point("hi", 1, 1000.0, 1e12)],
    );
    let c = draw(&r, 40, 12);
    assert_eq!(
        (c.x, c.y),
        (LogAxis { lo: -1.0, hi: 3.0 }, LogAxis { lo: 9.0, hi: 12.0 })
    );
    let markers = find(&c.grid, LABELLED);
    assert!(markers.contains(&(0, 11)), "{markers:?}");
    assert!(markers.contains(&(39, 0)), "{markers:?}");
    // The one at the right edge has no room to its right: labelled on its left.
    assert!(
        c.grid.row_text(0).ends_with("hi ●"),
        "{}",
        c.grid.row_text(0)
    );
}

#[test]
fn a_point_on_the_ridge_sits_where_the_slope_meets_the_ceiling() {
    // The bandwidth slope and the FP32 roof alone: the slope ends at their ridge.
    let ceilings = Ceilings {
        tensor: None,
        ..h100()
    };
    let fp32 = ceilings.fp32.unwrap();
    let ridge = ceilings.ridge(fp32).unwrap();
    let empty = draw(&roofline(ceilings, vec![point("x", 9, 1.0, 1e12)]), 60, 20);
    let g = &empty.grid;
    let (col, row) = (
        column(&empty.x, ridge, 60).unwrap(),
        super::row(&empty.y, fp32, 20).unwrap(),
    );
    // Without a point there, the ridge's cell holds dots of the slope and the roof; the roof
    // runs on from it to the right edge, and no line rises above its row.
    let braille = |ch: char| ('\u{2801}'..='\u{28ff}').contains(&ch);
    assert!(braille(g.show(col, row).0), "{}", dump(g));
    assert!((col..60).all(|x| braille(g.show(x, row).0)), "{}", dump(g));
    let above = (0..row).flat_map(|y| (0..60).map(move |x| (x, y)));
    assert!(
        !above.into_iter().any(|(x, y)| braille(g.show(x, y).0)),
        "{}",
        dump(g)
    );
    // The slope comes up from the left to that cell: the row below has dots left of it.
    assert!(
        (0..col).any(|x| braille(g.show(x, row + 1).0)),
        "{}",
        dump(g)
    );
    // A point exactly on the ridge takes that very cell.
    let on = roofline(
        ceilings,
        vec![point("r", 0, ridge, fp32), point("x", 9, 1.0, 1e12)],
    );
    let on = draw(&on, 60, 20);
    assert!(
        find(&on.grid, LABELLED).contains(&(col, row)),
        "{}",
        dump(&on.grid)
    );
}

#[test]
fn crowded_markers_share_a_label_or_get_numbers() {
    // Two versions in one cell: one marker, both names.
    let r = roofline(
        Ceilings::default(),
        vec![
            point("v7", 0, 0.1667, 475e9),
            point("v8", 1, 0.1668, 476e9),
            point("v1", 2, 10.0, 1e12),
        ],
    );
    let c = draw(&r, 40, 10);
    assert_eq!(find(&c.grid, LABELLED).len(), 2);
    assert!((0..10).any(|y| c.grid.row_text(y).contains("● v7,v8")));
    // Names too long for either side: numbered, for the legend.
    let long = roofline(
        Ceilings::default(),
        vec![
            point("a_long_version_name", 0, 1.0, 1e10),
            point("another_long_name", 1, 100.0, 1e12),
        ],
    );
    let c = draw(&long, 16, 6);
    assert_eq!(
        c.numbered,
        [
            Numbered {
                symbol: '1',
                points: vec![0]
            },
            Numbered {
                symbol: '2',
                points: vec![1]
            },
        ]
    );
    assert_eq!(find(&c.grid, '1'), [(0, 5)]);
    assert_eq!(find(&c.grid, '2'), [(15, 0)]);
}

#[test]
fn every_ceiling_is_labelled() {
    let r = roofline(h100(), vec![point("v1", 0, 1.0 / 12.0, 200e9)]);
    let c = draw(&r, 60, 20);
    let text: String = (0..20).map(|y| c.grid.row_text(y) + "\n").collect();
    assert!(text.contains("FP32 66.9T"), "{text}");
    assert!(text.contains("tensor 1071T"), "{text}");
    assert!(text.contains("2962 GB/s"), "{text}");
    assert!(c.unlabelled.is_empty());
    // Too narrow for the tensor label: said under the plot instead.
    let c = draw(&r, 10, 20);
    assert!(
        c.unlabelled.iter().any(|u| u == "tensor 1.07 PFLOP/s"),
        "{:?}",
        c.unlabelled
    );
    // No bandwidth peak: the flat lines run from the left edge.
    let flat = Ceilings {
        bytes_per_s: None,
        ..h100()
    };
    let c = draw(&roofline(flat, vec![point("v1", 0, 1.0, 1e12)]), 30, 12);
    let fp32_row = row(&c.y, flat.fp32.unwrap(), 12).unwrap();
    assert_ne!(c.grid.show(0, fp32_row).0, ' ');
}
