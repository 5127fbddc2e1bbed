//! The order of a float `tl.sum`'s additions. Float addition is not associative, so a sum's
//! value depends on the order its partial sums are formed in, and in 16-bit types every partial
//! sum is rounded. Compiled Triton adds in a fixed order that follows where each element lives:
//!
//! 1. each thread combines the registers it holds: Triton 3.0 to 3.7 fold them left to right;
//!    Triton 3.8 and later build a balanced tree of neighbours, with fp16/bf16 packed in pairs
//!    of registers (`<2 x bfloat>`) when a thread holds four or more, the two halves added last;
//! 2. the 32 lanes of a warp combine by an xor butterfly, offsets 16, 8, 4, 2, 1;
//! 3. the warps' results combine by the same butterfly over the warps.
//!
//! LLVM contracts a product that feeds the sum (`tl.sum(x * y)`): a fused multiply-add takes
//! the place of the add (`fma.rn.bf16`). Where both operands of an add are products (the first
//! two terms of a fold, the pairs of a tree's first level) the first is contracted and the
//! second rounded on its own (Triton 3.6's PTX: `mul.bf16` of element 1, then `fma.rn.bf16` of
//! element 0 onto it).
//!
//! kwb's CUDA writer emits this order and the interpreter models it with [`full_sum`], so that
//! a full float reduction of a blocked tile gives Triton's bits where Triton places the elements
//! as kwb does (rows it can prove aligned): checked against the LLVM IR of Triton 3.5.1, 3.6.0,
//! 3.7.1, 3.8.0 and 3.9.0 for sm_90, and on an H200 against Triton 3.6.0 (`tests/gpu_sums.rs`).
//! Not modelled: with vector loads LLVM's vectorizer packs the products and contracts only some
//! of them, so sums of products can still differ.

use super::{BinOp, Kernel, Op, Scalar, Stmt, StmtKind, VarId};
use std::collections::HashMap;

/// How a thread combines its own registers in a float sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SumOrder {
    /// Triton 3.0 to 3.7: left to right.
    Sequential,
    /// Triton 3.8 and later: a balanced tree of neighbours.
    #[default]
    Tree,
}

impl SumOrder {
    /// The order of Triton release `major.minor` (3.0 or later).
    pub fn of_release(major: u32, minor: u32) -> SumOrder {
        if major == 3 && minor < 8 {
            SumOrder::Sequential
        } else {
            SumOrder::Tree
        }
    }
}

/// How a kernel's full float sums are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sums {
    pub order: SumOrder,
    /// Products feeding a sum are contracted into it (Triton's `enable_fp_fusion`, on by
    /// default).
    pub contract: bool,
}

impl Default for Sums {
    fn default() -> Sums {
        Sums {
            order: SumOrder::default(),
            contract: true,
        }
    }
}

/// Where a blocked tile's elements live: thread `t` holds runs of `vec` contiguous elements
/// (row-major flat index); register `e` of thread `t` is `((e / vec) * threads + t) * vec + e %
/// vec`, wrapped modulo `numel` when the tile is smaller than `threads * vec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    pub numel: u64,
    pub threads: u64,
    pub vec: u64,
    pub ept: u64,
}

impl Blocked {
    /// The layout of `numel` elements over `threads`, aiming at runs of `want_vec` elements.
    pub fn new(numel: u64, threads: u64, want_vec: u64) -> Blocked {
        let threads = threads.max(1);
        let numel = numel.max(1);
        let mut vec = want_vec.max(1);
        while vec > 1 && vec * threads > numel {
            vec /= 2;
        }
        Blocked {
            numel,
            threads,
            vec,
            ept: numel.div_ceil(vec * threads) * vec,
        }
    }

    /// The flat index thread `t` holds in register `e`.
    pub fn flat(&self, t: u64, e: u64) -> u64 {
        (((e / self.vec) * self.threads + t) * self.vec + e % self.vec) % self.numel
    }

    /// Whether thread `t` owns (is the first holder of) its register `e`.
    pub fn owns(&self, t: u64, e: u64) -> bool {
        ((e / self.vec) * self.threads + t) * self.vec + e % self.vec < self.numel
    }
}

/// The run length of each tile size of `k`: 16 bytes over the widest element that a global
/// load, store or atomic of that size moves (4 when none does).
pub fn run_lengths(k: &Kernel) -> HashMap<u64, u64> {
    let mut widest: HashMap<u64, u32> = HashMap::new();
    super::visit(&k.body, &mut |s| {
        let ptr = match &s.kind {
            StmtKind::Store { ptr, .. } => Some(*ptr),
            StmtKind::Assign {
                op: Op::Load { ptr, .. } | Op::Atomic { ptr, .. },
                ..
            } => Some(*ptr),
            _ => None,
        };
        if let Some(p) = ptr {
            let ty = k.ty(p);
            if let (true, super::Elem::Ptr(s)) = (ty.is_tile(), ty.elem) {
                let w = widest.entry(ty.numel()).or_insert(0);
                *w = (*w).max(s.size());
            }
        }
    });
    widest
        .into_iter()
        .map(|(n, w)| (n, u64::from(16 / w.clamp(1, 16)).max(1)))
        .collect()
}

/// The run length of tiles of `numel` elements, from [`run_lengths`].
pub fn run_length(runs: &HashMap<u64, u64>, numel: u64) -> u64 {
    runs.get(&numel).copied().unwrap_or(4)
}

/// The full float sums of `k` whose summand is a product that Triton's LLVM contracts into
/// the additions: reduce destination → the product's two factors. The product must be
/// computed in the sum's dtype in the same block, its factors not reassigned in between.
pub fn contracted_products(k: &Kernel) -> HashMap<VarId, (VarId, VarId)> {
    let mut out = HashMap::new();
    if k.sums.contract {
        contracted_in(k, &k.body, &mut out);
    }
    out
}

fn contracted_in(k: &Kernel, block: &[Stmt], out: &mut HashMap<VarId, (VarId, VarId)>) {
    for (i, s) in block.iter().enumerate() {
        match &s.kind {
            StmtKind::Assign {
                dst,
                op:
                    Op::Reduce {
                        op: super::ReduceOp::Sum,
                        src,
                        ..
                    },
            } if !k.ty(*dst).is_tile() && float(k, *src) && float(k, *dst) => {
                if let Some(f) = product_before(k, &block[..i], *src) {
                    out.insert(*dst, f);
                }
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                contracted_in(k, then, out);
                contracted_in(k, otherwise, out);
            }
            StmtKind::For { body, .. } => contracted_in(k, body, out),
            StmtKind::While {
                cond_body, body, ..
            } => {
                contracted_in(k, cond_body, out);
                contracted_in(k, body, out);
            }
            _ => {}
        }
    }
}

fn float(k: &Kernel, v: VarId) -> bool {
    matches!(k.ty(v).elem, super::Elem::Scalar(s) if s.is_float())
}

/// The factors of `src` if the last assignment to it in `before` is a product of two tiles of
/// its type that nothing after it reassigns.
fn product_before(k: &Kernel, before: &[Stmt], src: VarId) -> Option<(VarId, VarId)> {
    for (j, s) in before.iter().enumerate().rev() {
        match &s.kind {
            StmtKind::Assign { dst, op } if *dst == src => {
                let Op::Binary {
                    op: BinOp::Mul,
                    lhs,
                    rhs,
                } = op
                else {
                    return None;
                };
                let same = |v: VarId| k.ty(v) == k.ty(src);
                let untouched = before[j + 1..].iter().all(|t| match &t.kind {
                    StmtKind::Assign { dst, .. } => *dst != *lhs && *dst != *rhs,
                    _ => false,
                });
                return (same(*lhs) && same(*rhs) && untouched).then_some((*lhs, *rhs));
            }
            StmtKind::Assign { .. } => {}
            _ => return None,
        }
    }
    None
}

/// One element of a sum: a value, or a contracted product `a * b`.
#[derive(Debug, Clone, Copy)]
pub enum Term {
    Value(f64),
    Product(f64, f64),
}

/// The arithmetic of one float dtype, each result rounded to it once.
#[derive(Debug, Clone, Copy)]
pub struct Arith {
    pub dtype: Scalar,
}

impl Arith {
    /// `x` (exact in f64 for the sums and products here) rounded once to the dtype.
    fn round(&self, x: f64) -> f64 {
        match self.dtype {
            Scalar::F32 => f64::from(x as f32),
            Scalar::F16 => half::f16::from_f64(x).to_f64(),
            Scalar::BF16 => half::bf16::from_f64(x).to_f64(),
            _ => x,
        }
    }

    fn add(&self, a: f64, b: f64) -> f64 {
        self.round(a + b)
    }

    fn fma(&self, a: f64, b: f64, c: f64) -> f64 {
        match self.dtype {
            // fmaf: one rounding to fp32 (f64 arithmetic could round twice).
            Scalar::F32 => f64::from((a as f32).mul_add(b as f32, c as f32)),
            _ => self.round(a.mul_add(b, c)),
        }
    }

    fn alone(&self, t: Term) -> f64 {
        match t {
            Term::Value(v) => v,
            Term::Product(a, b) => self.round(a * b),
        }
    }

    /// `acc + t`, the product contracted.
    fn onto(&self, acc: f64, t: Term) -> f64 {
        match t {
            Term::Value(v) => self.add(acc, v),
            Term::Product(a, b) => self.fma(a, b, acc),
        }
    }

    /// `s + t` for two terms: the first one's product contracted, the second's rounded.
    fn pair(&self, s: Term, t: Term) -> f64 {
        match s {
            Term::Value(v) => self.add(v, self.alone(t)),
            Term::Product(a, b) => self.fma(a, b, self.alone(t)),
        }
    }

    /// A balanced tree of neighbours over `terms` (a power of two of them).
    fn tree(&self, terms: &[Term]) -> f64 {
        if terms.len() == 1 {
            return self.alone(terms[0]);
        }
        let mut level: Vec<f64> = terms.chunks(2).map(|p| self.pair(p[0], p[1])).collect();
        while level.len() > 1 {
            level = level.chunks(2).map(|p| self.add(p[0], p[1])).collect();
        }
        level[0]
    }

    /// One thread's registers combined (`terms` in register order, none for a thread that
    /// owns no element).
    pub fn thread(&self, order: SumOrder, terms: &[Term]) -> f64 {
        let Some(&first) = terms.first() else {
            return 0.0;
        };
        match order {
            // The first two as a pair (LLVM contracts the first's product, both being
            // products), then each onto the running sum.
            SumOrder::Sequential if terms.len() >= 2 => terms[2..]
                .iter()
                .fold(self.pair(first, terms[1]), |acc, &t| self.onto(acc, t)),
            SumOrder::Sequential => self.alone(first),
            SumOrder::Tree if self.dtype.size() == 2 && terms.len() >= 4 => {
                let half = |odd: usize| -> Vec<Term> {
                    terms.iter().skip(odd).step_by(2).copied().collect()
                };
                self.add(self.tree(&half(0)), self.tree(&half(1)))
            }
            SumOrder::Tree => self.tree(terms),
        }
    }

    /// An xor butterfly over `vals` (a power of two of them), offsets from half down to 1;
    /// every entry ends with the total.
    pub fn butterfly(&self, vals: &mut [f64]) {
        let mut o = vals.len() / 2;
        while o > 0 {
            let prev = vals.to_vec();
            for (i, v) in vals.iter_mut().enumerate() {
                *v = self.add(prev[i], prev[i ^ o]);
            }
            o /= 2;
        }
    }
}

/// The full sum of a blocked tile of `layout` as compiled Triton forms it: `term(g)` is flat
/// element `g`, `warps` the program's warps.
pub fn full_sum(
    arith: &Arith,
    order: SumOrder,
    layout: Blocked,
    term: &dyn Fn(u64) -> Term,
) -> f64 {
    let per_thread: Vec<f64> = (0..layout.threads)
        .map(|t| {
            let terms: Vec<Term> = (0..layout.ept)
                .filter(|&e| layout.owns(t, e))
                .map(|e| term(layout.flat(t, e)))
                .collect();
            arith.thread(order, &terms)
        })
        .collect();
    let mut warps: Vec<f64> = per_thread
        .chunks(32)
        .map(|lanes| {
            let mut lanes = lanes.to_vec();
            lanes.resize(32, 0.0);
            arith.butterfly(&mut lanes);
            lanes[0]
        })
        .collect();
    arith.butterfly(&mut warps);
    warps[0]
}

#[cfg(test)]
#[path = "sums_tests.rs"]
mod tests;
