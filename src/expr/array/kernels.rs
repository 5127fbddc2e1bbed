//! Whole-array elementwise kernels with NumPy broadcasting: the loops behind every operator and
//! elementwise function of a reference expression.
//!
//! Arrays may hold 2^28 elements, so each kernel is one tight loop over slices, generic over
//! the operation (monomorphised, no per-element dispatch), and reuses an operand's buffer when
//! that operand is a temporary of the result's shape. Large same-shape loops are split across
//! the machine's cores with scoped threads (transcendental functions cost tens of ns each).

use super::tensor::Tensor;

/// An intermediate value: a number, an array borrowed from the environment, or one this
/// evaluation made (and may therefore overwrite).
#[derive(Debug)]
pub(crate) enum Val<'a> {
    Scalar(f64),
    Ref(&'a Tensor),
    Owned(Tensor),
}

impl Val<'_> {
    pub fn shape(&self) -> &[usize] {
        match self {
            Val::Scalar(_) => &[],
            Val::Ref(t) => &t.shape,
            Val::Owned(t) => &t.shape,
        }
    }

    pub fn data(&self) -> &[f64] {
        match self {
            Val::Scalar(v) => std::slice::from_ref(v),
            Val::Ref(t) => &t.data,
            Val::Owned(t) => &t.data,
        }
    }

    pub fn into_tensor(self) -> Tensor {
        match self {
            Val::Scalar(v) => Tensor::scalar(v),
            Val::Ref(t) => t.clone(),
            Val::Owned(t) => t,
        }
    }
}

/// Below this many elements per thread, splitting a loop costs more than it saves.
const MIN_PER_THREAD: usize = 1 << 16;

/// Calls `f(offset, chunk)` on consecutive chunks covering `out`, on several threads when `out`
/// is large. Results do not depend on the split: every element is computed on its own.
fn par_chunks(out: &mut [f64], f: impl Fn(usize, &mut [f64]) + Sync) {
    par_blocks(out, 1, f)
}

/// Like [`par_chunks`], with every chunk a whole number of blocks of `block` elements (rows
/// that must be processed together). `out.len()` must be a multiple of `block`.
pub(crate) fn par_blocks(out: &mut [f64], block: usize, f: impl Fn(usize, &mut [f64]) + Sync) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(out.len() / MIN_PER_THREAD)
        .min(out.len() / block.max(1))
        .max(1);
    if threads == 1 {
        return f(0, out);
    }
    let chunk = out.len().div_ceil(threads).next_multiple_of(block);
    let f = &f;
    std::thread::scope(|s| {
        for (i, c) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || f(i * chunk, c));
        }
    });
}

/// Applies `f` to every element, in place when `v` is a temporary.
pub(crate) fn map<'a>(v: Val<'a>, f: impl Fn(f64) -> f64 + Sync) -> Val<'a> {
    match v {
        Val::Scalar(x) => Val::Scalar(f(x)),
        Val::Ref(t) => {
            let mut data = vec![0.0; t.data.len()];
            par_chunks(&mut data, |off, out| {
                for (o, &x) in out.iter_mut().zip(&t.data[off..]) {
                    *o = f(x);
                }
            });
            Val::Owned(Tensor {
                shape: t.shape.clone(),
                data,
            })
        }
        Val::Owned(mut t) => {
            par_chunks(&mut t.data, |_, out| {
                out.iter_mut().for_each(|x| *x = f(*x))
            });
            Val::Owned(t)
        }
    }
}

/// The broadcast shape of `shapes` (NumPy rules), or `None` if they are incompatible.
pub(crate) fn broadcast_shapes(shapes: &[&[usize]]) -> Option<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        for (o, &d) in out[rank - s.len()..].iter_mut().zip(s.iter()) {
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return None;
            }
        }
    }
    Some(out)
}

/// Element strides of `shape` seen as an array of shape `out` (rank aligned on the right):
/// 0 along dimensions it is broadcast over.
fn strides_in(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let mut strides = vec![0usize; out.len()];
    let mut step = 1;
    let offset = out.len() - shape.len();
    for (i, &d) in shape.iter().enumerate().rev() {
        if d != 1 {
            strides[offset + i] = step;
        }
        step *= d;
    }
    strides
}

/// Walks the rows (last dimension) of an array of shape `out` in row-major order, calling
/// `row(offsets, last_strides, len)` with each input's offset at the row's start and its stride
/// along the row (0 or 1).
fn for_each_row<const K: usize>(
    out: &[usize],
    inputs: [&[usize]; K],
    mut row: impl FnMut([usize; K], [usize; K], usize),
) {
    if out.contains(&0) {
        return;
    }
    let Some((&len, outer)) = out.split_last() else {
        row([0; K], [0; K], 1);
        return;
    };
    let strides: [Vec<usize>; K] = inputs.map(|s| strides_in(s, out));
    let last: [usize; K] = std::array::from_fn(|k| strides[k][outer.len()]);
    let mut index = vec![0usize; outer.len()];
    let mut offs = [0usize; K];
    loop {
        row(offs, last, len);
        // Advance the outer multi-index like an odometer.
        let mut d = outer.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            for k in 0..K {
                offs[k] += strides[k][d];
            }
            if index[d] < outer[d] {
                break;
            }
            for k in 0..K {
                offs[k] -= strides[k][d] * outer[d];
            }
            index[d] = 0;
        }
    }
}

/// Applies `f` elementwise to `a` and `b` with broadcasting. `Err` holds the shape mismatch.
pub(crate) fn zip<'a>(
    a: Val<'a>,
    b: Val<'a>,
    f: impl Fn(f64, f64) -> f64 + Sync,
) -> Result<Val<'a>, String> {
    let out_shape = match (&a, &b) {
        (Val::Scalar(x), Val::Scalar(y)) => return Ok(Val::Scalar(f(*x, *y))),
        (Val::Scalar(x), _) => {
            let x = *x;
            return Ok(map(b, |y| f(x, y)));
        }
        (_, Val::Scalar(y)) => {
            let y = *y;
            return Ok(map(a, |x| f(x, y)));
        }
        _ if a.shape() == b.shape() => None,
        _ => Some(broadcast_shapes(&[a.shape(), b.shape()]).ok_or_else(|| {
            format!(
                "cannot broadcast shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            )
        })?),
    };
    let Some(shape) = out_shape else {
        // Same shape: one straight loop, in place when possible.
        return Ok(match (a, b) {
            (Val::Owned(mut t), b) => {
                let db = b.data();
                par_chunks(&mut t.data, |off, out| {
                    for (x, &y) in out.iter_mut().zip(&db[off..]) {
                        *x = f(*x, y);
                    }
                });
                Val::Owned(t)
            }
            (a, Val::Owned(mut t)) => {
                let da = a.data();
                par_chunks(&mut t.data, |off, out| {
                    for (y, &x) in out.iter_mut().zip(&da[off..]) {
                        *y = f(x, *y);
                    }
                });
                Val::Owned(t)
            }
            (a, b) => {
                let (da, db) = (a.data(), b.data());
                let mut data = vec![0.0; da.len()];
                par_chunks(&mut data, |off, out| {
                    for ((o, &x), &y) in out.iter_mut().zip(&da[off..]).zip(&db[off..]) {
                        *o = f(x, y);
                    }
                });
                Val::Owned(Tensor {
                    shape: a.shape().to_vec(),
                    data,
                })
            }
        });
    };
    let (da, db) = (a.data(), b.data());
    let mut data = Vec::with_capacity(super::tensor::numel(&shape).unwrap_or(0));
    for_each_row(&shape, [a.shape(), b.shape()], |[oa, ob], s, len| match s {
        [1, 1] => data.extend(
            da[oa..oa + len]
                .iter()
                .zip(&db[ob..ob + len])
                .map(|(&x, &y)| f(x, y)),
        ),
        [1, _] => {
            let y = db[ob];
            data.extend(da[oa..oa + len].iter().map(|&x| f(x, y)));
        }
        [_, 1] => {
            let x = da[oa];
            data.extend(db[ob..ob + len].iter().map(|&y| f(x, y)));
        }
        _ => {
            let v = f(da[oa], db[ob]);
            data.extend(std::iter::repeat_n(v, len));
        }
    });
    Ok(Val::Owned(Tensor { shape, data }))
}

/// `where(cond, a, b)`: `a` where `cond` is non-zero, else `b`, with broadcasting.
pub(crate) fn select<'a>(c: Val<'a>, a: Val<'a>, b: Val<'a>) -> Result<Val<'a>, String> {
    let shape = broadcast_shapes(&[c.shape(), a.shape(), b.shape()]).ok_or_else(|| {
        format!(
            "cannot broadcast shapes {:?}, {:?} and {:?}",
            c.shape(),
            a.shape(),
            b.shape()
        )
    })?;
    // Both sides are loaded before choosing, so the choice compiles to a blend, not a branch
    // (conditions such as `x > 0` are unpredictable).
    let pick = |c: f64, x: f64, y: f64| {
        let keep_x = u64::from(c != 0.0).wrapping_neg();
        f64::from_bits((x.to_bits() & keep_x) | (y.to_bits() & !keep_x))
    };
    if c.shape() == shape.as_slice() && a.shape() == c.shape() && b.shape() == c.shape() {
        // Same shapes: one loop, written over whichever operand is a temporary.
        let t = match (c, a, b) {
            (Val::Owned(mut t), a, b) => {
                let (da, db) = (a.data(), b.data());
                par_chunks(&mut t.data, |off, out| {
                    let ins = da[off..].iter().zip(&db[off..]);
                    for (o, (&x, &y)) in out.iter_mut().zip(ins) {
                        *o = pick(*o, x, y);
                    }
                });
                t
            }
            (c, Val::Owned(mut t), b) => {
                let (dc, db) = (c.data(), b.data());
                par_chunks(&mut t.data, |off, out| {
                    let ins = dc[off..].iter().zip(&db[off..]);
                    for (o, (&c, &y)) in out.iter_mut().zip(ins) {
                        *o = pick(c, *o, y);
                    }
                });
                t
            }
            (c, a, Val::Owned(mut t)) => {
                let (dc, da) = (c.data(), a.data());
                par_chunks(&mut t.data, |off, out| {
                    let ins = dc[off..].iter().zip(&da[off..]);
                    for (o, (&c, &x)) in out.iter_mut().zip(ins) {
                        *o = pick(c, x, *o);
                    }
                });
                t
            }
            (c, a, b) => {
                let (dc, da, db) = (c.data(), a.data(), b.data());
                let mut data = vec![0.0; dc.len()];
                par_chunks(&mut data, |off, out| {
                    let ins = dc[off..].iter().zip(&da[off..]).zip(&db[off..]);
                    for (o, ((&c, &x), &y)) in out.iter_mut().zip(ins) {
                        *o = pick(c, x, y);
                    }
                });
                Tensor { shape, data }
            }
        };
        return Ok(Val::Owned(t));
    }
    let (dc, da, db) = (c.data(), a.data(), b.data());
    let mut data = Vec::with_capacity(super::tensor::numel(&shape).unwrap_or(0));
    // Rows of an input broadcast along the last axis (stride 0) are spread into a buffer, so
    // the inner loop always runs over three plain slices.
    let mut spread = [Vec::new(), Vec::new(), Vec::new()];
    for_each_row(
        &shape,
        [c.shape(), a.shape(), b.shape()],
        |offs, strides, len| {
            let mut rows: [&[f64]; 3] = [&[]; 3];
            for (k, (d, buf)) in [dc, da, db].into_iter().zip(spread.iter_mut()).enumerate() {
                rows[k] = if strides[k] == 1 {
                    &d[offs[k]..offs[k] + len]
                } else {
                    buf.clear();
                    buf.resize(len, d[offs[k]]);
                    buf
                };
            }
            let ins = rows[0].iter().zip(rows[1]).zip(rows[2]);
            data.extend(ins.map(|((&c, &x), &y)| pick(c, x, y)));
        },
    );
    Ok(Val::Owned(Tensor { shape, data }))
}
