//! `tl.sort` ([`Op::Sort`](crate::tile::ir::Op::Sort)). The tile goes to the shared scratch
//! buffer in row-major order (so each line along the last axis is `n` consecutive slots),
//! the program's threads run the bitonic network there, one compare-and-swap of a disjoint
//! pair per thread and step with a barrier between steps, and each thread reads its
//! registers back. The network and the rule for a pair are the IR's (Triton's), and values
//! move as bits, so the result, NaN and `-0.0` included, is the interpreter's bit for bit.
//!
//! An element narrower than 4 bytes gets a 4-byte slot holding its bits: with 1- or 2-byte
//! slots, threads would write neighbouring elements of one word in the same step, which the
//! hardware allows but kwb's PTX emulator cannot tell from a race.
//!
//! Cost: `log2(n) * (log2(n) + 1) / 2` steps, each `numel / 2` pairs spread over the threads
//! and one `__syncthreads()`, plus the round trip through shared memory (`numel` slots of
//! scratch, in dynamic shared memory with the rest when the total passes 48 KiB). Triton
//! keeps the tile in registers and swaps through shuffles and layout changes instead; a line
//! that one thread holds whole could be sorted in registers with no barrier, which kwb does
//! not do yet.

use super::math;
use super::memory::{bits, from_bits};
use super::names::{c_scalar, elem_scalar};
use super::writer::Writer;
use crate::tile::ir::{BinOp, Elem, VarId};

impl Writer<'_> {
    pub fn sort(&mut self, dst: VarId, src: VarId, descending: bool, line: u32) {
        if matches!(self.k.ty(src).elem, Elem::Ptr(_)) || !self.is_tile(src) {
            self.unsupported("a sort of pointers or of a scalar", line);
            return;
        }
        let s = elem_scalar(self.k, src);
        let t = c_scalar(s);
        let numel = self.k.ty(src).numel();
        let n = self.k.ty(src).shape.last().map_or(1, |&d| u64::from(d));
        if !n.is_power_of_two() {
            self.unsupported(
                "a sort along a dimension whose length is not a power of two",
                line,
            );
            return;
        }
        let gt = |a: &str, b: &str| math::binary(BinOp::Gt, s, a, b);
        let (Ok(x_gt_y), Ok(y_gt_x)) = (gt("x", "y"), gt("y", "x")) else {
            self.unsupported(&format!("a sort of {}", s.triton_name()), line);
            return;
        };
        // The slot type, and an element to and from its slot.
        let narrow = s.size() < 4;
        let (slot, slot_size) = if narrow {
            ("unsigned", 4)
        } else {
            (t, u64::from(s.size()))
        };
        let to_slot = |x: &str| if narrow { bits(s, x) } else { x.to_string() };
        let from_slot = |w: &str| {
            if narrow {
                from_bits(s, w)
            } else {
                w.to_string()
            }
        };
        let stages = n.trailing_zeros();
        let threads = u64::from(self.k.threads());
        self.scratch_bytes = self.scratch_bytes.max(numel * slot_size);
        self.open("{");
        self.line(&format!(
            "{slot}* kwb_s = reinterpret_cast<{slot}*>(kwb_scratch);"
        ));
        let l = self.layout(src);
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {}; ++e) {}kwb_s[{}] = {};",
            l.ept,
            l.owner_if(),
            l.flat_expr("e"),
            to_slot(&self.at(src, "e"))
        ));
        self.line("__syncthreads();");
        if stages > 0 {
            let dir = if descending { "true" } else { "false" };
            self.line(&format!(
                "// bitonic sort of {} line(s) of {n}: {} steps of {} pairs",
                numel / n,
                stages * (stages + 1) / 2,
                numel / 2
            ));
            self.open(&format!("for (int s = 1; s <= {stages}; ++s) {{"));
            self.open("for (int j = s - 1; j >= 0; --j) {");
            self.open(&format!(
                "for (int p = kwb_tid; p < {}; p += {threads}) {{",
                numel / 2
            ));
            self.line("const int k = ((p >> j) << (j + 1)) | (p & ((1 << j) - 1));");
            self.line("const int m = k | (1 << j);");
            self.line(&format!(
                "const bool d = s < {stages} ? ((k >> s) & 1) != 0 : {dir};"
            ));
            self.line(&format!("const {slot} a = kwb_s[k];"));
            self.line(&format!("const {slot} b = kwb_s[m];"));
            self.line(&format!("const {t} x = {};", from_slot("a")));
            self.line(&format!("const {t} y = {};", from_slot("b")));
            self.line(&format!("kwb_s[k] = ({x_gt_y} != d) ? b : a;"));
            self.line(&format!("kwb_s[m] = ({y_gt_x} == d) ? a : b;"));
            self.close("}");
            self.line("__syncthreads();");
            self.close("}");
            self.close("}");
        }
        let ld = self.layout(dst);
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {}; ++e) {} = {};",
            ld.ept,
            self.at(dst, "e"),
            from_slot(&format!("kwb_s[{}]", ld.flat_expr("e")))
        ));
        self.line("__syncthreads();");
        self.close("}");
    }
}
