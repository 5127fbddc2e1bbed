//! Deciding whether a kernel's output is right: an element-wise NumPy-style `allclose` against
//! the f64 reference, plus checks that catch outputs which pass by accident or by design (elements
//! never written, NaN or Inf the reference does not have, an all-zero output). The result is a
//! [`CheckReport`] with the counts, error norms, the first failing element and one line saying why.

use super::inputs::{poison_bits, with_elem, Elem, CHUNK};
use crate::workspace::DType;
use rayon::prelude::*;
use serde::Serialize;

/// An element passes when `|out - ref| <= atol + rtol * |ref|`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Tolerance {
    pub const fn new(rtol: f64, atol: f64) -> Tolerance {
        Tolerance { rtol, atol }
    }

    /// This tolerance with any value a workspace sets taking the place of the default.
    pub fn with_overrides(self, rtol: Option<f64>, atol: Option<f64>) -> Tolerance {
        Tolerance::new(rtol.unwrap_or(self.rtol), atol.unwrap_or(self.atol))
    }
}

/// The tolerance used when a workspace sets none, by output dtype:
///
/// | dtype | rtol | atol | why |
/// |---|---|---|---|
/// | f64 | 1e-10 | 1e-12 | reordered f64 sums differ by far less; anything larger is a bug |
/// | f32 | 1e-5 | 1e-5 | ~80 ulp: room for long reductions summed in another order, whose results near zero carry absolute error |
/// | f16 | 2e-3 | 1e-3 | 2 ulp (eps = 2^-10): the output's own rounding plus some f16 arithmetic |
/// | bf16 | 1.6e-2 | 1e-2 | 2 ulp (eps = 2^-7), the same reasoning |
/// | integers, bool | 0 | 0 | integers must match exactly |
pub fn default_tolerance(dtype: DType) -> Tolerance {
    let (rtol, atol) = match dtype {
        DType::F64 => (1e-10, 1e-12),
        DType::F32 => (1e-5, 1e-5),
        DType::F16 => (2e-3, 1e-3),
        DType::BF16 => (1.6e-2, 1e-2),
        DType::I32 | DType::I64 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => (0.0, 0.0),
    };
    Tolerance::new(rtol, atol)
}

/// The first element that failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    pub index: u64,
    pub multi_index: Vec<usize>,
    pub got: f64,
    pub expected: f64,
}

/// The outcome of comparing one output buffer with its reference.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckReport {
    pub passed: bool,
    pub elements: u64,
    /// Elements that failed for any reason, including the `unwritten` and `nan_or_inf` ones.
    pub mismatches: u64,
    /// Elements still holding the poison pattern (see [`crate::run::host::inputs::poison`]).
    pub unwritten: u64,
    /// Elements that are NaN or ±Inf where the reference is finite.
    pub nan_or_inf: u64,
    /// Over elements where output and reference are both finite.
    pub max_abs_error: f64,
    /// `||out - ref||2 / ||ref||2` over elements where both are finite; `||out - ref||2` itself
    /// when the reference's norm is 0 (so 0 when both are all zeros).
    pub rel_l2_error: f64,
    pub first_mismatch: Option<Mismatch>,
    /// One line saying why the check failed; `None` when it passed.
    pub failure: Option<String>,
    pub tolerance: Tolerance,
}

/// Per-chunk tallies, combined in chunk order so results do not depend on thread count.
#[derive(Default)]
struct Tally {
    mismatches: u64,
    unwritten: u64,
    nan_or_inf: u64,
    first: Option<u64>,
    max_abs: f64,
    diff_sq: f64,
    ref_sq: f64,
    ref_nonfinite: bool,
    /// Some finite reference element is farther from 0 than the tolerance allows: an output
    /// of zeros would not pass there.
    ref_beyond_zero: bool,
    out_nonzero: bool,
}

impl Tally {
    fn merge(mut self, c: Tally) -> Tally {
        self.mismatches += c.mismatches;
        self.unwritten += c.unwritten;
        self.nan_or_inf += c.nan_or_inf;
        self.first = self.first.or(c.first);
        self.max_abs = self.max_abs.max(c.max_abs);
        self.diff_sq += c.diff_sq;
        self.ref_sq += c.ref_sq;
        self.ref_nonfinite |= c.ref_nonfinite;
        self.ref_beyond_zero |= c.ref_beyond_zero;
        self.out_nonzero |= c.out_nonzero;
        self
    }
}

/// Tallies one chunk of output elements (`E`) starting at flat index `base`.
fn tally<E: Elem>(out: &[u8], reference: &[f64], base: usize, tol: Tolerance) -> Tally {
    // A bool is written 0 or 1, never the sentinel's byte.
    let int = !E::DTYPE.is_float() && E::DTYPE != DType::Bool;
    let poison = poison_bits(E::DTYPE);
    let mut t = Tally::default();
    for (j, (b, &r)) in out.chunks_exact(E::SIZE).zip(reference).enumerate() {
        let o = E::load(b);
        t.out_nonzero |= o != 0.0;
        // An integer output equal to the sentinel is a written value if the reference says so.
        let ok = if E::bits(b) == poison && !(int && o == r) {
            t.unwritten += 1;
            false
        } else if !r.is_finite() {
            t.ref_nonfinite = true;
            o == r || (o.is_nan() && r.is_nan())
        } else if !o.is_finite() {
            t.nan_or_inf += 1;
            false
        } else {
            let d = (o - r).abs();
            t.ref_beyond_zero |= r.abs() > tol.atol + tol.rtol * r.abs();
            t.max_abs = t.max_abs.max(d);
            t.diff_sq += d * d;
            t.ref_sq += r * r;
            d <= tol.atol + tol.rtol * r.abs()
        };
        if !ok {
            t.mismatches += 1;
            t.first.get_or_insert((base + j) as u64);
        }
    }
    t
}

/// Compares `out_bytes` (little-endian elements of `dtype`, row-major `shape`) with `reference`.
/// Never panics: a size disagreement gives a failing report that says what disagrees.
pub fn check(
    out_bytes: &[u8],
    dtype: DType,
    shape: &[usize],
    reference: &[f64],
    tol: Tolerance,
) -> CheckReport {
    let (size, len, m) = (dtype.size() as usize, out_bytes.len(), reference.len());
    let n = len / size;
    let numel = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let holds = numel.map_or("too many".to_string(), |m| m.to_string());
    let problem = if len % size != 0 {
        format!("output has {len} bytes, not a whole number of {dtype} elements")
    } else if n != m {
        format!("output has {n} elements but the reference has {m}")
    } else if numel != Some(n) {
        format!("output has {n} elements but its shape {shape:?} holds {holds}")
    } else {
        String::new()
    };
    let elements = n as u64;
    if !problem.is_empty() {
        return CheckReport {
            elements,
            failure: Some(problem),
            tolerance: tol,
            ..Default::default()
        };
    }
    let outs = out_bytes.par_chunks(CHUNK * size);
    let refs = reference.par_chunks(CHUNK);
    let tallies: Vec<Tally> = with_elem!(dtype, E => outs.zip(refs).enumerate()
        .map(|(c, (o, r))| tally::<E>(o, r, c * CHUNK, tol)).collect());
    let t = tallies.into_iter().fold(Tally::default(), Tally::merge);
    let first_mismatch = t.first.map(|i| Mismatch {
        index: i,
        multi_index: unravel(i as usize, shape),
        got: with_elem!(dtype, E => E::load(&out_bytes[i as usize * size..])),
        expected: reference[i as usize],
    });
    // All zeros are suspect (a kernel that writes nothing useful) only where zeros would not
    // pass anyway: a reference within tolerance of 0 everywhere (a gradient that is exactly 0
    // up to rounding, say) is matched by zeros, and they pass.
    let all_zero = n > 0 && !t.out_nonzero && (t.ref_nonfinite || t.ref_beyond_zero);
    let failure = if t.unwritten > 0 {
        let k = t.unwritten;
        Some(format!("{k} of {n} elements were never written"))
    } else if t.nan_or_inf > 0 {
        let k = t.nan_or_inf;
        let what = "output has NaN or Inf where the reference is finite";
        Some(format!("{what} ({k} of {n} elements)"))
    } else if all_zero {
        Some("output is all zeros but the reference is not".to_string())
    } else {
        first_mismatch.as_ref().map(|m| {
            let (at, got, expected) = (&m.multi_index, m.got, m.expected);
            let first = format!("first at {at:?}: got {got}, expected {expected}");
            format!("{} of {n} elements differ ({first})", t.mismatches)
        })
    };
    let diff = t.diff_sq.sqrt();
    let norm = if t.ref_sq > 0.0 { t.ref_sq.sqrt() } else { 1.0 };
    CheckReport {
        passed: failure.is_none(),
        elements,
        mismatches: t.mismatches,
        unwritten: t.unwritten,
        nan_or_inf: t.nan_or_inf,
        max_abs_error: t.max_abs,
        rel_l2_error: diff / norm,
        first_mismatch,
        failure,
        tolerance: tol,
    }
}

/// The row-major multi-index of flat index `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev().filter(|(_, &d)| d > 0) {
        (idx[k], i) = (i % d, i / d);
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::host::inputs::{encode, poison};

    fn run(dtype: DType, out: &[f64], reference: &[f64]) -> CheckReport {
        let (bytes, tol) = (encode(dtype, out).bytes, default_tolerance(dtype));
        check(&bytes, dtype, &[out.len()], reference, tol)
    }

    fn why(r: CheckReport) -> String {
        assert!(!r.passed);
        r.failure.unwrap()
    }

    #[test]
    fn matching_outputs_pass() {
        let reference: Vec<f64> = (0..200_000).map(|i| (i as f64 * 0.37).sin()).collect();
        for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16] {
            let r = run(dtype, &reference, &reference);
            assert!(
                r.passed && r.failure.is_none() && r.mismatches == 0,
                "{dtype}: {r:?}"
            );
            assert!(
                r.elements == 200_000 && r.rel_l2_error < 4e-3,
                "{dtype}: {r:?}"
            );
        }
        let r = run(DType::F64, &reference, &reference);
        assert_eq!((r.max_abs_error, r.rel_l2_error), (0.0, 0.0));
        assert!(run(DType::I32, &[1.0, -5.0, 7.0], &[1.0, -5.0, 7.0]).passed);
        assert!(!run(DType::I32, &[1.0, -5.0, 8.0], &[1.0, -5.0, 7.0]).passed);
        let empty = check(&[], DType::F32, &[0, 4], &[], default_tolerance(DType::F32));
        assert!(empty.passed && empty.elements == 0);
    }

    #[test]
    fn a_single_wrong_element_is_located() {
        let reference: Vec<f64> = (0..24).map(|i| i as f64 / 4.0 + 1.0).collect();
        let mut out = reference.clone();
        out[17] = 1.5;
        let (bytes, tol) = (
            encode(DType::F32, &out).bytes,
            default_tolerance(DType::F32),
        );
        let r = check(&bytes, DType::F32, &[2, 3, 4], &reference, tol);
        assert_eq!((r.mismatches, r.unwritten, r.nan_or_inf), (1, 0, 0));
        let m = r.first_mismatch.clone().unwrap();
        assert_eq!(
            (m.index, m.multi_index, m.got, m.expected),
            (17, vec![1, 1, 1], 1.5, 5.25)
        );
        assert_eq!(r.max_abs_error, 3.75);
        let l2 = 3.75 / reference.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((r.rel_l2_error - l2).abs() < 1e-15);
        let want = "1 of 24 elements differ (first at [1, 1, 1]: got 1.5, expected 5.25)";
        assert_eq!(why(r), want);
    }

    #[test]
    fn unwritten_elements_fail() {
        for dtype in DType::ALL {
            let reference = vec![1.0; CHUNK + 10];
            let mut bytes = encode(dtype, &reference).bytes;
            bytes[(CHUNK + 2) * dtype.size() as usize..].copy_from_slice(&poison(dtype, 8));
            let tol = default_tolerance(dtype);
            let r = check(&bytes, dtype, &[CHUNK + 10], &reference, tol);
            assert_eq!((r.unwritten, r.mismatches, r.nan_or_inf), (8, 8, 0));
            assert_eq!(r.first_mismatch.as_ref().unwrap().index, CHUNK as u64 + 2);
            let want = format!("8 of {} elements were never written", CHUNK + 10);
            assert_eq!(why(r), want, "{dtype}");
        }
        // An i32 result that happens to equal the sentinel was written.
        assert!(run(DType::I32, &[2139062143.0], &[2139062143.0]).passed);
    }

    #[test]
    fn non_finite_outputs() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let r = run(DType::F32, &[1.0, nan, inf], &[1.0, 2.0, 3.0]);
        assert_eq!((r.nan_or_inf, r.mismatches, r.max_abs_error), (2, 2, 0.0));
        let want = "output has NaN or Inf where the reference is finite (2 of 3 elements)";
        assert_eq!(why(r), want);
        let special = [1.0, nan, inf, -inf];
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            assert!(run(dtype, &special, &special).passed, "{dtype}");
        }
        let r = run(DType::F32, &[1.0, 0.0, inf, inf], &special);
        assert_eq!((r.passed, r.mismatches, r.nan_or_inf), (false, 2, 0));
        assert_eq!(r.first_mismatch.unwrap().index, 1);
    }

    #[test]
    fn all_zero_output_fails_against_a_reference_beyond_tolerance_of_zero() {
        let reference = [1e-7, -2e-7, 0.0, 5e-2];
        let r = run(DType::F32, &[0.0; 4], &reference);
        assert_eq!(r.mismatches, 1);
        assert_eq!(why(r), "output is all zeros but the reference is not");
        assert!(run(DType::F32, &[0.0; 4], &[0.0; 4]).passed);
        assert!(run(DType::F32, &[1e-7, -2e-7, 0.0, 5e-2], &reference).passed);
        let r = run(DType::BF16, &[0.0, 0.0], &[0.0, f64::NAN]);
        assert_eq!(why(r), "output is all zeros but the reference is not");
        // Integers have no tolerance: any non-zero reference.
        let r = run(DType::I32, &[0.0, 0.0], &[0.0, 1.0]);
        assert_eq!(why(r), "output is all zeros but the reference is not");
    }

    #[test]
    fn all_zero_output_passes_where_the_reference_is_within_tolerance_of_zero() {
        // A softmax backward whose exact gradient is 0 (dy the same in every column): the f64
        // reference is rounding noise around 0, not 0, and the kernel's exact zeros are right.
        let noise: Vec<f64> = (0..64).map(|i| (i as f64 - 31.5) * 3e-18).collect();
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
            let r = run(dtype, &vec![0.0; noise.len()], &noise);
            assert!(r.passed, "{dtype}: {r:?}");
        }
        // Tiny values, each within f32's atol of zero, but not rounding to 0 in f32.
        assert!(run(DType::F32, &[0.0; 4], &[1e-7, -2e-7, 0.0, 5e-8]).passed);
        // A reference that rounds to zero in the output dtype allows zeros too.
        assert!(run(DType::F16, &[0.0; 4], &[1e-9, 0.0, -1e-9, 0.0]).passed);
    }

    #[test]
    fn tolerance_edges() {
        let tol = Tolerance::new(0.5, 0.25);
        let ok = |out: f64, r| check(&out.to_le_bytes(), DType::F64, &[1], &[r], tol).passed;
        // |out - ref| == atol + rtol * |ref| passes.
        assert!(ok(3.25, 2.0) && ok(0.75, 2.0));
        assert!(!ok(3.25f64.next_up(), 2.0) && !ok(0.75 - 1e-12, 2.0));
        assert!(ok(-3.25, -2.0) && !ok(2.0, -2.0));
        let exact = Tolerance::new(0.0, 0.0);
        assert!(!check(&1.0000001f32.to_le_bytes(), DType::F32, &[], &[1.0], exact).passed);
        assert_eq!(default_tolerance(DType::I32), exact);
        let t = default_tolerance(DType::F16).with_overrides(None, Some(0.5));
        assert_eq!(t, Tolerance::new(2e-3, 0.5));
    }

    #[test]
    fn f16_outputs_are_decoded() {
        let bytes = [0x00, 0x3C, 0x00, 0xC0, 0x55, 0x35];
        let tol = default_tolerance(DType::F16);
        let r = check(&bytes, DType::F16, &[3], &[1.0, -2.0, 1.0 / 3.0], tol);
        assert!(r.passed && r.max_abs_error > 0.0, "{r:?}");
        assert!(r.max_abs_error < 1e-4);
    }

    #[test]
    fn size_disagreements_fail_without_panicking() {
        let t = default_tolerance(DType::F32);
        let bytes = encode(DType::F32, &[1.0, 2.0, 3.0]).bytes;
        let r = check(&bytes, DType::F32, &[3], &[1.0, 2.0], t);
        assert_eq!(why(r), "output has 3 elements but the reference has 2");
        let r = check(&bytes, DType::F32, &[2, 2], &[1.0, 2.0, 3.0], t);
        assert_eq!(why(r), "output has 3 elements but its shape [2, 2] holds 4");
        let r = check(&bytes[..7], DType::F32, &[2], &[1.0, 2.0], t);
        let want = "output has 7 bytes, not a whole number of f32 elements";
        assert_eq!(why(r), want);
    }

    #[test]
    fn result_is_independent_of_thread_count() {
        let n = 5 * CHUNK + 7;
        let reference: Vec<f64> = (0..n).map(|i| (i as f64).sqrt()).collect();
        let out: Vec<f64> = reference.iter().map(|r| r * (1.0 + 1e-3)).collect();
        let go = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            pool.unwrap().install(|| run(DType::F32, &out, &reference))
        };
        let (a, b) = (go(1), go(3));
        assert_eq!(a, b);
        assert_eq!(a.first_mismatch.unwrap().index, 1);
        assert!((a.rel_l2_error - 1e-3).abs() < 1e-6, "{}", a.rel_l2_error);
    }
}
