//! `tl.sort` ([`Op::Sort`](crate::tile::ir::Op::Sort)): each line along the last axis goes
//! through Triton's bitonic network, compare-and-swap by compare-and-swap, with Triton's rule
//! for a pair. That rule only moves a value when one side is strictly greater, so equal
//! values, `+0.0` against `-0.0`, and any pair holding a NaN make both positions take one of
//! the two; the result is then not a permutation of the input, exactly as in Triton (its
//! interpreter and its compiled code run the same network). On inputs without NaN, and
//! without both zeros, the result is the sorted line.

use super::exec::Env;
use super::value::Data;
use super::Fault;
use crate::tile::ir::{Scalar, Type, VarId};

/// The network on each line of `n` (a power of two) consecutive elements of `v`, with `gt`
/// the strict order of the dtype (false whenever a NaN is involved).
pub fn bitonic<T: Copy>(v: &mut [T], n: usize, descending: bool, gt: impl Fn(T, T) -> bool) {
    if n < 2 || !n.is_power_of_two() {
        return;
    }
    let stages = n.trailing_zeros();
    for line in v.chunks_exact_mut(n) {
        for s in 1..=stages {
            for j in (0..s).rev() {
                let half = 1usize << j;
                for k in (0..n).filter(|k| k & half == 0) {
                    let m = k | half;
                    let d = if s < stages {
                        (k >> s) & 1 == 1
                    } else {
                        descending
                    };
                    let (a, b) = (line[k], line[m]);
                    line[k] = if gt(a, b) != d { b } else { a };
                    line[m] = if gt(b, a) == d { a } else { b };
                }
            }
        }
    }
}

/// `out = tl.sort(src)` along the last axis; returns the element operations it took.
pub(super) fn sort(
    env: &Env,
    src: VarId,
    descending: bool,
    ty: &Type,
    out: &mut Data,
) -> Result<u64, Fault> {
    let n = *env
        .ty(src)
        .shape
        .last()
        .ok_or_else(|| Fault::interp("a sort of a scalar"))? as usize;
    match (env.get(src)?, &mut *out) {
        (Data::Int(a), Data::Int(o)) if a.len() == o.len() => {
            o.copy_from_slice(a);
            if env.scalar(src) == Scalar::U64 {
                // Held as the bits of the u64.
                bitonic(o, n, descending, |x, y| (x as u64) > (y as u64));
            } else {
                bitonic(o, n, descending, |x, y| x > y);
            }
        }
        (Data::Float(a), Data::Float(o)) if a.len() == o.len() => {
            o.copy_from_slice(a);
            bitonic(o, n, descending, |x, y| x > y);
        }
        _ => return Err(Fault::interp("a sort of pointers or into another kind")),
    }
    let stages = u64::from(n.max(1).trailing_zeros());
    Ok(ty.numel() * stages * (stages + 1) / 2)
}

#[cfg(test)]
mod tests {
    use super::bitonic;

    fn run(v: &[f64], descending: bool) -> Vec<f64> {
        let mut v = v.to_vec();
        let n = v.len();
        bitonic(&mut v, n, descending, |x, y| x > y);
        v
    }

    #[test]
    fn sorts_lines_of_distinct_values() {
        let x = [5., 3., 7., 1., 0., 6., 2., 4.];
        assert_eq!(run(&x, false), [0., 1., 2., 3., 4., 5., 6., 7.]);
        assert_eq!(run(&x, true), [7., 6., 5., 4., 3., 2., 1., 0.]);
        let mut two = [3, 1, 2, 0, 9, 8, 7, 6];
        bitonic(&mut two, 4, false, |x, y| x > y);
        assert_eq!(two, [0, 1, 2, 3, 6, 7, 8, 9]);
    }

    /// Triton 3.9.0's interpreter (`TRITON_INTERPRET=1`) gives these for the same inputs.
    #[test]
    fn nan_and_signed_zeros_land_where_triton_puts_them() {
        let nan = f64::NAN;
        let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let same = |got: Vec<f64>, want: &[f64]| assert_eq!(bits(got), bits(want.to_vec()));
        same(run(&[3., nan, 1., 2.], false), &[1., 2., 3., 3.]);
        same(run(&[3., nan, 1., 2.], true), &[3., 3., 2., 1.]);
        same(run(&[nan, 1., 2., 3.], true), &[3., 2., 3., 2.]);
        same(run(&[0., -0., 1., -1.], false), &[-1., 0., 0., 1.]);
        same(run(&[-0., 0., 0., -0.], true), &[-0., -0., -0., -0.]);
        let x = [5., nan, nan, 1., 0., -0., 2., nan];
        same(run(&x, false), &[1., 1., 5., 5., 1., 1., 5., 5.]);
        assert!(run(&x, true).iter().all(|v| v.is_nan()));
    }
}
