//! Global memory: loads, stores and atomics. The vector width of a tile access is what the
//! axis facts prove: at most the layout's run, the pointer's contiguity, its alignment, the
//! mask's constancy and 16 bytes. A vector access is one predicated `ld/st.global.v4/v2.b32`
//! (inline PTX: a masked-off vector never touches memory and keeps `other`); a scalar access
//! is a C access under an `if`, which NVCC predicates.

use super::layout::Layout;
use super::names::{c_scalar, elem_scalar, literal};
use super::relayout::Idx;
use super::writer::Writer;
use crate::tile::ir::{AtomicOp, Const, Scalar, VarId};

/// The bits of element `x` of type `s`, as an unsigned integer of the element's width.
pub(super) fn bits(s: Scalar, x: &str) -> String {
    match s {
        Scalar::F32 => format!("__float_as_uint({x})"),
        Scalar::F16 => format!("(unsigned)__half_as_ushort({x})"),
        Scalar::BF16 => format!("(unsigned)__bfloat16_as_ushort({x})"),
        Scalar::F64 => format!("(unsigned long long)__double_as_longlong({x})"),
        Scalar::I64 | Scalar::U64 => format!("(unsigned long long)({x})"),
        Scalar::I16 | Scalar::U16 => format!("(unsigned)(unsigned short)({x})"),
        Scalar::I8 | Scalar::U8 | Scalar::I1 => format!("(unsigned)(unsigned char)({x})"),
        Scalar::I32 | Scalar::U32 => format!("(unsigned)({x})"),
    }
}

/// Element of type `s` from its bits `w` (an unsigned integer expression).
pub(super) fn from_bits(s: Scalar, w: &str) -> String {
    match s {
        Scalar::F32 => format!("__uint_as_float({w})"),
        Scalar::F16 => format!("__ushort_as_half((unsigned short)({w}))"),
        Scalar::BF16 => format!("__ushort_as_bfloat16((unsigned short)({w}))"),
        Scalar::F64 => format!("__longlong_as_double((long long)({w}))"),
        Scalar::I1 => format!("((({w}) & 0xffu) != 0)"),
        other => format!("({})({w})", c_scalar(other)),
    }
}

/// The predicated scalar access helpers for an element of type `s`: load, store, and the
/// unsigned C type that carries the bits (32-bit elements share the one-word vector helpers).
fn scalar_access(s: Scalar) -> (&'static str, &'static str, &'static str) {
    match s.size() {
        1 => ("kwb_ld8s", "kwb_st8s", "unsigned short"),
        2 => ("kwb_ld16s", "kwb_st16s", "unsigned short"),
        8 => ("kwb_ld64s", "kwb_st64s", "unsigned long long"),
        _ => ("kwb_ld32", "kwb_st32", "unsigned"),
    }
}

impl Writer<'_> {
    /// The proven vector width (in elements) of a tile access through `ptr` under `mask`.
    pub fn vector_width(&self, ptr: VarId, mask: Option<VarId>) -> u64 {
        self.vector_width_in(&self.layout(ptr), ptr, mask)
    }

    /// [`Writer::vector_width`] were `ptr` and `mask` held in layout `l`.
    pub fn vector_width_in(&self, l: &Layout, ptr: VarId, mask: Option<VarId>) -> u64 {
        if self.per_element {
            return 1;
        }
        let s = elem_scalar(self.k, ptr);
        let size = u64::from(s.size());
        let (contig, div, _) = self.facts(ptr).last();
        let last_dim = self
            .k
            .ty(ptr)
            .shape
            .last()
            .map(|&d| u64::from(d))
            .unwrap_or(1);
        let mut w = l
            .vec
            .min(contig)
            .min(last_dim)
            .min(16 / size)
            .min(div / size);
        if let Some(m) = mask.filter(|m| self.is_tile(*m)) {
            w = w.min(self.facts(m).last().2);
        }
        let w = w.max(1);
        // Below 4 bytes a vector buys nothing; use the scalar path.
        if w * size < 4 {
            1
        } else {
            w
        }
    }

    pub fn load(
        &mut self,
        dst: VarId,
        ptr: VarId,
        mask: Option<VarId>,
        other: Option<VarId>,
        _line: u32,
    ) {
        let s = elem_scalar(self.k, dst);
        let zero = literal(s, Const::Int(0));
        let other_at = |w: &Writer, e: &str| match other {
            Some(o) => w.at(o, e),
            None => zero.clone(),
        };
        if !self.is_tile(dst) {
            let d = self.name(dst).to_string();
            let line = match mask {
                Some(m) => self.masked_scalar_load(
                    s,
                    &d,
                    self.name(ptr),
                    self.name(m),
                    other.map(|o| self.at(o, "")).as_deref(),
                ),
                None => format!("{d} = *{};", self.name(ptr)),
            };
            self.line(&line);
            return;
        }
        let l = self.layout(dst);
        let w = self.vector_width(ptr, mask);
        let size = u64::from(s.size());
        let bytes = w * size;
        if w == 1 || !matches!(bytes, 4 | 8 | 16) {
            if self.per_element {
                self.open("{");
            } else {
                self.line("#pragma unroll");
                self.open(&format!("for (int e = 0; e < {}; ++e) {{", l.ept));
            }
            let d = self.at(dst, "e");
            let line = match mask {
                Some(m) => self.masked_scalar_load(
                    s,
                    &d,
                    &self.at(ptr, "e"),
                    &self.at(m, "e"),
                    other.map(|o| self.at(o, "e")).as_deref(),
                ),
                None => format!("{d} = *{};", self.at(ptr, "e")),
            };
            self.line(&line);
            self.close("}");
            return;
        }
        let (ty, fun, comps): (&str, &str, &[&str]) = match bytes {
            16 => ("uint4", "kwb_ld128", &["x", "y", "z", "w"]),
            8 => ("uint2", "kwb_ld64", &["x", "y"]),
            _ => ("unsigned", "kwb_ld32", &[""]),
        };
        let word = |k: usize| {
            if comps[k].is_empty() {
                "r".to_string()
            } else {
                format!("r.{}", comps[k])
            }
        };
        let lane = |j: u64| {
            if j == 0 {
                "e".to_string()
            } else {
                format!("e + {j}")
            }
        };
        self.line(&format!(
            "// {w} x {} per access ({bytes}-byte vectors)",
            s.triton_name()
        ));
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; e += {w}) {{", l.ept));
        // Masked-off lanes keep `other`: the words start as its bits.
        let init: Vec<String> = (0..comps.len())
            .map(|k| match other {
                None => "0u".to_string(),
                Some(_) => self.pack(s, k as u64, &|j| other_at(self, &lane(j))),
            })
            .collect();
        if comps[0].is_empty() {
            self.line(&format!("unsigned r = {};", init[0]));
        } else {
            self.line(&format!("{ty} r = make_{ty}({});", init.join(", ")));
        }
        let m = mask
            .map(|m| self.at(m, "e"))
            .unwrap_or_else(|| "true".into());
        self.line(&format!("{fun}(r, {}, {m});", self.at(ptr, "e")));
        for j in 0..w {
            let value = self.unpack(s, j, &word);
            self.line(&format!("{} = {value};", self.at(dst, &lane(j))));
        }
        self.close("}");
    }

    /// `d = m ? *p : other` as one predicated load: a masked-off lane never touches memory, and
    /// the code stays straight-line (no branch per element for ptxas to if-convert). Without
    /// `other` the register starts as 0, the bits of every type's zero: written as a conversion
    /// (`__float2half_rn(0.0f)` is an inline-asm `cvt` in `cuda_fp16.h`), each load would cost
    /// NVRTC one more asm block to parse and ptxas one more instruction to fold.
    fn masked_scalar_load(
        &self,
        s: Scalar,
        d: &str,
        p: &str,
        m: &str,
        other: Option<&str>,
    ) -> String {
        let (load, _, ty) = scalar_access(s);
        let init = other.map_or_else(|| "0".to_string(), |o| bits(s, o));
        format!(
            "{{ {ty} r = {init}; {load}(r, {p}, {m}); {d} = {}; }}",
            from_bits(s, "r")
        )
    }

    /// `if (m) *p = v` as one predicated store.
    fn masked_scalar_store(&self, s: Scalar, p: &str, v: &str, m: &str) -> String {
        let (_, store, _) = scalar_access(s);
        format!("{store}({p}, {}, {m});", bits(s, v))
    }

    /// 32-bit word `k` of a vector whose lane `j` is `lane(j)`.
    pub fn pack(&self, s: Scalar, k: u64, lane: &dyn Fn(u64) -> String) -> String {
        match s.size() {
            8 => {
                let b = bits(s, &lane(k / 2));
                if k.is_multiple_of(2) {
                    format!("(unsigned)({b})")
                } else {
                    format!("(unsigned)(({b}) >> 32)")
                }
            }
            4 => bits(s, &lane(k)),
            size => {
                let per = u64::from(4 / size);
                let parts: Vec<String> = (0..per)
                    .map(|i| {
                        let b = bits(s, &lane(k * per + i));
                        let shift = i * u64::from(size) * 8;
                        if shift == 0 {
                            b
                        } else {
                            format!("({b} << {shift})")
                        }
                    })
                    .collect();
                parts.join(" | ")
            }
        }
    }

    /// Lane `j` of a vector from its 32-bit words `word(k)`.
    fn unpack(&self, s: Scalar, j: u64, word: &dyn Fn(usize) -> String) -> String {
        match s.size() {
            8 => {
                let (lo, hi) = (word((2 * j) as usize), word((2 * j + 1) as usize));
                from_bits(s, &format!("((unsigned long long){hi} << 32) | {lo}"))
            }
            4 => from_bits(s, &word(j as usize)),
            size => {
                let per = u64::from(4 / size);
                let w = word((j / per) as usize);
                let shift = (j % per) * u64::from(size) * 8;
                let x = if shift == 0 {
                    w
                } else {
                    format!("{w} >> {shift}")
                };
                from_bits(s, &x)
            }
        }
    }

    pub fn store(&mut self, ptr: VarId, value: VarId, mask: Option<VarId>, _line: u32) {
        let s = elem_scalar(self.k, ptr);
        if !self.is_tile(ptr) {
            let m = mask
                .map(|m| format!(" && {}", self.name(m)))
                .unwrap_or_default();
            self.line(&format!(
                "if (kwb_tid == 0{m}) *{} = {};",
                self.name(ptr),
                self.name(value)
            ));
            return;
        }
        let l = self.layout(ptr);
        let w = self.vector_width(ptr, mask);
        let bytes = w * u64::from(s.size());
        // A store from the accumulator's layout (a matmul's epilogue) computes each register's
        // pointer, mask and value where it stores them (`Writer::inline_remat`, `inline_cast`).
        let fused = l.mma.is_some();
        if fused && self.staged_store(ptr, value, mask) {
            return;
        }
        let at = |w: &Self, v: VarId| {
            fused
                .then(|| w.inline_remat(v))
                .flatten()
                .unwrap_or_else(|| w.at(v, "e"))
        };
        let value_at = |w: &Self, e: &str| {
            fused
                .then(|| w.inline_cast(value, e))
                .flatten()
                .unwrap_or_else(|| w.at(value, e))
        };
        let mut conds: Vec<String> = Vec::new();
        if let Some(m) = mask {
            conds.push(at(self, m));
        }
        if let Some(o) = l.owner_expr() {
            conds.push(o);
        }
        let lane = |j: u64| {
            if j == 0 {
                "e".to_string()
            } else {
                format!("e + {j}")
            }
        };
        let (access, step) = if w == 1 || !matches!(bytes, 4 | 8 | 16) {
            let (p, v) = (at(self, ptr), value_at(self, "e"));
            let access = if conds.is_empty() {
                format!("*{p} = {v};")
            } else {
                self.masked_scalar_store(s, &p, &v, &conds.join(" && "))
            };
            (access, "++e".to_string())
        } else {
            let (ty, fun, n) = match bytes {
                16 => ("uint4", "kwb_st128", 4),
                8 => ("uint2", "kwb_st64", 2),
                _ => ("unsigned", "kwb_st32", 1),
            };
            let words: Vec<String> = (0..n)
                .map(|k| self.pack(s, k, &|j| value_at(self, &lane(j))))
                .collect();
            let v = if n == 1 {
                words[0].clone()
            } else {
                format!("make_{ty}({})", words.join(", "))
            };
            let m = if conds.is_empty() {
                "true".to_string()
            } else {
                conds.join(" && ")
            };
            self.line(&format!(
                "// {w} x {} per access ({bytes}-byte vectors)",
                s.triton_name()
            ));
            (
                format!("{fun}({}, {v}, {m});", at(self, ptr)),
                format!("e += {w}"),
            )
        };
        if self.per_element {
            self.line(&access);
            return;
        }
        self.line("#pragma unroll");
        let head = format!("for (int e = 0; e < {}; {step})", l.ept);
        if fused {
            self.open(&format!("{head} {{"));
            for d in Idx::define(&l, "e") {
                self.line(&d);
            }
            self.line(&access);
            self.close("}");
        } else {
            self.line(&format!("{head} {access}"));
        }
    }

    pub fn atomic(
        &mut self,
        dst: VarId,
        op: AtomicOp,
        ptr: VarId,
        (value, cmp): (VarId, Option<VarId>),
        mask: Option<VarId>,
        line: u32,
    ) {
        let s = elem_scalar(self.k, ptr);
        let t = c_scalar(s);
        let u64p = "(unsigned long long*)";
        let call = |p: &str, v: &str, c: &str| -> Option<String> {
            Some(match (op, s) {
                (AtomicOp::Xchg, Scalar::I32 | Scalar::U32 | Scalar::U64 | Scalar::F32) => {
                    format!("atomicExch({p}, {v})")
                }
                (AtomicOp::Xchg, Scalar::I64) => format!(
                    "(long long)atomicExch({u64p}{p}, (unsigned long long){v})"
                ),
                (AtomicOp::Xchg, Scalar::F64) => format!(
                    "__longlong_as_double((long long)atomicExch({u64p}{p}, (unsigned long long)__double_as_longlong({v})))"
                ),
                (AtomicOp::Cas, Scalar::I32 | Scalar::U32 | Scalar::U64) => {
                    format!("atomicCAS({p}, {c}, {v})")
                }
                (AtomicOp::Cas, Scalar::I64) => format!(
                    "(long long)atomicCAS({u64p}{p}, (unsigned long long){c}, (unsigned long long){v})"
                ),
                (AtomicOp::Cas, Scalar::F32) => format!(
                    "__int_as_float(atomicCAS((int*){p}, __float_as_int({c}), __float_as_int({v})))"
                ),
                (AtomicOp::Cas, Scalar::F64) => format!(
                    "__longlong_as_double((long long)atomicCAS({u64p}{p}, (unsigned long long)__double_as_longlong({c}), (unsigned long long)__double_as_longlong({v})))"
                ),
                (AtomicOp::Add, Scalar::I64) => format!(
                    "(long long)atomicAdd((unsigned long long*){p}, (unsigned long long){v})"
                ),
                (
                    AtomicOp::Add,
                    Scalar::F32
                    | Scalar::F64
                    | Scalar::I32
                    | Scalar::U32
                    | Scalar::U64
                    | Scalar::F16
                    | Scalar::BF16,
                ) => format!("atomicAdd({p}, {v})"),
                (AtomicOp::Max, Scalar::F32) => format!("kwb_atomic_max({p}, {v})"),
                (AtomicOp::Min, Scalar::F32) => format!("kwb_atomic_min({p}, {v})"),
                (AtomicOp::Max, Scalar::I32 | Scalar::U32 | Scalar::U64) => {
                    format!("atomicMax({p}, {v})")
                }
                (AtomicOp::Min, Scalar::I32 | Scalar::U32 | Scalar::U64) => {
                    format!("atomicMin({p}, {v})")
                }
                (AtomicOp::Max, Scalar::I64) => format!("atomicMax({p}, {v})"),
                (AtomicOp::Min, Scalar::I64) => format!("atomicMin({p}, {v})"),
                _ => return None,
            })
        };
        if call("p", "v", "c").is_none() {
            let what = format!("atomic {op:?} on {}", s.triton_name()).to_lowercase();
            self.unsupported(&what, line);
            return;
        }
        let zero = literal(s, Const::Int(0));
        if !self.is_tile(dst) {
            // One thread performs it; the old value reaches every thread through shared memory.
            let off = self.site_bytes;
            self.site_bytes += 16;
            let m = mask
                .map(|m| format!(" && {}", self.name(m)))
                .unwrap_or_default();
            let d = self.name(dst).to_string();
            self.open("{");
            self.line(&format!(
                "{t}* kwb_r = reinterpret_cast<{t}*>(kwb_red + {off});"
            ));
            let cv = cmp.map(|c| self.name(c).to_string()).unwrap_or_default();
            let c = call(self.name(ptr), self.name(value), &cv).unwrap_or_default();
            self.line(&format!(
                "if (kwb_tid == 0) *kwb_r = (true{m}) ? {c} : {zero};"
            ));
            self.line("__syncthreads();");
            self.line(&format!("{d} = *kwb_r;"));
            self.close("}");
            return;
        }
        let l = self.layout(dst);
        let vectorable = op == AtomicOp::Add
            && matches!(s, Scalar::F16 | Scalar::BF16 | Scalar::F32)
            && self.target.sm >= 90
            && !l.replicated()
            && l.mma.is_none()
            && !self.per_element;
        if vectorable {
            let w = self.vector_width(ptr, mask);
            if w >= 2 {
                self.vector_atomic_add(dst, ptr, value, mask, w);
                return;
            }
        }
        let mut conds: Vec<String> = Vec::new();
        if let Some(m) = mask {
            conds.push(self.at(m, "e"));
        }
        if let Some(o) = l.owner_expr() {
            conds.push(o);
        }
        let cond = if conds.is_empty() {
            String::new()
        } else {
            format!("if ({}) ", conds.join(" && "))
        };
        let d = self.at(dst, "e");
        let cv = cmp.map(|c| self.at(c, "e")).unwrap_or_default();
        let c = call(&self.at(ptr, "e"), &self.at(value, "e"), &cv).unwrap_or_default();
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; ++e) {{", l.ept));
        self.line(&format!("{d} = {zero};"));
        self.line(&format!("{cond}{d} = {c};"));
        self.close("}");
        if l.replicated() {
            // Copies of an element get the owner's old value.
            self.scratch_bytes = self.scratch_bytes.max(l.numel * u64::from(s.size()));
            self.open("{");
            self.line(&format!(
                "{t}* kwb_s = reinterpret_cast<{t}*>(kwb_scratch);"
            ));
            let owner = l.owner_expr().unwrap_or_default();
            let f = l.flat_expr("e");
            self.line(&format!(
                "for (int e = 0; e < {}; ++e) if ({owner}) kwb_s[{f}] = {d};",
                l.ept
            ));
            self.line("__syncthreads();");
            self.line(&format!(
                "for (int e = 0; e < {}; ++e) {d} = kwb_s[{f}];",
                l.ept
            ));
            self.line("__syncthreads();");
            self.close("}");
        }
    }

    /// `tl.atomic_add` of `w` contiguous, aligned fp16/bf16/fp32 elements per instruction
    /// (sm_90's vector `atom.global.add`, as Triton emits it: `.acq_rel` at `.gpu` scope), the
    /// old values returned to `dst`.
    fn vector_atomic_add(
        &mut self,
        dst: VarId,
        ptr: VarId,
        value: VarId,
        mask: Option<VarId>,
        w: u64,
    ) {
        let s = elem_scalar(self.k, ptr);
        let l = self.layout(dst);
        let (ty, reg, to_bits, from_bits) = match s {
            Scalar::BF16 => ("bf16", "h", "__bfloat16_as_ushort", "__ushort_as_bfloat16"),
            Scalar::F16 => ("f16", "h", "__half_as_ushort", "__ushort_as_half"),
            _ => ("f32", "f", "", ""),
        };
        let noftz = if reg == "h" { "noftz." } else { "" };
        let bits_ty = if reg == "h" {
            "unsigned short"
        } else {
            "float"
        };
        let lane = |j: u64| {
            if j == 0 {
                "e".to_string()
            } else {
                format!("e + {j}")
            }
        };
        let n = w as usize;
        let olds: Vec<String> = (0..n).map(|j| format!("%{j}")).collect();
        let ins: Vec<String> = (0..n).map(|j| format!("%{}", n + 1 + j)).collect();
        let asm = format!(
            "{{ .reg .pred q; setp.ne.b32 q, %{}, 0; @q atom.global.gpu.acq_rel.add.{noftz}v{w}.{ty} {{{}}}, [%{n}], {{{}}}; }}",
            2 * n + 1,
            olds.join(", "),
            ins.join(", ")
        );
        let outs: Vec<String> = (0..n).map(|j| format!("\"+{reg}\"(kwb_o{j})")).collect();
        let mut inputs = vec![format!("\"l\"({})", self.at(ptr, "e"))];
        for j in 0..w {
            inputs.push(format!(
                "\"{reg}\"({to_bits}({}))",
                self.at(value, &lane(j))
            ));
        }
        let m = mask.map_or("1".to_string(), |m| format!("(int)({})", self.at(m, "e")));
        inputs.push(format!("\"r\"({m})"));
        self.line(&format!(
            "// {w} x {} per atomic ({}-byte vectors)",
            s.triton_name(),
            w * u64::from(s.size())
        ));
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; e += {w}) {{", l.ept));
        let zeros: Vec<String> = (0..n).map(|j| format!("kwb_o{j} = 0")).collect();
        self.line(&format!("{bits_ty} {};", zeros.join(", ")));
        self.line(&format!(
            "asm volatile(\"{asm}\" : {} : {} : \"memory\");",
            outs.join(", "),
            inputs.join(", ")
        ));
        for j in 0..w {
            let d = self.at(dst, &lane(j));
            let v = if from_bits.is_empty() {
                format!("kwb_o{j}")
            } else {
                format!("{from_bits}(kwb_o{j})")
            };
            self.line(&format!("{d} = {v};"));
        }
        self.close("}");
    }
}
