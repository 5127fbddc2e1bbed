//! Hopper's warpgroup MMA for the Triton matmul loop: on sm_90 a pipelined `tl.dot` of two
//! ring buffers (fp16 or bf16 in, fp32 out) becomes `wgmma.mma_async` (compiled as sm_90a),
//! which reads both operands straight from shared memory, instead of `ldmatrix` + `mma.sync`.
//!
//! - **Tiling** (`Mma::wgmma`): a warpgroup (4 warps) covers 64-row steps of M and all of N
//!   (at most 256 columns), its accumulator held as `mma.sync`'s is, repeated along N. The
//!   layout gives warp `w` the `mt` row tiles `w * 16 * mt ..`; wgmma gives warp `q` of
//!   warpgroup `g`, in its `i`-th 64-row step, rows `(g * mt + i) * 64 + 16 q ..`. The ring
//!   copies put A's rows where wgmma looks for them (`kwb_wgrow`), so the accumulator keeps
//!   the layout every other tile of its class has, and stores need no change.
//! - **Operands in shared memory** (`kwb_wgswz`): a buffer is blocks of `W`-byte rows (`W` =
//!   the row's bytes, at most 128), block after block along the row, each swizzled as the
//!   hardware reads it (16-byte chunk `c` of a row at `c ^ ((address >> 7) & (W / 16 - 1))`).
//!   A is K-major (its rows are M); B, row-major K x N in global memory, is N-major, which
//!   wgmma reads with its transpose flag. Buffers start on 1024-byte boundaries.
//! - **Schedule** (the loop of `ring.rs`, iteration `i`, `S` buffers): wait for stage `i`'s
//!   copies, `fence.proxy.async` (the copies were generic-proxy writes; wgmma reads through the
//!   async proxy), barrier; issue stage `i`'s wgmmas; wait until only they are in flight
//!   (`wgmma.wait_group 1`: stage `i - 1`'s are done), and with two warpgroups a barrier, so
//!   that every warpgroup is done with stage `i - 1`'s buffers; refill those with stage
//!   `i + S - 1`. Stage `i`'s wgmmas run on through all of that and the next iteration's wait,
//!   so the tensor cores always have the next stage queued. After the loop, the last wait and
//!   an empty asm that pins the accumulator's registers behind it: ptxas serialises every
//!   wgmma of the kernel (its advice C7514) if anything may read the accumulator while a wgmma
//!   still writes it, and NVVM would otherwise hoist the epilogue's reads above the wait.
//!   Measured on an H200 (docs/performance.md): up to 11% faster than waiting for each stage's
//!   wgmmas before the copies, and at most 1% slower in any configuration.

use super::mma::Mma;
use super::names::elem_scalar;
use super::pipeline::Plan;
use super::ring::RingRead;
use super::swizzle::RingSwizzle;
use super::writer::Writer;
use crate::tile::ir::{Op, Scalar, Stmt, StmtKind, VarId};
use std::collections::HashMap;

/// Device helpers for wgmma, by name (the `wgmma.mma_async` calls themselves are written per
/// shape: [`Writer::wgmma_fn`]).
pub const HELPERS: &[(&str, &str)] = &[
    // The warpgroup's index as a value ptxas knows is the same in every lane (a shuffle from
    // lane 0), so the operand descriptors built from it stay in uniform registers. Taken
    // once, at the kernel's start (`kwb_wg`): in the loop, the shuffle would queue behind the
    // copies just issued.
    (
        "kwb_warpgroup",
        r#"static __device__ __forceinline__ int kwb_warpgroup() { return __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0); }
"#,
    ),
    (
        "kwb_wgswz",
        r#"template <int ROWS, int W> static __device__ __forceinline__ unsigned kwb_wgswz(int row, int col_byte) {
    const unsigned o = (unsigned)((col_byte / W) * (ROWS * W) + row * W + col_byte % W);
    return o ^ (((o >> 7) & (W / 16 - 1)) << 4);
}
"#,
    ),
    (
        "kwb_wgrow",
        r#"template <int MT> static __device__ __forceinline__ int kwb_wgrow(int r) {
    const int w = r / (16 * MT);
    return ((w / 4) * MT + (r / 16) % MT) * 64 + (w % 4) * 16 + r % 16;
}
"#,
    ),
    (
        "kwb_wgmma_desc",
        r#"static __device__ __forceinline__ unsigned long long kwb_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned mode) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
        | ((unsigned long long)(sbo >> 4) << 32) | ((unsigned long long)mode << 62);
}
"#,
    ),
    (
        "kwb_wgmma_fence",
        r#"static __device__ __forceinline__ void kwb_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
"#,
    ),
    (
        "kwb_wgmma_commit",
        r#"static __device__ __forceinline__ void kwb_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
"#,
    ),
    (
        "kwb_wgmma_wait",
        r#"template <int N> static __device__ __forceinline__ void kwb_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
"#,
    ),
    (
        "kwb_wgmma_keep",
        r#"static __device__ __forceinline__ void kwb_wgmma_keep(float& r) { asm volatile("" : "+f"(r) :: "memory"); }
"#,
    ),
    (
        "kwb_fence_proxy_async",
        r#"static __device__ __forceinline__ void kwb_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
"#,
    ),
];

/// The descriptor's swizzle mode for rows of `width` bytes.
fn mode(width: u64) -> u64 {
    match width {
        128 => 1,
        64 => 2,
        _ => 3,
    }
}

/// Row width in bytes of a wgmma buffer whose tile rows hold `cols` 2-byte elements.
fn width(cols: u64) -> u64 {
    (cols * 2).min(128)
}

impl Writer<'_> {
    /// How each ring load of a loop lies in its buffers when the loop's dots go to wgmma:
    /// every dot that reads one has the wgmma tiling, and each load is only ever the A
    /// operand of such dots (with one row tiling) or only the B operand. `None`: ldmatrix.
    pub(super) fn wgmma_swizzles(
        &self,
        body: &[Stmt],
        ring_idx: &[usize],
    ) -> Option<HashMap<VarId, RingSwizzle>> {
        let mut out: HashMap<VarId, RingSwizzle> = HashMap::new();
        for &i in ring_idx {
            let StmtKind::Assign { dst: load, .. } = &body[i].kind else {
                return None;
            };
            for s in body {
                let StmtKind::Assign {
                    dst,
                    op: Op::Dot { a, b, .. },
                } = &s.kind
                else {
                    continue;
                };
                if a != load && b != load {
                    continue;
                }
                let mma = self.layout(*dst).mma.filter(|m| m.wgmma)?;
                let cols = u64::from(*self.k.ty(*load).shape.get(1)?);
                let want = if a == load {
                    RingSwizzle::Wgmma {
                        width: width(cols),
                        permute_mt: mma.mt,
                    }
                } else {
                    RingSwizzle::Wgmma {
                        width: width(cols),
                        permute_mt: 0,
                    }
                };
                if a == b || *out.entry(*load).or_insert(want) != want {
                    return None;
                }
            }
            out.get(load)?;
        }
        Some(out)
    }

    /// The name of the helper that issues one `wgmma.mma_async.m64n{n}k16` (fp32 accumulators,
    /// A K-major, B N-major) for inputs `sin`, written on first use.
    fn wgmma_fn(&mut self, n: u64, sin: Scalar) -> String {
        let ty = if sin == Scalar::BF16 { "bf16" } else { "f16" };
        let name = format!("kwb_wgmma_n{n}_{ty}");
        let regs = n / 2;
        let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
        let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(d[{i}])")).collect();
        let text = format!(
            "static __device__ __forceinline__ void {name}(float* d, unsigned long long da, unsigned long long db) {{\n    \
             asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{s}, 0;\\n wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{list}}}, %{a}, %{b}, p, 1, 1, 0, 1;\\n}}\\n\"\n        \
             : {outs} : \"l\"(da), \"l\"(db), \"r\"(1));\n}}\n",
            list = list.join(", "),
            outs = outs.join(", "),
            a = regs,
            b = regs + 1,
            s = regs + 2,
        );
        self.helpers.entry(name.clone()).or_insert(text);
        self.arch_specific = true;
        name
    }

    /// `dst = a @ b (+ acc)` by wgmma from two ring buffers. Issues the wgmmas and commits
    /// them; waits for them too unless `defer_wait` (the loop's own schedule then waits, in
    /// `ring.rs`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn wgmma_dot(
        &mut self,
        dst: VarId,
        a: VarId,
        acc: Option<VarId>,
        mma: &Mma,
        (ra, rb): (&RingRead, &RingRead),
        (m, k, n): (u64, u64, u64),
        defer_wait: bool,
    ) {
        let (RingSwizzle::Wgmma { width: wa, .. }, RingSwizzle::Wgmma { width: wb, .. }) =
            (ra.swizzle, rb.swizzle)
        else {
            return;
        };
        let groups = mma.warps_m / 4;
        let f = self.wgmma_fn(n, elem_scalar(self.k, a));
        self.dot_start(dst, acc);
        let d = self.name(dst).to_string();
        let rows_per_group = m / groups;
        let sa = if groups > 1 {
            self.uses_warpgroup = true;
            format!("{} + kwb_wg * {}", ra.base, rows_per_group * wa)
        } else {
            ra.base.clone()
        };
        self.line(&format!("const unsigned kwb_sa = {sa};"));
        self.line(&format!("const unsigned kwb_sb = {};", rb.base));
        self.wgmma_keep(&d, mma.ept());
        self.line("kwb_wgmma_fence();");
        // Each operand's descriptor is built once; a step's is that one plus the step's byte
        // offset / 16, added to the start-address field (bits 0-13, the address / 16). The
        // offsets stay inside the ring, below 256 KiB, so the field never carries into the
        // next: a 64-bit add of a constant per wgmma instead of rebuilding every field.
        self.line(&format!(
            "const unsigned long long kwb_da = kwb_wgmma_desc(kwb_sa, 16, {}, {});",
            8 * wa,
            mode(wa)
        ));
        self.line(&format!(
            "const unsigned long long kwb_db = kwb_wgmma_desc(kwb_sb, {}, {}, {});",
            k * wb,
            8 * wb,
            mode(wb)
        ));
        self.line("#pragma unroll");
        self.open(&format!("for (int kk = 0; kk < {k}; kk += 16) {{"));
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int i = 0; i < {mt}; ++i) {f}(&{d}[i * {half}], kwb_da + (((kk * 2) / {wa}) * {block} + i * {step} + (kk * 2) % {wa}) / 16, kwb_db + kk * {wb} / 16);",
            mt = mma.mt,
            half = n / 2,
            block = m * wa,
            step = 64 * wa,
        ));
        self.close("}");
        self.line("kwb_wgmma_commit();");
        if !defer_wait {
            self.wgmma_wait(&d, mma.ept());
        }
    }

    /// Waits for the issued wgmmas, then pins the accumulator's registers so that nothing
    /// reads them earlier.
    pub(super) fn wgmma_wait(&mut self, d: &str, ept: u64) {
        self.line("kwb_wgmma_wait<0>();");
        self.wgmma_keep(d, ept);
    }

    /// An empty asm that reads and writes each register of `d`: the compiler may not move
    /// its uses across it (the wgmma region's fence for the accumulator).
    pub(super) fn wgmma_keep(&mut self, d: &str, ept: u64) {
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {ept}; ++e) kwb_wgmma_keep({d}[e]);"
        ));
    }

    /// The accumulators a loop's wgmma dot `dst` leaves in flight at the end of an iteration:
    /// `dst` and the loop-carried variables copied from it, with their registers per thread.
    /// After the loop they are pinned behind the last wait, so that no read of them (the
    /// epilogue's conversion) is scheduled before it: ptxas would then serialise every wgmma.
    pub(super) fn carried_accumulators(
        &self,
        dst: VarId,
        body: &[Stmt],
        rest: &[usize],
    ) -> Vec<(String, u64)> {
        let ept = self.layout(dst).ept;
        let mut out = vec![(self.name(dst).to_string(), ept)];
        for &i in rest {
            if let StmtKind::Assign {
                dst: carried,
                op: Op::Copy(src),
            } = &body[i].kind
            {
                if *src == dst && self.is_tile(*carried) {
                    out.push((self.name(*carried).to_string(), self.layout(*carried).ept));
                }
            }
        }
        out
    }

    /// A pipelined loop's compute part when it is one wgmma dot followed by copies: the dot's
    /// statement index and the copies'.
    pub(super) fn wgmma_loop_dot(&self, body: &[Stmt], plan: &Plan) -> Option<(usize, Vec<usize>)> {
        let (i, rest) = plan.one_then_copies(body)?;
        let StmtKind::Assign {
            dst,
            op: Op::Dot { a, b, .. },
        } = &body[i].kind
        else {
            return None;
        };
        let wg = |x: &VarId| {
            plan.loads
                .iter()
                .any(|l| l.dst == *x && matches!(l.swizzle, RingSwizzle::Wgmma { .. }))
        };
        let ok = wg(a) && wg(b) && self.layout(*dst).mma.is_some_and(|m| m.wgmma);
        ok.then(|| (i, rest.to_vec()))
    }
}
