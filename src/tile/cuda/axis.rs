//! Axis facts for vectorisation, in the spirit of Triton's axis analysis. For each integer or
//! pointer variable and each dimension: *contiguity* (the values come in aligned runs of this
//! many +1 steps), *divisibility* (the first value of each run is a multiple of this; for
//! pointers, in bytes) and *constancy* (aligned runs of this many equal values). Every fact is
//! a power of two. Loads and stores read them to pick the widest provable vector access.
//!
//! The IR may assign a variable more than once (loop-carried values), so the analysis starts
//! optimistic and meets every assignment until nothing changes.

use crate::tile::ir::{BinOp, Const, Elem, Kernel, Op, Stmt, StmtKind, VarId};

/// Divisibility of zero (and the cap on every fact).
pub const MAX: u64 = 1 << 30;

/// Facts per dimension (one entry for a scalar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub contig: Vec<u64>,
    pub div: Vec<u64>,
    pub constancy: Vec<u64>,
}

impl Facts {
    /// Nothing known, for a value of `rank` dimensions.
    pub fn unknown(rank: usize) -> Facts {
        let n = rank.max(1);
        Facts {
            contig: vec![1; n],
            div: vec![1; n],
            constancy: vec![1; n],
        }
    }

    fn scalar(div: u64) -> Facts {
        Facts {
            contig: vec![1],
            div: vec![div.clamp(1, MAX)],
            constancy: vec![1],
        }
    }

    fn meet(&self, o: &Facts) -> Facts {
        let m = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| *x.min(y)).collect();
        Facts {
            contig: m(&self.contig, &o.contig),
            div: m(&self.div, &o.div),
            constancy: m(&self.constancy, &o.constancy),
        }
    }

    /// The facts of the last dimension: (contiguity, divisibility, constancy).
    pub fn last(&self) -> (u64, u64, u64) {
        let i = self.contig.len().saturating_sub(1);
        (
            self.contig.get(i).copied().unwrap_or(1),
            self.div.get(i).copied().unwrap_or(1),
            self.constancy.get(i).copied().unwrap_or(1),
        )
    }
}

/// The largest power of two dividing `x` (capped; [`MAX`] for 0).
pub fn pow2_div(x: i64) -> u64 {
    if x == 0 {
        MAX
    } else {
        (1u64 << x.unsigned_abs().trailing_zeros().min(30)).min(MAX)
    }
}

fn pow2_floor(x: u64) -> u64 {
    if x == 0 {
        1
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// Facts for every variable of `k` (index = `VarId`).
pub fn analyse(k: &Kernel) -> Vec<Facts> {
    let mut facts: Vec<Option<Facts>> = vec![None; k.vars.len()];
    for p in &k.params {
        let f = match k.vars.get(p.var.0 as usize).map(|v| v.ty.elem) {
            Some(Elem::Ptr(s)) => Facts::scalar(p.divisibility.max(u64::from(s.size()))),
            _ => Facts::scalar(p.divisibility.max(1)),
        };
        if let Some(slot) = facts.get_mut(p.var.0 as usize) {
            *slot = Some(f);
        }
    }
    for _ in 0..64 {
        let mut changed = false;
        pass(k, &k.body, &mut facts, &mut changed);
        if !changed {
            return facts
                .into_iter()
                .enumerate()
                .map(|(i, f)| f.unwrap_or_else(|| Facts::unknown(k.vars[i].ty.shape.len())))
                .collect();
        }
    }
    // Not settled (cannot happen on a finite lattice, but never loop forever): know nothing.
    k.vars
        .iter()
        .map(|v| Facts::unknown(v.ty.shape.len()))
        .collect()
}

fn assign(facts: &mut [Option<Facts>], dst: VarId, f: Facts, changed: &mut bool) {
    let Some(slot) = facts.get_mut(dst.0 as usize) else {
        return;
    };
    let new = match slot {
        Some(old) => old.meet(&f),
        None => f,
    };
    if slot.as_ref() != Some(&new) {
        *slot = Some(new);
        *changed = true;
    }
}

fn pass(k: &Kernel, body: &[Stmt], facts: &mut Vec<Option<Facts>>, changed: &mut bool) {
    for s in body {
        match &s.kind {
            StmtKind::Assign { dst, op } => {
                if let Some(f) = op_facts(k, *dst, op, facts) {
                    assign(facts, *dst, f, changed);
                }
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                pass(k, then, facts, changed);
                pass(k, otherwise, facts, changed);
            }
            StmtKind::For {
                var,
                start,
                step,
                body,
                ..
            } => {
                let d = |v: &VarId| facts.get(v.0 as usize).cloned().flatten();
                if let (Some(a), Some(b)) = (d(start), d(step)) {
                    assign(facts, *var, Facts::scalar(a.div[0].min(b.div[0])), changed);
                }
                pass(k, body, facts, changed);
            }
            StmtKind::While {
                cond_body, body, ..
            } => {
                pass(k, cond_body, facts, changed);
                pass(k, body, facts, changed);
            }
            _ => {}
        }
    }
}

/// Facts of `v` seen with the shape `shape` (a scalar splats).
fn get(k: &Kernel, facts: &[Option<Facts>], v: VarId, shape: &[u32]) -> Option<Facts> {
    let f = facts.get(v.0 as usize)?.clone()?;
    if k.ty(v).is_tile() || shape.is_empty() {
        return Some(f);
    }
    Some(Facts {
        contig: vec![1; shape.len()],
        div: vec![f.div[0]; shape.len()],
        constancy: shape.iter().map(|&d| u64::from(d)).collect(),
    })
}

fn zip3(a: &Facts, b: &Facts, f: impl Fn(usize) -> (u64, u64, u64)) -> Facts {
    let n = a.contig.len().min(b.contig.len());
    let mut out = Facts::unknown(n);
    for i in 0..n {
        let (c, d, k) = f(i);
        out.contig[i] = c.clamp(1, MAX);
        out.div[i] = d.clamp(1, MAX);
        out.constancy[i] = k.clamp(1, MAX);
    }
    out
}

/// The facts an assignment gives, or None while an operand is still unknown (optimistic).
fn op_facts(k: &Kernel, dst: VarId, op: &Op, facts: &[Option<Facts>]) -> Option<Facts> {
    let shape = &k.ty(dst).shape;
    let rank = shape.len();
    let dims: Vec<u64> = shape.iter().map(|&d| u64::from(d)).collect();
    let g = |v: VarId| get(k, facts, v, shape);
    Some(match op {
        Op::Const(Const::Int(i)) => Facts::scalar(pow2_div(*i)),
        Op::Copy(v) => g(*v)?,
        Op::Arange { start, end } => Facts {
            contig: vec![(end.wrapping_sub(*start).max(1) as u64).min(MAX)],
            div: vec![pow2_div(*start)],
            constancy: vec![1],
        },
        Op::Splat(v) => {
            let s = facts.get(v.0 as usize)?.clone()?;
            Facts {
                contig: vec![1; rank.max(1)],
                div: vec![s.div[0]; rank.max(1)],
                constancy: if rank == 0 { vec![1] } else { dims.clone() },
            }
        }
        Op::Broadcast(v) => {
            let s = g(*v)?;
            let src = &k.ty(*v).shape;
            let mut out = s.clone();
            for i in 0..rank.min(src.len()).min(s.contig.len()) {
                if src[i] == 1 && shape[i] != 1 {
                    out.contig[i] = 1;
                    out.constancy[i] = dims[i];
                }
            }
            out
        }
        Op::ExpandDims { src, axis } => {
            let s = g(*src)?;
            let mut out = if k.ty(*src).is_tile() {
                s.clone()
            } else {
                Facts::unknown(0)
            };
            let at = (*axis as usize).min(out.contig.len());
            let d = s.div.iter().copied().min().unwrap_or(1);
            if k.ty(*src).is_tile() {
                out.contig.insert(at, 1);
                out.div.insert(at, d);
                out.constancy.insert(at, 1);
            }
            out
        }
        Op::Reshape(v) => {
            let s = g(*v)?;
            let mut out = Facts::unknown(rank);
            let (c, d, kk) = s.last();
            let last = dims.last().copied().unwrap_or(1);
            if let Some(i) = rank.checked_sub(1) {
                out.contig[i] = c.min(last);
                out.div[i] = d;
                out.constancy[i] = kk.min(last);
            }
            out
        }
        Op::Permute { src, perm } => {
            let s = g(*src)?;
            let mut out = Facts::unknown(rank);
            for (i, &p) in perm.iter().enumerate().take(rank) {
                let p = p as usize;
                if p < s.contig.len() {
                    out.contig[i] = s.contig[p];
                    out.div[i] = s.div[p];
                    out.constancy[i] = s.constancy[p];
                }
            }
            out
        }
        Op::Cast(v) => {
            let s = g(*v)?;
            let widening_int = matches!(
                (k.ty(*v).elem, k.ty(dst).elem),
                (Elem::Scalar(a), Elem::Scalar(b))
                    if !a.is_float() && !b.is_float() && b.size() >= a.size() && a != crate::tile::ir::Scalar::I1
            );
            if widening_int {
                s
            } else {
                let mut out = Facts::unknown(rank);
                out.constancy = s.constancy;
                out
            }
        }
        Op::Binary { op, lhs, rhs } => binary(*op, &g(*lhs)?, &g(*rhs)?),
        Op::Unary { src, .. } => {
            let mut out = Facts::unknown(rank);
            out.constancy = g(*src)?.constancy;
            out
        }
        Op::Where { cond, a, b } => {
            let (c, a, b) = (g(*cond)?, g(*a)?, g(*b)?);
            zip3(&a, &b, |i| {
                let kc = c.constancy.get(i).copied().unwrap_or(1);
                (
                    kc.min(a.contig[i]).min(b.contig[i]),
                    a.div[i].min(b.div[i]),
                    kc.min(a.constancy[i]).min(b.constancy[i]),
                )
            })
        }
        Op::PtrAdd { ptr, offset } => {
            let size = match k.ty(*ptr).elem {
                Elem::Ptr(s) => u64::from(s.size()),
                Elem::Scalar(_) => 1,
            };
            let (p, o) = (g(*ptr)?, g(*offset)?);
            zip3(&p, &o, |i| {
                (
                    p.contig[i]
                        .min(o.constancy[i])
                        .max(o.contig[i].min(p.constancy[i])),
                    p.div[i].min(o.div[i].saturating_mul(size)),
                    p.constancy[i].min(o.constancy[i]),
                )
            })
        }
        Op::Hint {
            src,
            multiple_of,
            max_contiguous,
        } => {
            let mut s = g(*src)?;
            for i in 0..s.contig.len() {
                if let Some(&m) = multiple_of.get(i) {
                    s.div[i] = s.div[i].max(pow2_floor(u64::from(m))).min(MAX);
                }
                if let Some(&c) = max_contiguous.get(i) {
                    s.contig[i] = s.contig[i].max(pow2_floor(u64::from(c))).min(MAX);
                }
            }
            s
        }
        _ => Facts::unknown(rank),
    })
}

fn binary(op: BinOp, a: &Facts, b: &Facts) -> Facts {
    use BinOp::*;
    zip3(a, b, |i| {
        let (ac, ad, ak) = (a.contig[i], a.div[i], a.constancy[i]);
        let (bc, bd, bk) = (b.contig[i], b.div[i], b.constancy[i]);
        let k = ak.min(bk);
        match op {
            Add => (ac.min(bk).max(bc.min(ak)), ad.min(bd), k),
            Sub => (ac.min(bk), ad.min(bd), k),
            Mul => (1, ad.saturating_mul(bd).min(MAX), k),
            // `x % n` (C remainder, on tiles) for x >= 0, as Triton assumes of offsets: a run of
            // x of c values starting at a multiple of c never crosses a multiple of n when n
            // (constant over the run) is a multiple of c, so it stays a run after the `%`.
            Rem => {
                let c = ac.min(ad).min(bd).min(bk);
                let d = if c < ac {
                    ad.min(bd).min(c)
                } else {
                    ad.min(bd)
                };
                (c, d, k)
            }
            // `x < n` and `x >= n` hold over aligned runs of x when n is a multiple of the run.
            Lt | Ge => (1, 1, k.max(ac.min(ad).min(bd).min(bk))),
            Gt | Le => (1, 1, k.max(bc.min(bd).min(ad).min(ak))),
            _ => (1, 1, k),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::ir::{Param, Scalar, Type, Var};
    use crate::tile::span::Loc;

    fn var(k: &mut Kernel, elem: Elem, shape: &[u32]) -> VarId {
        k.vars.push(Var {
            ty: Type {
                elem,
                shape: shape.to_vec(),
            },
            name: None,
        });
        VarId(k.vars.len() as u32 - 1)
    }

    fn set(k: &mut Kernel, dst: VarId, op: Op) {
        k.body.push(Stmt {
            kind: StmtKind::Assign { dst, op },
            loc: Loc::default(),
        });
    }

    #[test]
    fn offsets_masks_and_pointers_of_a_blocked_kernel() {
        let mut k = Kernel::empty();
        let i32s = Elem::Scalar(Scalar::I32);
        let p = var(&mut k, Elem::Ptr(Scalar::F16), &[]);
        let n = var(&mut k, i32s, &[]);
        k.params = vec![
            Param {
                name: "p".into(),
                var: p,
                divisibility: 16,
                non_negative: true,
            },
            Param {
                name: "n".into(),
                var: n,
                divisibility: 16,
                non_negative: true,
            },
        ];
        let pid = var(&mut k, i32s, &[]);
        let block = var(&mut k, i32s, &[]);
        let base = var(&mut k, i32s, &[]);
        let ar = var(&mut k, i32s, &[4096]);
        let base_t = var(&mut k, i32s, &[4096]);
        let offs = var(&mut k, i32s, &[4096]);
        let n_t = var(&mut k, i32s, &[4096]);
        let mask = var(&mut k, Elem::Scalar(Scalar::I1), &[4096]);
        let p_t = var(&mut k, Elem::Ptr(Scalar::F16), &[4096]);
        let ptrs = var(&mut k, Elem::Ptr(Scalar::F16), &[4096]);
        set(&mut k, pid, Op::ProgramId(0));
        set(&mut k, block, Op::Const(Const::Int(4096)));
        let mul = |lhs, rhs| Op::Binary {
            op: BinOp::Mul,
            lhs,
            rhs,
        };
        set(&mut k, base, mul(pid, block));
        set(
            &mut k,
            ar,
            Op::Arange {
                start: 0,
                end: 4096,
            },
        );
        set(&mut k, base_t, Op::Splat(base));
        let add = Op::Binary {
            op: BinOp::Add,
            lhs: base_t,
            rhs: ar,
        };
        set(&mut k, offs, add);
        set(&mut k, n_t, Op::Splat(n));
        let lt = Op::Binary {
            op: BinOp::Lt,
            lhs: offs,
            rhs: n_t,
        };
        set(&mut k, mask, lt);
        set(&mut k, p_t, Op::Splat(p));
        set(
            &mut k,
            ptrs,
            Op::PtrAdd {
                ptr: p_t,
                offset: offs,
            },
        );
        let f = analyse(&k);
        assert_eq!(f[base.0 as usize].div, vec![4096]);
        assert_eq!(f[offs.0 as usize].contig, vec![4096]);
        assert_eq!(f[offs.0 as usize].div, vec![4096]);
        assert_eq!(f[mask.0 as usize].constancy, vec![16]);
        assert_eq!(f[ptrs.0 as usize].last(), (4096, 16, 1));
    }

    #[test]
    fn pow2_divisibility() {
        assert_eq!(pow2_div(0), MAX);
        assert_eq!(pow2_div(12), 4);
        assert_eq!(pow2_div(-16), 16);
        assert_eq!(pow2_floor(24), 16);
    }
}
