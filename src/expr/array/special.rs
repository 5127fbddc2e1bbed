//! Scalar special functions the reference expressions need but `std` lacks: `erf` (for exact
//! GELU), numerically stable `sigmoid`, and the two GELU forms kernels implement.
//!
//! `erf` is written here to full double precision (relative error below 1e-15 over the whole
//! line) because reference outputs are compared against GPU results at tight tolerances:
//! - `|x| < 2`: the everywhere-convergent series
//!   `erf(x) = 2/√π · e^(-x²) · Σ_k (2x²)^k · x / (1·3·5···(2k+1))`, whose terms are all positive
//!   (no cancellation), summed innermost-first in nested form;
//! - `2 ≤ |x| < 6`: `1 - erfc(x)`, with `erfc` from its Laplace continued fraction
//!   `erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))` evaluated backwards;
//! - `|x| ≥ 6`: `±1` (erfc(6) ≈ 2e-17 is below half an ulp of 1).
//!
//! `e^(-x²)` is computed with `x²` split into an exact high part and a small correction, since
//! rounding `x²` alone would cost up to ~8e-16 relative at `x = 2`.

use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI};

/// Terms of the series used below `|x| = 2`, by range of `|x|`.
const SERIES_TERMS: [(f64, usize); 3] = [(0.5, 14), (1.0, 20), (2.0, 32)];

/// `1 / (2k + 1)` for `k = 0..=32`, so the series loop multiplies instead of dividing.
const INV_ODD: [f64; 33] = {
    let mut t = [0.0; 33];
    let mut k = 0;
    while k < 33 {
        t[k] = 1.0 / (2 * k + 1) as f64;
        k += 1;
    }
    t
};

/// `e^(-a²)` for `a ≥ 0` without the rounding error of forming `a²`.
fn exp_neg_sq(a: f64) -> f64 {
    // Keep the top 26 bits of the mantissa so that `hi * hi` is exact.
    let hi = f64::from_bits(a.to_bits() & 0xffff_ffff_f800_0000);
    let lo = a - hi;
    // a² = hi² + t with t = (a + hi)·lo, small; e^(-t) ≈ 1 - t + t²/2 to full precision.
    let t = (a + hi) * lo;
    (-(hi * hi)).exp() * (1.0 - t + 0.5 * t * t)
}

/// The error function, to within about 1e-15 relative.
pub(crate) fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.0 {
        let terms = SERIES_TERMS
            .iter()
            .find(|(below, _)| a < *below)
            .map_or(32, |&(_, n)| n);
        let q = 2.0 * a * a;
        let mut s = 1.0;
        for k in (1..=terms).rev() {
            s = 1.0 + q * INV_ODD[k] * s;
        }
        FRAC_2_SQRT_PI * exp_neg_sq(a) * a * s
    } else if a < 6.0 {
        let terms = if a < 3.0 {
            60
        } else if a < 4.0 {
            30
        } else {
            20
        };
        let mut t = a;
        for n in (1..=terms).rev() {
            t = a + (n as f64 * 0.5) / t;
        }
        1.0 - 0.5 * FRAC_2_SQRT_PI * exp_neg_sq(a) / t
    } else {
        1.0
    };
    r.copysign(x)
}

/// `1 / (1 + e^-x)`, without overflow for large `|x|`.
pub(crate) fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// GELU, tanh approximation: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub(crate) fn gelu_tanh(x: f64) -> f64 {
    const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
}

/// GELU, exact form: `0.5·x·(1 + erf(x/√2))`.
pub(crate) fn gelu_erf(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x * FRAC_1_SQRT_2))
}
