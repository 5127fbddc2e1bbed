//! Scans and reductions with a combine function: `tl.cumsum`, `tl.cumprod`,
//! `tl.associative_scan(x, axis, combine_fn, reverse)` and `tl.reduce(x, axis, combine_fn,
//! keep_dims)`. A user's `@triton.jit` combine function is inlined once, on two scalars of the
//! input's dtype, into an [`ir::Combine`] that the scan or reduction op carries; `cumsum` and
//! `cumprod` get a combine of one `+` or `*`, after Triton's promotion of narrow integers.

use super::emit::Ck;
use super::expr::{Arg, Args};
use super::value::{display_builtin, Val};
use crate::tile::ir::{self, BinOp, Elem, Op, Scalar, Stmt, StmtKind, Type, VarId};
use crate::tile::span::Span;

/// The accumulation dtype of `tl.sum`/`tl.cumsum`/`tl.cumprod` without `dtype=`, as Triton's
/// `_pick_sum_dtype`: signed integers narrower than 32 bits go to `int32`, unsigned ones (and
/// `int1`, which Triton counts as unsigned) to `uint32`; the rest keep their dtype.
pub(super) fn sum_dtype(d: Scalar) -> Scalar {
    match d {
        Scalar::I8 | Scalar::I16 => Scalar::I32,
        Scalar::I1 | Scalar::U8 | Scalar::U16 => Scalar::U32,
        other => other,
    }
}

impl Ck<'_> {
    /// `tl.cumsum`, `tl.cumprod`, `tl.associative_scan` and `tl.reduce`.
    pub fn scan_call(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let params: &[&str] = match name {
            "cumsum" | "cumprod" => &["input", "axis", "reverse", "dtype"],
            "associative_scan" => &["input", "axis", "combine_fn", "reverse"],
            _ => &["input", "axis", "combine_fn", "keep_dims"],
        };
        let cum = matches!(name, "cumsum" | "cumprod");
        let required = if cum { 1 } else { 3 };
        let Some(s) = self.bind(name, a, params, required) else {
            return Val::Poison;
        };
        let shown = display_builtin(name);
        let input_span = Self::span_of(&s, 0, span);
        let (inputs, tuple) = match Self::val(&s, 0) {
            Val::Tuple(t) if !cum && !t.is_empty() => (t, true),
            other => (vec![other], false),
        };
        let mut xs = Vec::new();
        for v in &inputs {
            let Some(x) = self.tile_arg(v, input_span, &shown) else {
                return Val::Poison;
            };
            let ty = self.ty(x);
            let Elem::Scalar(d) = ty.elem else {
                return self.error(input_span, format!("`{shown}` cannot combine pointers"));
            };
            if !ty.is_tile() {
                let msg = format!("`{shown}` needs a tile, found a scalar {}", d.triton_name());
                return self.error(input_span, msg);
            }
            xs.push(x);
        }
        let shape = self.ty(xs[0]).shape.clone();
        if xs.iter().any(|x| self.ty(*x).shape != shape) {
            let msg = format!("`{shown}` needs tensors of one shape");
            return self.error(input_span, msg);
        }
        let axis_val = match s.get(1) {
            Some(None) if cum => Val::Int(0),
            _ => Self::val(&s, 1),
        };
        let axis_span = Self::span_of(&s, 1, span);
        let axis = match axis_val {
            Val::None if name == "reduce" => None,
            Val::None => {
                let msg = format!("`{shown}` needs an axis; a scan over every dimension is not supported (reshape to one dimension first)");
                return self.error(axis_span, msg);
            }
            v => match self.axis(&v, shape.len(), axis_span) {
                Some(a) => Some(a),
                None => return Val::Poison,
            },
        };
        let flag_at = if cum { 2 } else { 3 };
        let flag = match Self::val(&s, flag_at) {
            Val::None => false,
            v => match v.truthy() {
                Some(b) => b,
                None => {
                    let msg = format!(
                        "`{}` must be a compile-time bool, found {}",
                        params[flag_at],
                        self.show(&v)
                    );
                    return self.error(Self::span_of(&s, flag_at, span), msg);
                }
            },
        };
        let (srcs, combine) = if cum {
            let d = self.scalar_of(xs[0]).unwrap_or(Scalar::F32);
            let out = match Self::val(&s, 3) {
                Val::DType(t) => t,
                Val::None => sum_dtype(d),
                other => {
                    let msg = format!("`dtype` must be a dtype, found {}", self.show(&other));
                    return self.error(Self::span_of(&s, 3, span), msg);
                }
            };
            let op = if name == "cumsum" {
                BinOp::Add
            } else {
                BinOp::Mul
            };
            (vec![self.cast(xs[0], out)], self.binary_combine(op, out))
        } else {
            let f = Self::val(&s, 2);
            let fspan = Self::span_of(&s, 2, span);
            let dtypes: Vec<Scalar> = xs.iter().filter_map(|x| self.scalar_of(*x)).collect();
            match self.user_combine(&f, &dtypes, fspan, &shown) {
                Some(c) => (xs, c),
                None => return Val::Poison,
            }
        };
        let combine = Box::new(combine);
        let mut outs = Vec::new();
        for (part, &src) in srcs.iter().enumerate() {
            let src_ty = self.ty(src).clone();
            let part = part as u32;
            let (srcs, combine) = (srcs.clone(), combine.clone());
            let r = if name != "reduce" {
                let axis = axis.unwrap_or(0);
                let op = Op::Scan {
                    srcs,
                    part,
                    axis,
                    reverse: flag,
                    combine,
                };
                self.emit(src_ty, op)
            } else {
                let mut shape = src_ty.shape.clone();
                if let Some(a) = axis {
                    shape.remove(a as usize);
                } else {
                    shape.clear();
                }
                let rty = Type {
                    elem: src_ty.elem,
                    shape,
                };
                let op = Op::ReduceWith {
                    srcs,
                    part,
                    axis,
                    combine,
                };
                let r = self.emit(rty, op);
                if flag {
                    self.keep_dims(r, axis, src_ty.shape.len())
                } else {
                    r
                }
            };
            outs.push(Val::Var(r));
        }
        if tuple {
            Val::Tuple(outs)
        } else {
            outs.pop().unwrap_or(Val::Poison)
        }
    }

    /// `r` (a reduction over `axis` of a tile of `rank` dimensions) with the reduced
    /// dimensions kept, of length 1.
    pub(super) fn keep_dims(&mut self, r: VarId, axis: Option<u32>, rank: usize) -> VarId {
        let elem = self.ty(r).elem;
        match axis {
            Some(a) => {
                let mut shape = self.ty(r).shape.clone();
                shape.insert(a as usize, 1);
                self.emit(Type { elem, shape }, Op::ExpandDims { src: r, axis: a })
            }
            None => {
                let shape = vec![1; rank];
                self.emit(Type { elem, shape }, Op::Splat(r))
            }
        }
    }

    /// The combine `lhs op rhs` on scalars of `d`.
    fn binary_combine(&mut self, op: BinOp, d: Scalar) -> ir::Combine {
        let lhs = self.new_var(Type::scalar(d), None);
        let rhs = self.new_var(Type::scalar(d), None);
        self.blocks.push(Vec::new());
        let result = self.emit(Type::scalar(d), Op::Binary { op, lhs, rhs });
        let body = self.blocks.pop().unwrap_or_default();
        ir::Combine {
            lhs: vec![lhs],
            rhs: vec![rhs],
            body,
            results: vec![result],
        }
    }

    /// The user's `combine_fn` (a `@triton.jit` function of two tuples of scalars of
    /// `dtypes`, flattened, returning one such tuple), inlined on fresh scalars.
    fn user_combine(
        &mut self,
        f: &Val,
        dtypes: &[Scalar],
        span: Span,
        shown: &str,
    ) -> Option<ir::Combine> {
        let Val::Jit(unit, idx) = *f else {
            if *f != Val::Poison {
                let msg = format!(
                    "`{shown}` needs a `@triton.jit` function as its `combine_fn`, found {}",
                    self.show(f)
                );
                self.error(span, msg);
            }
            return None;
        };
        let fresh = |ck: &mut Self| -> Vec<VarId> {
            (dtypes.iter())
                .map(|d| ck.new_var(Type::scalar(*d), None))
                .collect()
        };
        let (lhs, rhs) = (fresh(self), fresh(self));
        let pos = (lhs.iter().chain(&rhs))
            .map(|v| Arg {
                val: Val::Var(*v),
                span,
            })
            .collect();
        let args = Args {
            pos,
            kw: Vec::new(),
            span,
        };
        self.blocks.push(Vec::new());
        let prev = self.enter_unit(unit);
        let ret = self.inline_call(idx, args);
        self.enter_unit(prev);
        let rets = match ret {
            Val::Tuple(t) => t,
            other => vec![other],
        };
        let mut results = Vec::new();
        if rets.len() != dtypes.len() {
            let msg = format!(
                "the combine function returns {} value(s), but `{shown}` combines {} tensor(s)",
                rets.len(),
                dtypes.len()
            );
            self.error(span, msg);
        } else {
            for (ret, d) in rets.iter().zip(dtypes) {
                let want = Type::scalar(*d);
                let r = match ret {
                    Val::Poison => None,
                    Val::Var(r) if *self.ty(*r) == want => Some(*r),
                    v if v.is_number() => self.coerce_to(v, &want),
                    other => {
                        let msg = format!(
                            "the combine function returns {}, but it must return a {} there (the input's dtype)",
                            self.show(other),
                            d.triton_name()
                        );
                        self.error(span, msg);
                        None
                    }
                };
                results.extend(r);
            }
        }
        let body = self.blocks.pop().unwrap_or_default();
        if results.len() != dtypes.len() {
            return None;
        }
        if let Some(why) = impure(&body, self) {
            self.error(span, format!("the combine function {why}; kwb supports combine functions that compute on their scalar arguments (arithmetic, comparisons, `tl.where`, `if`)"));
            return None;
        }
        Some(ir::Combine {
            lhs,
            rhs,
            body,
            results,
        })
    }
}

/// Why a combine body is not one kwb can run per element, if it is not.
fn impure(body: &[Stmt], ck: &Ck) -> Option<&'static str> {
    for s in body {
        match &s.kind {
            StmtKind::Assign { dst, op } => {
                if ck.ty(*dst).is_tile() {
                    return Some("makes a tile");
                }
                if matches!(
                    op,
                    Op::Load { .. }
                        | Op::Atomic { .. }
                        | Op::Dot { .. }
                        | Op::Reduce { .. }
                        | Op::Scan { .. }
                        | Op::ReduceWith { .. }
                ) {
                    return Some("reads memory, reduces or scans");
                }
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                if let Some(w) = impure(then, ck).or_else(|| impure(otherwise, ck)) {
                    return Some(w);
                }
            }
            StmtKind::Store { .. } => return Some("stores to memory"),
            StmtKind::For { .. } | StmtKind::While { .. } => return Some("has a runtime loop"),
            StmtKind::Barrier
            | StmtKind::GridDependency(_)
            | StmtKind::Assume { .. }
            | StmtKind::Return => {
                return Some("has a barrier, an assumption or a `return` kwb cannot inline")
            }
        }
    }
    None
}
