//! The statements of a kernel body: control flow (`if`, `for`, `while`, barriers,
//! assumptions) and each assignment's operation, written by the [`Writer`] one statement at a
//! time. Pipelined loops go to `ring.rs`, loads and stores to `memory.rs`.

use super::math;
use super::names::{self, elem_scalar, literal};
use super::scan::ScanSite;
use super::writer::Writer;
use crate::tile::ir::{Const, GridDependency, Op, Scalar, Stmt, StmtKind, VarId};

impl Writer<'_> {
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
            StmtKind::GridDependency(g) => {
                let inst = match g {
                    GridDependency::Wait => "griddepcontrol.wait;",
                    GridDependency::LaunchDependents => "griddepcontrol.launch_dependents;",
                };
                // Hopper and later; before it there is no dependent launch to wait for.
                self.line("#if __CUDA_ARCH__ >= 900");
                self.line(&format!("asm volatile(\"{inst}\" ::: \"memory\");"));
                self.line("#endif");
            }
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
            Op::Scan {
                srcs,
                part,
                axis,
                reverse,
                combine,
            } => {
                let site = ScanSite {
                    srcs,
                    part: *part as usize,
                    axis: Some(*axis),
                    reverse: *reverse,
                    combine,
                    scan: true,
                };
                self.scan(dst, &site, line)
            }
            Op::ReduceWith {
                srcs,
                part,
                axis,
                combine,
            } => {
                let site = ScanSite {
                    srcs,
                    part: *part as usize,
                    axis: *axis,
                    reverse: false,
                    combine,
                    scan: false,
                };
                self.scan(dst, &site, line)
            }
            Op::Dot { a, b, acc, .. } => self.dot(dst, *a, *b, *acc, line),
            Op::Sort { src, descending } => self.sort(dst, *src, *descending, line),
            Op::Atomic {
                op,
                ptr,
                value,
                mask,
                cmp,
            } => self.atomic(dst, *op, *ptr, (*value, *cmp), *mask, line),
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
            Op::Scan { .. } | Op::ReduceWith { .. } | Op::Sort { .. } => true,
            Op::Broadcast(src)
            | Op::Permute { src, .. }
            | Op::Reshape(src)
            | Op::ExpandDims { src, .. } => self.relayout_needs_scratch(dst, *src, op),
            _ => false,
        }
    }
}
