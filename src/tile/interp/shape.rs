//! Ops that move elements between shapes rather than compute them: copies (and the shape-only
//! `expand_dims`/`reshape`, which keep row-major order), splats, broadcasts, permutes, and
//! reductions over one axis or over everything. Broadcast and permute are one strided gather.

use super::elementwise::{fmax, fmin};
use super::exec::Env;
use super::value::{round, wrap, Data};
use super::Fault;
use crate::tile::ir::sums;
use crate::tile::ir::{Elem, Kernel, ReduceOp, Scalar, Type, VarId};
use std::collections::HashMap;

fn mismatch() -> Fault {
    Fault::interp("a shape op between values of different kinds")
}

pub(super) fn copy(src: &Data, out: &mut Data) -> Result<(), Fault> {
    match (src, out) {
        (Data::Int(a), Data::Int(o)) => o.iter_mut().zip(a).for_each(|(d, s)| *d = *s),
        (Data::Float(a), Data::Float(o)) => o.iter_mut().zip(a).for_each(|(d, s)| *d = *s),
        (Data::Ptr(a), Data::Ptr(o)) => o.iter_mut().zip(a).for_each(|(d, s)| *d = *s),
        _ => return Err(mismatch()),
    }
    Ok(())
}

pub(super) fn splat(src: &Data, out: &mut Data) -> Result<(), Fault> {
    match (src, out) {
        (Data::Int(a), Data::Int(o)) => o.fill(a.first().copied().unwrap_or_default()),
        (Data::Float(a), Data::Float(o)) => o.fill(a.first().copied().unwrap_or_default()),
        (Data::Ptr(a), Data::Ptr(o)) => o.fill(a.first().copied().unwrap_or_default()),
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Row-major strides of `shape`.
fn strides(shape: &[u32]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as usize;
    }
    s
}

pub(super) fn broadcast(src_ty: &Type, src: &Data, ty: &Type, out: &mut Data) -> Result<(), Fault> {
    let st = strides(&src_ty.shape);
    let by: Vec<usize> = src_ty
        .shape
        .iter()
        .zip(&st)
        .map(|(&n, &s)| if n == 1 { 0 } else { s })
        .collect();
    gather_any(src, &ty.shape, &by, out)
}

pub(super) fn permute(
    src_ty: &Type,
    src: &Data,
    perm: &[u32],
    out: &mut Data,
) -> Result<(), Fault> {
    let st = strides(&src_ty.shape);
    let shape: Vec<u32> = perm
        .iter()
        .map(|&p| src_ty.shape.get(p as usize).copied().unwrap_or(1))
        .collect();
    let by: Vec<usize> = perm
        .iter()
        .map(|&p| st.get(p as usize).copied().unwrap_or(0))
        .collect();
    gather_any(src, &shape, &by, out)
}

fn gather_any(src: &Data, shape: &[u32], by: &[usize], out: &mut Data) -> Result<(), Fault> {
    match (src, out) {
        (Data::Int(a), Data::Int(o)) => gather(a, shape, by, o),
        (Data::Float(a), Data::Float(o)) => gather(a, shape, by, o),
        (Data::Ptr(a), Data::Ptr(o)) => gather(a, shape, by, o),
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// `out[i0, …, ik] = src[i0 * by[0] + … + ik * by[k]]`, `out` of `shape`, row-major.
fn gather<T: Copy + Default>(src: &[T], shape: &[u32], by: &[usize], out: &mut [T]) {
    let Some((&inner, outer_shape)) = shape.split_last() else {
        if let (Some(o), Some(s)) = (out.first_mut(), src.first()) {
            *o = *s;
        }
        return;
    };
    let inner = inner as usize;
    let step = by.last().copied().unwrap_or(0);
    let mut idx = vec![0u32; outer_shape.len()];
    let mut base = 0usize;
    for row in out.chunks_mut(inner.max(1)) {
        for (j, o) in row.iter_mut().enumerate() {
            *o = src.get(base + j * step).copied().unwrap_or_default();
        }
        // The next row: an odometer over the outer dimensions.
        for d in (0..outer_shape.len()).rev() {
            idx[d] += 1;
            base += by[d];
            if idx[d] < outer_shape[d] {
                break;
            }
            base -= by[d] * idx[d] as usize;
            idx[d] = 0;
        }
    }
}

/// `(outer, len, inner)`: the source seen as `[outer, len, inner]` with `len` reduced.
pub(super) fn split(shape: &[u32], axis: Option<u32>) -> (usize, usize, usize) {
    let prod = |s: &[u32]| s.iter().map(|&d| d as usize).product::<usize>();
    match axis {
        None => (1, prod(shape), 1),
        Some(a) => {
            let a = (a as usize).min(shape.len().saturating_sub(1));
            let len = shape.get(a).map_or(1, |&d| d as usize);
            (
                prod(&shape[..a]),
                len,
                prod(shape.get(a + 1..).unwrap_or(&[])),
            )
        }
    }
}

/// What a full float sum needs to add in the GPU's order: each tile size's run length, the
/// program's threads, the contracted products, the kernel's order.
pub(crate) struct SumPlan {
    runs: HashMap<u64, u64>,
    threads: u64,
    contracted: HashMap<VarId, (VarId, VarId)>,
    order: sums::SumOrder,
}

impl SumPlan {
    pub fn of(k: &Kernel) -> SumPlan {
        SumPlan {
            runs: sums::run_lengths(k),
            threads: u64::from(k.threads().max(1)),
            contracted: sums::contracted_products(k),
            order: k.sums.order,
        }
    }
}

/// A full float sum, added as the generated CUDA adds it (`ir::sums`): the source tile's
/// elements where its blocked layout puts them, each partial sum rounded to the dtype.
pub(super) fn float_sum(
    plan: &SumPlan,
    env: &Env,
    src: VarId,
    ty: &Type,
    out: &mut Data,
) -> Result<(), Fault> {
    let numel = env.ty(src).numel();
    let layout = sums::Blocked::new(numel, plan.threads, sums::run_length(&plan.runs, numel));
    let arith = sums::Arith {
        dtype: env.scalar(src),
    };
    let total = match plan.contracted.get(&env.dst()) {
        Some(&(a, b)) => {
            let (a, b) = (env.floats(a)?, env.floats(b)?);
            let at = |x: &[f64], g: u64| x.get(g as usize).or(x.first()).copied().unwrap_or(0.0);
            sums::full_sum(&arith, plan.order, layout, &|g| {
                sums::Term::Product(at(a, g), at(b, g))
            })
        }
        None => {
            let x = env.floats(src)?;
            sums::full_sum(&arith, plan.order, layout, &|g| {
                sums::Term::Value(x.get(g as usize).or(x.first()).copied().unwrap_or(0.0))
            })
        }
    };
    match out {
        Data::Float(r) => {
            let (Elem::Scalar(ds) | Elem::Ptr(ds)) = ty.elem;
            r.iter_mut().for_each(|v| *v = round(ds, total));
            Ok(())
        }
        _ => Err(Fault::interp("a float sum into a non-float")),
    }
}

pub(super) fn reduce(
    env: &Env,
    op: ReduceOp,
    src: VarId,
    axis: Option<u32>,
    ty: &Type,
    out: &mut Data,
) -> Result<(), Fault> {
    let (outer, len, inner) = split(&env.ty(src).shape, axis);
    let ds = match ty.elem {
        Elem::Scalar(s) | Elem::Ptr(s) => s,
    };
    let u64s = env.scalar(src) == Scalar::U64;
    let at = |o: usize, j: usize, i: usize| (o * len + j) * inner + i;
    match (env.get(src)?, out) {
        (Data::Float(x), Data::Float(r)) => {
            let f: fn(f64, f64) -> f64 = match op {
                // Accumulated in f64, more precisely than the GPU's f32 tree; rounded at the end.
                ReduceOp::Sum => |a, b| a + b,
                ReduceOp::Max => fmax,
                ReduceOp::Min => fmin,
                _ => return Err(Fault::interp("an index reduction into a float")),
            };
            fold(x, r, outer, len, inner, f);
            r.iter_mut().for_each(|v| *v = round(ds, *v));
        }
        (Data::Int(x), Data::Int(r)) if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) => {
            let max = op == ReduceOp::ArgMax;
            let key = |v: i64| {
                if u64s {
                    (v as u64 ^ (1 << 63)) as i64
                } else {
                    v
                }
            };
            arg(r, outer, len, inner, |o, j, i, best: Option<usize>| {
                let v = key(x.get(at(o, j, i)).copied().unwrap_or_default());
                best.is_none_or(|b| {
                    let w = key(x.get(at(o, b, i)).copied().unwrap_or_default());
                    if max {
                        v > w
                    } else {
                        v < w
                    }
                })
            });
        }
        (Data::Float(x), Data::Int(r)) => {
            let max = match op {
                ReduceOp::ArgMax => true,
                ReduceOp::ArgMin => false,
                _ => return Err(Fault::interp("a float reduction into an integer")),
            };
            // Strictly better replaces: ties keep the first; a NaN loses to any number.
            arg(r, outer, len, inner, |o, j, i, best: Option<usize>| {
                let v = x.get(at(o, j, i)).copied().unwrap_or_default();
                best.is_none_or(|b| {
                    let w = x.get(at(o, b, i)).copied().unwrap_or_default();
                    (w.is_nan() && !v.is_nan()) || if max { v > w } else { v < w }
                })
            });
        }
        (Data::Int(x), Data::Int(r)) => {
            let f: fn(i64, i64) -> i64 = match (op, u64s) {
                (ReduceOp::Sum, _) => i64::wrapping_add,
                (ReduceOp::Max, false) => i64::max,
                (ReduceOp::Min, false) => i64::min,
                (ReduceOp::Max, true) => |a, b| (a as u64).max(b as u64) as i64,
                (ReduceOp::Min, true) => |a, b| (a as u64).min(b as u64) as i64,
                _ => return Err(Fault::interp("an unsupported integer reduction")),
            };
            fold(x, r, outer, len, inner, f);
            r.iter_mut().for_each(|v| *v = wrap(ds, *v));
        }
        _ => {
            return Err(Fault::interp(
                "a reduction between values of different kinds",
            ))
        }
    }
    Ok(())
}

fn fold<T: Copy + Default>(
    x: &[T],
    r: &mut [T],
    outer: usize,
    len: usize,
    inner: usize,
    f: fn(T, T) -> T,
) {
    for o in 0..outer {
        let base = o * len * inner;
        let Some(row) = r.get_mut(o * inner..(o + 1) * inner) else {
            return;
        };
        for (i, acc) in row.iter_mut().enumerate() {
            *acc = x.get(base + i).copied().unwrap_or_default();
        }
        for j in 1..len {
            let from = x
                .get(base + j * inner..base + (j + 1) * inner)
                .unwrap_or(&[]);
            for (acc, &v) in row.iter_mut().zip(from) {
                *acc = f(*acc, v);
            }
        }
    }
}

/// The index along the axis of the element `better` prefers, for each output.
fn arg(
    r: &mut [i64],
    outer: usize,
    len: usize,
    inner: usize,
    better: impl Fn(usize, usize, usize, Option<usize>) -> bool,
) {
    for o in 0..outer {
        for i in 0..inner {
            let mut best = None;
            for j in 0..len {
                if better(o, j, i, best) {
                    best = Some(j);
                }
            }
            if let Some(slot) = r.get_mut(o * inner + i) {
                *slot = best.unwrap_or(0) as i64;
            }
        }
    }
}
