//! Descriptor loads copied by the tensor-memory accelerator (TMA) into a pipelined loop's rings.
//!
//! When every ring load of a loop is a tensor descriptor's `.load` (`check/descriptor.rs`) and
//! its dot goes to wgmma, one thread copies each stage's blocks with
//! `cp.async.bulk.tensor.2d` and the stage's mbarrier counts their bytes; the other threads
//! compute no addresses or masks and issue no copies. The copy engine zero-fills what lies
//! outside the tensor, as the descriptor's load means.
//!
//! ```text
//! loop start:  thread 0 initialises one mbarrier per stage; barrier
//! issue k:     thread 0: expect the stage's bytes on its mbarrier; one bulk copy per box
//! iteration k: wait for stage k's mbarrier phase; wgmma; wait for the previous stage's
//!              wgmmas; barrier (every warp is done with that stage); issue k + S - 1 there
//! ```
//!
//! The rings keep the layout wgmma reads (`swizzle.rs`): blocks of `width`-byte rows with the
//! hardware's swizzle, which is the layout a box of `width / 2` x rows elements lands in with
//! the same swizzle span. Each tensor map is a kernel parameter that the launch encodes from
//! its arguments ([`crate::tile::TensorMapParam`]).

use super::pipeline::{Plan, RingLoad};
use super::swizzle::RingSwizzle;
use super::writer::Writer;
use crate::tile::ir::{Elem, VarId};
use crate::tile::{Extent, TensorMapParam};

/// Device helpers for TMA copies, by name.
pub const HELPERS: &[(&str, &str)] = &[
    (
        "kwb_tensor_map",
        "struct __align__(64) kwb_tensor_map { unsigned long long v[16]; };  // a CUtensorMap\n",
    ),
    (
        "kwb_mbar_init",
        r#"static __device__ __forceinline__ void kwb_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
"#,
    ),
    (
        "kwb_mbar_init_fence",
        r#"static __device__ __forceinline__ void kwb_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
"#,
    ),
    (
        "kwb_mbar_inval",
        r#"static __device__ __forceinline__ void kwb_mbar_inval(unsigned bar) { asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(bar) : "memory"); }
"#,
    ),
    (
        "kwb_mbar_expect",
        r#"static __device__ __forceinline__ void kwb_mbar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
"#,
    ),
    (
        "kwb_mbar_wait",
        r#"static __device__ __forceinline__ void kwb_mbar_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n KWB_WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra KWB_WAIT;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}
"#,
    ),
    (
        "kwb_tma2d",
        r#"static __device__ __forceinline__ void kwb_tma2d(unsigned dst, const kwb_tensor_map* map, int c0, int c1, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
"#,
    ),
];

impl Writer<'_> {
    /// Whether a pipelined loop's ring loads can all be TMA copies: descriptor loads laid out
    /// for wgmma with rows in order, from descriptors whose base, extents and strides are
    /// parameters or constants (what the launch can encode).
    pub fn tma_loads(&self, loads: &[RingLoad]) -> bool {
        // Persistent: only the overlapped form, whose rings run on across programs.
        let persistent_loop = self.target.persistent && self.hoisted.is_none();
        if persistent_loop || !self.target.wgmma() || loads.is_empty() {
            return false;
        }
        loads.iter().all(|l| {
            let rows_in_order =
                matches!(l.swizzle, RingSwizzle::Wgmma { permute_mt, .. } if permute_mt <= 1);
            rows_in_order && l.rows <= 256 && self.tma_param(l.dst, &l.swizzle).is_some()
        })
    }

    /// The tensor map a descriptor load's TMA copies read, if the launch can encode it.
    fn tma_param(&self, dst: VarId, swizzle: &RingSwizzle) -> Option<TensorMapParam> {
        let dl = self.k.desc_load(dst)?;
        let d = self.k.descriptors.get(dl.desc)?;
        let RingSwizzle::Wgmma { width, .. } = *swizzle else {
            return None;
        };
        let base = self.k.params.iter().position(|p| p.var == d.base)?;
        let Elem::Ptr(s) = self.k.ty(d.base).elem else {
            return None;
        };
        let extent = |v: VarId| match self.k.params.iter().position(|p| p.var == v) {
            Some(i) => Some(Extent::Arg(i)),
            None => match self.const_of(v) {
                Some(crate::tile::ir::Const::Int(c)) => Some(Extent::Const(c)),
                _ => None,
            },
        };
        let dims = [extent(d.shape[1])?, extent(d.shape[0])?];
        let stride = extent(d.strides[0])?;
        // TMA reads rows that start on 16-byte boundaries: the stride must be known to give
        // them (the launch's facts, as Triton specialises on them); else cp.async copies.
        let stride_bytes = match stride {
            Extent::Arg(i) => self.k.params[i].divisibility * u64::from(s.size()),
            Extent::Const(c) => c.unsigned_abs() * u64::from(s.size()),
        };
        if stride_bytes % 16 != 0 {
            return None;
        }
        Some(TensorMapParam {
            base,
            elem_bytes: s.size(),
            dims: dims.to_vec(),
            strides: vec![stride],
            box_dims: vec![(width / 2) as u32, d.block[0]],
            swizzle: width as u32,
        })
    }

    /// The index of the kernel's tensor-map parameter for `p`, added on first use.
    fn tensor_map(&mut self, p: TensorMapParam) -> usize {
        match self.tensor_maps.iter().position(|m| *m == p) {
            Some(i) => i,
            None => {
                self.tensor_maps.push(p);
                self.tensor_maps.len() - 1
            }
        }
    }

    /// C expression: the shared address of ring `id`'s mbarrier for stage `slot`.
    pub fn tma_bar(id: u32, slot: &str) -> String {
        format!("kwb_smem(&kwb_bar{id}[{slot}])")
    }

    /// At the loop's start (before its first barrier): the stages' mbarriers, the ring's read
    /// and write stages `rd` and `wr` and the read stage's phase, and the fence that orders
    /// earlier ordinary writes of the rings before the copies. In a persistent kernel's
    /// overlapped form all of that happens once, at the kernel's start: the rings then run on
    /// from one program to the next (the next program's first copies go to the stages after
    /// this one's last), so the phases stay in step and no mbarrier is set up twice.
    pub fn tma_begin(&mut self, id: u32, stages: u64, rd: &str, wr: &str) {
        let init = format!(
            "for (int s = 0; s < {stages}; ++s) kwb_mbar_init({}, 1);",
            Self::tma_bar(id, "s")
        );
        let lines = [
            format!(
                "__shared__ __align__(8) unsigned long long kwb_bar{id}[{stages}];  // per stage: its copies' bytes"
            ),
            format!("int {rd} = 0;"),
            format!("int {wr} = 0;"),
            format!("unsigned kwb_ph{id} = 0;  // the phase of stage {rd}'s mbarrier"),
            "kwb_fence_proxy_async();".to_string(),
            format!("if (kwb_tid == 0) {{ {init} kwb_mbar_init_fence(); }}"),
        ];
        match &mut self.hoisted {
            Some(h) => h.extend(lines),
            None => {
                for l in &lines {
                    self.line(l);
                }
            }
        }
    }

    /// Before an iteration's copies: thread 0 expects their bytes on the stage's mbarrier.
    pub fn tma_expect(&mut self, id: u32, plan: &Plan, slot: &str) {
        let bytes: u64 = plan.loads.iter().map(|l| l.rows * l.cols * 2).sum();
        self.line(&format!(
            "if (kwb_tid == 0) kwb_mbar_expect({}, {bytes});",
            Self::tma_bar(id, slot)
        ));
    }

    /// One ring load's copies into buffer `slot`: one box per `width`-byte column block.
    pub fn tma_copy(&mut self, id: u32, load: &RingLoad, slot: &str) {
        let Some(p) = self.tma_param(load.dst, &load.swizzle) else {
            return self.unsupported("a TMA copy of this load", 0);
        };
        let Some(dl) = self.k.desc_load(load.dst).cloned() else {
            return;
        };
        let (inner, rows) = (u64::from(p.box_dims[0]), load.rows);
        let width = inner * 2;
        let map = self.tensor_map(p);
        let (o0, o1) = (
            self.name(dl.offsets[0]).to_string(),
            self.name(dl.offsets[1]).to_string(),
        );
        self.open("if (kwb_tid == 0) {");
        self.line(&format!(
            "unsigned char* kwb_buf = kwb_ring + {} + {slot} * {};",
            load.offset, load.stage_bytes
        ));
        for j in 0..load.cols / inner {
            self.line(&format!(
                "kwb_tma2d(kwb_smem(kwb_buf + {}), &kwb_tmap{map}, (int)({o1} + {}), (int)({o0}), {});",
                j * rows * width,
                j * inner,
                Self::tma_bar(id, slot)
            ));
        }
        self.close("}");
    }

    /// Iteration `rd`'s wait: its stage's copies have landed.
    pub fn tma_wait(&mut self, id: u32, rd: &str) {
        self.line(&format!(
            "kwb_mbar_wait({}, kwb_ph{id});",
            Self::tma_bar(id, rd)
        ));
    }

    /// After `rd` moved on: a stage read again waits for the next phase.
    pub fn tma_next_phase(&mut self, id: u32, rd: &str) {
        self.line(&format!("if ({rd} == 0) kwb_ph{id} ^= 1;"));
    }

    /// After the loop, when it may run again: every wait is done, so the mbarriers go.
    pub fn tma_end(&mut self, id: u32, stages: u64) {
        if self.loop_depth == 0 {
            return;
        }
        self.line("__syncthreads();  // every thread is past its last wait");
        self.open("if (kwb_tid == 0) {");
        self.line(&format!(
            "for (int s = 0; s < {stages}; ++s) kwb_mbar_inval({});",
            Self::tma_bar(id, "s")
        ));
        self.close("}");
    }
}
