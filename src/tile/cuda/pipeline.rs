//! Which loads of a loop are software-pipelined, and how the loop's body splits around them.
//!
//! The usual Triton matmul loop loads an A tile and a B tile, multiplies them with `tl.dot`
//! and advances its pointer tiles. When a load's only use is as an operand of a `tl.dot` (fp16
//! or bf16, both operands loaded this way), the writer copies it straight from global memory
//! into a ring of `num_stages` shared-memory buffers with `cp.async` (`ring.rs`) and the dot
//! reads the ring, so iteration `k` multiplies while the copies of iterations `k + 1` to
//! `k + S - 1` are in flight.
//!
//! For that, the statements that compute the loads' pointers, masks and `other` (and advance
//! the pointer tiles) run `S - 1` iterations ahead of the rest. They are the *address slice*:
//! the closure of the loads' operands over the body's top-level statements. It must be pure
//! (no memory access, barrier or nested control flow) and read nothing the rest of the body
//! computes; what the rest reads from it must be recomputable (assigned once per iteration
//! before any use, so the rest runs those statements again with its own loop variable). The
//! pointer tiles end the loop with the values they would have had: each iteration's slice runs
//! exactly once, only earlier.

use super::swizzle::RingSwizzle;
use super::writer::{ring_slack, Writer, SMEM_OPTIN_LIMIT};
use crate::tile::ir::{Const, Elem, Op, Scalar, Stmt, StmtKind, VarId};
use std::collections::{HashMap, HashSet};

/// Buffers in a ring when `tl.range` gives no `num_stages`.
pub const DEFAULT_STAGES: u64 = 3;

/// One load copied into a ring.
#[derive(Debug, Clone)]
pub struct RingLoad {
    /// Its statement's index in the loop body.
    pub stmt: usize,
    pub dst: VarId,
    pub ptr: VarId,
    pub mask: Option<VarId>,
    pub rows: u64,
    pub cols: u64,
    /// Byte offset of its buffers in `kwb_ring`, and the size of one buffer.
    pub offset: u64,
    pub stage_bytes: u64,
    /// How a buffer lays out the tile.
    pub swizzle: RingSwizzle,
}

/// How one loop is pipelined.
#[derive(Debug, Clone)]
pub struct Plan {
    pub stages: u64,
    pub loads: Vec<RingLoad>,
    /// Body indices of the address slice (the ring loads included), in order.
    pub ahead: Vec<usize>,
    /// Body indices of the rest, in order (recomputed slice statements included).
    pub compute: Vec<usize>,
    /// Bytes of `kwb_ring` the loop's buffers take (alignment included).
    pub bytes: u64,
    /// The alignment its buffers need in the shared window.
    pub align: u64,
    /// The loads' pointer tiles that advance by a scalar (`stride.rs`).
    pub strided: Vec<super::stride::Strided>,
}

impl Plan {
    /// When the compute part is one statement followed by copies (the matmul loop: the dot,
    /// then the loop-carried accumulator's copy): that statement's body index and the copies'.
    pub fn one_then_copies(&self, body: &[Stmt]) -> Option<(usize, &[usize])> {
        let (i, rest) = self.compute.split_first()?;
        let copies = rest.iter().all(|&r| {
            matches!(
                body[r].kind,
                StmtKind::Assign {
                    op: Op::Copy(_),
                    ..
                }
            )
        });
        copies.then_some((*i, rest))
    }
}

/// The variables a statement reads (not in nested statements).
fn reads(s: &StmtKind) -> Vec<VarId> {
    let mut v = super::stmt_vars(s);
    if let StmtKind::Assign { .. } = s {
        v.remove(0);
    }
    v
}

/// The variables a statement and the statements nested in it read.
fn reads_deep(s: &Stmt) -> Vec<VarId> {
    let mut out = Vec::new();
    super::layout::visit(std::slice::from_ref(s), &mut |x| out.extend(reads(&x.kind)));
    out
}

/// Every variable any statement of `body` (nested ones included) assigns.
pub fn assigned_within(body: &[Stmt]) -> HashSet<VarId> {
    let mut out = HashSet::new();
    super::layout::visit(body, &mut |s| match &s.kind {
        StmtKind::Assign { dst, .. } => {
            out.insert(*dst);
        }
        StmtKind::For { var, .. } => {
            out.insert(*var);
        }
        _ => {}
    });
    out
}

impl Writer<'_> {
    /// Whether `v` is a scalar zero of a 2-byte float (or absent): what `cp.async` fills.
    fn zero_fill(&self, v: Option<VarId>) -> bool {
        crate::tile::ir::is_zero(v, |x| match self.defs.get(&x) {
            Some((1, Some(op))) => Some(op),
            _ => None,
        })
    }

    /// The pipelining of `for var in range(start, end, step): body`, if it has loads to pipeline.
    pub fn pipeline_plan(
        &self,
        var: VarId,
        step: VarId,
        body: &[Stmt],
        num_stages: Option<u32>,
    ) -> Option<Plan> {
        let requested = num_stages.map_or(DEFAULT_STAGES, u64::from);
        if requested < 2 || self.stage_cap < 2 {
            return None;
        }
        match self.const_of(step) {
            Some(Const::Int(i)) if i > 0 => {}
            _ => return None,
        }
        // How often each variable is read anywhere in the kernel.
        let mut total: HashMap<VarId, usize> = HashMap::new();
        super::layout::visit(&self.k.body, &mut |s| {
            for r in reads(&s.kind) {
                *total.entry(r).or_default() += 1;
            }
        });
        // Candidates: 2-D fp16/bf16 loads, zero-filled, read only by top-level dots after them.
        let dot_reads = |v: VarId, after: usize| {
            body.iter()
                .enumerate()
                .filter(|(j, s)| {
                    *j > after
                        && matches!(&s.kind,
                        StmtKind::Assign { op: Op::Dot { a, b, .. }, dst: d }
                            if a != b && (*a == v || *b == v) && self.layout(*d).mma.is_some())
                })
                .count()
        };
        let mut cands: HashMap<VarId, usize> = HashMap::new();
        for (i, s) in body.iter().enumerate() {
            let StmtKind::Assign {
                dst,
                op: Op::Load { other, .. },
            } = &s.kind
            else {
                continue;
            };
            let ty = self.k.ty(*dst);
            let two_byte = matches!(ty.elem, Elem::Scalar(Scalar::F16 | Scalar::BF16));
            let once = matches!(self.defs.get(dst), Some((1, _)));
            if ty.shape.len() != 2 || !two_byte || !once || !self.zero_fill(*other) {
                continue;
            }
            let n = dot_reads(*dst, i);
            if n > 0 && total.get(dst).copied().unwrap_or(0) == n {
                cands.insert(*dst, i);
            }
        }
        // Keep the loads whose every dot has both operands ringed.
        loop {
            let drop: Vec<VarId> = cands
                .keys()
                .copied()
                .filter(|v| {
                    body.iter().any(|s| match &s.kind {
                        StmtKind::Assign {
                            op: Op::Dot { a, b, .. },
                            ..
                        } if a == v || b == v => !(cands.contains_key(a) && cands.contains_key(b)),
                        _ => false,
                    })
                })
                .collect();
            if drop.is_empty() {
                break;
            }
            for v in drop {
                cands.remove(&v);
            }
        }
        if cands.is_empty() {
            return None;
        }
        let ring_idx: Vec<usize> = {
            let mut v: Vec<usize> = cands.values().copied().collect();
            v.sort_unstable();
            v
        };
        // Where each variable is assigned among the top-level statements.
        let mut assigns: HashMap<VarId, Vec<usize>> = HashMap::new();
        for (i, s) in body.iter().enumerate() {
            if let StmtKind::Assign { dst, .. } = &s.kind {
                assigns.entry(*dst).or_default().push(i);
            }
        }
        let nested: HashSet<VarId> = body
            .iter()
            .filter(|s| !matches!(s.kind, StmtKind::Assign { .. }))
            .flat_map(|s| assigned_within(std::slice::from_ref(s)))
            .collect();
        // The address slice: the closure of the ring loads' operands.
        let mut ahead: HashSet<usize> = ring_idx.iter().copied().collect();
        // A descriptor load's offsets are its operands too (a pointer load proven a block
        // computes them beside its pointers, `blocks/`).
        let offsets = |i: usize| match &body[i].kind {
            StmtKind::Assign { dst, .. } => self
                .k
                .desc_load(*dst)
                .map_or(Vec::new(), |d| d.offsets.clone()),
            _ => Vec::new(),
        };
        let mut work: Vec<VarId> = ring_idx
            .iter()
            .flat_map(|&i| reads(&body[i].kind).into_iter().chain(offsets(i)))
            .collect();
        let mut seen: HashSet<VarId> = HashSet::new();
        while let Some(v) = work.pop() {
            if !seen.insert(v) {
                continue;
            }
            if nested.contains(&v) {
                return None;
            }
            for &i in assigns.get(&v).into_iter().flatten() {
                if ahead.insert(i) {
                    work.extend(reads(&body[i].kind));
                }
            }
        }
        for &i in &ahead {
            if ring_idx.contains(&i) {
                continue;
            }
            let StmtKind::Assign { dst, op } = &body[i].kind else {
                return None;
            };
            let pure = !matches!(
                op,
                Op::Load { .. } | Op::Atomic { .. } | Op::Dot { .. } | Op::Reduce { .. }
            ) && !self.uses_scratch(*dst, op)
                && !self.uses_site(*dst, op);
            if !pure {
                return None;
            }
        }
        // What the rest reads of the slice must be recomputable: assigned once in the body,
        // from the loop variable, invariants and earlier recomputable values.
        let mut compute: HashSet<usize> = (0..body.len()).filter(|i| !ahead.contains(i)).collect();
        let mut work: Vec<usize> = compute.iter().copied().collect();
        while let Some(i) = work.pop() {
            for r in reads_deep(&body[i]) {
                let Some(defs) = assigns.get(&r) else {
                    continue;
                };
                for &j in defs {
                    if !ahead.contains(&j) || compute.contains(&j) {
                        continue;
                    }
                    if ring_idx.contains(&j) {
                        continue; // a dot reading the ring
                    }
                    // Recomputable: the only assignment in the body, before every read there.
                    let first_read = (0..body.len())
                        .find(|&x| reads_deep(&body[x]).contains(&r))
                        .unwrap_or(usize::MAX);
                    if defs.len() != 1 || j >= first_read {
                        return None;
                    }
                    compute.insert(j);
                    work.push(j);
                }
            }
        }
        let _ = var;
        let mut ahead: Vec<usize> = ahead.into_iter().collect();
        ahead.sort_unstable();
        let mut compute: Vec<usize> = compute.into_iter().collect();
        compute.sort_unstable();
        // How each load lies in its buffers: for wgmma, when the loop's dots take it.
        let swizzles = self.wgmma_swizzles(body, &ring_idx);
        let align = if swizzles.is_some() { 1024 } else { 128 };
        // The ring: one buffer per stage per load, 128-byte aligned (1024 for wgmma).
        let mut loads = Vec::new();
        let mut per_stage = 0;
        for &i in &ring_idx {
            let StmtKind::Assign {
                dst,
                op: Op::Load { ptr, mask, .. },
            } = &body[i].kind
            else {
                return None;
            };
            let sh = &self.k.ty(*dst).shape;
            let (rows, cols) = (u64::from(sh[0]), u64::from(sh[1]));
            let stage_bytes = (rows * cols * 2).next_multiple_of(align);
            let swizzle = swizzles
                .as_ref()
                .and_then(|s| s.get(dst).copied())
                .unwrap_or(RingSwizzle::Ldmatrix);
            loads.push(RingLoad {
                stmt: i,
                dst: *dst,
                ptr: *ptr,
                mask: *mask,
                rows,
                cols,
                offset: 0,
                stage_bytes,
                swizzle,
            });
            per_stage += stage_bytes;
        }
        let first = self.ring_bytes.next_multiple_of(align);
        let room = SMEM_OPTIN_LIMIT.saturating_sub(first + ring_slack(align)) / per_stage.max(1);
        let stages = requested.min(self.stage_cap).min(room);
        if stages < 2 {
            return None;
        }
        let mut off = first;
        for l in &mut loads {
            l.offset = off;
            off += stages * l.stage_bytes;
        }
        let ptrs: Vec<VarId> = loads.iter().map(|l| l.ptr).collect();
        let strided = self.strided_pointers(body, &ahead, &ptrs);
        Some(Plan {
            stages,
            loads,
            ahead,
            compute,
            bytes: off - self.ring_bytes,
            align,
            strided,
        })
    }
}
