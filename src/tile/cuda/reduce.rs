//! Reductions. A full reduction (to a scalar) combines the thread's registers as a tree, then
//! a `__shfl_xor_sync` butterfly inside each warp, then the warps' results through a small
//! shared buffer of its own (one barrier), after which every thread holds the result. An axis
//! reduction of a 2-D or larger tile goes through the shared scratch buffer: each thread then
//! combines, for each of its result registers, the elements along the axis.
//! Max/Min follow `fmaxf`/`fminf` (a NaN loses to a number); ArgMax/ArgMin keep the smallest
//! index among ties.

use super::names::{c_scalar, down, elem_scalar, f32_literal, f64_literal, up};
use super::writer::Writer;
use crate::tile::ir::{ReduceOp, Scalar, VarId};

/// The C type a reduction of `s` accumulates in.
fn acc_type(s: Scalar) -> &'static str {
    match s {
        Scalar::F16 | Scalar::BF16 | Scalar::F32 => "float",
        Scalar::F64 => "double",
        Scalar::I64 => "long long",
        Scalar::U64 => "unsigned long long",
        Scalar::U32 => "unsigned",
        _ => "int",
    }
}

/// The identity of `op` in the accumulator type of `s`.
fn identity(op: ReduceOp, s: Scalar) -> String {
    let max = matches!(op, ReduceOp::Max | ReduceOp::ArgMax);
    match (op, acc_type(s)) {
        (ReduceOp::Sum, "float") => "0.0f".into(),
        (ReduceOp::Sum, "double") => "0.0".into(),
        (ReduceOp::Sum, _) => "0".into(),
        (_, "float") => f32_literal(if max {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        }),
        (_, "double") => f64_literal(if max {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
        (_, "long long") if max => "(-9223372036854775807LL - 1)".into(),
        (_, "long long") => "9223372036854775807LL".into(),
        (_, "unsigned long long") => if max {
            "0ULL"
        } else {
            "18446744073709551615ULL"
        }
        .into(),
        (_, "unsigned") => if max { "0u" } else { "4294967295u" }.into(),
        _ if max => "(-2147483647 - 1)".into(),
        _ => "2147483647".into(),
    }
}

/// `a op b` in the accumulator type of `s` (not for the arg reductions).
fn combine(op: ReduceOp, s: Scalar, a: &str, b: &str) -> String {
    let acc = acc_type(s);
    match (op, acc) {
        (ReduceOp::Sum, _) => format!("{a} + {b}"),
        (ReduceOp::Max, "float") => format!("fmaxf({a}, {b})"),
        (ReduceOp::Min, "float") => format!("fminf({a}, {b})"),
        (ReduceOp::Max, "double") => format!("fmax({a}, {b})"),
        (ReduceOp::Min, "double") => format!("fmin({a}, {b})"),
        (ReduceOp::Max, "int") => format!("kwb_smax({a}, {b})"),
        (ReduceOp::Min, "int") => format!("kwb_smin({a}, {b})"),
        (ReduceOp::Max, _) => format!("({a} > {b} ? {a} : {b})"),
        _ => format!("({a} < {b} ? {a} : {b})"),
    }
}

fn is_arg(op: ReduceOp) -> bool {
    matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin)
}

/// Device helpers for the arg reductions: the larger (smaller) value wins, a NaN loses, ties
/// go to the smaller index.
pub const ARG_HELPERS: &[(&str, &str)] = &[
    (
        "kwb_argmax_step",
        r#"template <typename T> static __device__ __forceinline__ void kwb_argmax_step(T& a, int& ai, T b, int bi) {
    if (b > a || (b == a && bi < ai) || (a != a && b == b)) { a = b; ai = bi; }
}
"#,
    ),
    (
        "kwb_argmin_step",
        r#"template <typename T> static __device__ __forceinline__ void kwb_argmin_step(T& a, int& ai, T b, int bi) {
    if (b < a || (b == a && bi < ai) || (a != a && b == b)) { a = b; ai = bi; }
}
"#,
    ),
];

impl Writer<'_> {
    pub fn reduce(&mut self, dst: VarId, op: ReduceOp, src: VarId, axis: Option<u32>, line: u32) {
        let s = elem_scalar(self.k, src);
        if matches!(self.k.ty(src).elem, crate::tile::ir::Elem::Ptr(_)) {
            self.unsupported("a reduction of pointers", line);
            return;
        }
        if !self.is_tile(src) {
            // A scalar reduces to itself (its index is 0).
            let v = if is_arg(op) {
                "0".to_string()
            } else {
                self.name(src).to_string()
            };
            self.line(&format!("{} = {v};", self.name(dst)));
            return;
        }
        if self.is_tile(dst) {
            self.reduce_axis(dst, op, src, axis.unwrap_or(0));
        } else if op == ReduceOp::Sum && s.is_float() {
            self.float_sum(dst, src, s);
        } else {
            self.reduce_full(dst, op, src, s);
        }
    }

    fn reduce_full(&mut self, dst: VarId, op: ReduceOp, src: VarId, s: Scalar) {
        let l = self.layout(src);
        let acc = acc_type(s);
        let id = identity(op, s);
        let arg = is_arg(op);
        let step = if op == ReduceOp::ArgMax {
            "kwb_argmax_step"
        } else {
            "kwb_argmin_step"
        };
        let ept = l.ept;
        self.open("{");
        self.line(&format!("{acc} kwb_a[{ept}];"));
        if arg {
            self.line(&format!("int kwb_i[{ept}];"));
        }
        let value = format!("({acc}){}", up(s, &self.at(src, "e")));
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {ept}; ++e) {{"));
        match l.owner_expr() {
            // Copies of an element count once.
            Some(o) => {
                self.line(&format!("kwb_a[e] = {o} ? {value} : {id};"));
                if arg {
                    self.line(&format!(
                        "kwb_i[e] = {o} ? {} : 2147483647;",
                        l.flat_expr("e")
                    ));
                }
            }
            None => {
                self.line(&format!("kwb_a[e] = {value};"));
                if arg {
                    self.line(&format!("kwb_i[e] = {};", l.flat_expr("e")));
                }
            }
        }
        self.close("}");
        // A tree over the registers, one level per line (compile-time trip counts).
        let mut h = ept / 2;
        while h > 0 {
            let body = if arg {
                format!("{step}(kwb_a[e], kwb_i[e], kwb_a[e + {h}], kwb_i[e + {h}]);")
            } else {
                let b = format!("kwb_a[e + {h}]");
                format!("kwb_a[e] = {};", combine(op, s, "kwb_a[e]", &b))
            };
            self.line("#pragma unroll");
            self.line(&format!("for (int e = 0; e < {h}; ++e) {body}"));
            h /= 2;
        }
        self.line(&format!("{acc} kwb_v = kwb_a[0];"));
        if arg {
            self.line("int kwb_j = kwb_i[0];");
        }
        self.butterfly(op, s, step, 16);
        let warps = self.k.num_warps;
        if warps > 1 {
            let off = self.site_bytes;
            self.site_bytes += 32 * 8 * 2;
            self.line(&format!(
                "{acc}* kwb_r = reinterpret_cast<{acc}*>(kwb_red + {off});"
            ));
            if arg {
                self.line(&format!(
                    "int* kwb_ri = reinterpret_cast<int*>(kwb_red + {});",
                    off + 32 * 8
                ));
                self.line("if ((kwb_tid & 31) == 0) { kwb_r[kwb_tid >> 5] = kwb_v; kwb_ri[kwb_tid >> 5] = kwb_j; }");
            } else {
                self.line("if ((kwb_tid & 31) == 0) kwb_r[kwb_tid >> 5] = kwb_v;");
            }
            self.line("__syncthreads();");
            self.line(&format!(
                "// every group of {warps} lanes combines the {warps} warps' results"
            ));
            self.line(&format!("kwb_v = kwb_r[kwb_tid & {}];", warps - 1));
            if arg {
                self.line(&format!("kwb_j = kwb_ri[kwb_tid & {}];", warps - 1));
            }
            self.butterfly(op, s, step, u64::from(warps / 2));
        }
        let ds = elem_scalar(self.k, dst);
        let result = if arg {
            "kwb_j".to_string()
        } else if matches!(ds, Scalar::F16 | Scalar::BF16) {
            down(ds, "kwb_v")
        } else {
            format!("({})kwb_v", c_scalar(ds))
        };
        self.line(&format!("{} = {result};", self.name(dst)));
        self.close("}");
    }

    fn butterfly(&mut self, op: ReduceOp, s: Scalar, step: &str, from: u64) {
        if from == 0 {
            return;
        }
        self.line("#pragma unroll");
        let body = if is_arg(op) {
            format!(
                "{step}(kwb_v, kwb_j, __shfl_xor_sync(0xffffffffu, kwb_v, o), \
                 __shfl_xor_sync(0xffffffffu, kwb_j, o));"
            )
        } else {
            let other = "__shfl_xor_sync(0xffffffffu, kwb_v, o)";
            format!("kwb_v = {};", combine(op, s, "kwb_v", other))
        };
        self.line(&format!("for (int o = {from}; o > 0; o >>= 1) {body}"));
    }

    fn reduce_axis(&mut self, dst: VarId, op: ReduceOp, src: VarId, axis: u32) {
        let s = elem_scalar(self.k, src);
        let shape = self.k.ty(src).shape.clone();
        let axis = (axis as usize).min(shape.len().saturating_sub(1));
        let len = u64::from(shape[axis]);
        let inner: u64 = shape[axis + 1..].iter().map(|&d| u64::from(d)).product();
        let (ls, ld) = (self.layout(src), self.layout(dst));
        let acc = acc_type(s);
        let acc_size = match acc {
            "double" | "long long" | "unsigned long long" => 8,
            _ => 4,
        };
        self.scratch_bytes = self.scratch_bytes.max(ls.numel * acc_size);
        let arg = is_arg(op);
        self.open("{");
        self.line(&format!(
            "{acc}* kwb_s = reinterpret_cast<{acc}*>(kwb_scratch);"
        ));
        let owner = ls.owner_if();
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {}; ++e) {owner}kwb_s[{}] = ({acc}){};",
            ls.ept,
            ls.flat_expr("e"),
            up(s, &self.at(src, "e"))
        ));
        self.line("__syncthreads();");
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; ++e) {{", ld.ept));
        self.line(&format!("const int g = {};", ld.flat_expr("e")));
        self.line(&format!(
            "const int base = (g / {inner}) * {} + g % {inner};",
            len * inner
        ));
        self.line(&format!("{acc} kwb_v = {};", identity(op, s)));
        if arg {
            let step = if op == ReduceOp::ArgMax {
                "kwb_argmax_step"
            } else {
                "kwb_argmin_step"
            };
            self.line("int kwb_j = 2147483647;");
            self.line(&format!(
                "for (int k = 0; k < {len}; ++k) {step}(kwb_v, kwb_j, kwb_s[base + k * {inner}], k);"
            ));
            self.line(&format!("{} = kwb_j;", self.at(dst, "e")));
        } else {
            let c = combine(op, s, "kwb_v", &format!("kwb_s[base + k * {inner}]"));
            self.line(&format!("for (int k = 0; k < {len}; ++k) kwb_v = {c};"));
            let ds = elem_scalar(self.k, dst);
            let result = if matches!(ds, Scalar::F16 | Scalar::BF16) {
                down(ds, "kwb_v")
            } else {
                format!("({})kwb_v", c_scalar(ds))
            };
            self.line(&format!("{} = {result};", self.at(dst, "e")));
        }
        self.close("}");
        self.line("__syncthreads();");
        self.close("}");
    }
}
