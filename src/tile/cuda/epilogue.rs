//! A matmul's epilogue through shared memory. A tile in the accumulator's layout holds two
//! neighbouring elements per row piece, so storing it straight to global memory writes 4 bytes
//! at a time, 16 bytes per row per warp access. When the store's pointer and mask can be
//! recomputed anywhere and its memory takes 16-byte vectors, the tile goes to the rings'
//! shared memory instead (idle once their loops are done), row by row, and comes back in the
//! blocked layout: each thread then stores 16 contiguous bytes and a warp whole rows.
//!
//! ```text
//! __syncthreads();                  every loop reading the rings is done
//! smem[r * (N + pad) + c] = v       registers, in pairs, in the accumulator's layout
//! __syncthreads();
//! st.global.v4 <- smem, 16 bytes    in the blocked layout, pointer and mask recomputed there
//! ```
//!
//! Rows are padded by 16 bytes, so a warp's pair writes (8 rows x 4 pairs) fall in distinct
//! banks. A loop that later fills the rings again starts with a barrier (`ring.rs`), so none
//! is needed after.
//!
//! The block reads the thread index afresh after its first barrier (`kwb_tid_now`). Its index
//! arithmetic is otherwise free to move, and NVVM hoists it above the last `wgmma` wait, where
//! ptxas then serialises every `wgmma` of the kernel (its advice C7515).

use super::layout::Layout;
use super::names::elem_scalar;
use super::relayout::Idx;
use super::writer::Writer;
use crate::tile::ir::VarId;

/// Device helpers of the staged epilogue.
pub const HELPERS: &[(&str, &str)] = &[(
    "kwb_tid_now",
    r#"static __device__ __forceinline__ int kwb_tid_now() { int t; asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t) :: "memory"); return t; }
"#,
)];

impl Writer<'_> {
    /// Writes the store of `value` (in the accumulator's layout) through `ptr` under `mask`
    /// by way of shared memory, when that applies; false when it does not (nothing written).
    pub fn staged_store(&mut self, ptr: VarId, value: VarId, mask: Option<VarId>) -> bool {
        let l = self.layout(ptr);
        let Some(mma) = l.mma else {
            return false;
        };
        let s = elem_scalar(self.k, ptr);
        let size = u64::from(s.size());
        let pair = l.vec * size;
        if self.loop_depth > 0 || self.k.ty(ptr).shape.len() != 2 || !matches!(pair, 4 | 8) {
            return false;
        }
        let vec = 16 / size;
        let lb = Layout::new(l.numel, l.threads, vec);
        if lb.vec != vec || lb.replicated() || self.vector_width_in(&lb, ptr, mask) != vec {
            return false;
        }
        let (cols, ld) = (mma.n, mma.n + vec);
        let need = mma.m * ld * size;
        if need > self.ring_bytes && !self.own_staging {
            return false;
        }
        let g = Idx::Flat("g".into());
        // When each round of vectors covers whole rows, a vector's row is its round's first
        // plus the thread's, and its column the thread's alone: indexing by (row, column)
        // lets NVCC share the column's and the row base's arithmetic between the rounds.
        let whole_rows = (lb.threads * vec).is_multiple_of(cols);
        let g = if whole_rows {
            Idx::Coords {
                row: "kwb_r".into(),
                col: "kwb_c".into(),
                cols,
            }
        } else {
            g
        };
        let Some(p) = self.remat(ptr, &g) else {
            return false;
        };
        let m = match mask {
            Some(m) if self.is_tile(m) => match self.remat(m, &g) {
                Some(x) => x,
                None => return false,
            },
            Some(m) => self.name(m).to_string(),
            None => "true".to_string(),
        };
        let word = if pair == 4 { "unsigned" } else { "uint2" };
        let value_at =
            |w: &Self, e: &str| w.inline_cast(value, e).unwrap_or_else(|| w.at(value, e));
        let lane = |j: u64| format!("e + {j}");
        let words: Vec<String> = (0..pair / 4)
            .map(|k| self.pack(s, k, &|j| value_at(self, &lane(j))))
            .collect();
        let packed = if words.len() == 1 {
            words[0].clone()
        } else {
            format!("make_uint2({})", words.join(", "))
        };
        let owner = l.owner_if();
        self.open("{");
        if self.own_staging {
            // After the rings, which the next program's first copies fill meanwhile.
            let at = self.ring_bytes.next_multiple_of(128);
            self.ring_bytes = at + need;
            self.line(&format!(
                "// the tile to shared memory (its own, after the rings; rows of {cols} + {vec}) and back in rows of 16-byte vectors"
            ));
            self.line(&format!("unsigned char* const kwb_st = kwb_ring + {at};"));
        } else {
            self.line(&format!(
                "// the tile to shared memory (the idle rings, rows of {cols} + {vec}) and back in rows of 16-byte vectors"
            ));
            self.line("unsigned char* const kwb_st = kwb_ring;");
        }
        self.line("__syncthreads();");
        self.line("const int kwb_tid = kwb_tid_now();  // not before the barrier");
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; e += 2) {{", l.ept));
        for d in Idx::define(&l, "e") {
            self.line(&d);
        }
        self.line(&format!(
            "{owner}*reinterpret_cast<{word}*>(kwb_st + (kwb_r * {ld} + kwb_c) * {size}) = {packed};"
        ));
        self.close("}");
        self.line("__syncthreads();");
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; e += {vec}) {{", lb.ept));
        let at = if whole_rows {
            let rows = lb.threads * vec / cols;
            self.line(&format!(
                "const int kwb_r = (e / {vec}) * {rows} + (kwb_tid * {vec}) / {cols};"
            ));
            self.line(&format!("const int kwb_c = (kwb_tid * {vec}) % {cols};"));
            format!("(kwb_r * {ld} + kwb_c) * {size}")
        } else {
            for d in Idx::define(&lb, "e") {
                self.line(&d);
            }
            format!("((g / {cols}) * {ld} + g % {cols}) * {size}")
        };
        self.line(&format!(
            "kwb_st128({p}, *reinterpret_cast<const uint4*>(kwb_st + {at}), {m});"
        ));
        self.close("}");
        self.close("}");
        true
    }
}
