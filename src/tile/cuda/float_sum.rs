//! A full float `tl.sum`, added in the order compiled Triton adds (`ir::sums`): in the sum's
//! own dtype, each partial sum rounded (fp16/bf16 included), each thread's registers folded
//! left to right (Triton 3.0 to 3.7) or as a tree of neighbours (3.8 and later), then an xor
//! butterfly over the lanes and one over the warps. Every operation is an intrinsic that NVRTC
//! neither contracts nor reorders (`__fadd_rn`, `__hadd`, ...); a product that Triton's LLVM
//! contracts into the sum is a fused multiply-add here too.

use super::names::{c_scalar, down};
use super::writer::Writer;
use crate::tile::ir::sums::SumOrder;
use crate::tile::ir::{Scalar, VarId};

/// The C intrinsics of one float dtype: add, fused multiply-add, multiply, zero.
struct Ops {
    add: &'static str,
    fma: &'static str,
    mul: &'static str,
}

fn ops(s: Scalar) -> Ops {
    match s {
        Scalar::F16 | Scalar::BF16 => Ops {
            add: "__hadd",
            fma: "__hfma",
            mul: "__hmul",
        },
        Scalar::F64 => Ops {
            add: "__dadd_rn",
            fma: "__fma_rn",
            mul: "__dmul_rn",
        },
        _ => Ops {
            add: "__fadd_rn",
            fma: "__fmaf_rn",
            mul: "__fmul_rn",
        },
    }
}

fn zero(s: Scalar) -> String {
    match s {
        Scalar::F64 => "0.0".into(),
        Scalar::F32 => "0.0f".into(),
        _ => down(s, "0.0f"),
    }
}

/// The terms of one thread's fold: register `e` (a C expression) as a value or a product.
struct Terms {
    value: VarId,
    factors: Option<(VarId, VarId)>,
    ops: Ops,
}

impl Writer<'_> {
    fn term_alone(&self, t: &Terms, e: &str) -> String {
        match t.factors {
            Some((a, b)) => format!("{}({}, {})", t.ops.mul, self.at(a, e), self.at(b, e)),
            None => self.at(t.value, e),
        }
    }

    /// `acc + term e`, the product contracted.
    fn term_onto(&self, t: &Terms, acc: &str, e: &str) -> String {
        match t.factors {
            Some((a, b)) => format!("{}({}, {}, {acc})", t.ops.fma, self.at(a, e), self.at(b, e)),
            None => format!("{}({acc}, {})", t.ops.add, self.at(t.value, e)),
        }
    }

    /// `term i + term j`: the first's product contracted, the second's rounded.
    fn term_pair(&self, t: &Terms, i: &str, j: &str) -> String {
        let second = self.term_alone(t, j);
        match t.factors {
            Some((a, b)) => format!(
                "{}({}, {}, {second})",
                t.ops.fma,
                self.at(a, i),
                self.at(b, i)
            ),
            None => format!("{}({}, {second})", t.ops.add, self.at(t.value, i)),
        }
    }

    /// `name` = a tree of neighbours over the registers `k * stride + off`, `k < len`.
    fn sum_tree(&mut self, t: &Terms, ty: &str, name: &str, len: u64, stride: u64, off: u64) {
        if len == 1 {
            let v = self.term_alone(t, &off.to_string());
            self.line(&format!("{ty} {name} = {v};"));
            return;
        }
        let reg = |k: &str| match (stride, off) {
            (1, 0) => k.to_string(),
            (_, 0) => format!("({k}) * {stride}"),
            _ => format!("({k}) * {stride} + {off}"),
        };
        self.line(&format!("{ty} {name}_l[{}];", len / 2));
        let pair = self.term_pair(t, &reg("2 * i"), &reg("2 * i + 1"));
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int i = 0; i < {}; ++i) {name}_l[i] = {pair};",
            len / 2
        ));
        let add = t.ops.add;
        let mut h = len / 4;
        while h > 0 {
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int i = 0; i < {h}; ++i) {name}_l[i] = {add}({name}_l[2 * i], {name}_l[2 * i + 1]);"
            ));
            h /= 2;
        }
        self.line(&format!("{ty} {name} = {name}_l[0];"));
    }

    pub(super) fn float_sum(&mut self, dst: VarId, src: VarId, s: Scalar) {
        let l = self.layout(src);
        let ty = c_scalar(s);
        let same_layout = |w: &Self, v: VarId| !w.is_tile(v) || w.layout(v) == l;
        let factors = self.contracted.get(&dst).copied().filter(|&(a, b)| {
            same_layout(self, a)
                && same_layout(self, b)
                && !self.undeclared.contains(&a)
                && !self.undeclared.contains(&b)
        });
        let t = Terms {
            value: src,
            factors,
            ops: ops(s),
        };
        let add = t.ops.add;
        let ept = l.ept;
        let order = self.k.sums.order;
        self.open("{");
        self.line(&format!(
            "// tl.sum in {} as Triton {} adds it: each partial sum rounded",
            s.triton_name(),
            match order {
                SumOrder::Sequential => "3.0-3.7",
                SumOrder::Tree => "3.8+",
            }
        ));
        match order {
            SumOrder::Sequential if ept >= 2 => {
                // The first two as a pair, then each onto the running sum (`ir::sums`).
                let first = self.term_pair(&t, "0", "1");
                self.line(&format!("{ty} kwb_v = {first};"));
                if ept > 2 {
                    let onto = self.term_onto(&t, "kwb_v", "e");
                    self.line("#pragma unroll");
                    self.line(&format!("for (int e = 2; e < {ept}; ++e) kwb_v = {onto};"));
                }
            }
            SumOrder::Sequential => {
                let first = self.term_alone(&t, "0");
                self.line(&format!("{ty} kwb_v = {first};"));
            }
            SumOrder::Tree if matches!(s, Scalar::F16 | Scalar::BF16) && ept >= 4 => {
                // Packed in pairs of registers: the even ones and the odd ones apart.
                self.sum_tree(&t, ty, "kwb_x", ept / 2, 2, 0);
                self.sum_tree(&t, ty, "kwb_y", ept / 2, 2, 1);
                self.line(&format!("{ty} kwb_v = {add}(kwb_x, kwb_y);"));
            }
            SumOrder::Tree => self.sum_tree(&t, ty, "kwb_v", ept, 1, 0),
        }
        if let Some(o) = l.owner_expr() {
            // Copies of an element count once: a thread that holds only copies adds zero.
            self.line(&format!("if (!({o})) kwb_v = {};", zero(s)));
        }
        // 16-bit values cross lanes as their bits (the headers' own overloads use `WARP_SZ`).
        let other = match s {
            Scalar::BF16 => "__ushort_as_bfloat16((unsigned short)__shfl_xor_sync(0xffffffffu, (unsigned)__bfloat16_as_ushort(kwb_v), o))",
            Scalar::F16 => "__ushort_as_half((unsigned short)__shfl_xor_sync(0xffffffffu, (unsigned)__half_as_ushort(kwb_v), o))",
            _ => "__shfl_xor_sync(0xffffffffu, kwb_v, o)",
        };
        let shuffle = format!("kwb_v = {add}(kwb_v, {other});");
        self.line("#pragma unroll");
        self.line(&format!("for (int o = 16; o > 0; o >>= 1) {shuffle}"));
        let warps = self.k.num_warps;
        if warps > 1 {
            let off = self.site_bytes;
            self.site_bytes += 32 * 8;
            self.line(&format!(
                "{ty}* kwb_r = reinterpret_cast<{ty}*>(kwb_red + {off});"
            ));
            self.line("if ((kwb_tid & 31) == 0) kwb_r[kwb_tid >> 5] = kwb_v;");
            self.line("__syncthreads();");
            self.line(&format!(
                "// every group of {warps} lanes combines the {warps} warps' results"
            ));
            self.line(&format!("kwb_v = kwb_r[kwb_tid & {}];", warps - 1));
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int o = {}; o > 0; o >>= 1) {shuffle}",
                warps / 2
            ));
        }
        self.line(&format!("{} = kwb_v;", self.name(dst)));
        self.close("}");
    }
}
