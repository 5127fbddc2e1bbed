//! Pointer tiles that a pipelined loop advances by a scalar (`a_ptrs += BLOCK_K * stride_ak`),
//! kept as a fixed base and one running offset.
//!
//! Written as the source says, every register of the tile is a 64-bit pointer rewritten each
//! iteration, right after the `cp.async` that reads it: the add waits for the copy to take its
//! operands, once per pointer, on the loop's critical path (on an H200 the matmul's warps spent
//! about a fifth of their loop there). Kept as `base[e] + off`, the registers are only read in
//! the loop; each copy's address is a fresh sum, and the iteration adds one scalar.
//!
//! ```text
//! before:  cp.async(dst, p[e]) ... p[e] = p[e] + s          (for every e)
//! after:   cp.async(dst, p[e] + kwb_po) ... kwb_po += s      (p[e] read only)
//! after the loop: p[e] = p[e] + kwb_po                      (the value the source expects)
//! ```
//!
//! Applies to a ring load's pointer `p` whose loop-carried update is `q = p + splat(s)` then
//! `p = q` in the address slice, `s` a scalar, when nothing else in the loop reads `p` or `q`.

use super::writer::Writer;
use crate::tile::ir::{Op, Stmt, StmtKind, VarId};

/// One pointer tile advanced by a scalar.
#[derive(Debug, Clone)]
pub struct Strided {
    /// The loop-carried pointer tile.
    pub ptr: VarId,
    /// The tile `p + splat(s)` is assigned to (never written in this form).
    pub next: VarId,
    /// The scalar it advances by, each iteration.
    pub step: VarId,
    /// Body indices of `q = p + splat(s)` and of `p = q`.
    pub add: usize,
    pub carry: usize,
}

impl Strided {
    /// The C name of the running offset of `ptr` (named `name`).
    pub fn offset_name(name: &str) -> String {
        format!("kwb_po_{name}")
    }
}

impl Writer<'_> {
    /// The ring loads' pointer tiles of `body` that advance by a scalar (`ahead`: the address
    /// slice's statement indices).
    pub fn strided_pointers(&self, body: &[Stmt], ahead: &[usize], ptrs: &[VarId]) -> Vec<Strided> {
        let assign = |i: usize| match &body[i].kind {
            StmtKind::Assign { dst, op } => Some((*dst, op)),
            _ => None,
        };
        let count = |v: VarId| self.defs.get(&v).map_or(0, |d| d.0);
        let mut out = Vec::new();
        for &carry in ahead {
            let Some((p, Op::Copy(q))) = assign(carry) else {
                continue;
            };
            if !ptrs.contains(&p) || count(p) != 2 || count(*q) != 1 || !self.is_tile(p) {
                continue;
            }
            let add = ahead.iter().copied().find(
                |&i| matches!(assign(i), Some((d, Op::PtrAdd { ptr, .. })) if d == *q && *ptr == p),
            );
            let Some(add) = add else {
                continue;
            };
            let Some((_, Op::PtrAdd { offset, .. })) = assign(add) else {
                continue;
            };
            let step = match self.defs.get(offset) {
                Some((1, Some(Op::Splat(s)))) if !self.is_tile(*s) => *s,
                _ => continue,
            };
            // Nothing else may read p or q: the ring load's copy reads p through `at`.
            let mut others = 0;
            super::layout::visit(body, &mut |s| {
                let vars = super::stmt_vars(&s.kind);
                let reads = match &s.kind {
                    StmtKind::Assign { .. } => &vars[1..],
                    _ => &vars[..],
                };
                if reads.contains(&p) || reads.contains(q) {
                    others += 1;
                }
            });
            // Readers: `q = p + ...`, `p = q`, and the load.
            if others == 3 {
                out.push(Strided {
                    ptr: p,
                    next: *q,
                    step,
                    add,
                    carry,
                });
            }
        }
        out
    }

    /// Starts keeping `strided` as base and offset (inside the loop's block). `compute`: the
    /// body indices the compute part writes (a slice statement there is written as is).
    pub fn strided_begin(&mut self, strided: &[Strided], compute: &[usize]) {
        for s in strided {
            if !compute.contains(&s.add) {
                self.undeclared.push(s.next);
            }
            let off = Strided::offset_name(self.name(s.ptr));
            let note = format!(
                "  // `{}` advances by this many elements (stride.rs)",
                self.name(s.ptr)
            );
            self.local("long long", &off, "0", &note);
            self.strided_at.insert(s.ptr, off);
        }
    }

    /// Writes body statement `i` of the address slice when it is a strided pointer's update;
    /// false when it is not one.
    pub fn strided_stmt(&mut self, strided: &[Strided], i: usize) -> bool {
        if strided.iter().any(|s| s.add == i) {
            return true;
        }
        let Some(s) = strided.iter().find(|s| s.carry == i) else {
            return false;
        };
        let off = Strided::offset_name(self.name(s.ptr));
        self.line(&format!("{off} += (long long){};", self.name(s.step)));
        true
    }

    /// Gives the pointer tiles their final values and ends the base-and-offset form.
    pub fn strided_end(&mut self, strided: &[Strided]) {
        for s in strided {
            let Some(off) = self.strided_at.remove(&s.ptr) else {
                continue;
            };
            let p = self.name(s.ptr).to_string();
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int e = 0; e < {}; ++e) {p}[e] = {p}[e] + {off};",
                self.layout(s.ptr).ept
            ));
        }
    }
}
