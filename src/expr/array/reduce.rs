//! Operations that combine elements along an axis: `sum`, `mean`, `max`, `min`, `softmax`,
//! `log_softmax`, and `matmul`.
//!
//! An array is viewed as `[outer, n, inner]` around the axis. When the axis is the last one
//! (`inner == 1`, the common case) each output comes from one contiguous slice; otherwise whole
//! rows of length `inner` are combined at a time, so memory is always walked in order. Sums are
//! pairwise, keeping the error near `log2(n)` roundings rather than `n` for long axes.

use super::kernels::par_blocks;
use super::tensor::{numel, Tensor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduction {
    Sum,
    Mean,
    Max,
    Min,
}

/// `shape` split around `axis` as `(outer, n, inner)`.
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// Sums `x` pairwise: blocks of 8 interleaved accumulators, halves added recursively.
pub(crate) fn pairwise_sum(x: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    if x.len() <= BLOCK {
        let mut acc = [0.0f64; 8];
        let chunks = x.chunks_exact(8);
        let tail: f64 = chunks.remainder().iter().sum();
        for c in chunks {
            for (a, &v) in acc.iter_mut().zip(c) {
                *a += v;
            }
        }
        return ((acc[0] + acc[1]) + (acc[2] + acc[3]))
            + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
            + tail;
    }
    let mid = (x.len() / 2).next_multiple_of(8);
    pairwise_sum(&x[..mid]) + pairwise_sum(&x[mid..])
}

/// Adds up `n` rows of length `inner` stored one after another, pairwise, into `out`.
/// `scratch` needs `inner * ceil(log2(n))` elements.
fn pairwise_rows(rows: &[f64], n: usize, inner: usize, out: &mut [f64], scratch: &mut [f64]) {
    if n <= 8 {
        out.copy_from_slice(&rows[..inner]);
        for r in rows[inner..n * inner].chunks_exact(inner) {
            out.iter_mut().zip(r).for_each(|(o, &v)| *o += v);
        }
        return;
    }
    let half = n / 2;
    let (tmp, rest) = scratch.split_at_mut(inner);
    pairwise_rows(&rows[..half * inner], half, inner, out, rest);
    pairwise_rows(&rows[half * inner..], n - half, inner, tmp, rest);
    out.iter_mut().zip(tmp.iter()).for_each(|(o, &v)| *o += v);
}

/// The maximum (or minimum) of `x`, NaN if any element is NaN.
fn extreme(x: &[f64], max: bool) -> f64 {
    let mut nan = false;
    let r = if max {
        x.iter().fold(f64::NEG_INFINITY, |m, &v| {
            nan |= v.is_nan();
            m.max(v)
        })
    } else {
        x.iter().fold(f64::INFINITY, |m, &v| {
            nan |= v.is_nan();
            m.min(v)
        })
    };
    if nan {
        f64::NAN
    } else {
        r
    }
}

/// Reduces `data` of `shape` along `axis` (all axes when `None`).
pub(crate) fn reduce(
    shape: &[usize],
    data: &[f64],
    axis: Option<usize>,
    keepdims: bool,
    how: Reduction,
) -> Result<Tensor, String> {
    let (outer, n, inner) = match axis {
        Some(a) => split(shape, a),
        None => (1, data.len(), 1),
    };
    let out_shape: Vec<usize> = match axis {
        Some(a) if keepdims => (0..shape.len())
            .map(|i| if i == a { 1 } else { shape[i] })
            .collect(),
        Some(a) => (0..shape.len())
            .filter(|&i| i != a)
            .map(|i| shape[i])
            .collect(),
        None if keepdims => vec![1; shape.len()],
        None => Vec::new(),
    };
    let len = outer * inner;
    if n == 0 {
        return match how {
            Reduction::Sum => Ok(Tensor::full(out_shape, 0.0)),
            Reduction::Mean => Ok(Tensor::full(out_shape, f64::NAN)),
            _ => Err(format!(
                "cannot take the {} of zero elements (shape {shape:?})",
                if how == Reduction::Max { "max" } else { "min" }
            )),
        };
    }
    let mut out = vec![0.0; len];
    if inner == 1 {
        for (o, row) in out.iter_mut().zip(data.chunks_exact(n)) {
            *o = match how {
                Reduction::Sum => pairwise_sum(row),
                Reduction::Mean => pairwise_sum(row) / n as f64,
                Reduction::Max => extreme(row, true),
                Reduction::Min => extreme(row, false),
            };
        }
    } else {
        let levels = (usize::BITS - n.leading_zeros()) as usize;
        let mut scratch = match how {
            Reduction::Sum | Reduction::Mean => vec![0.0; inner * levels],
            _ => Vec::new(),
        };
        for (o, block) in out
            .chunks_exact_mut(inner)
            .zip(data.chunks_exact(n * inner))
        {
            match how {
                Reduction::Sum | Reduction::Mean => {
                    pairwise_rows(block, n, inner, o, &mut scratch);
                    if how == Reduction::Mean {
                        o.iter_mut().for_each(|v| *v /= n as f64);
                    }
                }
                Reduction::Max | Reduction::Min => {
                    o.copy_from_slice(&block[..inner]);
                    let max = how == Reduction::Max;
                    for r in block[inner..].chunks_exact(inner) {
                        for (m, &v) in o.iter_mut().zip(r) {
                            // NaN wins, as in NumPy.
                            if v.is_nan() || (max && v > *m) || (!max && v < *m) {
                                *m = v;
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(Tensor {
        shape: out_shape,
        data: out,
    })
}

/// Softmax (or log-softmax) along `axis`, in place over `t`. Subtracts the maximum first so
/// that no `exp` overflows. Independent blocks run on several threads when `t` is large.
pub(crate) fn softmax(t: &mut Tensor, axis: usize, log: bool) {
    let (_, n, inner) = split(&t.shape, axis);
    if n == 0 || t.data.is_empty() {
        return;
    }
    if inner == 1 {
        par_blocks(&mut t.data, n, |_, rows| {
            for row in rows.chunks_exact_mut(n) {
                softmax_row(row, log);
            }
        });
    } else {
        par_blocks(&mut t.data, n * inner, |_, blocks| {
            for block in blocks.chunks_exact_mut(n * inner) {
                softmax_columns(block, inner, log);
            }
        });
    }
}

/// Softmax of one contiguous row.
fn softmax_row(row: &mut [f64], log: bool) {
    let m = extreme(row, true);
    if log {
        let s: f64 = row.iter().map(|&v| (v - m).exp()).sum();
        let shift = m + s.ln();
        row.iter_mut().for_each(|v| *v -= shift);
    } else {
        row.iter_mut().for_each(|v| *v = (*v - m).exp());
        let s = pairwise_sum(row);
        row.iter_mut().for_each(|v| *v /= s);
    }
}

/// Softmax down the columns of `block`, `n` rows of length `inner`, a whole row at a time.
fn softmax_columns(block: &mut [f64], inner: usize, log: bool) {
    let mut max = block[..inner].to_vec();
    for r in block.chunks_exact(inner) {
        for (m, &v) in max.iter_mut().zip(r) {
            if v.is_nan() || v > *m {
                *m = v;
            }
        }
    }
    let mut sum = vec![0.0; inner];
    for r in block.chunks_exact_mut(inner) {
        for ((v, &m), s) in r.iter_mut().zip(&max).zip(sum.iter_mut()) {
            let e = (*v - m).exp();
            *s += e;
            if !log {
                *v = e;
            }
        }
    }
    for r in block.chunks_exact_mut(inner) {
        for ((v, &m), &s) in r.iter_mut().zip(&max).zip(&sum) {
            if log {
                *v -= m + s.ln();
            } else {
                *v /= s;
            }
        }
    }
}

/// Matrix product of 1-D or 2-D arrays, NumPy-style: a 1-D left operand is a row vector and a
/// 1-D right operand a column vector, and those dimensions are dropped from the result.
pub(crate) fn matmul(a: (&[usize], &[f64]), b: (&[usize], &[f64])) -> Result<Tensor, String> {
    let (sa, sb) = (a.0, b.0);
    let (m, k, n) = match (sa, sb) {
        ([k], [k2]) if k == k2 => (1, *k, 1),
        ([k], [k2, n]) if k == k2 => (1, *k, *n),
        ([m, k], [k2]) if k == k2 => (*m, *k, 1),
        ([m, k], [k2, n]) if k == k2 => (*m, *k, *n),
        ([..], [..]) if sa.len() > 2 || sb.len() > 2 || sa.is_empty() || sb.is_empty() => {
            return Err(format!(
                "matmul takes 1-D or 2-D arrays, got shapes {sa:?} and {sb:?}"
            ))
        }
        _ => {
            return Err(format!(
                "matmul shapes {sa:?} and {sb:?} do not fit: the left's last dimension ({}) must \
                 equal the right's first ({})",
                sa[sa.len() - 1],
                sb[0]
            ))
        }
    };
    let shape: Vec<usize> = match (sa.len(), sb.len()) {
        (1, 1) => vec![],
        (1, _) => vec![n],
        (_, 1) => vec![m],
        _ => vec![m, n],
    };
    let size = numel(&[m, n]).ok_or("matmul result is too large")?;
    let mut out = vec![0.0; size];
    if n == 0 || k == 0 {
        return Ok(Tensor { shape, data: out });
    }
    product(a.1, b.1, &mut out, (m, k, n));
    Ok(Tensor { shape, data: out })
}

/// Columns of `b` per packed strip, and rows of `a` per micro-tile: a 4x8 tile of the output
/// is summed in registers.
const NR: usize = 8;
const MR: usize = 4;
/// Output rows per parallel task.
const ROWS: usize = 64;

/// `out += a·b` for row-major `a` (m x k), `b` (k x n) and `out` (m x n, zeros). Every element is
/// summed over p in order, one product and one rounded add at a time, exactly as the naive loop
/// would: the blocking only changes which elements are summed at once, so the result is the same
/// bit for bit whatever the threads (a host reference must not depend on the machine).
fn product(da: &[f64], db: &[f64], out: &mut [f64], (m, k, n): (usize, usize, usize)) {
    use rayon::prelude::*;
    debug_assert!(da.len() == m * k && db.len() == k * n && out.len() == m * n);
    // `b` packed once into strips of NR columns, p-major inside a strip, padded with zeros
    // (the padded columns are computed and dropped).
    let strips = n.div_ceil(NR);
    let mut packed = vec![0.0; strips * k * NR];
    packed
        .par_chunks_mut(k * NR)
        .enumerate()
        .for_each(|(s, strip)| {
            let cols = NR.min(n - s * NR);
            for (p, dst) in strip.chunks_exact_mut(NR).enumerate() {
                dst[..cols].copy_from_slice(&db[p * n + s * NR..p * n + s * NR + cols]);
            }
        });
    out.par_chunks_mut(ROWS * n)
        .enumerate()
        .for_each(|(blk, rows)| {
            let r0 = blk * ROWS;
            let nrows = rows.len() / n;
            for (s, strip) in packed.chunks_exact(k * NR).enumerate() {
                let cols = NR.min(n - s * NR);
                let mut r = 0;
                while r < nrows {
                    let quad = MR.min(nrows - r);
                    let mut acc = [[0.0f64; NR]; MR];
                    let a_row = |i: usize| &da[(r0 + r + i) * k..(r0 + r + i + 1) * k];
                    if quad == MR {
                        tile::<MR>([a_row(0), a_row(1), a_row(2), a_row(3)], strip, &mut acc);
                    } else {
                        for (i, acc) in acc.iter_mut().enumerate().take(quad) {
                            let mut one = [*acc];
                            tile::<1>([a_row(i)], strip, &mut one);
                            *acc = one[0];
                        }
                    }
                    for (i, acc) in acc.iter().enumerate().take(quad) {
                        let row = &mut rows[(r + i) * n + s * NR..(r + i) * n + s * NR + cols];
                        row.copy_from_slice(&acc[..cols]);
                    }
                    r += quad;
                }
            }
        });
}

/// `acc[i][j] = sum over p of a[i][p] * strip[p][j]`, p in order.
#[inline(always)]
fn tile<const R: usize>(a: [&[f64]; R], strip: &[f64], acc: &mut [[f64; NR]; R]) {
    for (p, b) in strip.chunks_exact(NR).enumerate() {
        for i in 0..R {
            let x = a[i][p];
            for j in 0..NR {
                acc[i][j] += x * b[j];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matmul;

    #[test]
    fn the_blocked_matmul_is_the_naive_loop_bit_for_bit() {
        // Shapes that leave partial 4-row tiles, partial 8-column strips and partial 64-row tasks,
        // and values whose sums round differently in any other order.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut draw = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        for (m, k, n) in [
            (67, 45, 13),
            (1, 33, 9),
            (130, 7, 1),
            (5, 1, 17),
            (64, 100, 8),
        ] {
            let a: Vec<f64> = (0..m * k).map(|_| draw() * 1e3).collect();
            let b: Vec<f64> = (0..k * n).map(|_| draw() / 7.0).collect();
            let got = matmul((&[m, k], &a), (&[k, n], &b)).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let mut want = 0.0;
                    for p in 0..k {
                        want += a[i * k + p] * b[p * n + j];
                    }
                    assert_eq!(
                        got.data[i * n + j].to_bits(),
                        want.to_bits(),
                        "{m}x{k}x{n} at {i},{j}"
                    );
                }
            }
        }
    }
}
