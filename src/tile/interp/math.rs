//! The float functions the interpreter needs beyond Rust's: `erf` (not in `std`), and `fma`
//! rounded once to f32 (an `f64` fused multiply-add followed by a rounding to f32 can round
//! twice; computing the sum rounded to odd first makes the second rounding the only one).

/// `a * b + c` for f32 operands (held exactly as f64), rounded once to f32.
pub(super) fn fma_f32(a: f64, b: f64, c: f64) -> f64 {
    // The product of two f32s is exact in f64 (48 significant bits).
    let p = a * b;
    let s = p + c;
    if !s.is_finite() {
        return f64::from(s as f32);
    }
    // TwoSum: the exact error of the addition.
    let bp = s - c;
    let e = (p - bp) + (c - (s - bp));
    let mut bits = s.to_bits();
    if e != 0.0 && bits & 1 == 0 {
        // Round to odd: step to the neighbour on the side of the true value.
        if (e > 0.0) == (s > 0.0) {
            bits += 1;
        } else {
            bits -= 1;
        }
    }
    f64::from(f64::from_bits(bits) as f32)
}

/// The error function, to about 1e-15 relative: a Maclaurin series near zero and the continued
/// fraction of `erfc` further out.
pub(super) fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        // erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1))
        let x2 = a * a;
        let mut term = a;
        let mut sum = a;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs() && n < 200.0 {
            n += 1.0;
            term *= -x2 / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if a < 6.0 {
        1.0 - erfc_cf(a)
    } else {
        1.0
    };
    r.copysign(x)
}

/// The complementary error function, without the cancellation of `1 - erf(x)` for large x.
pub(super) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.5 {
        1.0 - erf(x)
    } else if x < 30.0 {
        erfc_cf(x)
    } else {
        0.0
    }
}

/// The inverse error function: Newton's method on `erf` from a logarithmic first guess.
/// NaN outside [-1, 1], ±inf at ±1.
pub(super) fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y < 0.0 {
        return -erfinv(-y);
    }
    if y == 1.0 {
        return f64::INFINITY;
    }
    if y == 0.0 {
        return y;
    }
    // Winitzki's approximation (a few parts in 1e3), then Newton steps on
    // f(x) = erf(x) - y, written `(1 - y) - erfc(x)` near 1 where `erf` loses digits.
    let a = 0.147;
    let l = (1.0 - y * y).ln();
    let t = 2.0 / (std::f64::consts::PI * a) + l / 2.0;
    let mut x = ((t * t - l / a).sqrt() - t).sqrt();
    for _ in 0..50 {
        let f = if y > 0.5 {
            (1.0 - y) - erfc(x)
        } else {
            erf(x) - y
        };
        let d = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
        if d == 0.0 || f == 0.0 {
            break;
        }
        let step = f / d;
        x -= step;
        if step.abs() <= 1e-16 * x.abs() {
            break;
        }
    }
    x
}

/// erfc(x) for x >= 2.5, by the continued fraction
/// erfc(x) = exp(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))),
/// evaluated from the tail.
fn erfc_cf(x: f64) -> f64 {
    let mut f = x;
    for k in (1..=80).rev() {
        f = x + (f64::from(k) / 2.0) / f;
    }
    (-x * x).exp() / (std::f64::consts::PI.sqrt() * f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
            (-1.5, -0.966_105_146_475_310_7),
        ] {
            assert!((erf(x) - want).abs() < 1e-14, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn erfc_and_erfinv_match_known_values() {
        assert!((erfc(3.0) - 2.209_049_699_858_544e-5).abs() < 1e-18);
        assert!((erfc(-1.0) - 1.842_700_792_949_715).abs() < 1e-14);
        for y in [-0.999_999, -0.9, -0.3, 1e-8, 0.5, 0.75, 0.99, 0.999_999_9] {
            let x = erfinv(y);
            assert!((erf(x) - y).abs() < 1e-14, "erfinv({y}) = {x}");
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert!(erfinv(1.5).is_nan());
    }

    #[test]
    fn fma_rounds_once() {
        // (1 + 2^-12)^2 + 2^-80 = 1 + 2^-11 + 2^-24 + 2^-80: just above the halfway point
        // between two f32s. One rounding goes up; rounding to f64 first would drop the 2^-80,
        // land on the tie and go down to the even neighbour.
        let a = 1.0 + 2f64.powi(-12);
        let c = 2f64.powi(-80);
        assert_eq!(fma_f32(a, a, c), 1.0 + 2f64.powi(-11) + 2f64.powi(-23));
        assert_eq!(f64::from(a.mul_add(a, c) as f32), 1.0 + 2f64.powi(-11));
        assert_eq!(fma_f32(2.0, 3.0, 1.0), 7.0);
    }
}
