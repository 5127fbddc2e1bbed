//! Scans and reductions with a combine function (`tl.associative_scan`, `tl.cumsum`,
//! `tl.cumprod`, `tl.reduce`): the combine's statements run once per pair of elements, with
//! its two scalar parameters set, in order along the axis (element `k` of a scan is
//! `f(f(f(x0, x1), x2) ..., xk)`; a reversed scan starts from the last element). That is the
//! sequential order Triton's interpreter uses; compiled code may group the combines
//! differently, which only an inexact (float) combine can tell apart.

use super::exec::Machine;
use super::validate::{bad, Validator};
use super::value::Data;
use super::Fault;
use crate::tile::ir::{Combine, Op, Type, VarId};

/// One element of a number: integers and floats as the interpreter holds them.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn elements(d: &Data) -> Result<Vec<Num>, Fault> {
    match d {
        Data::Int(v) => Ok(v.iter().map(|&x| Num::Int(x)).collect()),
        Data::Float(v) => Ok(v.iter().map(|&x| Num::Float(x)).collect()),
        Data::Ptr(_) => Err(Fault::interp("a scan or reduction of pointers")),
    }
}

fn one(n: Num) -> Data {
    match n {
        Num::Int(x) => Data::Int(vec![x]),
        Num::Float(x) => Data::Float(vec![x]),
    }
}

fn first(d: &Data) -> Result<Num, Fault> {
    match d {
        Data::Int(v) if !v.is_empty() => Ok(Num::Int(v[0])),
        Data::Float(v) if !v.is_empty() => Ok(Num::Float(v[0])),
        _ => Err(Fault::interp(
            "a combine function whose result is not a number",
        )),
    }
}

fn store(out: &mut Data, at: &[(usize, Num)]) -> Result<(), Fault> {
    for &(i, n) in at {
        match (&mut *out, n) {
            (Data::Int(v), Num::Int(x)) if i < v.len() => v[i] = x,
            (Data::Float(v), Num::Float(x)) if i < v.len() => v[i] = x,
            _ => return Err(Fault::interp("a scan result of another kind or size")),
        }
    }
    Ok(())
}

impl Machine<'_> {
    /// `dst = op` for [`Op::Scan`] and [`Op::ReduceWith`].
    pub(super) fn combined(&mut self, dst: VarId, op: &Op) -> Result<(), Fault> {
        let (srcs, part, axis, reverse, c, scan) = match op {
            Op::Scan {
                srcs,
                part,
                axis,
                reverse,
                combine,
            } => (srcs, *part, Some(*axis), *reverse, &**combine, true),
            Op::ReduceWith {
                srcs,
                part,
                axis,
                combine,
            } => (srcs, *part, *axis, false, &**combine, false),
            _ => return Err(Fault::interp("not a scan")),
        };
        let k = self.ctx.k;
        let first_src = *srcs
            .first()
            .ok_or_else(|| Fault::interp("a scan of nothing"))?;
        let shape = &k.ty(first_src).shape;
        let xs = (srcs.iter())
            .map(|s| elements(self.var(*s)?))
            .collect::<Result<Vec<_>, Fault>>()?;
        let numel = xs[0].len();
        let part = part as usize;
        let (outer, len, inner) = super::shape::split(shape, axis);
        let mut results = Vec::with_capacity(if scan { numel } else { outer * inner });
        for o in 0..outer {
            for i in 0..inner {
                let mut acc: Option<Vec<Num>> = None;
                for j in 0..len {
                    let kk = if reverse { len - 1 - j } else { j };
                    let at = (o * len + kk) * inner + i;
                    let v = (xs.iter())
                        .map(|x| x.get(at).copied())
                        .collect::<Option<Vec<Num>>>()
                        .ok_or_else(|| Fault::interp("a scan source of the wrong size"))?;
                    let next = match acc {
                        None => v,
                        Some(a) => self.combine(c, &a, &v)?,
                    };
                    if scan {
                        results.push((at, next[part]));
                    }
                    acc = Some(next);
                }
                if let (false, Some(a)) = (scan, acc) {
                    results.push((o * inner + i, a[part]));
                }
            }
        }
        let ty = &k.ty(dst).clone();
        let mut out = std::mem::take(&mut self.vars[dst.0 as usize]);
        out.reset(ty);
        let r = store(&mut out, &results);
        self.vars[dst.0 as usize] = out;
        self.ops = self.ops.wrapping_add((numel * srcs.len()) as u64);
        r
    }

    /// `c(a, b)`: the combine's statements with its parameters set.
    fn combine(&mut self, c: &Combine, a: &[Num], b: &[Num]) -> Result<Vec<Num>, Fault> {
        let params = c.lhs.iter().zip(a).chain(c.rhs.iter().zip(b));
        for (v, n) in params {
            let slot = self
                .vars
                .get_mut(v.0 as usize)
                .ok_or_else(|| Fault::interp("a combine parameter that does not exist"))?;
            *slot = one(*n);
        }
        self.run_block(&c.body)?;
        (c.results.iter()).map(|r| first(self.var(*r)?)).collect()
    }
}

impl Validator<'_> {
    /// A scan or reduction with a combine function whose result has type `d`.
    pub(super) fn scan_op(&self, d: &Type, op: &Op) -> Result<(), Fault> {
        let (srcs, part, axis, combine, scan) = match op {
            Op::Scan {
                srcs,
                part,
                axis,
                combine,
                ..
            } => (srcs, *part, Some(*axis), combine, true),
            Op::ReduceWith {
                srcs,
                part,
                axis,
                combine,
            } => (srcs, *part, *axis, combine, false),
            _ => return Err(bad("not a scan")),
        };
        let src = *srcs
            .get(part as usize)
            .ok_or_else(|| bad("a scan's part"))?;
        let st = self.ty(src)?;
        let mut want = st.shape.clone();
        match axis {
            Some(a) if (a as usize) < want.len() => {
                if !scan {
                    want.remove(a as usize);
                }
            }
            None if !scan => want.clear(),
            _ => return Err(bad(format!("a scan or reduction over axis {axis:?}"))),
        }
        if want != d.shape || st.elem != d.elem {
            let msg = format!("a scan or reduction of {:?} into {:?}", st.shape, d.shape);
            return Err(bad(msg));
        }
        self.combine(srcs, combine)
    }

    /// A combine function over the tuples of `srcs` (tiles of one shape): one scalar
    /// parameter on each side and one result per tile, of its dtype, and a body of its own.
    fn combine(&self, srcs: &[VarId], c: &Combine) -> Result<(), Fault> {
        let n = srcs.len();
        if n == 0 || c.lhs.len() != n || c.rhs.len() != n || c.results.len() != n {
            return Err(bad("a combine function of another arity than its inputs"));
        }
        let shape = &self.ty(srcs[0])?.shape;
        for (k, &src) in srcs.iter().enumerate() {
            self.scalar_elem(src)?;
            if self.ty(src)?.shape != *shape {
                return Err(bad("a scan of tiles of several shapes"));
            }
            let want = Type {
                elem: self.ty(src)?.elem,
                shape: Vec::new(),
            };
            for v in [c.lhs[k], c.rhs[k], c.results[k]] {
                if *self.ty(v)? != want {
                    return Err(bad("a combine function of another type than its input"));
                }
            }
        }
        self.block(&c.body)
    }
}
