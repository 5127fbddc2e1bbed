//! Affine forms of a loop's integer and pointer values: what a pointer tile is, as a base
//! pointer, a scalar part and one index term per dimension.
//!
//! An integer *scalar* is a [`Lin`]: a constant plus whole multiples of *atoms*, the scalar
//! variables the forms do not take apart (parameters, the loop variable, program ids, a
//! quotient or a minimum). An integer *tile* adds one [`Dim`] per dimension it varies along,
//! `((start + i) % wrap) * mul` at position `i` of that axis, so the Triton matmul's
//! `a_ptr + offs_am[:, None] * K + offs_k[None, :]` with `offs_am = (pid_m * BM + arange) % M`
//! is `a_ptr + ((pid_m * BM + i) % M) * K + (0 + j) * 1`. Every step is checked arithmetic: a
//! value that would overflow, or that the forms cannot express, has no form.

use crate::tile::ir::{BinOp, Const, Elem, Kernel, Op, Scalar, VarId};
use std::collections::{BTreeMap, HashMap};

/// How deep a value's definition is followed before the forms give up.
const MAX_DEPTH: u32 = 64;

/// An integer scalar: `c + Σ coef · atom` (no zero coefficients).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lin {
    pub c: i64,
    pub terms: BTreeMap<VarId, i64>,
}

impl Lin {
    pub fn konst(c: i64) -> Lin {
        Lin {
            c,
            terms: BTreeMap::new(),
        }
    }

    pub fn atom(v: VarId) -> Lin {
        Lin {
            c: 0,
            terms: BTreeMap::from([(v, 1)]),
        }
    }

    pub fn add(&self, o: &Lin) -> Option<Lin> {
        let mut out = self.clone();
        out.c = out.c.checked_add(o.c)?;
        for (&v, &k) in &o.terms {
            let e = out.terms.entry(v).or_insert(0);
            *e = e.checked_add(k)?;
            if *e == 0 {
                out.terms.remove(&v);
            }
        }
        Some(out)
    }

    pub fn scale(&self, k: i64) -> Option<Lin> {
        if k == 0 {
            return Some(Lin::konst(0));
        }
        let mut terms = BTreeMap::new();
        for (&v, &x) in &self.terms {
            terms.insert(v, x.checked_mul(k)?);
        }
        Some(Lin {
            c: self.c.checked_mul(k)?,
            terms,
        })
    }

    pub fn sub(&self, o: &Lin) -> Option<Lin> {
        self.add(&o.scale(-1)?)
    }

    /// The product, when one side is a constant.
    pub fn mul(&self, o: &Lin) -> Option<Lin> {
        match (self.as_const(), o.as_const()) {
            (_, Some(k)) => self.scale(k),
            (Some(k), None) => o.scale(k),
            (None, None) => None,
        }
    }

    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }

    /// The atom, when the value is exactly one atom.
    pub fn as_atom(&self) -> Option<VarId> {
        match self.terms.iter().next() {
            Some((&v, &1)) if self.c == 0 && self.terms.len() == 1 => Some(v),
            _ => None,
        }
    }

    /// `q` such that `self == q * o`, when there is one (`o` not zero).
    pub fn ratio(&self, o: &Lin) -> Option<i64> {
        let (ov, ok) = match o.terms.iter().next() {
            Some((&v, &k)) => (Some(v), k),
            None => (None, o.c),
        };
        if ok == 0 {
            return None;
        }
        let num = match ov {
            Some(v) => self.terms.get(&v).copied().unwrap_or(0),
            None => self.c,
        };
        if num.checked_rem(ok)? != 0 {
            return None;
        }
        let q = num.checked_div(ok)?;
        (o.scale(q)? == *self).then_some(q)
    }
}

/// One dimension of an integer tile: `((start + i) % wrap) * mul` at position `i` of `axis`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dim {
    pub axis: usize,
    pub start: Lin,
    /// The divisor of a `%` taken of `start + i` (an atom), if any.
    pub wrap: Option<VarId>,
    pub mul: Lin,
}

/// An integer value: `scalar + Σ dims` (a scalar, or a tile constant along every other axis).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IntForm {
    pub scalar: Lin,
    pub dims: Vec<Dim>,
}

impl IntForm {
    fn uniform(l: Lin) -> IntForm {
        IntForm {
            scalar: l,
            dims: Vec::new(),
        }
    }

    /// The value, when it is the same at every position.
    pub fn as_uniform(&self) -> Option<&Lin> {
        self.dims.is_empty().then_some(&self.scalar)
    }

    /// `self + sign · o`. An index (one plain dimension of multiplier 1) keeps any uniform
    /// part in its start.
    fn combine(&self, o: &IntForm, sign: i64) -> Option<IntForm> {
        let mut out = self.clone();
        for d in &o.dims {
            if out.dims.iter().any(|x| x.axis == d.axis) {
                return None;
            }
            out.dims.push(Dim {
                mul: d.mul.scale(sign)?,
                ..d.clone()
            });
        }
        out.scalar = out.scalar.add(&o.scalar.scale(sign)?)?;
        if let [d] = out.dims.as_mut_slice() {
            if d.wrap.is_none() && d.mul == Lin::konst(1) {
                d.start = d.start.add(&out.scalar)?;
                out.scalar = Lin::konst(0);
            }
        }
        Some(out)
    }

    fn times(&self, m: &Lin) -> Option<IntForm> {
        let mut out = IntForm::uniform(self.scalar.mul(m)?);
        for d in &self.dims {
            out.dims.push(Dim {
                mul: d.mul.mul(m)?,
                ..d.clone()
            });
        }
        Some(out)
    }

    /// `self % e`: an index wraps at atom `e`.
    fn wrap(&self, e: VarId) -> Option<IntForm> {
        match self.dims.as_slice() {
            [d] if d.wrap.is_none() && d.mul == Lin::konst(1) && self.scalar == Lin::konst(0) => {
                Some(IntForm {
                    scalar: Lin::konst(0),
                    dims: vec![Dim {
                        wrap: Some(e),
                        ..d.clone()
                    }],
                })
            }
            _ => None,
        }
    }
}

/// An integer or a pointer value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    Int(IntForm),
    /// `base + off` elements.
    Ptr {
        base: VarId,
        off: IntForm,
    },
}

/// Whether a variable's definition may be taken apart where the forms are asked.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'k> {
    /// Assigned once, visibly: its operation.
    Op(&'k Op),
    /// Usable as it is: a parameter, the loop variable.
    Atom,
    /// Not usable where the forms are asked.
    Outside,
}

/// The forms of a kernel's values at one place of it: `scope` says which definitions apply.
pub struct Forms<'k, F: Fn(VarId) -> Scope<'k>> {
    pub k: &'k Kernel,
    scope: F,
    memo: HashMap<VarId, Option<Form>>,
}

impl<'k, F: Fn(VarId) -> Scope<'k>> Forms<'k, F> {
    pub fn new(k: &'k Kernel, scope: F) -> Self {
        Forms {
            k,
            scope,
            memo: HashMap::new(),
        }
    }

    /// Sets the form of a variable the scope leaves [`Scope::Outside`] (a loop-carried pointer
    /// tile, whose form at the load `carried` works out).
    pub fn know(&mut self, v: VarId, f: Form) {
        self.memo.insert(v, Some(f));
    }

    pub fn form(&mut self, v: VarId) -> Option<Form> {
        self.form_at(v, 0)
    }

    /// The value of a uniform integer.
    pub fn lin(&mut self, v: VarId) -> Option<Lin> {
        match self.form(v)? {
            Form::Int(f) => f.as_uniform().cloned(),
            Form::Ptr { .. } => None,
        }
    }

    fn int_scalar(&self, v: VarId) -> bool {
        let t = self.k.vars.get(v.0 as usize).map(|x| &x.ty);
        matches!(t, Some(t) if !t.is_tile() && matches!(t.elem, Elem::Scalar(s) if s.is_signed_int() || s.is_unsigned_int()))
    }

    fn form_at(&mut self, v: VarId, depth: u32) -> Option<Form> {
        if let Some(f) = self.memo.get(&v) {
            return f.clone();
        }
        if depth > MAX_DEPTH {
            return None;
        }
        let f = match (self.scope)(v) {
            Scope::Outside => None,
            Scope::Atom => self.opaque(v),
            Scope::Op(op) => self.of_op(v, op, depth + 1),
        };
        self.memo.insert(v, f.clone());
        f
    }

    /// A scalar integer the forms do not take apart: an atom.
    fn opaque(&self, v: VarId) -> Option<Form> {
        if self.int_scalar(v) {
            return Some(Form::Int(IntForm::uniform(Lin::atom(v))));
        }
        let t = &self.k.vars.get(v.0 as usize)?.ty;
        match t.elem {
            Elem::Ptr(_) if !t.is_tile() => Some(Form::Ptr {
                base: v,
                off: IntForm::default(),
            }),
            _ => None,
        }
    }

    fn int(&mut self, v: VarId, depth: u32) -> Option<IntForm> {
        match self.form_at(v, depth)? {
            Form::Int(f) => Some(f),
            Form::Ptr { .. } => None,
        }
    }

    fn of_op(&mut self, v: VarId, op: &Op, depth: u32) -> Option<Form> {
        let ty = &self.k.vars.get(v.0 as usize)?.ty;
        let rank = ty.shape.len();
        let int_dst =
            matches!(ty.elem, Elem::Scalar(s) if s.is_signed_int() || s.is_unsigned_int());
        let f = match op {
            Op::Const(Const::Int(c)) if int_dst => Form::Int(IntForm::uniform(Lin::konst(*c))),
            Op::Copy(x) | Op::Broadcast(x) | Op::Hint { src: x, .. } => self.form_at(*x, depth)?,
            Op::Cast(x) if int_dst && self.widens(*x, v) => self.form_at(*x, depth)?,
            Op::Splat(x) => match self.form_at(*x, depth)? {
                Form::Int(f) => Form::Int(IntForm::uniform(f.as_uniform()?.clone())),
                p @ Form::Ptr { .. } => p,
            },
            Op::Arange { start, end } if rank == 1 && end > start => Form::Int(IntForm {
                scalar: Lin::konst(0),
                dims: vec![Dim {
                    axis: 0,
                    start: Lin::konst(*start),
                    wrap: None,
                    mul: Lin::konst(1),
                }],
            }),
            Op::ExpandDims { src, axis } => {
                let axis = *axis as usize;
                let shift = |mut f: IntForm| {
                    for d in &mut f.dims {
                        if d.axis >= axis {
                            d.axis += 1;
                        }
                    }
                    f
                };
                match self.form_at(*src, depth)? {
                    Form::Int(f) => Form::Int(shift(f)),
                    Form::Ptr { base, off } => Form::Ptr {
                        base,
                        off: shift(off),
                    },
                }
            }
            Op::PtrAdd { ptr, offset } => match self.form_at(*ptr, depth)? {
                Form::Ptr { base, off } => Form::Ptr {
                    base,
                    off: off.combine(&self.int(*offset, depth)?, 1)?,
                },
                Form::Int(_) => return None,
            },
            Op::Binary { op, lhs, rhs } if int_dst => {
                let (a, b) = (self.int(*lhs, depth), self.int(*rhs, depth));
                let r = match op {
                    BinOp::Add => a?.combine(&b?, 1),
                    BinOp::Sub => a?.combine(&b?, -1),
                    BinOp::Mul => match (a, b) {
                        (Some(a), Some(b)) => match (a.as_uniform(), b.as_uniform()) {
                            (_, Some(m)) => a.times(m),
                            (Some(m), None) => b.times(m),
                            (None, None) => None,
                        },
                        _ => None,
                    },
                    BinOp::Rem if rank > 0 => {
                        let e = b?.as_uniform()?.as_atom()?;
                        a?.wrap(e)
                    }
                    _ => None,
                };
                match r {
                    Some(r) => Form::Int(r),
                    None if rank == 0 => return self.opaque(v),
                    None => return None,
                }
            }
            _ if rank == 0 => return self.opaque(v),
            _ => return None,
        };
        Some(f)
    }

    /// Whether converting `src` to `dst`'s integer type keeps every value.
    fn widens(&self, src: VarId, dst: VarId) -> bool {
        let s = |v: VarId| match self.k.vars.get(v.0 as usize).map(|x| x.ty.elem) {
            Some(Elem::Scalar(s)) => Some(s),
            _ => None,
        };
        match (s(src), s(dst)) {
            (Some(a), Some(b)) if a == b => true,
            (Some(a), Some(b)) => {
                let signed = |x: Scalar| x.is_signed_int();
                (a.is_signed_int() || a.is_unsigned_int())
                    && signed(b)
                    && (b.size() > a.size() || (signed(a) && b.size() == a.size()))
            }
            _ => false,
        }
    }
}
