//! A pipelined loop whose whole compute part is one tensor-core dot of two ring buffers (the
//! Triton matmul loop) gets the schedule of CUTLASS's multistage main loop: fragments are
//! double-buffered in registers, each slice's `ldmatrix` runs while the slice before it is in
//! the tensor cores, and the wait and barrier for the next stage come before the last slice's
//! `mma.sync`s, with that stage's first fragments loaded under them. The plain loop instead
//! waits at the barrier, then loads fragments, then starts the tensor cores.
//!
//! The second fragment buffer costs registers, so the writer takes this schedule only for
//! stages of two slices (BK = 32: with four, kwb's 128 x 128 kernels spilled) and where it
//! keeps as many CTAs resident ([`worth_it`]). On an H200 it made 4-stage matmuls of
//! 128 x 128 x 32 tiles (4 warps) 8-11% faster and of 128 x 256 x 32 (8 warps) 23-30%; at
//! 8 warps on 128 x 128, where it cost the second CTA, it was 23-40% slower.

use super::dot::{mma_fn, ring_fragment_addresses, TensorParts};
use super::names::elem_scalar;
use super::pipeline::{Plan, RingLoad};
use super::swizzle::RingSwizzle;
use super::writer::Writer;
use crate::tile::ir::{Op, Scalar, Stmt, StmtKind, VarId};

/// The dot a loop's compute part consists of.
pub struct RingDot {
    pub dst: VarId,
    pub acc: Option<VarId>,
    pub a: RingLoad,
    pub b: RingLoad,
    /// Its 16-deep slices per iteration (two).
    pub slices: u64,
    /// The compute part's other statements (body indices): copies of the result, such as
    /// the loop-carried accumulator's, written after the dot.
    pub rest: Vec<usize>,
    pub line: u32,
}

/// Registers a thread needs beside its accumulators, fragments and copy pointers (indices,
/// masks, loop state): an estimate.
const OTHER_REGISTERS: u64 = 24;
/// The most registers the estimate may reach with two fragment buffers. Measured on an H200
/// (4-stage 128 x 128 x 32 at 4 warps, 128 x 256 x 32 at 8 and 64 x 256 x 32 at 4, estimated
/// 232, 228 and 236): the first two gained 8-11% and 23-30%, the third spilled and lost 13%.
const MAX_REGISTERS: u64 = 232;

/// Whether a second fragment buffer fits: `acc` accumulator registers, `fragments` per buffer,
/// `pointers` for the ring copies (two per 16-byte copy a thread issues per stage), at
/// `threads` per CTA; it must keep the CTAs per SM that registers allow (64 Ki per SM).
fn worth_it(acc: u64, fragments: u64, pointers: u64, threads: u64) -> bool {
    let resident = |regs: u64| 65536 / (regs.next_multiple_of(8) * threads).max(1);
    let base = acc + pointers + OTHER_REGISTERS;
    let (one, two) = (base + fragments, base + 2 * fragments);
    two <= MAX_REGISTERS && resident(two) >= resident(one).max(1)
}

impl Writer<'_> {
    /// The loop's dot, when the loop can take the prefetching schedule.
    pub fn prefetchable(&self, body: &[Stmt], plan: &Plan) -> Option<RingDot> {
        let (i, rest) = plan.one_then_copies(body)?;
        let StmtKind::Assign {
            dst,
            op: Op::Dot { a, b, acc, .. },
        } = &body[i].kind
        else {
            return None;
        };
        let ring = |x: &VarId| plan.loads.iter().find(|l| l.dst == *x).cloned();
        let (ra, rb) = (ring(a)?, ring(b)?);
        if ra.swizzle != RingSwizzle::Ldmatrix || rb.swizzle != RingSwizzle::Ldmatrix {
            return None;
        }
        if !matches!(elem_scalar(self.k, *a), Scalar::F16 | Scalar::BF16) {
            return None;
        }
        let l = self.layout(*dst);
        let mma = l.mma?;
        let k = ra.cols;
        if k != 32 {
            return None;
        }
        let fragments = mma.mt * 4 + mma.nt * 2;
        let threads = u64::from(self.k.threads());
        let copies = (ra.rows * ra.cols + rb.rows * rb.cols) / 8;
        let pointers = 2 * copies.div_ceil(threads);
        worth_it(l.ept, fragments, pointers, threads).then(|| RingDot {
            dst: *dst,
            acc: *acc,
            a: ra,
            b: rb,
            slices: k / 16,
            rest: rest.to_vec(),
            line: body[i].loc.line.max(1),
        })
    }

    /// Before the loop: the lanes' fragment addresses, the two fragment buffers, the wait for
    /// the first stage and its first fragments.
    pub fn prefetch_setup(&mut self, d: &RingDot, stages: u64, rd: &str, start: &str) {
        let mma = self
            .layout(d.dst)
            .mma
            .expect("prefetchable checked the layout");
        self.line(&format!(
            "// the dot's fragments double-buffered in registers (warps {} x {}, each {} x {})",
            mma.warps_m,
            mma.warps_n,
            mma.warp_rows(),
            mma.warp_cols()
        ));
        self.warp_lines(&mma);
        self.ring_lanes(&mma, d.a.cols / 8, d.b.cols / 8);
        self.line(&format!("unsigned kwb_fa[2][{}][4];", mma.mt));
        self.line(&format!("unsigned kwb_fb[2][{}][2];", mma.nt));
        self.line(&format!("kwb_cp_wait<{}>();", stages - 2));
        self.line("__syncthreads();");
        self.open(&format!("if ({start} < kwb_end) {{"));
        self.fragment_block(d, 0, 0, rd);
        self.close("}");
    }

    /// The pieces of one slice: fragment tiles, the mma helper, the accumulator, addresses.
    fn parts(&self, d: &RingDot) -> TensorParts {
        let mma = self
            .layout(d.dst)
            .mma
            .expect("prefetchable checked the layout");
        let (sin, sout) = (elem_scalar(self.k, d.a.dst), elem_scalar(self.k, d.dst));
        let (a_at, b_at) = ring_fragment_addresses(d.a.cols / 8, d.b.cols / 8);
        TensorParts {
            mt: mma.mt,
            nt: mma.nt,
            mma_fn: mma_fn(sin, sout),
            d: self.name(d.dst).to_string(),
            a_at,
            b_at,
        }
    }

    /// One iteration: `issue` writes the copies of the iteration `stages - 1` ahead.
    pub fn prefetch_iteration(
        &mut self,
        d: &RingDot,
        stages: u64,
        rd: &str,
        next: &str,
        issue: &mut dyn FnMut(&mut Self),
    ) {
        let file = self.file.clone();
        let parts = self.parts(d);
        let _ = std::fmt::Write::write_fmt(
            &mut self.out,
            format_args!("#line {} \"{file}\"\n", d.line),
        );
        self.dot_start(d.dst, d.acc);
        for j in 0..d.slices {
            let (cur, nxt) = (j % 2, (j + 1) % 2);
            if j + 1 < d.slices {
                self.fragment_block(d, nxt, (j + 1) * 16, rd);
            }
            if j == 0 {
                issue(self);
            }
            if j + 1 == d.slices {
                // The next stage: wait for its copies, then load its first fragments while
                // this slice's mma.syncs run.
                self.line(&format!("kwb_cp_wait<{}>();", stages - 2));
                self.line("__syncthreads();");
                self.line(&format!("{rd} = {rd} == {} ? 0 : {rd} + 1;", stages - 1));
                self.open(&format!("if ({next} < kwb_end) {{"));
                self.fragment_block(d, nxt, 0, rd);
                self.close("}");
            }
            self.mmas(&parts, &format!("kwb_fa[{cur}]"), &format!("kwb_fb[{cur}]"));
        }
    }

    /// Loads the fragments of slice `kk` of the stage `rd` reads into buffer `buf`.
    fn fragment_block(&mut self, d: &RingDot, buf: u64, kk: u64, rd: &str) {
        let parts = self.parts(d);
        self.open("{");
        self.line(&format!("const int kk = {kk};"));
        for (name, l) in [("kwb_sa", &d.a), ("kwb_sb", &d.b)] {
            self.line(&format!(
                "const unsigned {name} = kwb_smem(kwb_ring) + {} + {rd} * {};",
                l.offset, l.stage_bytes
            ));
        }
        self.fragments(&parts, &format!("kwb_fa[{buf}]"), &format!("kwb_fb[{buf}]"));
        self.close("}");
    }
}

#[cfg(test)]
mod tests {
    use super::worth_it;

    #[test]
    fn the_second_buffer_is_taken_only_where_it_keeps_the_ctas_resident() {
        // 128 x 128 x 32 at 4 warps (64 x 64 each): 128 accumulators, 32 fragment registers,
        // 8 copies of 16 bytes per thread; two CTAs per SM either way.
        assert!(worth_it(128, 32, 16, 128));
        // 128 x 256 x 32 at 8 warps: one CTA per SM either way.
        assert!(worth_it(128, 32, 12, 256));
        // 64 x 256 x 32 at 4 warps: 10 copies per thread, past the budget (it spilled).
        assert!(!worth_it(128, 32, 20, 128));
        // 128 x 128 at 8 warps (64 x 32 each): two CTAs would become one.
        assert!(!worth_it(64, 24, 8, 256));
    }
}
