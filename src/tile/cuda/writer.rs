//! The per-kernel writer: declarations, control flow, and the elementwise ops, each a
//! `#pragma unroll` loop over the per-thread register arrays with a compile-time trip count so
//! that the arrays stay in registers. Loads and stores live in `memory.rs`, reductions in
//! `reduce.rs`, layout changes in `relayout.rs`.

use super::axis::{self, Facts};
use super::layout::{Layout, Layouts};
use super::math;
use super::names::{self, c_elem, c_string, elem_scalar, literal};
use crate::tile::ir::{Const, Kernel, Op, Scalar, Stmt, StmtKind, VarId};
use crate::tile::Target;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

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
    indent: usize,
    pub file: String,
    /// Bytes of the scratch buffer that layout changes and axis reductions share.
    pub scratch_bytes: u64,
    /// Bytes of the per-site buffers of full reductions (each site its own region).
    pub site_bytes: u64,
    /// Bytes of the shared staging buffers of the dots (each site its own region).
    pub dot_bytes: u64,
    /// Per dot site: whether it alternates between two copies of its buffers.
    pub dot_sites: Vec<bool>,
    /// Whether a dot site may take two copies (cleared when that would not fit).
    pub allow_double: bool,
    /// Scalar variables assigned exactly once, by a constant.
    consts: HashMap<VarId, Const>,
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
    uniform: HashMap<VarId, VarId>,
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

    /// The kernel: signature, declarations, body.
    pub fn kernel(mut self) -> WrittenKernel {
        let k = self.k;
        let body_stmts = k.body.clone();
        if self.target.persistent {
            self.persistent_body(&body_stmts);
        } else {
            match self.tail_plan(&body_stmts) {
                Some(plan) => self.tail_split(&body_stmts, &plan),
                None => self.block(&body_stmts),
            }
        }
        // Static: everything but the rings. The rings join it while the total fits 48 KiB,
        // else they go to dynamic shared memory, up to the opt-in limit.
        let fixed = self.scratch_bytes + self.site_bytes + self.dot_bytes;
        // wgmma's operands must sit on 1024-byte boundaries of the shared window: the rings
        // get 1024 bytes more and start at the first such boundary inside.
        let slack = ring_slack(self.ring_align);
        let dynamic = self.ring_bytes > 0 && fixed + self.ring_bytes + slack > SMEM_LIMIT;
        if fixed > SMEM_LIMIT && self.dot_sites.iter().any(|d| *d) {
            // The dots' second copies took too much: write it again with one copy each.
            let mut again = Writer::new(k, self.target);
            again.allow_double = false;
            again.stage_cap = self.stage_cap;
            return again.kernel();
        }
        if fixed + self.ring_bytes + slack > SMEM_OPTIN_LIMIT && self.ring_bytes > 0 {
            // The rings took too much: write it again with a buffer fewer (none below two).
            let mut again = Writer::new(k, self.target);
            again.allow_double = self.allow_double;
            again.stage_cap = self.max_stages.saturating_sub(1);
            return again.kernel();
        }
        let mut head = String::new();
        // "divisible by 16: a, n; by 8: K": each divisor with the parameters it divides.
        let mut facts = Vec::new();
        for d in [16, 8, 4, 2] {
            let names: Vec<&str> = (k.params.iter())
                .filter(|p| p.divisibility == d)
                .map(|p| p.name.as_str())
                .collect();
            if !names.is_empty() {
                let by = if facts.is_empty() {
                    "divisible by"
                } else {
                    "by"
                };
                facts.push(format!("{by} {d}: {}", names.join(", ")));
            }
        }
        let _ = writeln!(
            head,
            "// kernel `{}` from {}:{}, specialised for num_warps = {} ({} threads){}",
            k.name,
            k.file.display(),
            k.loc.line,
            k.num_warps,
            k.threads(),
            if facts.is_empty() {
                String::new()
            } else {
                format!("; {}", facts.join("; "))
            }
        );
        let mut params: Vec<String> = k
            .params
            .iter()
            .map(|p| format!("{} {}", c_elem(k.ty(p.var).elem), self.name(p.var)))
            .collect();
        if self.target.persistent {
            params.push("int kwb_programs".into());
        }
        for i in 0..self.tensor_maps.len() {
            params.push(format!(
                "const __grid_constant__ kwb_tensor_map kwb_tmap{i}"
            ));
        }
        let _ = writeln!(
            head,
            "extern \"C\" __global__ void __launch_bounds__({}) {}({})\n{{",
            self.launch_bounds(),
            k.name,
            params.join(", ")
        );
        head.push_str("    const int kwb_tid = threadIdx.x;\n");
        if self.uses_warpgroup {
            head.push_str("    const int kwb_wg = kwb_warpgroup();\n");
        }
        if fixed > SMEM_LIMIT {
            let _ = writeln!(
                head,
                "#error \"kwb tile: kernel `{}` needs {} bytes of shared memory for dots, layout \
                 changes and reductions, above the 48 KiB a program gets (use smaller tiles)\"",
                k.name, fixed
            );
        }
        let ring_decl = |head: &mut String, base: &str| {
            if slack > 0 {
                let _ = writeln!(
                    head,
                    "    unsigned char* const kwb_ring = {base} + ((0u - kwb_smem({base})) & {}u);",
                    slack - 1
                );
            } else if base != "kwb_ring" {
                let _ = writeln!(head, "    unsigned char* const kwb_ring = {base};");
            }
        };
        if dynamic {
            let _ = writeln!(
                head,
                "    // the rings ({} bytes) in dynamic shared memory: the launch passes that size",
                self.ring_bytes + slack
            );
            head.push_str("    extern __shared__ __align__(128) unsigned char kwb_dyn[];\n");
            ring_decl(&mut head, "kwb_dyn");
        } else if self.ring_bytes > 0 {
            let name = if slack > 0 {
                "kwb_ring_raw"
            } else {
                "kwb_ring"
            };
            let _ = writeln!(
                head,
                "    __shared__ __align__(128) unsigned char {name}[{}];",
                self.ring_bytes + slack
            );
            ring_decl(&mut head, name);
        }
        if self.dot_bytes > 0 {
            let _ = writeln!(
                head,
                "    __shared__ __align__(16) unsigned char kwb_dot[{}];",
                self.dot_bytes
            );
        }
        for (i, double) in self.dot_sites.iter().enumerate() {
            if *double {
                let _ = writeln!(head, "    int kwb_dotbuf_{i} = 0;");
            }
        }
        if self.scratch_bytes > 0 {
            let _ = writeln!(
                head,
                "    __shared__ __align__(16) unsigned char kwb_scratch[{}];",
                self.scratch_bytes
            );
        }
        if self.site_bytes > 0 {
            let _ = writeln!(
                head,
                "    __shared__ __align__(16) unsigned char kwb_red[{}];",
                self.site_bytes
            );
        }
        for i in 0..k.vars.len() {
            if let Some(d) = self.declaration(VarId(i as u32)) {
                let _ = writeln!(head, "    {d}");
            }
        }
        for d in self.hoisted.iter().flatten() {
            let _ = writeln!(head, "    {d}");
        }
        head.push_str(&self.out);
        head.push_str("}\n");
        WrittenKernel {
            cuda: head,
            dynamic_shared: if dynamic { self.ring_bytes + slack } else { 0 },
            arch_specific: self.arch_specific,
            helpers: self.helpers,
            tensor_maps: self.tensor_maps,
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

    pub fn block(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    pub fn stmt(&mut self, s: &Stmt) {
        let line = s.loc.line.max(1);
        if let StmtKind::Assign { dst, .. } = &s.kind {
            if self.uniform.contains_key(dst) {
                // A uniform splat: its readers read the scalar; nothing to write.
                self.assign_seq += 1;
                self.assigned_at.insert(*dst, self.assign_seq);
                return;
            }
        }
        let directive = format!("#line {line} \"{}\"\n", self.file);
        self.out.push_str(&directive);
        match &s.kind {
            StmtKind::Assign { dst, op } => {
                self.assign(*dst, op, line);
                self.assign_seq += 1;
                self.assigned_at.insert(*dst, self.assign_seq);
            }
            StmtKind::Store { ptr, value, mask } => {
                let mask = mask.filter(|m| !self.true_masks.contains(m));
                self.store(*ptr, *value, mask, line)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.open(&format!("if ({}) {{", self.name(*cond)));
                self.block(then);
                if otherwise.is_empty() {
                    self.close("}");
                } else {
                    self.close("} else {");
                    self.indent += 1;
                    self.block(otherwise);
                    self.close("}");
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
                num_stages,
            } => match self.pipeline_plan(*var, *step, body, *num_stages) {
                Some(plan) => self.pipelined_loop(*var, *start, *end, *step, body, &plan),
                None => self.for_loop(*var, *start, *end, *step, body),
            },
            StmtKind::While {
                cond_body,
                cond,
                body,
            } => {
                self.open("while (true) {");
                self.loop_depth += 1;
                self.block(cond_body);
                self.line(&format!("if (!{}) break;", self.name(*cond)));
                self.block(body);
                self.loop_depth -= 1;
                self.loop_end(body);
                self.close("}");
            }
            StmtKind::Barrier => self.line("__syncthreads();"),
            StmtKind::Assume { cond } => {
                self.line(&format!("__builtin_assume({});", self.name(*cond)))
            }
            StmtKind::Return if self.target.persistent => self.unsupported(
                "`return` in a persistent kernel (its CTA runs more programs after this one)",
                line,
            ),
            StmtKind::Return => self.line("return;"),
        }
    }

    fn for_loop(&mut self, var: VarId, start: VarId, end: VarId, step: VarId, body: &[Stmt]) {
        let s = elem_scalar(self.k, var);
        let t = names::c_scalar(s);
        let (v, st) = (self.name(var).to_string(), self.name(step).to_string());
        // Python's range: the bounds are read once; the step's sign picks the test.
        let test = match self.consts.get(&step) {
            Some(Const::Int(i)) if *i > 0 => format!("{v} < kwb_end"),
            Some(Const::Int(i)) if *i < 0 => format!("{v} > kwb_end"),
            _ => format!("(kwb_step > 0 ? {v} < kwb_end : {v} > kwb_end)"),
        };
        self.open("{");
        self.line(&format!("const {t} kwb_end = {};", self.name(end)));
        self.line(&format!("const {t} kwb_step = {st};"));
        self.open(&format!(
            "for ({v} = {}; {test}; {v} = ({t})({v} + kwb_step)) {{",
            self.name(start)
        ));
        self.loop_depth += 1;
        self.block(body);
        self.loop_depth -= 1;
        self.loop_end(body);
        self.close("}");
        self.close("}");
    }

    /// A loop body whose full reductions reuse their shared buffers on the next iteration
    /// needs a barrier in between; two barrier sites at its top level already give one.
    pub fn loop_end(&mut self, body: &[Stmt]) {
        let mut reduces = false;
        super::layout::visit(body, &mut |s| {
            if let StmtKind::Assign { dst, op } = &s.kind {
                reduces |= self.uses_site(*dst, op);
            }
        });
        let sites = body
            .iter()
            .filter(|s| match &s.kind {
                StmtKind::Barrier => true,
                StmtKind::Assign { dst, op } => {
                    self.uses_site(*dst, op) || self.uses_scratch(*dst, op)
                }
                _ => false,
            })
            .count();
        if reduces && sites < 2 {
            self.line("__syncthreads();  // the loop reuses its reduction buffers");
        }
    }

    fn assign(&mut self, dst: VarId, op: &Op, line: u32) {
        let k = self.k;
        let dst_elem = k.ty(dst).elem;
        let ds = elem_scalar(k, dst);
        match op {
            Op::Const(c) => {
                let lit = literal(ds, *c);
                self.each(dst, |_, _| lit.clone());
            }
            Op::Copy(src) | Op::Hint { src, .. } => {
                let src = *src;
                self.each(dst, |w, e| w.at(src, e));
            }
            Op::ProgramId(a) | Op::NumPrograms(a) => {
                let what = if matches!(op, Op::ProgramId(_)) {
                    "blockIdx"
                } else {
                    "gridDim"
                };
                let axis = ["x", "y", "z"].get(*a as usize).copied().unwrap_or("x");
                let value = match (self.target.persistent, op) {
                    // A persistent kernel's programs: the one this CTA runs now, of all.
                    (true, Op::ProgramId(0)) => "kwb_pid".to_string(),
                    (true, Op::NumPrograms(0)) => "kwb_programs".to_string(),
                    _ => format!("(int){what}.{axis}"),
                };
                self.line(&format!("{} = {value};", self.name(dst)));
            }
            Op::Arange { start, .. } => {
                let l = self.layout(dst);
                let f = l.flat_expr("e");
                let expr = if *start == 0 {
                    f
                } else {
                    format!("{} + ({f})", names::int_literal(Scalar::I32, *start))
                };
                self.each(dst, |_, _| expr.clone());
            }
            Op::Splat(src) => {
                let src = *src;
                self.each(dst, |w, e| w.at(src, e));
            }
            Op::Broadcast(_) | Op::ExpandDims { .. } | Op::Reshape(_) | Op::Permute { .. } => {
                self.relayout(dst, op, line)
            }
            Op::Cast(src) => {
                let (src, from) = (*src, k.ty(*src).elem);
                self.each(dst, |w, e| math::cast(from, dst_elem, &w.at(src, e)));
            }
            Op::Binary { op, lhs, rhs } => {
                let s = elem_scalar(k, *lhs);
                let (l, r, op) = (*lhs, *rhs, *op);
                if let Some(p) = math::packed(op, s) {
                    self.packed_binary(dst, &p, l, r);
                    return;
                }
                match math::binary(op, s, "A", "B") {
                    Ok(_) => self.each(dst, |w, e| {
                        math::binary(op, s, &w.at(l, e), &w.at(r, e)).unwrap_or_default()
                    }),
                    Err(what) => self.unsupported(&what, line),
                }
            }
            Op::Unary { op, src } => {
                let s = elem_scalar(k, *src);
                let (src, op) = (*src, *op);
                match math::unary(op, s, "A") {
                    Ok(_) => self.each(dst, |w, e| {
                        math::unary(op, s, &w.at(src, e)).unwrap_or_default()
                    }),
                    Err(what) => self.unsupported(&what, line),
                }
            }
            Op::Fma { a, b, c } => {
                let (a, b, c) = (*a, *b, *c);
                self.each(dst, |w, e| {
                    math::fma(ds, &w.at(a, e), &w.at(b, e), &w.at(c, e))
                });
            }
            Op::Where { cond, a, b } => {
                let (c, a, b) = (*cond, *a, *b);
                self.each(dst, |w, e| {
                    format!("({} ? {} : {})", w.at(c, e), w.at(a, e), w.at(b, e))
                });
            }
            Op::PtrAdd { ptr, offset } => {
                let (p, o) = (*ptr, *offset);
                self.each(dst, |w, e| format!("{} + {}", w.at(p, e), w.at(o, e)));
            }
            Op::Load { ptr, mask, other } => {
                let mask = mask.filter(|m| !self.true_masks.contains(m));
                self.load(dst, *ptr, mask, *other, line)
            }
            Op::Reduce { op, src, axis } => self.reduce(dst, *op, *src, *axis, line),
            Op::Dot { a, b, acc, .. } => self.dot(dst, *a, *b, *acc, line),
            Op::Atomic {
                op,
                ptr,
                value,
                mask,
            } => self.atomic(dst, *op, *ptr, *value, *mask, line),
        }
    }

    /// fp16/bf16 `+ - *`: two lanes per instruction when the registers pair up.
    fn packed_binary(&mut self, dst: VarId, p: &math::Packed, l: VarId, r: VarId) {
        let ept = if self.is_tile(dst) {
            self.layout(dst).ept
        } else {
            1
        };
        if ept % 2 != 0 || self.per_element {
            self.each(dst, |w, e| {
                format!("{}({}, {})", p.one, w.at(l, e), w.at(r, e))
            });
            return;
        }
        let pair =
            |w: &Writer, v: VarId| format!("{}({}, {})", p.make, w.at(v, "e"), w.at(v, "e + 1"));
        let (a, b) = (pair(self, l), pair(self, r));
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {ept}; e += 2) {{"));
        self.line(&format!("const {} kwb_h = {}({a}, {b});", p.pair, p.two));
        self.line(&format!("{} = kwb_h{};", self.at(dst, "e"), p.lo));
        self.line(&format!("{} = kwb_h{};", self.at(dst, "e + 1"), p.hi));
        self.close("}");
    }

    /// Whether `dst = op` uses a full-reduction buffer of its own (one barrier).
    pub fn uses_site(&self, dst: VarId, op: &Op) -> bool {
        match op {
            Op::Reduce { src, .. } => {
                !self.is_tile(dst) && self.k.num_warps > 1 && self.is_tile(*src)
            }
            Op::Atomic { .. } => !self.is_tile(dst),
            _ => false,
        }
    }

    /// Whether `dst = op` goes through the shared scratch buffer (two barriers).
    pub fn uses_scratch(&self, dst: VarId, op: &Op) -> bool {
        match op {
            Op::Reduce { .. } => self.is_tile(dst),
            Op::Broadcast(src)
            | Op::Permute { src, .. }
            | Op::Reshape(src)
            | Op::ExpandDims { src, .. } => self.relayout_needs_scratch(dst, *src, op),
            _ => false,
        }
    }
}
