//! Persistent programs (`persistent: true` in the workspace). The launch runs as many CTAs as
//! the GPU keeps resident at once, not one per program, and passes the grid's program count as
//! the kernel's extra last parameter `kwb_programs`; each CTA runs programs `blockIdx.x`,
//! `blockIdx.x + gridDim.x`, ... `tl.program_id(0)` reads the current one (`kwb_pid`) and
//! `tl.num_programs(0)` the count.
//!
//! Any kernel without `return` runs that way, wrapped in a loop over its programs. The Triton
//! matmul's shape gets more: its first copies for the next program go out before this
//! program's epilogue, so that they fill the rings while the epilogue converts and stores:
//!
//! ```text
//! setup(pid); prologue copies                 statements before the loop: pure, recomputable
//! for (;;) {
//!     main loop; drain                        the pipelined loop, as usual
//!     next = pid + gridDim.x; __syncthreads()
//!     if (next < programs) { setup(next); prologue copies }
//!     { setup(pid) again, in its own scope; epilogue }   through its own shared memory
//!     if (next >= programs) break;
//!     deferred setup                          loop-carried values only the epilogue reads
//! }
//! ```
//!
//! That needs: the statements before the loop are assignments without memory access (or
//! `tl.assume`s), the loop is the only one and is pipelined, nothing after it loops, and no
//! loop-carried value is read by both the next program's copies and this program's epilogue.

use super::writer::Writer;
use crate::tile::ir::{Op, Stmt, StmtKind, VarId};
use std::collections::HashSet;

/// The overlapped form's split of a kernel body.
struct Split {
    /// Index of the pipelined loop in the body.
    at: usize,
    /// Statements before the loop whose values the epilogue reads from the loop (the
    /// accumulator's zeros): written after the epilogue for the next program.
    deferred: Vec<usize>,
    /// Statements before the loop that assign a loop-carried variable (not recomputed for the
    /// epilogue).
    carried: Vec<usize>,
}

impl Writer<'_> {
    /// The kernel body of a persistent kernel.
    pub fn persistent_body(&mut self, body: &[Stmt]) {
        match self.overlap_split(body) {
            Some(split) => self.overlapped(body, &split),
            None => {
                self.open("for (int kwb_pid = (int)blockIdx.x; kwb_pid < kwb_programs; kwb_pid += (int)gridDim.x) {");
                match self.tail_plan(body) {
                    Some(plan) => self.tail_split(body, &plan),
                    None => self.block(body),
                }
                self.line(
                    "__syncthreads();  // the next program may reuse this one's shared memory",
                );
                self.close("}");
            }
        }
    }

    /// How `body` splits for the overlapped form, if it has that shape.
    fn overlap_split(&self, body: &[Stmt]) -> Option<Split> {
        let at = body
            .iter()
            .position(|s| matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. }))?;
        let StmtKind::For {
            var,
            step,
            body: inner,
            num_stages,
            ..
        } = &body[at].kind
        else {
            return None;
        };
        let plan = self.pipeline_plan(*var, *step, inner, *num_stages)?;
        let (pre, post) = (&body[..at], &body[at + 1..]);
        let pure = pre.iter().all(|s| match &s.kind {
            StmtKind::Assign { op, .. } => !matches!(op, Op::Load { .. } | Op::Atomic { .. }),
            StmtKind::Assume { .. } => true,
            _ => false,
        });
        let mut nested_loop = false;
        super::layout::visit(post, &mut |s| {
            nested_loop |= matches!(
                s.kind,
                StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::Return
            );
        });
        if !pure || nested_loop || self.tail_plan(body).is_some() {
            return None;
        }
        let mut in_loop = super::pipeline::assigned_within(inner);
        in_loop.insert(*var);
        let mut post_reads: HashSet<VarId> = HashSet::new();
        super::layout::visit(post, &mut |s| post_reads.extend(super::stmt_vars(&s.kind)));
        let mut copy_reads: HashSet<VarId> = HashSet::new();
        for &i in &plan.ahead {
            super::layout::visit(std::slice::from_ref(&inner[i]), &mut |s| {
                copy_reads.extend(super::stmt_vars(&s.kind))
            });
        }
        let (mut deferred, mut carried) = (Vec::new(), Vec::new());
        for (i, s) in pre.iter().enumerate() {
            let StmtKind::Assign { dst, .. } = &s.kind else {
                continue; // a `tl.assume`, written again with the statements around it
            };
            if !in_loop.contains(dst) {
                continue;
            }
            carried.push(i);
            if post_reads.contains(dst) {
                if copy_reads.contains(dst) {
                    return None;
                }
                deferred.push(i);
            }
        }
        Some(Split {
            at,
            deferred,
            carried,
        })
    }

    /// Writes `body` in the overlapped form (the module comment).
    fn overlapped(&mut self, body: &[Stmt], split: &Split) {
        let at = split.at;
        self.hoisted = Some(Vec::new());
        self.line("int kwb_pid = (int)blockIdx.x;");
        let pre: Vec<String> = (0..at)
            .map(|i| self.capture(|w| w.stmt(&body[i])))
            .collect();
        self.marks.clear();
        let looped = self.capture(|w| w.stmt(&body[at]));
        let marks = std::mem::take(&mut self.marks);
        let base = self.out.len();
        let [m0, m1, m2, m3] = marks[..] else {
            self.unsupported("a persistent kernel whose loop is written in parts", 1);
            return;
        };
        let part = |a: usize, b: usize| looped[a - base..b - base].to_string();
        let (decl, prologue, main) = (part(m0, m1), part(m1, m2), part(m2, m3));
        self.own_staging = true;
        let post = self.capture(|w| w.block(&body[at + 1..]));
        self.own_staging = false;
        let shadow: Vec<String> = (0..at)
            .filter(|i| !split.carried.contains(i))
            .filter_map(|i| match &body[i].kind {
                StmtKind::Assign { dst, .. } => Some(*dst),
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter_map(|v| self.declaration(v))
            .collect();
        // The statements before the loop that `keep` picks, in order.
        let text = |keep: &dyn Fn(&usize) -> bool| -> String {
            (0..at).filter(keep).map(|i| pre[i].as_str()).collect()
        };
        let all_pre = text(&|_| true);
        let next_pre = text(&|i| !split.deferred.contains(i));
        let again_pre = text(&|i| !split.carried.contains(i));
        let deferred = text(&|i| split.deferred.contains(i));
        self.out.push_str(&all_pre);
        self.out.push_str(&decl);
        self.out.push_str(&prologue);
        self.open("for (;;) {  // this CTA's programs: kwb_pid, kwb_pid + gridDim.x, ...");
        self.out.push_str(&main);
        self.line("const int kwb_cur = kwb_pid;");
        self.line("kwb_pid += (int)gridDim.x;");
        self.line("__syncthreads();  // every warp is done with the rings");
        self.open("if (kwb_pid < kwb_programs) {  // the next program's first copies, before this one's epilogue");
        self.out.push_str(&next_pre);
        self.out.push_str(&decl);
        self.out.push_str(&prologue);
        self.close("}");
        self.open("{  // this program's epilogue, its values computed again");
        self.line("const int kwb_pid = kwb_cur;");
        for d in &shadow {
            self.line(d);
        }
        self.out.push_str(&again_pre);
        self.out.push_str(&post);
        self.close("}");
        self.line("if (kwb_pid >= kwb_programs) break;");
        self.out.push_str(&deferred);
        self.close("}");
    }

    /// What `f` writes, taken out of `out`.
    fn capture(&mut self, f: impl FnOnce(&mut Self)) -> String {
        let start = self.out.len();
        f(self);
        self.out.split_off(start)
    }
}
