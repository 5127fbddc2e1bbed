//! The Roofline's logarithmic axes, worked out by hand: whole decades fitted around the values
//! to show, a value's step along an axis of so many cells (or braille dots), and the labels of
//! the decade ticks (`0.1`, `10`, `1k` flop/B; `100G`, `1T` FLOP/s).

/// Slack for values a rounding error away from a decade (log10 of 1000 may be 2.9999…).
const EPSILON: f64 = 1e-9;

/// A logarithmic axis from `10^lo` to `10^hi` (`lo < hi`), its ends on whole or half decades.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogAxis {
    pub lo: f64,
    pub hi: f64,
}

impl LogAxis {
    /// The shortest axis with ends on half decades that holds every positive, finite value in
    /// `values`, widened on both sides to at least `min_decades` (a whole or half number);
    /// `None` when there is no such value. (Half decades, not whole ones: a peak just past a
    /// decade would otherwise leave most of a decade of a short plot empty.)
    pub fn fit(values: impl IntoIterator<Item = f64>, min_decades: f64) -> Option<LogAxis> {
        let logs: Vec<f64> = values
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(f64::log10)
            .collect();
        if logs.is_empty() {
            return None;
        }
        let lo = logs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut lo, mut hi) = (
            (lo * 2.0 + EPSILON).floor() / 2.0,
            (hi * 2.0 - EPSILON).ceil() / 2.0,
        );
        let min_decades = min_decades.max(0.5);
        if hi - lo < min_decades {
            // Half of what is missing above (rounded down to half decades), the rest below.
            hi += (min_decades - (hi - lo) + EPSILON).floor() / 2.0;
            lo = hi - min_decades;
        }
        Some(LogAxis { lo, hi })
    }

    /// Where `v` lies: 0 at `10^lo`, 1 at `10^hi`, outside [0, 1] off the axis (NaN for a value
    /// that is not positive).
    pub fn fraction(&self, v: f64) -> f64 {
        if v.is_nan() || v <= 0.0 {
            return f64::NAN;
        }
        let f = (v.log10() - self.lo) / (self.hi - self.lo);
        // A value a rounding error off an end is on it.
        if (-EPSILON..0.0).contains(&f) {
            0.0
        } else if (1.0..1.0 + EPSILON).contains(&f) {
            1.0
        } else {
            f
        }
    }

    /// The step `v` falls on when the axis is `steps` steps long (0 at `10^lo`, `steps - 1` at
    /// `10^hi`), or `None` off the axis.
    pub fn step(&self, v: f64, steps: u16) -> Option<u16> {
        let f = self.fraction(v);
        if !(0.0..=1.0).contains(&f) || steps == 0 {
            return None;
        }
        Some((f * f64::from(steps - 1)).round() as u16)
    }

    /// The value at (fractional) step `s` of `steps`: the inverse of [`LogAxis::step`].
    pub fn value_at(&self, s: f64, steps: u16) -> f64 {
        let f = if steps > 1 {
            s / f64::from(steps - 1)
        } else {
            0.0
        };
        10f64.powf(self.lo + f * (self.hi - self.lo))
    }

    /// The whole decades on the axis, as exponents.
    pub fn decades(&self) -> impl Iterator<Item = i32> {
        (self.lo - EPSILON).ceil() as i32..=(self.hi + EPSILON).floor() as i32
    }
}

/// `10^exp` flop per byte as a tick label: `1e-3`, `0.01`, `0.1`, `1`, `10`, `100`, `1k` …
pub fn intensity_label(exp: i32) -> String {
    match exp {
        -2..=-1 => format!("{}", 10f64.powi(exp)),
        0..=2 => format!("{}", 10i64.pow(exp as u32)),
        _ => si_label(exp),
    }
}

/// `10^exp` FLOP/s as a tick label: `1G`, `10G`, `100G`, `1T`, `1P` …
pub fn flops_label(exp: i32) -> String {
    si_label(exp)
}

/// `10^exp` with an SI prefix (`1k`, `10M`, `100T`), or `1eN` outside k to E.
fn si_label(exp: i32) -> String {
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let (group, digits) = (exp.div_euclid(3), exp.rem_euclid(3));
    match usize::try_from(group).ok().and_then(|g| PREFIXES.get(g)) {
        Some(prefix) => format!("{}{prefix}", 10i64.pow(digits as u32)),
        None => format!("1e{exp}"),
    }
}

/// A rate in FLOP/s with three significant figures: `2.41 TFLOP/s`, `987 GFLOP/s`.
pub fn flops_text(v: f64) -> String {
    let (scale, unit) = match v {
        _ if v >= 1e15 => (1e15, "PFLOP/s"),
        _ if v >= 1e12 => (1e12, "TFLOP/s"),
        _ if v >= 1e9 => (1e9, "GFLOP/s"),
        _ => (1e6, "MFLOP/s"),
    };
    let x = v / scale;
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_fits_half_decades_around_its_values() {
        // 0.083 is 10^-1.08, 361 is 10^2.56: from 10^-1.5 to 10^3.
        let a = LogAxis::fit([0.083, 22.6, 361.0], 1.0).unwrap();
        assert_eq!(a, LogAxis { lo: -1.5, hi: 3.0 });
        assert_eq!(a.decades().collect::<Vec<_>>(), [-1, 0, 1, 2, 3]);
        // A value on a decade or a half decade does not open the next one.
        let a = LogAxis::fit([1.0, 1000.0], 1.0).unwrap();
        assert_eq!(a, LogAxis { lo: 0.0, hi: 3.0 });
        let a = LogAxis::fit([10f64.powf(0.5), 10f64.powf(2.5)], 1.0).unwrap();
        assert_eq!(a, LogAxis { lo: 0.5, hi: 2.5 });
        assert_eq!(a.decades().collect::<Vec<_>>(), [1, 2]);
        // A tensor-core peak just past 1 PFLOP/s ends the axis half a decade on, not a whole.
        let a = LogAxis::fit([3.1e12, 1.0705e15], 2.0).unwrap();
        assert_eq!(a, LogAxis { lo: 12.0, hi: 15.5 });
        // Too short: widened on both sides to the minimum, the values near its middle.
        let a = LogAxis::fit([5e12], 2.0);
        assert_eq!(a, Some(LogAxis { lo: 11.5, hi: 13.5 }));
        let a = LogAxis::fit([1e12], 2.0);
        assert_eq!(a, Some(LogAxis { lo: 11.0, hi: 13.0 }));
        let a = LogAxis::fit([230e9, 476e9], 2.0);
        assert_eq!(a, Some(LogAxis { lo: 10.5, hi: 12.5 }));
        // Nothing positive and finite: no axis.
        let a = LogAxis::fit([0.0, -1.0, f64::NAN, f64::INFINITY], 1.0);
        assert_eq!(a, None);
    }

    #[test]
    fn values_at_the_ends_land_on_the_first_and_last_steps() {
        let a = LogAxis { lo: -1.0, hi: 3.0 };
        assert_eq!(a.step(0.1, 41), Some(0));
        assert_eq!(a.step(1000.0, 41), Some(40));
        // Each decade is a quarter of the axis.
        assert_eq!(a.step(1.0, 41), Some(10));
        assert_eq!(a.step(10.0, 41), Some(20));
        assert_eq!(a.step(100.0, 41), Some(30));
        // Off the axis, or not positive: no step.
        assert_eq!(a.step(0.099, 41), None);
        assert_eq!(a.step(1001.0, 41), None);
        assert_eq!(a.step(0.0, 41), None);
        assert_eq!(a.step(-5.0, 41), None);
        assert_eq!(a.step(1.0, 0), None);
        // A rounding error off the end is on it.
        assert_eq!(a.step(1000.0 * (1.0 + 1e-12), 41), Some(40));
        // value_at inverts step.
        for s in [0u16, 7, 20, 40] {
            assert_eq!(a.step(a.value_at(f64::from(s), 41), 41), Some(s));
        }
    }

    #[test]
    fn a_point_on_the_ridge_maps_where_the_slope_meets_the_ceiling() {
        // H100: 2962.5 GB/s, 66.9 TFLOP/s FP32: the ridge is at 22.6 flop/B.
        let (bw, peak) = (2962.5e9, 66.9e12);
        let ridge = peak / bw;
        let x = LogAxis { lo: -2.0, hi: 3.0 };
        let y = LogAxis { lo: 10.0, hi: 15.0 };
        let (cols, rows) = (101, 51);
        let col = x.step(ridge, cols).unwrap();
        // The slope at the ridge's column reaches the ceiling's row, and the point is there.
        let slope_row = y.step(bw * x.value_at(f64::from(col), cols), rows).unwrap();
        assert_eq!(slope_row, y.step(peak, rows).unwrap());
        // 22.6 is 3.354 decades into 5: column 67 of 0..=100.
        assert_eq!(col, 67);
    }

    #[test]
    fn tick_labels_read_as_numbers_with_si_prefixes() {
        let x: Vec<String> = (-3..=4).map(intensity_label).collect();
        assert_eq!(x, ["1e-3", "0.01", "0.1", "1", "10", "100", "1k", "10k"]);
        let y: Vec<String> = (9..=15).map(flops_label).collect();
        assert_eq!(y, ["1G", "10G", "100G", "1T", "10T", "100T", "1P"]);
        assert_eq!(flops_label(19), "10E");
        assert_eq!(flops_label(21), "1e21");
        assert_eq!(flops_text(2.414e12), "2.41 TFLOP/s");
        assert_eq!(flops_text(987.2e9), "987 GFLOP/s");
        assert_eq!(flops_text(66.9e12), "66.9 TFLOP/s");
    }
}
