//! The per-kernel writer: its state, the kernel function around the body (parameters,
//! declarations, shared memory), and the helpers every part uses to write a line or a
//! per-element loop (`#pragma unroll` over the per-thread register arrays with a compile-time
//! trip count, so that the arrays stay in registers). The body's statements and elementwise
//! ops live in `statements.rs`, loads and stores in `memory.rs`, reductions in `reduce.rs`,
//! layout changes in `relayout.rs`.

use super::axis::{self, Facts};
use super::layout::{Layout, Layouts};
use super::names::{self, c_elem, c_string};
use crate::tile::ir::{Const, Kernel, Op, StmtKind, VarId};
use crate::tile::Target;
use std::collections::{BTreeMap, HashMap};

/// Static shared memory above this does not fit a program: reported as `#error`. Rings that
/// would take a kernel past it go to dynamic shared memory instead.
pub const SMEM_LIMIT: u64 = 48 * 1024;

/// Static + dynamic shared memory one block may use after opting in, on sm_90 (227 KiB): what
/// the rings in dynamic shared memory may grow to, beside the kernel's static shared memory.
pub const SMEM_OPTIN_LIMIT: u64 = 232_448;

/// Bytes the rings are given beyond their size so that they can start on an `align`-byte
/// boundary of the shared window (the run-time alignment `wgmma`'s operands need; the
/// declaration's 128 covers the rest).
pub fn ring_slack(align: u64) -> u64 {
    if align > 128 {
        align
    } else {
        0
    }
}

/// One kernel's CUDA C++ and the dynamic shared memory its launch needs.
pub struct WrittenKernel {
    pub cuda: String,
    /// Bytes of `kwb_dyn` (the rings, when they do not fit beside the static shared memory).
    pub dynamic_shared: u64,
    /// Device helpers written for this kernel alone (name, text): `wgmma` calls of its shapes.
    pub helpers: BTreeMap<String, String>,
    /// It uses an instruction of the architecture-specific target alone (`wgmma`: sm_90a).
    pub arch_specific: bool,
    /// The tensor maps it takes after its parameters (`tma.rs`).
    pub tensor_maps: Vec<crate::tile::TensorMapParam>,
}

pub struct Writer<'k> {
    pub k: &'k Kernel,
    pub target: Target,
    pub names: Vec<String>,
    pub layouts: Layouts,
    pub facts: Vec<Facts>,
    /// The function body being written.
    pub out: String,
    pub(super) indent: usize,
    pub file: String,
    /// Bytes of the scratch buffer that layout changes and axis reductions share.
    pub scratch_bytes: u64,
    /// Bytes of the per-site buffers of full reductions (each site its own region).
    pub site_bytes: u64,
    /// Bytes of the shared staging buffers of the dots (each site its own region).
    pub dot_bytes: u64,
    /// Bytes of the region every single-copy dot site shares (`kwb_dot1`, after the
    /// double-buffered sites' own regions in `kwb_dot`).
    pub dot_single: u64,
    /// Per dot site: whether it alternates between two copies of its buffers.
    pub dot_sites: Vec<bool>,
    /// Whether a dot site may take two copies (cleared when that would not fit).
    pub allow_double: bool,
    /// Scalar variables assigned exactly once, by a constant.
    pub(super) consts: HashMap<VarId, Const>,
    /// Bytes of the rings of pipelined loads (`ring.rs`).
    pub ring_bytes: u64,
    /// The most buffers a ring may have (lowered when the rings do not fit).
    pub stage_cap: u64,
    /// The most buffers any ring of this kernel took.
    pub max_stages: u64,
    /// Pipelined loops written so far (names their ring counters).
    pub rings: u32,
    /// During a pipelined loop's compute phase: the dot operands read from a ring.
    pub ring_reads: HashMap<VarId, super::ring::RingRead>,
    /// How many times each variable is assigned, and its op when that is once.
    pub defs: HashMap<VarId, (u32, Option<Op>)>,
    /// The alignment the rings need in the shared window: 1024 bytes for `wgmma`'s swizzled
    /// operands (the swizzle pattern repeats there), else 128.
    pub ring_align: u64,
    /// Device helpers written for this kernel alone (`wgmma.rs`).
    pub helpers: BTreeMap<String, String>,
    /// The kernel uses an instruction of the architecture-specific target alone (`wgmma`).
    pub arch_specific: bool,
    /// Loops around the statement being written.
    pub loop_depth: u32,
    /// Assignments written so far, and for each variable the number of its last one.
    pub assign_seq: u64,
    pub assigned_at: HashMap<VarId, u64>,
    /// Pointer tiles kept as base and running offset during their loop (`stride.rs`): the
    /// offset's C name.
    pub strided_at: HashMap<VarId, String>,
    /// Tiles never written to registers, so not declared: loads that go to a ring, and a
    /// strided pointer's `p + splat(s)`.
    pub undeclared: Vec<VarId>,
    /// The code reads the warpgroup index `kwb_wg` (defined at the kernel's start).
    pub uses_warpgroup: bool,
    /// Splats of a scalar read as that scalar, never written to registers (`uniform.rs`).
    pub(super) uniform: HashMap<VarId, VarId>,
    /// Inside the tail split's element loop (`streaming.rs`): each tile is one scalar, `name_s`,
    /// and every statement handles element `e` alone.
    pub per_element: bool,
    /// Inside the tail split's vector path: the tile masks whose elements are all true in
    /// this thread, which loads and stores drop.
    pub true_masks: Vec<VarId>,
    /// A persistent kernel's overlapped form (`persistent.rs`): the pipelined loop's own
    /// variables go to the kernel's scope (declarations here, assignments in the loop's text)
    /// and the loop records where its parts start in `out`.
    pub hoisted: Option<Vec<String>>,
    pub marks: Vec<usize>,
    /// The staged epilogue takes its own shared memory after the rings, which the next
    /// program's first copies fill meanwhile (`persistent.rs`).
    pub own_staging: bool,
    /// The tensor maps the TMA copies read, each a parameter `kwb_tmap{i}` (`tma.rs`).
    pub tensor_maps: Vec<crate::tile::TensorMapParam>,
    /// Full float sums whose summand is a product contracted into the additions, with the
    /// product's factors (`ir::sums`).
    pub(super) contracted: HashMap<VarId, (VarId, VarId)>,
}

impl<'k> Writer<'k> {
    pub fn new(k: &'k Kernel, target: Target) -> Writer<'k> {
        let mut defs: HashMap<VarId, (u32, Option<Op>)> = HashMap::new();
        super::layout::visit(&k.body, &mut |s| {
            if let StmtKind::Assign { dst, op } = &s.kind {
                let c = defs.entry(*dst).or_insert((0, None));
                c.0 += 1;
                c.1 = (c.0 == 1).then(|| op.clone());
            }
        });
        let consts = defs
            .iter()
            .filter_map(|(v, (n, op))| match op {
                Some(Op::Const(c)) if *n == 1 => Some((*v, *c)),
                _ => None,
            })
            .collect();
        let uniform = super::uniform::uniform_splats(k, &defs);
        Writer {
            k,
            target,
            names: names::var_names(k),
            layouts: Layouts::plan(k, target),
            facts: axis::analyse(k),
            out: String::new(),
            indent: 1,
            file: c_string(&k.file.display().to_string()),
            scratch_bytes: 0,
            site_bytes: 0,
            dot_bytes: 0,
            dot_single: 0,
            dot_sites: Vec::new(),
            allow_double: true,
            consts,
            ring_bytes: 0,
            stage_cap: 8,
            max_stages: 0,
            rings: 0,
            ring_reads: HashMap::new(),
            defs,
            ring_align: 128,
            helpers: BTreeMap::new(),
            arch_specific: false,
            loop_depth: 0,
            assign_seq: 0,
            assigned_at: HashMap::new(),
            strided_at: HashMap::new(),
            undeclared: Vec::new(),
            uses_warpgroup: false,
            uniform,
            per_element: false,
            true_masks: Vec::new(),
            hoisted: None,
            marks: Vec::new(),
            own_staging: false,
            tensor_maps: Vec::new(),
            contracted: crate::tile::ir::sums::contracted_products(k),
        }
    }

    /// Records where a part of a pipelined loop starts in `out`, for the overlapped form.
    pub fn mark(&mut self) {
        if self.hoisted.is_some() {
            self.marks.push(self.out.len());
        }
    }

    /// `TYPE NAME = VALUE;` in the loop's block, or `NAME = VALUE;` with the declaration
    /// hoisted to the kernel's scope (a persistent kernel's overlapped form).
    pub fn local(&mut self, ty: &str, name: &str, value: &str, comment: &str) {
        match &mut self.hoisted {
            Some(h) => {
                h.push(format!("{} {name};", ty.trim_start_matches("const ")));
                self.line(&format!("{name} = {value};{comment}"));
            }
            None => self.line(&format!("{ty} {name} = {value};{comment}")),
        }
    }

    /// One line of code at the current indentation.
    pub fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    pub fn open(&mut self, s: &str) {
        self.line(s);
        self.indent += 1;
    }

    pub fn close(&mut self, s: &str) {
        self.indent = self.indent.saturating_sub(1);
        self.line(s);
    }

    /// One level deeper, after a line that [`Writer::close`]d one block and opened another.
    pub fn indent_in(&mut self) {
        self.indent += 1;
    }

    /// Whether `v` is a splat read as its scalar (`uniform.rs`).
    pub fn is_uniform(&self, v: VarId) -> bool {
        self.uniform.contains_key(&v)
    }

    /// An `#error` at the current tile line: what NVRTC reports for what cannot be lowered yet.
    pub fn unsupported(&mut self, what: &str, line: u32) {
        let msg = c_string(what);
        self.out.push_str(&format!(
            "#error \"kwb tile: {msg} not supported yet (line {line})\"\n"
        ));
    }

    pub fn name(&self, v: VarId) -> &str {
        self.names
            .get(v.0 as usize)
            .map(String::as_str)
            .unwrap_or("kwb_bad")
    }

    pub fn is_tile(&self, v: VarId) -> bool {
        self.k.ty(v).is_tile()
    }

    /// The layout of tile `v`.
    pub fn layout(&self, v: VarId) -> Layout {
        self.layouts.of_var(v, self.k.ty(v).numel())
    }

    /// Element `e` of `v` (a scalar is the same in every register, and so is a uniform splat).
    pub fn at(&self, v: VarId, e: &str) -> String {
        if let Some(s) = self.uniform.get(&v) {
            self.name(*s).to_string()
        } else if let Some(off) = self.strided_at.get(&v) {
            format!("({}[{e}] + {off})", self.name(v))
        } else if self.is_tile(v) && self.per_element {
            format!("{}_s", self.name(v))
        } else if self.is_tile(v) {
            format!("{}[{e}]", self.name(v))
        } else {
            self.name(v).to_string()
        }
    }

    /// The constant value of a scalar assigned once by a constant.
    pub fn const_of(&self, v: VarId) -> Option<Const> {
        self.consts.get(&v).copied()
    }

    pub fn facts(&self, v: VarId) -> Facts {
        self.facts
            .get(v.0 as usize)
            .cloned()
            .unwrap_or_else(|| Facts::unknown(self.k.ty(v).shape.len()))
    }

    /// Emits `dst = expr` for every element of `dst` (a loop over registers for a tile).
    pub fn each(&mut self, dst: VarId, expr: impl Fn(&Self, &str) -> String) {
        if self.is_tile(dst) && self.per_element {
            let body = format!("{} = {};", self.at(dst, "e"), expr(self, "e"));
            self.line(&body);
        } else if self.is_tile(dst) {
            let ept = self.layout(dst).ept;
            self.line("#pragma unroll");
            let body = format!("{} = {};", self.at(dst, "e"), expr(self, "e"));
            self.line(&format!("for (int e = 0; e < {ept}; ++e) {body}"));
        } else {
            let body = format!("{} = {};", self.name(dst), expr(self, ""));
            self.line(&body);
        }
    }

    /// The declaration of `id` at the kernel's start, if it has one.
    pub fn declaration(&self, id: VarId) -> Option<String> {
        let v = &self.k.vars[id.0 as usize];
        if self.k.params.iter().any(|p| p.var == id)
            || self.undeclared.contains(&id)
            || self.uniform.contains_key(&id)
        {
            return None;
        }
        let t = c_elem(v.ty.elem);
        Some(if v.ty.is_tile() {
            let ept = self.layouts.of_var(id, v.ty.numel()).ept;
            format!("{t} {}[{ept}];", self.name(id))
        } else {
            format!("{t} {};", self.name(id))
        })
    }
}
