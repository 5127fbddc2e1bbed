//! `tl.dot` on the CPU: the exact products of the (already rounded) inputs summed in f64, the
//! accumulator added, and the sum rounded once to the result's dtype. The GPU sums in fp32 in
//! its own order (and in fp16 for an fp16 result), so this is the oracle its results are held
//! to, within the workspace's tolerance. An int8 dot is exact: int32 sums that wrap, as the
//! GPU's.

use super::exec::Env;
use super::value::{round_all, wrap_all, Data};
use super::Fault;
use crate::tile::ir::{Elem, Type, VarId};

/// `out = a @ b (+ acc)`; returns the multiply-adds it took.
pub(super) fn dot(
    env: &Env,
    a: VarId,
    b: VarId,
    acc: Option<VarId>,
    ty: &Type,
    out: &mut Data,
) -> Result<u64, Fault> {
    let (ash, bsh) = (&env.ty(a).shape, &env.ty(b).shape);
    let bad = || Fault::interp("a dot whose operands are not [M, K] and [K, N]");
    let (&[m, k], &[k2, n]) = (ash.as_slice(), bsh.as_slice()) else {
        return Err(bad());
    };
    if k != k2 || ty.shape != [m, n] {
        return Err(bad());
    }
    let (m, k, n) = (m as usize, k as usize, n as usize);
    if let Data::Int(o) = out {
        return int_dot(env, (a, b, acc), (m, k, n), ty, o);
    }
    let (x, y) = (env.floats(a)?, env.floats(b)?);
    let Data::Float(o) = out else {
        return Err(Fault::interp("a dot whose result is not a float tile"));
    };
    if x.len() != m * k || y.len() != k * n || o.len() != m * n {
        return Err(bad());
    }
    match acc {
        Some(c) => {
            let c = env.floats(c)?;
            if c.len() != m * n {
                return Err(bad());
            }
            o.copy_from_slice(c);
        }
        None => o.iter_mut().for_each(|v| *v = 0.0),
    }
    // i-k-j order: each row of b is read contiguously.
    for i in 0..m {
        let row = &mut o[i * n..(i + 1) * n];
        for (kk, &xv) in x[i * k..(i + 1) * k].iter().enumerate() {
            // No skip of zero `xv`: 0 * inf and 0 * NaN are NaN, as on the tensor cores.
            for (r, &yv) in row.iter_mut().zip(&y[kk * n..(kk + 1) * n]) {
                *r += xv * yv;
            }
        }
    }
    if let Elem::Scalar(s) = ty.elem {
        round_all(s, o);
    }
    Ok((m * n * k) as u64)
}

/// An integer `a @ b (+ acc)`: exact products, sums wrapped to the result's dtype (int32).
fn int_dot(
    env: &Env,
    (a, b, acc): (VarId, VarId, Option<VarId>),
    (m, k, n): (usize, usize, usize),
    ty: &Type,
    o: &mut [i64],
) -> Result<u64, Fault> {
    let bad = || Fault::interp("an integer dot whose operands are not [M, K] and [K, N]");
    let (x, y) = (env.ints(a)?, env.ints(b)?);
    if x.len() != m * k || y.len() != k * n || o.len() != m * n {
        return Err(bad());
    }
    match acc {
        Some(c) => {
            let c = env.ints(c)?;
            if c.len() != m * n {
                return Err(bad());
            }
            o.copy_from_slice(c);
        }
        None => o.iter_mut().for_each(|v| *v = 0),
    }
    for i in 0..m {
        let row = &mut o[i * n..(i + 1) * n];
        for (kk, &xv) in x[i * k..(i + 1) * k].iter().enumerate() {
            for (r, &yv) in row.iter_mut().zip(&y[kk * n..(kk + 1) * n]) {
                *r = r.wrapping_add(xv.wrapping_mul(yv));
            }
        }
    }
    if let Elem::Scalar(s) = ty.elem {
        wrap_all(s, o);
    }
    Ok((m * n * k) as u64)
}
