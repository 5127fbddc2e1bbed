//! A software-pipelined loop (planned by `pipeline.rs`): the loads that feed its dots go
//! straight from global memory into rings of shared-memory buffers with `cp.async`, and the
//! dots read their operands from the ring.
//!
//! ```text
//! prologue:   issue iterations 0 .. S-2 (each its own commit group)
//! iteration k: wait until iteration k's group landed (cp.async.wait_group S-2), barrier,
//!              issue iteration k+S-1 into the buffer iteration k-1 read, commit,
//!              compute iteration k from buffer k % S
//! ```
//! (A loop whose dot goes to wgmma keeps one stage's wgmmas running across iterations and
//! refills a buffer only once every warpgroup's wgmmas are done with it: `wgmma.rs`.)
//! The barrier both publishes buffer `k` to every warp and tells a warp that every other warp
//! has finished reading buffer `k - 1`, which it is about to overwrite. An iteration's address
//! slice (pointers, masks) runs when its copies are issued, with the loop variable set to that
//! iteration's value (a C block that shadows it); past the loop's end nothing is issued and an
//! empty group is committed, so the wait counts stay right.
//!
//! Copies are 16-byte `cp.async.cg` (8 and 4 bytes: `.ca`) when the axis facts prove the
//! vectors, with a source size of 0 for a masked-off vector, which zero-fills it; otherwise
//! element by element, a predicated load and a shared store. Buffers are unpadded and swizzled
//! in 16-byte chunks: chunk `c` of row `r` (row-major, `cpr` chunks a row) lives at chunk
//! `l ^ ((l / max(cpr, 8)) % 8)` with `l = r * cpr + c`, so the 8 rows one `ldmatrix` phase
//! reads, and the 8 chunks of a 128-byte line the copies write, fall in 8 different bank groups.

use super::names::{c_scalar, elem_scalar};
use super::pipeline::{Plan, RingLoad};
use super::swizzle::{fixed_steps, RingSwizzle};
use super::writer::Writer;
use crate::tile::ir::{Stmt, StmtKind, VarId};
use std::fmt::Write as _;

/// Device helpers for the rings, by name.
pub const HELPERS: &[(&str, &str)] = &[
    (
        "kwb_swz",
        r#"template <int CPR> static __device__ __forceinline__ unsigned kwb_swz(int row, int chunk) {
    const int l = row * CPR + chunk;
    return (unsigned)(l ^ ((l / (CPR > 8 ? CPR : 8)) % 8)) * 16u;
}
"#,
    ),
    (
        "kwb_cp16",
        r#"static __device__ __forceinline__ void kwb_cp16(unsigned dst, const void* src, bool pred) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(pred ? 16 : 0));
}
"#,
    ),
    (
        "kwb_cp8",
        r#"static __device__ __forceinline__ void kwb_cp8(unsigned dst, const void* src, bool pred) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(dst), "l"(src), "r"(pred ? 8 : 0));
}
"#,
    ),
    (
        "kwb_cp4",
        r#"static __device__ __forceinline__ void kwb_cp4(unsigned dst, const void* src, bool pred) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(dst), "l"(src), "r"(pred ? 4 : 0));
}
"#,
    ),
    (
        "kwb_cp_commit",
        r#"static __device__ __forceinline__ void kwb_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
"#,
    ),
    (
        "kwb_cp_wait",
        r#"template <int N> static __device__ __forceinline__ void kwb_cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
"#,
    ),
];

/// A dot operand read from a ring during the compute phase.
#[derive(Debug, Clone)]
pub struct RingRead {
    /// C expression: the shared-memory address (`unsigned`) of the buffer being read.
    pub base: String,
    /// Chunks (16 bytes) per row.
    pub cpr: u64,
    pub swizzle: RingSwizzle,
    /// A wgmma dot reading it leaves its wait to the loop (the loop's own wgmma schedule).
    pub loop_waits: bool,
}

impl Writer<'_> {
    pub fn pipelined_loop(
        &mut self,
        var: VarId,
        start: VarId,
        end: VarId,
        step: VarId,
        body: &[Stmt],
        plan: &Plan,
    ) {
        let id = self.rings;
        self.rings += 1;
        self.ring_bytes += plan.bytes;
        self.ring_align = self.ring_align.max(plan.align);
        self.max_stages = self.max_stages.max(plan.stages);
        let s = plan.stages;
        let t = c_scalar(elem_scalar(self.k, var));
        let v = self.name(var).to_string();
        let (rd, wr) = (format!("kwb_rd{id}"), format!("kwb_wr{id}"));
        let loads: Vec<String> = plan
            .loads
            .iter()
            .map(|l| format!("`{}` [{}, {}]", self.name(l.dst), l.rows, l.cols))
            .collect();
        let prefetch = self.prefetchable(body, plan);
        let wgmma = prefetch
            .is_none()
            .then(|| self.wgmma_loop_dot(body, plan))
            .flatten();
        // Descriptor loads feeding wgmma: TMA copies on mbarriers (`tma.rs`).
        let tma = (wgmma.is_some() && self.tma_loads(&plan.loads)).then_some(id);
        self.line(&format!(
            "// software pipeline: {} copied by {} into rings of {s} shared buffers",
            loads.join(" and "),
            if tma.is_some() { "TMA" } else { "cp.async" }
        ));
        if tma.is_none() && wgmma.is_some() {
            // Where TMA could have copied them: why a pointer load is not a block (`blocks/`).
            for l in &plan.loads {
                if let Some(why) = self.k.block_miss(l.dst) {
                    self.line(&format!(
                        "// `{}` is not proven a block: {why}",
                        self.name(l.dst)
                    ));
                }
            }
        }
        self.open("{");
        self.mark();
        let (end_name, step_name) = (self.name(end).to_string(), self.name(step).to_string());
        self.local(&format!("const {t}"), "kwb_end", &end_name, "");
        self.local(&format!("const {t}"), "kwb_step", &step_name, "");
        match tma {
            Some(id) => self.tma_begin(id, s, &rd, &wr),
            None => {
                self.local("int", &rd, "0", "");
                self.local("int", &wr, "0", "");
            }
        }
        self.strided_begin(&plan.strided, &plan.compute);
        self.line("__syncthreads();  // an earlier run of this loop may still read the rings");
        self.mark();
        if tma.is_some() {
            // The copies go on from the stage the ring reads next: the same stage at a loop's
            // first run, and after a persistent program's last read for the next one's.
            self.line(&format!("{wr} = {rd};"));
        }
        // Prologue: iterations 0 .. S-2.
        self.line("#pragma unroll");
        self.open(&format!(
            "for (int kwb_s = 0; kwb_s < {}; ++kwb_s) {{",
            s - 1
        ));
        let first = format!("({t})({} + kwb_s * kwb_step)", self.name(start));
        self.issue(&v, t, &first, body, plan, &wr, tma);
        if tma.is_none() {
            self.line("kwb_cp_commit();");
            self.line(&format!("{wr} += 1;"));
        } else {
            // A persistent kernel's rings run on from program to program (`tma.rs`).
            self.line(&format!("{wr} = {wr} == {} ? 0 : {wr} + 1;", s - 1));
        }
        self.close("}");
        self.mark();
        for l in &plan.loads {
            self.undeclared.push(l.dst);
        }
        if let Some(d) = &prefetch {
            let start = self.name(start).to_string();
            self.prefetch_setup(d, s, &rd, &start);
        }
        self.open(&format!(
            "for ({v} = {}; {v} < kwb_end; {v} = ({t})({v} + kwb_step)) {{",
            self.name(start)
        ));
        self.loop_depth += 1;
        let next = format!("({t})({v} + {} * kwb_step)", s - 1);
        let advance = format!("{wr} = {wr} == {} ? 0 : {wr} + 1;", s - 1);
        let mut in_flight = None;
        if let Some(d) = prefetch {
            let mut issue = |w: &mut Self| {
                w.issue(&v, t, &next, body, plan, &wr, None);
                w.line("kwb_cp_commit();");
                w.line(&advance);
            };
            let after = format!("({t})({v} + kwb_step)");
            self.prefetch_iteration(&d, s, &rd, &after, &mut issue);
            for &i in &d.rest {
                self.stmt(&body[i]);
            }
        } else if let Some((dot, rest)) = wgmma {
            // wgmma: a stage's wgmmas run on while the loop waits for the previous stage's,
            // refills that stage's buffers and moves on to the next stage (`wgmma.rs`).
            match tma {
                Some(id) => self.tma_wait(id, &rd),
                None => {
                    self.line(&format!("kwb_cp_wait<{}>();", s - 2));
                    self.line("kwb_fence_proxy_async();");
                    self.line("__syncthreads();");
                }
            }
            self.set_ring_reads(plan, &rd, true);
            self.stmt(&body[dot]);
            self.clear_ring_reads(plan);
            if let StmtKind::Assign { dst, .. } = &body[dot].kind {
                self.line("kwb_wgmma_wait<1>();  // the previous stage's wgmmas are done");
                // With TMA no barrier starts the iteration, so one always tells thread 0 that
                // every warp is done with the stage it refills. (An mbarrier per stage that
                // each warp arrives on, waited for by warp 0 alone, was 1% slower on an H100.)
                if tma.is_some() || self.layout(*dst).mma.is_some_and(|m| m.warps_m > 4) {
                    self.line("__syncthreads();  // in every warpgroup: their buffers are free");
                }
                in_flight = Some(self.carried_accumulators(*dst, body, &rest));
            }
            self.issue(&v, t, &next, body, plan, &wr, tma);
            if tma.is_none() {
                self.line("kwb_cp_commit();");
            }
            self.line(&advance);
            for &i in &rest {
                self.stmt(&body[i]);
            }
            self.line(&format!("{rd} = {rd} == {} ? 0 : {rd} + 1;", s - 1));
            if let Some(id) = tma {
                self.tma_next_phase(id, &rd);
            }
        } else {
            self.line(&format!("kwb_cp_wait<{}>();", s - 2));
            if plan.align > 128 {
                self.line("kwb_fence_proxy_async();");
            }
            self.line("__syncthreads();");
            self.issue(&v, t, &next, body, plan, &wr, None);
            self.line("kwb_cp_commit();");
            self.line(&advance);
            self.set_ring_reads(plan, &rd, false);
            for &i in &plan.compute {
                self.stmt(&body[i]);
            }
            self.clear_ring_reads(plan);
            self.line(&format!("{rd} = {rd} == {} ? 0 : {rd} + 1;", s - 1));
        }
        self.loop_depth -= 1;
        self.loop_end(body);
        self.close("}");
        self.strided_end(&plan.strided);
        if tma.is_none() {
            self.line("kwb_cp_wait<0>();");
        }
        if let Some(accs) = in_flight {
            // The last stage's wgmmas, before anything reads the accumulators.
            self.line("kwb_wgmma_wait<0>();");
            for (d, ept) in accs {
                self.wgmma_keep(&d, ept);
            }
        }
        if let Some(id) = tma {
            self.tma_end(id, s);
        }
        self.mark();
        self.close("}");
    }

    /// While the compute part is written: its dots read their operands from buffer `rd`, and
    /// a wgmma dot leaves its wait to the loop when `loop_waits`.
    fn set_ring_reads(&mut self, plan: &Plan, rd: &str, loop_waits: bool) {
        for l in &plan.loads {
            let read = RingRead {
                base: format!(
                    "(kwb_smem(kwb_ring) + {} + {rd} * {})",
                    l.offset, l.stage_bytes
                ),
                cpr: l.cols / 8,
                swizzle: l.swizzle,
                loop_waits,
            };
            self.ring_reads.insert(l.dst, read);
        }
    }

    fn clear_ring_reads(&mut self, plan: &Plan) {
        for l in &plan.loads {
            self.ring_reads.remove(&l.dst);
        }
    }

    /// The address slice of the iteration whose loop variable is `at`, and its copies into
    /// buffer `slot`, when that iteration exists (TMA copies on ring `tma`'s mbarriers).
    #[allow(clippy::too_many_arguments)]
    fn issue(
        &mut self,
        v: &str,
        t: &str,
        at: &str,
        body: &[Stmt],
        plan: &Plan,
        slot: &str,
        tma: Option<u32>,
    ) {
        self.open("{");
        self.line(&format!("const {t} kwb_it = {at};"));
        self.line(&format!("const {t} {v} = kwb_it;"));
        self.open(&format!("if ({v} < kwb_end) {{"));
        if let Some(id) = tma {
            self.tma_expect(id, plan, slot);
        }
        for &i in &plan.ahead {
            match plan.loads.iter().find(|l| l.stmt == i) {
                Some(l) => {
                    let l = l.clone();
                    let line = body[i].loc.line.max(1);
                    let file = self.file.clone();
                    let _ = writeln!(self.out, "#line {line} \"{file}\"");
                    match tma {
                        Some(id) => self.tma_copy(id, &l, slot),
                        None => self.copy(&l, slot),
                    }
                }
                None if self.strided_stmt(&plan.strided, i) => {}
                None => self.stmt(&body[i]),
            }
        }
        self.close("}");
        self.close("}");
    }

    /// The copies of one ring load's pointer tile into buffer `slot` of its ring.
    fn copy(&mut self, load: &RingLoad, slot: &str) {
        let (ptr, mask, offset, stage) = (load.ptr, load.mask, load.offset, load.stage_bytes);
        let l = self.layout(ptr);
        let w = self.vector_width(ptr, mask);
        let bytes = w * 2;
        let f = l.flat_expr("e");
        let at = load.swizzle.at("kwb_f", load.rows, load.cols);
        let owner = l.owner_if();
        let m = |w: &Writer, e: &str| {
            mask.map(|m| w.at(m, e))
                .unwrap_or_else(|| "true".to_string())
        };
        let vectors = matches!(bytes, 4 | 8 | 16);
        self.open("{");
        self.line(&format!(
            "unsigned char* kwb_buf = kwb_ring + {offset} + {slot} * {stage};"
        ));
        let steps = vectors
            .then(|| fixed_steps(&l, w, |f| load.swizzle.offset(f, load.rows, load.cols)))
            .flatten();
        if let Some(steps) = steps {
            // Every thread's vectors lie at the same distances from its first one: one
            // swizzled address per thread, then constant offsets (immediates in the copies).
            self.line(&format!("const int kwb_f = {};", l.flat_expr("0")));
            self.line(&format!("const unsigned kwb_a = kwb_smem(kwb_buf + {at});"));
            for (i, d) in steps.iter().enumerate() {
                let e = (i as u64 * w).to_string();
                self.line(&format!(
                    "{owner}kwb_cp{bytes}(kwb_a + {d}u, {}, {});",
                    self.at(ptr, &e),
                    m(self, &e)
                ));
            }
            self.close("}");
            return;
        }
        self.line("#pragma unroll");
        if vectors {
            self.open(&format!("for (int e = 0; e < {}; e += {w}) {{", l.ept));
            self.line(&format!("const int kwb_f = {f};"));
            self.line(&format!(
                "{owner}kwb_cp{bytes}(kwb_smem(kwb_buf + {at}), {}, {});",
                self.at(ptr, "e"),
                m(self, "e")
            ));
        } else {
            // Element by element: 2-byte elements have no cp.async.
            self.open(&format!("for (int e = 0; e < {}; ++e) {{", l.ept));
            self.line(&format!("const int kwb_f = {f};"));
            self.line("unsigned short r = 0;");
            self.line(&format!(
                "kwb_ld16s(r, {}, {});",
                self.at(ptr, "e"),
                m(self, "e")
            ));
            self.line(&format!(
                "{owner}*reinterpret_cast<unsigned short*>(kwb_buf + {at}) = r;"
            ));
        }
        self.close("}");
        self.close("}");
    }
}
