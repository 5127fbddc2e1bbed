//! The kernel's IR checked once before a launch: every variable id in range, every op's
//! operands of the kinds and shapes the IR's contract promises. The evaluator relies on this
//! (operand lengths equal the destination's, or one for a scalar), so a malformed kernel is an
//! error naming its statement rather than a panic halfway through a launch.

use super::Fault;
use crate::tile::ir::{
    AtomicOp, BinOp, Elem, Kernel, Op, ReduceOp, Scalar, Stmt, StmtKind, Type, UnOp, VarId,
};

/// The most elements one variable may hold (Triton's own limit is 2^20).
pub(super) const MAX_NUMEL: u64 = 1 << 24;

pub(super) fn validate(k: &Kernel) -> Result<(), Fault> {
    for (i, v) in k.vars.iter().enumerate() {
        if v.ty.shape.contains(&0) || v.ty.numel() > MAX_NUMEL {
            return Err(Fault::interp(format!(
                "variable {i}{} has shape {:?}: the interpreter holds tiles of 1 to {MAX_NUMEL} elements",
                v.name.as_deref().map(|n| format!(" (`{n}`)")).unwrap_or_default(),
                v.ty.shape
            )));
        }
    }
    let v = Validator { k };
    for p in &k.params {
        v.ty(p.var)?;
    }
    v.block(&k.body)
}

pub(super) struct Validator<'k> {
    k: &'k Kernel,
}

pub(super) fn bad(what: impl Into<String>) -> Fault {
    Fault::interp(format!("cannot interpret this kernel: {}", what.into()))
}

impl<'k> Validator<'k> {
    pub(super) fn ty(&self, v: VarId) -> Result<&'k Type, Fault> {
        self.k
            .vars
            .get(v.0 as usize)
            .map(|v| &v.ty)
            .ok_or_else(|| bad(format!("variable {} does not exist", v.0)))
    }

    pub(super) fn scalar_elem(&self, v: VarId) -> Result<Scalar, Fault> {
        match self.ty(v)?.elem {
            Elem::Scalar(s) => Ok(s),
            Elem::Ptr(_) => Err(bad(format!("variable {} is a pointer, not a number", v.0))),
        }
    }

    fn ptr_elem(&self, v: VarId) -> Result<Scalar, Fault> {
        match self.ty(v)?.elem {
            Elem::Ptr(s) => Ok(s),
            Elem::Scalar(_) => Err(bad(format!("variable {} is a number, not a pointer", v.0))),
        }
    }

    /// `v` has `shape`, or is a scalar (used for every element).
    fn fits(&self, v: VarId, shape: &[u32]) -> Result<(), Fault> {
        let t = self.ty(v)?;
        if t.shape == shape || t.shape.is_empty() {
            Ok(())
        } else {
            Err(bad(format!(
                "variable {} has shape {:?} where {:?} is needed",
                v.0, t.shape, shape
            )))
        }
    }

    fn int_scalar(&self, v: VarId) -> Result<(), Fault> {
        let t = self.ty(v)?;
        match t.elem {
            Elem::Scalar(s) if !s.is_float() && t.shape.is_empty() => Ok(()),
            _ => Err(bad(format!("variable {} is not an integer scalar", v.0))),
        }
    }

    pub(super) fn block(&self, body: &[Stmt]) -> Result<(), Fault> {
        for s in body {
            self.stmt(s).map_err(|f| f.at_line(s.loc.line))?;
        }
        Ok(())
    }

    fn stmt(&self, s: &Stmt) -> Result<(), Fault> {
        match &s.kind {
            StmtKind::Assign { dst, op } => self.op(*dst, op),
            StmtKind::Store { ptr, value, mask } => {
                let shape = &self.ty(*ptr)?.shape;
                self.ptr_elem(*ptr)?;
                self.scalar_elem(*value)?;
                self.fits(*value, shape)?;
                if let Some(m) = mask {
                    self.scalar_elem(*m)?;
                    self.fits(*m, shape)?;
                }
                Ok(())
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.scalar_elem(*cond)?;
                self.block(then)?;
                self.block(otherwise)
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
                ..
            } => {
                for v in [var, start, end, step] {
                    self.int_scalar(*v)?;
                }
                self.block(body)
            }
            StmtKind::While {
                cond_body,
                cond,
                body,
            } => {
                self.block(cond_body)?;
                self.scalar_elem(*cond)?;
                self.block(body)
            }
            StmtKind::Assume { cond } => self.scalar_elem(*cond).map(|_| ()),
            StmtKind::Barrier | StmtKind::GridDependency(_) | StmtKind::Return => Ok(()),
        }
    }

    fn op(&self, dst: VarId, op: &Op) -> Result<(), Fault> {
        let d = self.ty(dst)?;
        let same_elem = |v: VarId| -> Result<(), Fault> {
            if self.ty(v)?.elem == d.elem {
                Ok(())
            } else {
                Err(bad(format!(
                    "variable {} is not of its destination's type",
                    v.0
                )))
            }
        };
        match op {
            Op::Const(_) | Op::ProgramId(_) | Op::NumPrograms(_) if d.is_tile() => {
                Err(bad("a constant or program id assigned to a tile"))
            }
            Op::Const(_) => self.scalar_elem(dst).map(|_| ()),
            Op::ProgramId(a) | Op::NumPrograms(a) if *a > 2 => {
                Err(bad(format!("program axis {a} (axes are 0, 1 and 2)")))
            }
            Op::ProgramId(_) | Op::NumPrograms(_) => self.int_scalar(dst),
            Op::Arange { start, end } => {
                let n = end.checked_sub(*start);
                if self.scalar_elem(dst)?.is_float()
                    || d.shape.len() != 1
                    || n != Some(i64::from(d.shape[0]))
                {
                    return Err(bad(format!("arange({start}, {end}) into {:?}", d.shape)));
                }
                Ok(())
            }
            Op::Copy(s) | Op::Hint { src: s, .. } => {
                if self.ty(*s)? == d {
                    Ok(())
                } else {
                    Err(bad(format!("a copy of variable {} changes its type", s.0)))
                }
            }
            Op::Splat(s) => {
                same_elem(*s)?;
                self.fits(*s, &[])
            }
            Op::Broadcast(s) => {
                same_elem(*s)?;
                let st = &self.ty(*s)?.shape;
                let ok = st.len() == d.shape.len()
                    && st.iter().zip(&d.shape).all(|(a, b)| a == b || *a == 1);
                ok.then_some(())
                    .ok_or_else(|| bad(format!("broadcast of {st:?} to {:?}", d.shape)))
            }
            Op::ExpandDims { src, axis } => {
                same_elem(*src)?;
                let mut want = self.ty(*src)?.shape.clone();
                if *axis as usize > want.len() {
                    return Err(bad(format!("expand_dims at axis {axis} of {want:?}")));
                }
                want.insert(*axis as usize, 1);
                (want == d.shape)
                    .then_some(())
                    .ok_or_else(|| bad(format!("expand_dims gives {want:?}, not {:?}", d.shape)))
            }
            Op::Reshape(s) => {
                same_elem(*s)?;
                (self.ty(*s)?.numel() == d.numel())
                    .then_some(())
                    .ok_or_else(|| bad("a reshape that changes the number of elements"))
            }
            Op::Permute { src, perm } => {
                same_elem(*src)?;
                let st = &self.ty(*src)?.shape;
                let mut seen = vec![false; st.len()];
                let ok = perm.len() == st.len()
                    && d.shape.len() == st.len()
                    && perm.iter().zip(&d.shape).all(|(&p, &n)| {
                        let fresh = seen.get(p as usize).is_some_and(|s| !s);
                        if fresh {
                            seen[p as usize] = true;
                        }
                        fresh && st[p as usize] == n
                    });
                ok.then_some(())
                    .ok_or_else(|| bad(format!("permute {perm:?} of {st:?} into {:?}", d.shape)))
            }
            Op::Cast(s) => {
                let st = self.ty(*s)?;
                if st.shape != d.shape && !st.shape.is_empty() {
                    return Err(bad("a cast that changes the shape"));
                }
                match (st.elem, d.elem) {
                    (Elem::Scalar(_), Elem::Scalar(_)) | (Elem::Ptr(_), Elem::Ptr(_)) => Ok(()),
                    _ => Err(bad("a cast between a pointer and a number")),
                }
            }
            Op::Binary { op, lhs, rhs } => {
                let ds = self.scalar_elem(dst)?;
                let (a, b) = (self.scalar_elem(*lhs)?, self.scalar_elem(*rhs)?);
                self.fits(*lhs, &d.shape)?;
                self.fits(*rhs, &d.shape)?;
                let cmp = matches!(
                    op,
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
                );
                let bits = matches!(
                    op,
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
                );
                if a.is_float() != b.is_float() || (!cmp && a.is_float() != ds.is_float()) {
                    return Err(bad(format!("{op:?} of {a:?} and {b:?} into {ds:?}")));
                }
                if bits && a.is_float() {
                    return Err(bad(format!("{op:?} on floats")));
                }
                Ok(())
            }
            Op::Unary { op, src } => {
                let (s, ds) = (self.scalar_elem(*src)?, self.scalar_elem(dst)?);
                self.fits(*src, &d.shape)?;
                let int_ok = matches!(op, UnOp::Neg | UnOp::Not | UnOp::Abs);
                let float_ok = !matches!(op, UnOp::Not);
                if s.is_float() != ds.is_float()
                    || (s.is_float() && !float_ok)
                    || (!s.is_float() && !int_ok)
                {
                    return Err(bad(format!("{op:?} of {s:?} into {ds:?}")));
                }
                Ok(())
            }
            Op::Fma { a, b, c } => {
                for v in [a, b, c] {
                    if !self.scalar_elem(*v)?.is_float() {
                        return Err(bad("fma of integers"));
                    }
                    self.fits(*v, &d.shape)?;
                }
                self.scalar_elem(dst)?;
                Ok(())
            }
            Op::Where { cond, a, b } => {
                self.scalar_elem(*cond)?;
                self.fits(*cond, &d.shape)?;
                for v in [a, b] {
                    same_elem(*v)?;
                    self.fits(*v, &d.shape)?;
                }
                Ok(())
            }
            Op::PtrAdd { ptr, offset } => {
                same_elem(*ptr)?;
                self.ptr_elem(*ptr)?;
                self.fits(*ptr, &d.shape)?;
                if self.scalar_elem(*offset)?.is_float() {
                    return Err(bad("a pointer offset that is a float"));
                }
                self.fits(*offset, &d.shape)
            }
            Op::Load { ptr, mask, other } => {
                let pt = self.ty(*ptr)?;
                self.ptr_elem(*ptr)?;
                self.scalar_elem(dst)?;
                if pt.shape != d.shape {
                    return Err(bad("a load whose result is not of its pointer's shape"));
                }
                if let Some(m) = mask {
                    self.scalar_elem(*m)?;
                    self.fits(*m, &d.shape)?;
                }
                if let Some(o) = other {
                    same_elem(*o)?;
                    self.fits(*o, &d.shape)?;
                }
                Ok(())
            }
            Op::Reduce { op, src, axis } => {
                let st = self.ty(*src)?;
                self.scalar_elem(*src)?;
                let ds = self.scalar_elem(dst)?;
                let want: Vec<u32> = match axis {
                    None => Vec::new(),
                    Some(a) if (*a as usize) < st.shape.len() => {
                        let mut w = st.shape.clone();
                        w.remove(*a as usize);
                        w
                    }
                    Some(a) => {
                        return Err(bad(format!("a reduction over axis {a} of {:?}", st.shape)))
                    }
                };
                let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
                if want != d.shape || (arg && ds.is_float()) {
                    return Err(bad(format!(
                        "{op:?} of {:?} into {:?} {ds:?}",
                        st.shape, d.shape
                    )));
                }
                Ok(())
            }
            Op::Scan { .. } | Op::ReduceWith { .. } => self.scan_op(d, op),
            Op::Sort { src, .. } => {
                self.scalar_elem(*src)?;
                let n = d.shape.last().copied().unwrap_or(0);
                if self.ty(*src)? != d || !n.is_power_of_two() {
                    return Err(bad(format!("a sort of {:?} into {:?}", self.ty(*src)?, d)));
                }
                Ok(())
            }
            Op::Atomic {
                op,
                ptr,
                value,
                mask,
                cmp,
            } => {
                let pt = self.ty(*ptr)?;
                let p = self.ptr_elem(*ptr)?;
                let (v, ds) = (self.scalar_elem(*value)?, self.scalar_elem(dst)?);
                self.fits(*value, &pt.shape)?;
                if (*op == AtomicOp::Cas) != cmp.is_some() {
                    return Err(bad("a compare-and-swap without its compared value"));
                }
                if let Some(c) = cmp {
                    same_elem(*c)?;
                    self.fits(*c, &pt.shape)?;
                }
                if pt.shape != d.shape
                    || v.is_float() != p.is_float()
                    || ds.is_float() != p.is_float()
                {
                    return Err(bad(
                        "an atomic whose value or result does not match its pointer",
                    ));
                }
                if let Some(m) = mask {
                    self.scalar_elem(*m)?;
                    self.fits(*m, &d.shape)?;
                }
                Ok(())
            }
            Op::Dot { a, b, acc, .. } => {
                let (at, bt) = (self.ty(*a)?, self.ty(*b)?);
                // Floats throughout, or int8 operands into an int32 result.
                let floats = [*a, *b, dst].iter().try_fold(true, |ok, v| {
                    Ok::<_, Fault>(ok && self.scalar_elem(*v)?.is_float())
                })? || (self.scalar_elem(*a)? == Scalar::I8
                    && self.scalar_elem(*b)? == Scalar::I8
                    && self.scalar_elem(dst)? == Scalar::I32);
                let shapes = match (at.shape.as_slice(), bt.shape.as_slice()) {
                    (&[m, k], &[k2, n]) => k == k2 && d.shape == [m, n],
                    _ => false,
                };
                if !floats || !shapes {
                    return Err(bad(format!(
                        "a dot of {:?} and {:?} into {:?}",
                        at.shape, bt.shape, d.shape
                    )));
                }
                match acc {
                    Some(c) if self.ty(*c)? != d => Err(bad("a dot accumulator of another type")),
                    _ => Ok(()),
                }
            }
        }
    }
}
