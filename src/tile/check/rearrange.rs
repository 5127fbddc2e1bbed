//! Built-ins that move elements without computing on them: `tl.join`, `tl.split`,
//! `tl.interleave`, `tl.flip` and `tl.ravel` (also as methods). They are composed from other
//! IR operations, so every backend runs them exactly as it runs those: `join` selects
//! between its operands along a new last axis of 2, `split` picks the first and the last
//! element of that axis (a reduction whose combine function keeps one side, exact for every
//! value, `-0.0` and NaN included), and `flip` swaps halves once per bit of the flipped
//! axis's length, as Triton's own `flip` does with its xor trick.

use super::emit::Ck;
use super::expr::Args;
use super::value::{display_builtin, show_type, Val};
use crate::tile::ast::CmpOp;
use crate::tile::ir::{self, Elem, Op, Scalar, Type, VarId};
use crate::tile::span::Span;

impl Ck<'_> {
    pub fn rearrange(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let params: &[&str] = match name {
            "join" | "interleave" => &["a", "b"],
            "split" => &["a"],
            "flip" => &["x", "dim"],
            _ => &["x", "can_reorder"],
        };
        let required = if matches!(name, "join" | "interleave") {
            2
        } else {
            1
        };
        let Some(s) = self.bind(name, a, params, required) else {
            return Val::Poison;
        };
        let shown = display_builtin(name);
        let mut xs = Vec::new();
        for i in 0..required {
            let sp = Self::span_of(&s, i, span);
            match Self::val(&s, i) {
                Val::Var(x) if matches!(self.ty(x).elem, Elem::Scalar(_)) => xs.push(x),
                Val::Poison => return Val::Poison,
                other => {
                    let msg = format!(
                        "`{shown}` needs tensors of numbers, found {}",
                        self.show(&other)
                    );
                    return self.error(sp, msg);
                }
            }
        }
        match name {
            "join" | "interleave" => {
                let Some(c) = self.join(xs[0], xs[1], span) else {
                    return Val::Poison;
                };
                let shape = self.ty(c).shape.clone();
                if name == "join" || shape.len() == 1 {
                    return Val::Var(c);
                }
                let n = shape.len();
                let mut target = shape[..n - 2].to_vec();
                target.push(2 * shape[n - 2]);
                Val::Var(self.reshaped(c, target))
            }
            "split" => {
                let x = xs[0];
                let shape = self.ty(x).shape.clone();
                if shape.last() != Some(&2) {
                    let msg = format!(
                        "`{shown}` needs a tile whose last dimension is 2, found {}",
                        show_type(self.ty(x))
                    );
                    return self.error(span, msg);
                }
                let axis = shape.len() as u32 - 1;
                let first = self.pick(x, axis, false);
                let last = self.pick(x, axis, true);
                Val::Tuple(vec![Val::Var(first), Val::Var(last)])
            }
            "flip" => {
                let x = xs[0];
                let shape = self.ty(x).shape.clone();
                if shape.is_empty() {
                    return self.error(span, format!("`{shown}` needs a tile, found a scalar"));
                }
                let dim = match Self::val(&s, 1) {
                    Val::None => shape.len() as u32 - 1,
                    v => match self.axis(&v, shape.len(), Self::span_of(&s, 1, span)) {
                        Some(a) => a,
                        None => return Val::Poison,
                    },
                };
                Val::Var(self.flip(x, dim as usize, span))
            }
            _ => {
                let x = xs[0];
                let n = self.ty(x).numel() as u32;
                if self.ty(x).shape.len() == 1 {
                    return Val::Var(x);
                }
                Val::Var(self.reshaped(x, vec![n]))
            }
        }
    }

    fn reshaped(&mut self, x: VarId, shape: Vec<u32>) -> VarId {
        if self.ty(x).shape == shape {
            return x;
        }
        let elem = self.ty(x).elem;
        let op = if self.ty(x).shape.is_empty() {
            Op::Splat(x)
        } else {
            Op::Reshape(x)
        };
        self.emit(Type { elem, shape }, op)
    }

    /// The element at index 0 (or the last index, when `last`) along `axis`, that axis dropped.
    fn pick(&mut self, x: VarId, axis: u32, last: bool) -> VarId {
        let Elem::Scalar(d) = self.ty(x).elem else {
            return x;
        };
        let lhs = self.new_var(Type::scalar(d), None);
        let rhs = self.new_var(Type::scalar(d), None);
        let combine = Box::new(ir::Combine {
            lhs: vec![lhs],
            rhs: vec![rhs],
            body: Vec::new(),
            results: vec![if last { rhs } else { lhs }],
        });
        let mut shape = self.ty(x).shape.clone();
        shape.remove(axis as usize);
        let ty = Type {
            elem: Elem::Scalar(d),
            shape,
        };
        let op = Op::ReduceWith {
            srcs: vec![x],
            part: 0,
            axis: Some(axis),
            combine,
        };
        self.emit(ty, op)
    }

    /// An I1 tile of `rank` dimensions, 2 long at `axis` and 1 elsewhere: true at index 0.
    fn first_of_two(&mut self, rank: usize, axis: usize, span: Span) -> Val {
        let i32t = |shape| Type {
            elem: Elem::Scalar(Scalar::I32),
            shape,
        };
        let idx = self.emit(i32t(vec![2]), Op::Arange { start: 0, end: 2 });
        let mut shape = vec![1; rank];
        shape[axis] = 2;
        let idx = self.reshaped(idx, shape);
        self.compare(CmpOp::Eq, Val::Var(idx), Val::Int(0), span)
    }

    /// `tl.join(a, b)`: both broadcast to one shape, stacked along a new last axis of 2.
    fn join(&mut self, a: VarId, b: VarId, span: Span) -> Option<VarId> {
        if self.ty(a).elem != self.ty(b).elem {
            let msg = format!(
                "`tl.join` needs two tensors of one dtype, found {} and {}",
                show_type(self.ty(a)),
                show_type(self.ty(b))
            );
            self.error(span, msg);
            return None;
        }
        let (sa, sb) = (self.ty(a).shape.clone(), self.ty(b).shape.clone());
        let shape = self.broadcast_shapes(&sa, &sb, span)?;
        let (a, b) = (self.bcast(a, &shape), self.bcast(b, &shape));
        let rank = shape.len() + 1;
        let mut one = shape.clone();
        one.push(1);
        let (a, b) = (self.reshaped(a, one.clone()), self.reshaped(b, one));
        let first = self.first_of_two(rank, rank - 1, span);
        match self.select(first, Val::Var(a), Val::Var(b), span) {
            Val::Var(c) => Some(c),
            _ => None,
        }
    }

    /// `tl.flip(x, dim)`: for each bit of the axis's length (a power of two), the tile seen as
    /// `[before, 2, after]` around that bit has its two halves swapped.
    fn flip(&mut self, x: VarId, dim: usize, span: Span) -> VarId {
        let shape = self.ty(x).shape.clone();
        let n = u64::from(shape[dim]);
        let outer: u64 = shape[..dim].iter().map(|&d| u64::from(d)).product();
        let inner: u64 = shape[dim + 1..].iter().map(|&d| u64::from(d)).product();
        let mut y = x;
        let mut stride = 1;
        while stride < n {
            let three = vec![
                (outer * n / (2 * stride)) as u32,
                2,
                (stride * inner) as u32,
            ];
            let t = self.reshaped(y, three.clone());
            let first = self.pick(t, 1, false);
            let last = self.pick(t, 1, true);
            let kept = |ck: &mut Self, v: VarId| {
                let mut s = ck.ty(v).shape.clone();
                s.insert(1, 1);
                ck.reshaped(v, s)
            };
            let (first, last) = (kept(self, first), kept(self, last));
            let at_first = self.first_of_two(3, 1, span);
            y = match self.select(at_first, Val::Var(last), Val::Var(first), span) {
                Val::Var(v) => v,
                _ => return x,
            };
            stride *= 2;
        }
        self.reshaped(y, shape)
    }
}
