//! Where each variable of a kernel is assigned, and the facts the block proofs read from
//! that: which values are never negative, which are a zero, and which definitions the forms
//! may take apart at a given place.

use super::affine::{Lin, Scope};
use crate::tile::ir::{self, BinOp, Const, Elem, Kernel, Op, Stmt, StmtKind, UnOp, VarId};
use std::collections::{HashMap, HashSet};

/// How deep a definition is followed for a fact.
const MAX_DEPTH: u32 = 64;

/// Where an assignment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// The kernel body's statement `i`.
    Top(usize),
    /// Statement `j` of the body of the loop that is the kernel body's statement `i`.
    Loop(usize, usize),
    /// Anywhere deeper.
    Nested,
}

pub struct Places<'k> {
    pub k: &'k Kernel,
    /// Every assignment of each variable (loops' variables included), where it is.
    assigns: HashMap<VarId, Vec<(At, Option<&'k Op>)>>,
    params: HashSet<VarId>,
    /// Top-level loops' variables that count up from a non-negative start.
    counters: HashSet<VarId>,
}

impl<'k> Places<'k> {
    pub fn new(k: &'k Kernel) -> Places<'k> {
        let mut p = Places {
            k,
            assigns: HashMap::new(),
            params: k.params.iter().map(|p| p.var).collect(),
            counters: HashSet::new(),
        };
        for (i, s) in k.body.iter().enumerate() {
            p.record(s, At::Top(i));
            if let StmtKind::For { body, .. } = &s.kind {
                for (j, t) in body.iter().enumerate() {
                    p.record(t, At::Loop(i, j));
                    p.nested(t);
                }
            } else {
                p.nested(s);
            }
        }
        for s in &k.body {
            if let StmtKind::For {
                var, start, step, ..
            } = &s.kind
            {
                let c = |v: VarId| match p.single(v) {
                    Some((_, Op::Const(Const::Int(c)))) => Some(*c),
                    _ => None,
                };
                if c(*start).is_some_and(|s| s >= 0) && c(*step).is_some_and(|s| s > 0) {
                    p.counters.insert(*var);
                }
            }
        }
        p
    }

    fn record(&mut self, s: &'k Stmt, at: At) {
        match &s.kind {
            StmtKind::Assign { dst, op } => {
                self.assigns.entry(*dst).or_default().push((at, Some(op)))
            }
            StmtKind::For { var, .. } => self.assigns.entry(*var).or_default().push((at, None)),
            _ => {}
        }
    }

    /// The assignments nested in `s`'s blocks.
    fn nested(&mut self, s: &'k Stmt) {
        ir::visit(std::slice::from_ref(s), &mut |t| {
            if !std::ptr::eq(t, s) {
                self.record(t, At::Nested);
            }
        });
    }

    /// Every assignment of `v`.
    pub fn assigns(&self, v: VarId) -> &[(At, Option<&'k Op>)] {
        self.assigns.get(&v).map_or(&[], Vec::as_slice)
    }

    /// `v`'s one assignment by an operation, where there is exactly one.
    pub fn single(&self, v: VarId) -> Option<(At, &'k Op)> {
        match self.assigns(v) {
            [(at, Some(op))] => Some((*at, op)),
            _ => None,
        }
    }

    pub fn is_param(&self, v: VarId) -> bool {
        self.params.contains(&v)
    }

    /// What the forms may use of `v` just before statement `j` of the body of the loop at
    /// top-level index `li`: parameters and the loop's variable as they are, and the
    /// definitions assigned once before that point (in the loop's body or before the loop).
    pub fn scope_at(&self, v: VarId, li: usize, j: usize) -> Scope<'k> {
        if self.is_param(v) || (self.counters.contains(&v) && self.loop_var_of(li) == Some(v)) {
            return Scope::Atom;
        }
        match self.single(v) {
            Some((At::Top(i), op)) if i < li => Scope::Op(op),
            Some((At::Loop(l, jj), op)) if l == li && jj < j => Scope::Op(op),
            _ => Scope::Outside,
        }
    }

    /// What the forms may use of `v` for equalities anywhere at the top level of the kernel or
    /// of its loops: every definition assigned once there, parameters and counting loops'
    /// variables as they are.
    pub fn scope_anywhere(&self, v: VarId) -> Scope<'k> {
        if self.is_param(v) || self.counters.contains(&v) {
            return Scope::Atom;
        }
        match self.single(v) {
            Some((At::Top(_) | At::Loop(..), op)) => Scope::Op(op),
            _ => Scope::Outside,
        }
    }

    /// The variable of the loop at top-level index `li`.
    pub fn loop_var_of(&self, li: usize) -> Option<VarId> {
        match &self.k.body.get(li)?.kind {
            StmtKind::For { var, .. } => Some(*var),
            _ => None,
        }
    }

    /// Whether `l` is never negative: its constant and coefficients are not, nor its atoms;
    /// or it is a non-negative multiple of a value `tl.assume` says is not negative (one of
    /// `assumed`) plus such a value.
    pub fn non_negative(&self, l: &Lin, assumed: &[Lin]) -> bool {
        let plain = l.c >= 0
            && l.terms
                .iter()
                .all(|(&v, &k)| k >= 0 && self.var_non_negative(v, 0));
        plain
            || assumed.iter().enumerate().any(|(i, a)| {
                let Some((t, &ka)) = a.terms.iter().next() else {
                    return false;
                };
                let kl = l.terms.get(t).copied().unwrap_or(0);
                let q = match (kl.checked_rem(ka), kl.checked_div(ka)) {
                    (Some(0), Some(q)) if q > 0 => q,
                    _ => return false,
                };
                let rest = a.scale(q).and_then(|m| l.sub(&m));
                rest.is_some_and(|r| self.non_negative(&r, &assumed[i + 1..]))
            })
    }

    /// The values the kernel's top-level `tl.assume(x >= c)` (`c >= 0`; or `x > c`,
    /// `c >= -1`) before statement `before` say are not negative, as forms.
    pub fn assumed_non_negative(&self, before: usize) -> Vec<Lin> {
        let mut f = super::affine::Forms::new(self.k, |v| self.scope_anywhere(v));
        let mut out = Vec::new();
        for s in self.k.body.iter().take(before) {
            let StmtKind::Assume { cond } = &s.kind else {
                continue;
            };
            let Some((_, Op::Binary { op, lhs, rhs })) = self.single(*cond) else {
                continue;
            };
            let (x, c, least) = match op {
                BinOp::Ge => (*lhs, *rhs, 0),
                BinOp::Gt => (*lhs, *rhs, -1),
                BinOp::Le => (*rhs, *lhs, 0),
                BinOp::Lt => (*rhs, *lhs, -1),
                _ => continue,
            };
            let bound = f.lin(c).and_then(|c| c.as_const());
            if let (Some(b), Some(x)) = (bound, f.lin(x)) {
                if b >= least {
                    out.push(x);
                }
            }
        }
        out
    }

    fn var_non_negative(&self, v: VarId, depth: u32) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        if let Some(p) = self.k.params.iter().find(|p| p.var == v) {
            let int = matches!(self.k.ty(v).elem, Elem::Scalar(s) if s.is_signed_int() || s.is_unsigned_int());
            return int && p.non_negative;
        }
        if self.counters.contains(&v) {
            return true;
        }
        let nn = |x: &VarId| self.var_non_negative(*x, depth + 1);
        match self.single(v) {
            Some((_, op)) => match op {
                Op::ProgramId(_) | Op::NumPrograms(_) => true,
                Op::Const(Const::Int(c)) => *c >= 0,
                Op::Copy(x) | Op::Hint { src: x, .. } | Op::Splat(x) | Op::Broadcast(x) => nn(x),
                Op::Binary { op, lhs, rhs } => match op {
                    BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Div => nn(lhs) && nn(rhs),
                    BinOp::Max => nn(lhs) || nn(rhs),
                    BinOp::Rem => nn(lhs),
                    _ => false,
                },
                Op::Unary { op: UnOp::Abs, .. } => false,
                _ => false,
            },
            None => false,
        }
    }

    /// Whether `v` is absent or a zero (what a copy engine fills): [`ir::is_zero`].
    pub fn is_zero(&self, v: Option<VarId>) -> bool {
        ir::is_zero(v, |x| self.single(x).map(|(_, op)| op))
    }
}
