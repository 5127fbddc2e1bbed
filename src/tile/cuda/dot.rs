//! `tl.dot`. Both operands are staged into shared memory from whatever layout they are in
//! (vector stores of each thread's runs, rows padded by 16 bytes so that the eight rows one
//! `ldmatrix` phase reads fall in eight different bank groups). The result is in the mma
//! accumulator layout (`mma.rs`), each warp owning a block of 16 x 8 tiles.
//!
//! - fp16/bf16: per 16-deep slice of K, each warp reads its A fragments with `ldmatrix.x4` and
//!   its B fragments with `ldmatrix.x4.trans` (B lies k-major in shared memory, as in global
//!   memory), then issues `mma.sync.aligned.m16n8k16.row.col` per tile: fp32 accumulators, or
//!   fp16 ones for an fp16 result of fp16 inputs.
//! - fp32: fused multiply-adds from shared memory (exact fp32 products; a request for tf32 is
//!   met with full precision).
//! - int8: the same loop in integers: exact products summed into int32 (wrapping). Correct,
//!   but not yet on the tensor cores (`mma.sync` `.s8`).
//!
//! Each dot site has its own region of `kwb_dot`. When two copies fit, the site alternates
//! between them, so one barrier per dot suffices (a warp writing copy `i + 1` has passed the
//! barrier of copy `i`, which every warp reached only after reading copy `i - 1`); otherwise a
//! second barrier ends the dot.

use super::layout::Layout;
use super::mma::Mma;
use super::names::literal;
use super::names::{c_scalar, elem_scalar};
use super::swizzle::RingSwizzle;
use super::writer::{Writer, SMEM_LIMIT};
use crate::tile::ir::{Const, Scalar, VarId};

/// In swizzled ring buffers of `cpr_a`/`cpr_b` 16-byte chunks per row, the addresses of a
/// lane's A and B fragments: C expressions over `kwb_sa`/`kwb_sb`, `kwb_ar`/`kwb_bc`, `kk`,
/// `i` and `j`.
pub(super) fn ring_fragment_addresses(cpr_a: u64, cpr_b: u64) -> (String, String) {
    (
        format!("kwb_sa + kwb_swz<{cpr_a}>(kwb_ar + i * 16, kk / 8 + kwb_lane / 16)"),
        format!("kwb_sb + kwb_swz<{cpr_b}>(kk + kwb_lane % 16, kwb_bc + j)"),
    )
}

/// The inline-PTX `mma.sync` helper for inputs `sin` and accumulators `sout`.
pub(super) fn mma_fn(sin: Scalar, sout: Scalar) -> &'static str {
    match (sin, sout) {
        (Scalar::BF16, _) => "kwb_mma_bf16_f32",
        (_, Scalar::F16) => "kwb_mma_f16_f16",
        _ => "kwb_mma_f16_f32",
    }
}

/// Device helpers for the tensor-core path, by name.
pub const HELPERS: &[(&str, &str)] = &[
    (
        "kwb_smem",
        r#"static __device__ __forceinline__ unsigned kwb_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
"#,
    ),
    (
        "kwb_ldsm_x4",
        r#"static __device__ __forceinline__ void kwb_ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
"#,
    ),
    (
        "kwb_ldsm_x4_trans",
        r#"static __device__ __forceinline__ void kwb_ldsm_x4_trans(unsigned (&b0)[2], unsigned (&b1)[2], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(b0[0]), "=r"(b0[1]), "=r"(b1[0]), "=r"(b1[1]) : "r"(addr));
}
"#,
    ),
    (
        "kwb_mma_f16_f32",
        r#"static __device__ __forceinline__ void kwb_mma_f16_f32(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
"#,
    ),
    (
        "kwb_mma_bf16_f32",
        r#"static __device__ __forceinline__ void kwb_mma_bf16_f32(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
"#,
    ),
    (
        "kwb_mma_f16_f16",
        r#"static __device__ __forceinline__ void kwb_mma_f16_f16(__half* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    unsigned c0 = (unsigned)__half_as_ushort(d[0]) | ((unsigned)__half_as_ushort(d[1]) << 16);
    unsigned c1 = (unsigned)__half_as_ushort(d[2]) | ((unsigned)__half_as_ushort(d[3]) << 16);
    asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
        : "+r"(c0), "+r"(c1) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    d[0] = __ushort_as_half((unsigned short)c0); d[1] = __ushort_as_half((unsigned short)(c0 >> 16));
    d[2] = __ushort_as_half((unsigned short)c1); d[3] = __ushort_as_half((unsigned short)(c1 >> 16));
}
"#,
    ),
];

/// Shared-memory row padding, in bytes.
const PAD_BYTES: u64 = 16;

/// What one slice of a tensor-core dot needs: fragment tiles per warp, the `mma` helper, the
/// accumulator, and the shared-memory addresses of a lane's A and B fragments (C expressions
/// over `kwb_sa`/`kwb_sb`, `kk`, `i` and `j`).
pub(super) struct TensorParts {
    pub mt: u64,
    pub nt: u64,
    pub mma_fn: &'static str,
    pub d: String,
    pub a_at: String,
    pub b_at: String,
}

impl Writer<'_> {
    pub fn dot(&mut self, dst: VarId, a: VarId, b: VarId, acc: Option<VarId>, line: u32) {
        let (ash, bsh) = (self.k.ty(a).shape.clone(), self.k.ty(b).shape.clone());
        let (&[m, k], &[_, n]) = (ash.as_slice(), bsh.as_slice()) else {
            self.unsupported("a dot of tiles that are not 2-D", line);
            return;
        };
        let (m, k, n) = (u64::from(m), u64::from(k), u64::from(n));
        let ld = self.layout(dst);
        let Some(mma) = ld.mma else {
            self.unsupported("a dot whose result is not in the mma layout", line);
            return;
        };
        let sin = elem_scalar(self.k, a);
        let sout = elem_scalar(self.k, dst);
        let size = u64::from(sin.size());
        let pad = PAD_BYTES / size;
        let (lda, ldb) = (k + pad, n + pad);
        let t = c_scalar(sin);
        let tensor = matches!(sin, Scalar::F16 | Scalar::BF16);
        let ring = match (self.ring_reads.get(&a), self.ring_reads.get(&b)) {
            (Some(ra), Some(rb)) if tensor => Some((ra.clone(), rb.clone())),
            _ => None,
        };
        if let Some((ra, rb)) = ring.as_ref().filter(|(ra, rb)| {
            mma.wgmma
                && matches!(ra.swizzle, RingSwizzle::Wgmma { .. })
                && matches!(rb.swizzle, RingSwizzle::Wgmma { .. })
        }) {
            self.line(&format!(
                "// tl.dot [{m}, {k}] @ [{k}, {n}] -> {}: wgmma m64n{n}k16 from the rings; {} warpgroup(s), each {} x {n}",
                sout.triton_name(),
                mma.warps_m / 4,
                m / (mma.warps_m / 4)
            ));
            self.open("{");
            let defer = ra.loop_waits;
            self.wgmma_dot(dst, a, acc, &mma, (ra, rb), (m, k, n), defer);
            self.close("}");
            return;
        }
        self.line(&format!(
            "// tl.dot [{m}, {k}] @ [{k}, {n}] -> {}: {}; warps {} x {}, each {} x {}",
            sout.triton_name(),
            match (&ring, tensor) {
                (Some(_), _) => "mma.sync m16n8k16 fed by ldmatrix from the rings",
                (None, true) => "mma.sync m16n8k16 fed by ldmatrix",
                (None, false) if sin == Scalar::I8 => "int8 multiply-adds into int32",
                (None, false) => "fp32 fma",
            },
            mma.warps_m,
            mma.warps_n,
            mma.warp_rows(),
            mma.warp_cols()
        ));
        self.open("{");
        let mut double = false;
        let site = self.dot_sites.len();
        if ring.is_none() {
            let a_elems = m * lda;
            let stage = (a_elems + k * ldb) * size;
            // Two copies when they fit beside everything else, else one and a closing barrier.
            let used = self.scratch_bytes
                + self.site_bytes
                + self.dot_bytes
                + self.dot_single
                + self.ring_bytes;
            double = self.allow_double && used + 2 * stage <= SMEM_LIMIT;
            self.dot_sites.push(double);
            let base = if double {
                let off = self.dot_bytes;
                self.dot_bytes += 2 * stage;
                format!("kwb_dot + {off} + kwb_dotbuf_{site} * {stage}")
            } else {
                // One copy, closed by a barrier: every such site stages into one shared
                // region, sized for the largest (an unrolled loop of dots needs no more).
                self.dot_single = self.dot_single.max(stage);
                "kwb_dot1".to_string()
            };
            self.line(&format!("{t}* kwb_da = reinterpret_cast<{t}*>({base});"));
            self.line(&format!("{t}* kwb_db = kwb_da + {a_elems};"));
            self.stage(a, "kwb_da", k, lda);
            self.stage(b, "kwb_db", n, ldb);
            self.line("__syncthreads();");
        }
        self.dot_start(dst, acc);
        let d = self.name(dst).to_string();
        if tensor {
            let mma_fn = mma_fn(sin, sout);
            let (mt, nt) = (mma.mt, mma.nt);
            self.warp_lines(&mma);
            let (a_at, b_at) = match &ring {
                None => {
                    self.line(&format!(
                        "const unsigned kwb_sa = kwb_smem(kwb_da + ((kwb_w / {}) * {} + kwb_lane % 16) * {lda} + (kwb_lane / 16) * 8);",
                        mma.warps_n,
                        mma.warp_rows()
                    ));
                    self.line(&format!(
                        "const unsigned kwb_sb = kwb_smem(kwb_db + (kwb_lane % 16) * {ldb} + (kwb_w % {}) * {} + (kwb_lane / 16) * 8);",
                        mma.warps_n,
                        mma.warp_cols()
                    ));
                    (
                        format!("kwb_sa + (i * {} + kk) * {size}", 16 * lda),
                        format!("kwb_sb + (kk * {ldb} + j * 8) * {size}"),
                    )
                }
                Some((ra, rb)) => {
                    self.line(&format!("const unsigned kwb_sa = {};", ra.base));
                    self.line(&format!("const unsigned kwb_sb = {};", rb.base));
                    self.ring_lanes(&mma, ra.cpr, rb.cpr)
                }
            };
            let parts = TensorParts {
                mt,
                nt,
                mma_fn,
                d,
                a_at,
                b_at,
            };
            self.line("#pragma unroll");
            self.open(&format!("for (int kk = 0; kk < {k}; kk += 16) {{"));
            self.line(&format!("unsigned kwb_af[{mt}][4];"));
            self.line(&format!("unsigned kwb_bf[{nt}][2];"));
            self.fragments(&parts, "kwb_af", "kwb_bf");
            self.mmas(&parts, "kwb_af", "kwb_bf");
            self.close("}");
        } else {
            let (row, col) = mma.coord_expr("e");
            self.line("#pragma unroll 4");
            self.open(&format!("for (int kk = 0; kk < {k}; ++kk) {{"));
            self.line("#pragma unroll");
            let step = if sin == Scalar::I8 {
                // int8: exact products (at most 2^14), int32 sums that wrap (in unsigned arithmetic,
                // where C++ defines it), as the tensor cores' would.
                format!("{d}[e] = int(unsigned({d}[e]) + unsigned(int(kwb_da[({row}) * {lda} + kk]) * int(kwb_db[kk * {ldb} + {col}])));")
            } else {
                format!("{d}[e] = fmaf(kwb_da[({row}) * {lda} + kk], kwb_db[kk * {ldb} + {col}], {d}[e]);")
            };
            self.line(&format!("for (int e = 0; e < {}; ++e) {step}", ld.ept));
            self.close("}");
        }
        if double {
            self.line(&format!("kwb_dotbuf_{site} ^= 1;"));
        } else if ring.is_none() {
            self.line("__syncthreads();");
        }
        self.close("}");
    }

    /// The accumulator a dot adds to: `acc`, or zeros.
    pub(super) fn dot_start(&mut self, dst: VarId, acc: Option<VarId>) {
        match acc {
            Some(c) if c != dst => self.each(dst, |w, e| w.at(c, e)),
            Some(_) => {}
            None => {
                let zero = literal(elem_scalar(self.k, dst), Const::Int(0));
                self.each(dst, |_, _| zero.clone());
            }
        }
    }

    /// `kwb_lane` and `kwb_w`, the warp's index among those the mma layout uses.
    pub(super) fn warp_lines(&mut self, mma: &Mma) {
        self.line("const int kwb_lane = kwb_tid % 32;");
        let w = if mma.active() == 1 {
            "0".to_string()
        } else {
            format!("(kwb_tid / 32) % {}", mma.active())
        };
        self.line(&format!("const int kwb_w = {w};"));
    }

    /// For swizzled ring buffers (`ring.rs`), with `cpr` 16-byte chunks per row: this lane's
    /// A row and B chunk, and the addresses of its A and B fragments.
    pub(super) fn ring_lanes(&mut self, mma: &Mma, cpr_a: u64, cpr_b: u64) -> (String, String) {
        self.line(&format!(
            "const int kwb_ar = (kwb_w / {}) * {} + kwb_lane % 16;",
            mma.warps_n,
            mma.warp_rows()
        ));
        self.line(&format!(
            "const int kwb_bc = (kwb_w % {}) * {} + kwb_lane / 16;",
            mma.warps_n,
            mma.warp_cols() / 8
        ));
        ring_fragment_addresses(cpr_a, cpr_b)
    }

    /// One 16-deep slice's fragments (at `kk`, a variable or constant in scope) into `af`/`bf`.
    pub(super) fn fragments(&mut self, p: &TensorParts, af: &str, bf: &str) {
        let (mt, nt) = (p.mt, p.nt);
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int i = 0; i < {mt}; ++i) kwb_ldsm_x4({af}[i], {});",
            p.a_at
        ));
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int j = 0; j < {nt}; j += 2) kwb_ldsm_x4_trans({bf}[j], {bf}[j + 1], {});",
            p.b_at
        ));
    }

    /// The `mma`s of one slice, from fragments `af`/`bf` into the accumulator.
    pub(super) fn mmas(&mut self, p: &TensorParts, af: &str, bf: &str) {
        let (mt, nt, f, d) = (p.mt, p.nt, p.mma_fn, &p.d);
        self.line("#pragma unroll");
        self.open(&format!("for (int i = 0; i < {mt}; ++i) {{"));
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int j = 0; j < {nt}; ++j) {f}(&{d}[(i * {nt} + j) * 4], {af}[i], {bf}[j]);"
        ));
        self.close("}");
    }

    /// Writes tile `x` (`[rows, cols]`, any layout) row-major into shared memory at `base`,
    /// rows `ld` elements apart: each owned run of registers as one vector store.
    fn stage(&mut self, x: VarId, base: &str, cols: u64, ld: u64) {
        let l: Layout = self.layout(x);
        let s = elem_scalar(self.k, x);
        let size = u64::from(s.size());
        let mut w = l.vec.min(16 / size).min(cols).max(1);
        if w * size < 4 {
            w = 1;
        }
        let owner = l.owner_if();
        let f = l.flat_expr("e");
        let at = format!("{base}[(kwb_f / {cols}) * {ld} + kwb_f % {cols}]");
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; e += {w}) {{", l.ept));
        self.line(&format!("const int kwb_f = {f};"));
        if w == 1 {
            self.line(&format!("{owner}{at} = {};", self.at(x, "e")));
        } else {
            let lane = |j: u64| {
                if j == 0 {
                    "e".to_string()
                } else {
                    format!("e + {j}")
                }
            };
            let words = (w * size / 4) as usize;
            let packed: Vec<String> = (0..words)
                .map(|i| self.pack(s, i as u64, &|j| self.at(x, &lane(j))))
                .collect();
            let (ty, v) = match words {
                4 => ("uint4", format!("make_uint4({})", packed.join(", "))),
                2 => ("uint2", format!("make_uint2({})", packed.join(", "))),
                _ => ("unsigned", packed.join("")),
            };
            self.line(&format!("{owner}*reinterpret_cast<{ty}*>(&{at}) = {v};"));
        }
        self.close("}");
    }
}
