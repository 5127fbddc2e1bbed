//! Built-ins that change a tile's shape (`reshape`, `broadcast_to`, `trans`/`permute`/`.T`,
//! `expand_dims`), reductions (`sum`, `max`, `min`, `argmax`, `argmin`) and the
//! vectorisation hints (`multiple_of`, `max_contiguous`).

use super::emit::Ck;
use super::expr::{Arg, Args};
use super::value::{display_builtin, show_shape, show_type, Val};
use crate::tile::ir::{Elem, Op, ReduceOp, Scalar, Type, VarId};
use crate::tile::span::Span;

impl Ck<'_> {
    /// A runtime tile argument (a scalar where `allow_scalar`).
    pub(super) fn tile_arg(&mut self, v: &Val, span: Span, what: &str) -> Option<VarId> {
        match v {
            Val::Var(x) => Some(*x),
            Val::Poison => None,
            other => {
                let msg = format!("`{what}` needs a tile, found {}", self.show(other));
                self.error(span, msg);
                None
            }
        }
    }

    /// An axis in `0..rank` (negative counts from the end).
    pub(super) fn axis(&mut self, v: &Val, rank: usize, span: Span) -> Option<u32> {
        let a = self.const_int(v, span, "the axis")?;
        let r = rank as i64;
        let n = if a < 0 { a.wrapping_add(r) } else { a };
        if !(0..r).contains(&n) {
            self.error(
                span,
                format!("axis {a} is out of range for a tile of {rank} dimension(s)"),
            );
            return None;
        }
        Some(n as u32)
    }

    pub fn reduce(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let (params, keep_at): (&[&str], usize) = match name {
            "sum" => (&["input", "axis", "keep_dims", "dtype"], 2),
            "max" | "min" => (
                &[
                    "input",
                    "axis",
                    "return_indices",
                    "return_indices_tie_break_left",
                    "keep_dims",
                ],
                4,
            ),
            _ => (&["input", "axis", "tie_break_left", "keep_dims"], 3),
        };
        let Some(s) = self.bind(name, a, params, 1) else {
            return Val::Poison;
        };
        let shown = display_builtin(name);
        let Some(x) = self.tile_arg(&Self::val(&s, 0), Self::span_of(&s, 0, span), &shown) else {
            return Val::Poison;
        };
        let ty = self.ty(x).clone();
        let Elem::Scalar(d) = ty.elem else {
            return self.error(span, format!("`{shown}` cannot reduce pointers"));
        };
        if !ty.is_tile() {
            return self.error(
                span,
                format!("`{shown}` needs a tile, found a scalar {}", d.triton_name()),
            );
        }
        if matches!(name, "max" | "min") && Self::val(&s, 2).truthy() == Some(true) {
            // `(value, index)`: the reduction and its arg-reduction, as Triton's pair (the
            // index of the first extreme unless `return_indices_tie_break_left=False`).
            if matches!(Self::val(&s, 3), Val::Bool(false) | Val::Int(0)) {
                return self.error(
                    Self::span_of(&s, 3, span),
                    "`return_indices_tie_break_left=False` is not supported (kwb returns the \
                     first index of the extreme)",
                );
            }
            let keep = Self::val(&s, 4);
            let mut pair = Vec::new();
            for op in [name, if name == "max" { "argmax" } else { "argmin" }] {
                let mut a = Args {
                    pos: vec![
                        Arg {
                            val: Self::val(&s, 0),
                            span: Self::span_of(&s, 0, span),
                        },
                        Arg {
                            val: Self::val(&s, 1),
                            span: Self::span_of(&s, 1, span),
                        },
                    ],
                    kw: Vec::new(),
                    span,
                };
                a.kw.push((
                    "keep_dims".into(),
                    Arg {
                        val: keep.clone(),
                        span,
                    },
                ));
                pair.push(self.reduce(op, a));
            }
            return Val::Tuple(pair);
        }
        let axis = match Self::val(&s, 1) {
            Val::None => None,
            v => match self.axis(&v, ty.shape.len(), Self::span_of(&s, 1, span)) {
                Some(a) => Some(a),
                None => return Val::Poison,
            },
        };
        let keep = Self::val(&s, keep_at).truthy() == Some(true);
        let (op, out, src) = match name {
            "sum" => {
                let out = match Self::val(&s, 3) {
                    Val::DType(t) => t,
                    _ => super::scan::sum_dtype(d),
                };
                let to_tile = axis.is_some() && ty.shape.len() > 1;
                if to_tile && matches!(out, Scalar::F16 | Scalar::BF16) {
                    // Compiled Triton adds in the 16-bit type, every partial sum rounded. kwb
                    // does the same for full sums (`ir::sums`), not yet along one axis of a
                    // larger tile.
                    self.warning(
                        span,
                        format!(
                            "Triton adds the partial sums of this {0} `tl.sum` in {0}, rounding \
                             each; along one axis of a 2-D or larger tile kwb adds them in fp32 \
                             and rounds once, so the results can differ (kwb's is the more \
                             accurate); `dtype=tl.float32`, or `.to(tl.float32)` before the sum, \
                             makes both add in fp32",
                            out.triton_name()
                        ),
                    );
                }
                (ReduceOp::Sum, out, self.cast(x, out))
            }
            "max" => (ReduceOp::Max, d, x),
            "min" => (ReduceOp::Min, d, x),
            "argmax" => (ReduceOp::ArgMax, Scalar::I32, x),
            _ => (ReduceOp::ArgMin, Scalar::I32, x),
        };
        let shape: Vec<u32> = match axis {
            None => Vec::new(),
            Some(a) => ty
                .shape
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != a as usize)
                .map(|(_, d)| *d)
                .collect(),
        };
        let r = self.emit(
            Type {
                elem: Elem::Scalar(out),
                shape,
            },
            Op::Reduce { op, src, axis },
        );
        if keep {
            Val::Var(self.keep_dims(r, axis, ty.shape.len()))
        } else {
            Val::Var(r)
        }
    }

    /// `trans`/`permute`/`.T`: `perm` of `None` swaps the last two dimensions.
    pub fn permute(&mut self, x: VarId, perm: Option<Vec<u32>>, span: Span) -> Val {
        let ty = self.ty(x).clone();
        let rank = ty.shape.len();
        let perm = match perm {
            Some(p) => p,
            None if rank < 2 => return Val::Var(x),
            None => {
                let mut p: Vec<u32> = (0..rank as u32).collect();
                p.swap(rank - 2, rank - 1);
                p
            }
        };
        let mut seen = vec![false; rank];
        let valid = perm.len() == rank
            && perm.iter().all(|&d| {
                let i = d as usize;
                i < rank && !std::mem::replace(&mut seen[i], true)
            });
        if !valid {
            let msg = format!(
                "{:?} is not a permutation of the {rank} dimension(s) of a {}",
                perm,
                show_type(&ty)
            );
            return self.error(span, msg);
        }
        if perm.iter().enumerate().all(|(i, &d)| i as u32 == d) {
            return Val::Var(x);
        }
        let shape = perm.iter().map(|&d| ty.shape[d as usize]).collect();
        Val::Var(self.emit(
            Type {
                elem: ty.elem,
                shape,
            },
            Op::Permute { src: x, perm },
        ))
    }

    /// The shape-changing built-ins. Shapes and dims may also come as extra positional
    /// arguments (`x.reshape(M, N)`, `x.permute(1, 0)`).
    pub fn reshape_like(&mut self, name: &str, mut a: Args) -> Val {
        let span = a.span;
        let shown = display_builtin(name);
        if a.pos.len() > 2 && name != "broadcast" {
            let rest: Vec<Val> = a.pos.drain(1..).map(|x| x.val).collect();
            a.pos.push(super::expr::Arg {
                val: Val::Tuple(rest),
                span,
            });
        }
        let second = match name {
            "reshape" | "view" | "broadcast_to" => "shape",
            "trans" | "permute" => "dims",
            "expand_dims" => "axis",
            _ => "other",
        };
        let required = if name == "trans" { 1 } else { 2 };
        let params: &[&str] = if matches!(name, "reshape" | "view") {
            &["input", "shape", "can_reorder"]
        } else {
            &["input", second]
        };
        let Some(s) = self.bind(name, a, params, required) else {
            return Val::Poison;
        };
        let sp1 = Self::span_of(&s, 1, span);
        let arg1 = Self::val(&s, 1);
        if name == "broadcast" {
            let (l, r) = (Self::val(&s, 0), arg1);
            let (ls, rs) = (self.shape_of(&l), self.shape_of(&r));
            let Some(sh) = self.broadcast_shapes(&ls, &rs, span) else {
                return Val::Poison;
            };
            let out: Vec<Val> = [l, r]
                .iter()
                .map(|v| match v {
                    Val::Var(x) => Val::Var(self.bcast(*x, &sh)),
                    other => other.clone(),
                })
                .collect();
            return Val::Tuple(out);
        }
        let Some(x) = self.tile_arg(&Self::val(&s, 0), Self::span_of(&s, 0, span), &shown) else {
            return Val::Poison;
        };
        let ty = self.ty(x).clone();
        match name {
            "trans" | "permute" => {
                let perm = match arg1 {
                    Val::None => None,
                    v => {
                        let items = match v {
                            Val::Tuple(t) => t,
                            other => vec![other],
                        };
                        let mut p = Vec::new();
                        for it in &items {
                            let Some(a) = self.axis(it, ty.shape.len(), sp1) else {
                                return Val::Poison;
                            };
                            p.push(a);
                        }
                        Some(p)
                    }
                };
                self.permute(x, perm, span)
            }
            "expand_dims" => {
                let items = match arg1 {
                    Val::Tuple(t) => t,
                    other => vec![other],
                };
                let new_rank = ty.shape.len() + items.len();
                let mut axes = Vec::new();
                for it in &items {
                    let Some(a) = self.axis(it, new_rank, sp1) else {
                        return Val::Poison;
                    };
                    axes.push(a);
                }
                axes.sort_unstable();
                let mut cur = x;
                for a in axes {
                    let mut sh = self.ty(cur).shape.clone();
                    sh.insert((a as usize).min(sh.len()), 1);
                    cur = self.emit(
                        Type {
                            elem: ty.elem,
                            shape: sh,
                        },
                        Op::ExpandDims { src: cur, axis: a },
                    );
                }
                Val::Var(cur)
            }
            "broadcast_to" => {
                let Some(target) = self.const_shape(&arg1, sp1) else {
                    return Val::Poison;
                };
                let fits = super::emit::broadcast(&ty.shape, &target).is_some_and(|b| b == target);
                if !fits {
                    let msg = format!(
                        "cannot broadcast {} with {}",
                        show_shape(&ty.shape),
                        show_shape(&target)
                    );
                    return self.error(span, msg);
                }
                Val::Var(self.bcast(x, &target))
            }
            _ => {
                let Some(target) = self.const_shape(&arg1, sp1) else {
                    return Val::Poison;
                };
                let n: u64 = target.iter().map(|&d| u64::from(d)).product();
                if n != ty.numel() {
                    let msg = format!(
                        "cannot reshape {} ({} elements) to {} ({n} elements)",
                        show_shape(&ty.shape),
                        ty.numel(),
                        show_shape(&target)
                    );
                    return self.error(span, msg);
                }
                if ty.shape == target {
                    return Val::Var(x);
                }
                let op = if ty.shape.is_empty() {
                    Op::Splat(x)
                } else {
                    Op::Reshape(x)
                };
                Val::Var(self.emit(
                    Type {
                        elem: ty.elem,
                        shape: target,
                    },
                    op,
                ))
            }
        }
    }

    /// `tl.multiple_of(x, values)` / `tl.max_contiguous(x, values)`.
    pub fn hint(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind(name, a, &["input", "values"], 2) else {
            return Val::Poison;
        };
        let shown = display_builtin(name);
        let Some(x) = self.tile_arg(&Self::val(&s, 0), Self::span_of(&s, 0, span), &shown) else {
            return Val::Poison;
        };
        let n = self.ty(x).shape.len().max(1);
        let items = match Self::val(&s, 1) {
            Val::Tuple(t) => t,
            other => vec![other; n],
        };
        if items.len() != n {
            return self.error(
                span,
                format!(
                    "`{shown}` needs one value per dimension ({n}), found {}",
                    items.len()
                ),
            );
        }
        let mut vals = Vec::new();
        for it in &items {
            let sp = Self::span_of(&s, 1, span);
            let Some(v) = self.const_int(it, sp, "a hint") else {
                return Val::Poison;
            };
            match u32::try_from(v) {
                Ok(v) if v > 0 => vals.push(v),
                _ => {
                    return self.error(sp, format!("a hint must be a positive integer, found {v}"))
                }
            }
        }
        let ones = vec![1; n];
        let (multiple_of, max_contiguous) = if name == "multiple_of" {
            (vals, ones)
        } else {
            (ones, vals)
        };
        let ty = self.ty(x).clone();
        Val::Var(self.emit(
            ty,
            Op::Hint {
                src: x,
                multiple_of,
                max_contiguous,
            },
        ))
    }
}
