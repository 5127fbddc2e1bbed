//! Which tiles take the tensor-core accumulator layout. The writer computes elementwise ops,
//! loads and stores register by register, so every tile operand of one must share the
//! destination's layout; those tiles form classes (union-find over the kernel's statements,
//! loop-carried copies included). A class holding a `tl.dot` result takes the [`Mma`] layout of
//! that result, so an accumulator made by `tl.zeros`, carried around a loop, added to, cast with
//! `.to(tl.float16)` and stored never changes layout: it is created in the fragments and stored
//! straight from them. Layout changes (`Broadcast`, `Permute`, `Reshape`, `ExpandDims`) and
//! reductions read any layout, so they end a class; so do a dot's `a` and `b` operands, which
//! are staged through shared memory.

use super::mma::Mma;
use crate::tile::ir::{Elem, Kernel, Op, Scalar, StmtKind, VarId};
use crate::tile::Target;
use std::collections::HashMap;

struct Classes {
    parent: Vec<u32>,
}

impl Classes {
    fn find(&mut self, v: u32) -> u32 {
        let mut r = v;
        while self.parent[r as usize] != r {
            r = self.parent[r as usize];
        }
        // Path compression.
        let mut x = v;
        while self.parent[x as usize] != r {
            let next = self.parent[x as usize];
            self.parent[x as usize] = r;
            x = next;
        }
        r
    }

    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb) as usize] = ra.min(rb);
        }
    }
}

/// The tile operands an op computes register by register with its destination.
fn elementwise_operands(op: &Op) -> Vec<VarId> {
    match op {
        Op::Copy(a) | Op::Hint { src: a, .. } | Op::Cast(a) | Op::Unary { src: a, .. } => {
            vec![*a]
        }
        Op::Binary { lhs, rhs, .. } => vec![*lhs, *rhs],
        Op::Fma { a, b, c } => vec![*a, *b, *c],
        Op::Where { cond, a, b } => vec![*cond, *a, *b],
        Op::PtrAdd { ptr, offset } => vec![*ptr, *offset],
        Op::Load { ptr, mask, other } => {
            let mut v = vec![*ptr];
            v.extend(mask.iter().chain(other.iter()).copied());
            v
        }
        Op::Atomic {
            ptr,
            value,
            mask,
            cmp,
            ..
        } => {
            let mut v = vec![*ptr, *value];
            v.extend(mask.iter().chain(cmp.iter()).copied());
            v
        }
        // The accumulator is updated in place.
        Op::Dot { acc, .. } => acc.iter().copied().collect(),
        _ => Vec::new(),
    }
}

/// The tile variables of `k` that take an mma layout, and that layout.
pub fn mma_tiles(k: &Kernel, target: Target) -> HashMap<VarId, Mma> {
    let n = k.vars.len() as u32;
    let mut c = Classes {
        parent: (0..n).collect(),
    };
    let tile = |v: VarId| v.0 < n && k.ty(v).is_tile();
    let mut dots = Vec::new();
    super::layout::visit(&k.body, &mut |s| {
        let (dst, ops) = match &s.kind {
            StmtKind::Assign { dst, op } => {
                if let Op::Dot { a, .. } = op {
                    dots.push((*dst, *a));
                }
                (Some(*dst), elementwise_operands(op))
            }
            StmtKind::Store { ptr, value, mask } => {
                let mut v = vec![*value];
                v.extend(mask.iter().copied());
                (Some(*ptr), v)
            }
            _ => (None, Vec::new()),
        };
        let Some(d) = dst.filter(|d| tile(*d)) else {
            return;
        };
        for o in ops.into_iter().filter(|o| tile(*o)) {
            c.union(d.0, o.0);
        }
    });
    let mut by_class: HashMap<u32, Mma> = HashMap::new();
    for (d, a) in dots.iter().filter(|(d, _)| tile(*d)) {
        let shape = &k.ty(*d).shape;
        if let [m, nn] = shape[..] {
            let (m, nn, warps) = (u64::from(m), u64::from(nn), u64::from(k.num_warps.max(1)));
            // fp16/bf16 products summed in fp32 go to wgmma where the target has it.
            let tensor = matches!(k.ty(*a).elem, Elem::Scalar(Scalar::F16 | Scalar::BF16))
                && k.ty(*d).elem == Elem::Scalar(Scalar::F32);
            let wgmma = (target.wgmma() && tensor)
                .then(|| Mma::wgmma(m, nn, warps))
                .flatten();
            let mma = wgmma.unwrap_or_else(|| Mma::new(m, nn, warps));
            by_class.entry(c.find(d.0)).or_insert(mma);
        }
    }
    let mut out = HashMap::new();
    for v in 0..n {
        let id = VarId(v);
        if !tile(id) {
            continue;
        }
        if let Some(m) = by_class.get(&c.find(v)) {
            // Every member of a class has the dot's shape (elementwise ops keep shapes).
            if k.ty(id).numel() == m.m * m.n {
                out.insert(id, *m);
            }
        }
    }
    out
}
