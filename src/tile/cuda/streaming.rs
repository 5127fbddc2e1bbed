//! Streaming kernels: straight-line elementwise code between tile loads and stores (an add, a
//! GELU), with nothing shared between threads. Two things are written differently for them.
//!
//! **The register budget.** Left to itself, ptxas fits such a kernel into 32 registers for full
//! occupancy, and to do so issues half of a thread's loads only after the first ones return:
//! fewer bytes in flight. A hand-written kernel issues them all first. So a streaming kernel's
//! `__launch_bounds__` also asks for as many blocks per SM as 64 registers a thread allow, which
//! lets ptxas hoist every load. Measured on an H100 (fp16 add at 16Mi, 4 warps, 4096-element
//! tiles): 32 registers 3,170 GB/s; 46 registers 3,288–3,305 GB/s, against 3,318–3,330 for
//! the hand-written v7; GELU at 64Mi 97.6% → 99.0% of its hand-written v3.
//!
//! **The tail split.** Specialised for a size that is not a multiple of its vectors
//! (`offs < n` with `n` odd), such a kernel cannot prove its masks constant over a vector, so
//! every access would be a predicated scalar: 96 of them per thread for the fp16 add, which
//! ptxas takes longer to compile than the whole `.cu` kernel, and which cost registers and
//! bandwidth on every program although only the last one reaches the tail. So it is written
//! twice, as a hand-written kernel is (a vector body and a scalar tail loop):
//! - the statements up to the first load or store (index and mask arithmetic) run as usual;
//! - a thread whose mask elements are all true runs the rest with its masks dropped, so its
//!   accesses are as wide as the pointers' facts prove;
//! - any other thread walks its elements one at a time in a loop that is not unrolled
//!   (`#pragma unroll 1`), every tile held as a scalar (`name_s`): small code for ptxas, and
//!   no register array indexed at run time (which would send it to local memory).
//!
//! The choice is per thread, which is sound because nothing in a streaming kernel is shared
//! between threads, and every variable is assigned once (so re-running a statement per element
//! gives the same scalars).
//!
//! **Huge tiles.** A streaming kernel whose threads hold more than 128 elements each is written
//! as that element loop alone, for every thread: as register arrays, a 512×512 tile over 4
//! warps (2048 elements a thread) took NVRTC 225 s to compile into 32 KiB of local memory per
//! thread. Only kernels whose tiles all share one layout qualify: liger's causal-mask kernels
//! build their mask from 1-D index tiles broadcast to the tile (`row_idx[:, None]`), which lie
//! in other layouts, so they are not taken yet and still compile slowly.

use super::writer::Writer;
use crate::tile::ir::{Op, Stmt, StmtKind, VarId};

/// Elements per thread above which a streaming kernel walks its elements in a loop (see the
/// module's notes).
const HUGE_EPT: u64 = 128;

/// Registers a thread of a streaming kernel may use (see the module's notes).
const STREAMING_REGISTERS: u32 = 64;

/// Registers of one SM (sm_70 to sm_90).
const SM_REGISTERS: u32 = 65_536;

/// Where to split a qualifying kernel's body, and the masks the fast path drops.
pub struct TailPlan {
    /// Statements before the first load or store.
    pub prefix: usize,
    /// The tile masks of the loads and stores (each once).
    pub masks: Vec<VarId>,
}

impl Writer<'_> {
    /// Whether `body` is a streaming kernel: straight-line code of elementwise ops, tile loads
    /// and tile stores, every tile in one (blocked) layout, every variable assigned once.
    /// Nothing in it is shared between threads.
    pub fn streaming(&self, body: &[Stmt]) -> bool {
        let mut layout = None;
        body.iter().all(|s| match &s.kind {
            StmtKind::Assign { dst, op } => {
                let single = self.defs.get(dst).map(|d| d.0) == Some(1);
                let same_layout = !self.is_tile(*dst) || {
                    let l = self.layout(*dst);
                    l.mma.is_none() && *layout.get_or_insert(l) == l
                };
                let elementwise = match op {
                    Op::Const(_)
                    | Op::Copy(_)
                    | Op::Hint { .. }
                    | Op::ProgramId(_)
                    | Op::NumPrograms(_)
                    | Op::Arange { .. }
                    | Op::Splat(_)
                    | Op::Cast(_)
                    | Op::Binary { .. }
                    | Op::Unary { .. }
                    | Op::Fma { .. }
                    | Op::Where { .. }
                    | Op::PtrAdd { .. } => true,
                    Op::Load { .. } => self.is_tile(*dst),
                    _ => false,
                };
                single && same_layout && elementwise
            }
            StmtKind::Store { ptr, .. } => self.is_tile(*ptr),
            _ => false,
        })
    }

    /// The `__launch_bounds__` arguments of the kernel: its threads, and for a streaming
    /// kernel with tile loads the blocks per SM that leave each thread 64 registers.
    pub fn launch_bounds(&self) -> String {
        let threads = self.k.threads();
        let body = &self.k.body;
        let loads = body.iter().any(|s| {
            matches!(&s.kind, StmtKind::Assign { dst, op: Op::Load { .. } } if self.is_tile(*dst))
        });
        if loads && self.streaming(body) {
            let blocks = (SM_REGISTERS / (STREAMING_REGISTERS * threads.max(1))).max(1);
            format!("{threads}, {blocks}")
        } else {
            threads.to_string()
        }
    }

    /// The plan for `body`, when it is [`Writer::streaming`] and some access is narrower only
    /// because of its mask.
    pub fn tail_plan(&self, body: &[Stmt]) -> Option<TailPlan> {
        if !self.streaming(body) {
            return None;
        }
        let mut masks: Vec<VarId> = Vec::new();
        let mut narrowed = false;
        let mut prefix = None;
        for (i, s) in body.iter().enumerate() {
            let (ptr, mask) = match &s.kind {
                StmtKind::Assign {
                    op: Op::Load { ptr, mask, .. },
                    ..
                } => (*ptr, *mask),
                StmtKind::Store { ptr, mask, .. } => (*ptr, *mask),
                _ => continue,
            };
            prefix.get_or_insert(i);
            let Some(m) = mask.filter(|m| self.is_tile(*m)) else {
                continue;
            };
            if !masks.contains(&m) {
                masks.push(m);
            }
            narrowed |= self.vector_width(ptr, Some(m)) < self.vector_width(ptr, None);
        }
        let prefix = prefix?;
        // Every mask must be known before the split (computed by the prefix, or uniform).
        let before = |v: VarId| {
            body[..prefix]
                .iter()
                .any(|s| matches!(&s.kind, StmtKind::Assign { dst, .. } if *dst == v))
        };
        if !narrowed || !masks.iter().all(|m| before(*m) || self.is_uniform(*m)) {
            return None;
        }
        Some(TailPlan { prefix, masks })
    }

    /// `body` split by `plan`: the prefix, then per thread the unmasked vector path or the
    /// element-by-element loop.
    pub fn tail_split(&mut self, body: &[Stmt], plan: &TailPlan) {
        let (head, rest) = body.split_at(plan.prefix);
        self.block(head);
        let ept = self.tail_ept(body);
        let all: Vec<String> = plan.masks.iter().map(|m| self.at(*m, "e")).collect();
        self.line(
            "// the tail split: threads whose elements are all in bounds take the vector path",
        );
        self.line("bool kwb_full = true;");
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {ept}; ++e) kwb_full = kwb_full && {};",
            all.join(" && ")
        ));
        self.open("if (kwb_full) {");
        self.true_masks = plan.masks.clone();
        self.block(rest);
        self.true_masks.clear();
        self.close("} else {");
        self.indent_in();
        self.line("// one element at a time: the tail's few threads, in little code");
        self.line("#pragma unroll 1");
        self.open(&format!("for (int e = 0; e < {ept}; ++e) {{"));
        self.declare_element_scalars(body);
        self.per_element = true;
        // The prefix's scalars are already set; its tiles are recomputed as scalars.
        for s in head {
            if matches!(&s.kind, StmtKind::Assign { dst, .. } if self.is_tile(*dst)) {
                self.stmt(s);
            }
        }
        self.block(rest);
        self.per_element = false;
        self.close("}");
        self.close("}");
    }

    /// Elements per thread of the kernel's tiles (one layout, by [`Writer::tail_plan`]).
    fn tail_ept(&self, body: &[Stmt]) -> u64 {
        body.iter()
            .find_map(|s| match &s.kind {
                StmtKind::Assign { dst, .. } if self.is_tile(*dst) => Some(self.layout(*dst).ept),
                _ => None,
            })
            .unwrap_or(1)
    }

    /// Whether `body` is streaming with more than [`HUGE_EPT`] elements per thread.
    pub fn huge_streaming(&self, body: &[Stmt]) -> bool {
        self.streaming(body) && self.tail_ept(body) > HUGE_EPT
    }

    /// `body` one element at a time for every thread: its scalars first (a streaming kernel's
    /// scalars never read a tile), then a loop over the elements, every tile a scalar.
    pub fn element_loop(&mut self, body: &[Stmt]) {
        let ept = self.tail_ept(body);
        let tiled: Vec<bool> = body
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Assign { dst, .. } => self.is_tile(*dst),
                _ => true,
            })
            .collect();
        for (s, _) in body.iter().zip(&tiled).filter(|(_, t)| !**t) {
            self.stmt(s);
        }
        self.line(&format!(
            "// {ept} elements per thread: one at a time, each tile a scalar"
        ));
        self.line("#pragma unroll 4");
        self.open(&format!("for (int e = 0; e < {ept}; ++e) {{"));
        self.declare_element_scalars(body);
        self.per_element = true;
        for (s, _) in body.iter().zip(&tiled).filter(|(_, t)| **t) {
            self.stmt(s);
        }
        self.per_element = false;
        self.close("}");
    }

    /// `T name_s;` for each tile `body` assigns (not uniform ones): the element loop's scalars.
    fn declare_element_scalars(&mut self, body: &[Stmt]) {
        for s in body {
            if let StmtKind::Assign { dst, .. } = &s.kind {
                if self.is_tile(*dst) && !self.is_uniform(*dst) {
                    let t = super::names::c_elem(self.k.ty(*dst).elem);
                    self.line(&format!("{t} {}_s;", self.name(*dst)));
                }
            }
        }
    }
}
