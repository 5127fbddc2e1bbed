//! Hopper's warpgroup matrix multiply, `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}`:
//! four consecutive warps (a warpgroup) multiply a 64x16 tile of A by a 16xN tile of B, both
//! read from shared memory through 64-bit matrix descriptors, into a 64xN f32 accumulator
//! spread across the 128 threads' registers.
//!
//! The emulator runs a CTA warp by warp, so it performs the instruction per warp, when the warp
//! issues it (as it does `cp.async`): warp `w` is quarter `w % 4` of its warpgroup and owns rows
//! `16 (w % 4) .. 16 (w % 4) + 15` of the result, so it reads those 16 rows of A and all of B
//! and writes only its own lanes' registers. `wgmma.fence`, `commit_group`, `wait_group` and
//! `fence.proxy.async` have nothing left to order and change nothing. Lane `l`'s accumulator
//! register `i` holds row `l / 4 + 8 (i % 4 / 2)` of the warp's 16, column
//! `8 (i / 4) + 2 (l % 4) + i % 2`: mma.sync's m16n8 accumulator fragment, repeated along N.
//!
//! A descriptor holds a start address (an offset into the CTA's shared memory), the leading and
//! stride byte offsets (LBO, SBO) and a swizzle mode; [`Descriptor::address`] places element
//! (x, k), x being A's M index or B's N index, by the PTX ISA's canonical layouts: K-major or
//! MN-major (`imm-trans` 0 or 1), as 8x16-byte core matrices without swizzle, or as rows of 32,
//! 64 or 128 bytes whose 16-byte chunks are permuted by XOR with the address's bits 7 and up
//! (Swizzle<1|2|3,4,3> on the whole byte address, so a start moved by 32 bytes inside a swizzled
//! row, as a K loop does, reads what the GPU reads).
//!
//! Every element read is checked as a shared-memory load by the warp's first active lane (never
//! written since the launch, races); one past the block's shared memory is an out-of-bounds
//! finding naming the operand, and reads as zero. The descriptors and `scale-d` must be the same
//! in every lane; when they are not, that is an error (the GPU's result is undefined). Not
//! modelled: the asynchronous completion (the registers hold the result at once, so reading
//! them before `wait_group` goes unnoticed), the proxy fence (a missing `fence.proxy.async` is
//! not found), whether all four warps of a warpgroup issue the instruction with the same
//! descriptors, A from registers, and descriptor base offsets other than 0.

use super::memory_ops::Where;
use super::{lanes, unsupported, Cta};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::EmuError;
use half::{bf16, f16};

const WGMMA_NOTE: &str = "wgmma.mma_async (tensor cores add the products in their own order \
                          and rounding; here in f64, rounded once to f32)";

/// A shared-memory matrix descriptor, decoded: byte addresses and offsets, and the row width of
/// its swizzle in bytes (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Descriptor {
    start: u64,
    lbo: u64,
    sbo: u64,
    width: u64,
}

impl Descriptor {
    /// Decodes a descriptor's bits; `Err` carries a base offset other than 0.
    fn decode(bits: u64) -> Result<Descriptor, u64> {
        let field = |shift: u32| ((bits >> shift) & 0x3FFF) << 4;
        let base = (bits >> 49) & 7;
        if base != 0 {
            return Err(base);
        }
        let width = match bits >> 62 {
            1 => 128,
            2 => 64,
            3 => 32,
            _ => 0,
        };
        Ok(Descriptor {
            start: field(0),
            lbo: field(16),
            sbo: field(32),
            width,
        })
    }

    /// The shared-memory byte address of element (x, k) of a 2-byte operand, x being its M or
    /// N index, laid out K-major or (`mn_major`) MN-major.
    fn address(&self, x: u64, k: u64, mn_major: bool) -> u64 {
        let (w, lbo, sbo) = (self.width, self.lbo, self.sbo);
        let off = match (mn_major, w) {
            (false, 0) => (x % 8) * 16 + (x / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo,
            (false, _) => (x % 8) * w + (x / 8) * sbo + (k / 8) * 16 + (k % 8) * 2,
            (true, 0) => (x % 8) * 2 + (x / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo,
            (true, _) => (x % (w / 2)) * 2 + (x / (w / 2)) * lbo + (k % 8) * w + (k / 8) * sbo,
        };
        let addr = self.start + off;
        if w == 0 {
            addr
        } else {
            addr ^ (((addr >> 7) & (w / 16 - 1)) << 4)
        }
    }
}

/// One shared-memory operand of a wgmma: its name for messages, descriptor and layout.
struct SharedOperand {
    name: &'static str,
    bits: u64,
    desc: Descriptor,
    mn_major: bool,
}

impl Cta<'_> {
    /// `wgmma.mma_async … d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a,
    /// imm-trans-b`: this warp's 16 rows of D = ±A·±B (+ D when scale-d), summed in f64 and
    /// rounded once to f32.
    pub(super) fn wgmma(&mut self, lo: usize, i: usize, active: u32) -> Result<(), EmuError> {
        let e = self.e;
        let inst = &e.insts[i];
        let n = 8 * usize::from(inst.mods.vec);
        let bf = inst.mods.src_ty == Some(Ty::Bf16);
        let arg = |k: usize| inst.args.get(k);
        if matches!(arg(1), Some(Operand::Vec(_))) {
            return Err(because(
                inst,
                "A from registers; the emulator reads A by descriptor",
            ));
        }
        let (Some(Operand::Vec(d)), Some(a), Some(b), Some(scale_d)) =
            (arg(0), arg(1), arg(2), arg(3))
        else {
            return Err(unsupported(inst));
        };
        if d.len() != n / 2 || inst.args.len() != 8 {
            return Err(because(
                inst,
                &format!("expected {} accumulator registers and 8 operands", n / 2),
            ));
        }
        let (Some(sa), Some(sb), Some(ta), Some(tb)) =
            (sign(arg(4)), sign(arg(5)), flag(arg(6)), flag(arg(7)))
        else {
            return Err(because(inst, "imm-scale must be 1 or -1, imm-trans 0 or 1"));
        };
        if active == 0 {
            return Ok(());
        }
        self.approx.insert(WGMMA_NOTE);
        self.partial_warp(lo, i, active);
        self.partial_warpgroup(lo, i, active);
        let a_bits = self.uniform(lo, i, active, a, "the A descriptor")?;
        let b_bits = self.uniform(lo, i, active, b, "the B descriptor")?;
        let accumulate = self.uniform(lo, i, active, scale_d, "scale-d")? != 0;
        let operand = |name: &'static str, bits: u64, mn_major: bool| {
            Descriptor::decode(bits)
                .map(|desc| SharedOperand {
                    name,
                    bits,
                    desc,
                    mn_major,
                })
                .map_err(|base| {
                    because(
                        inst,
                        &format!("{name} descriptor base offset {base}; the emulator models 0"),
                    )
                })
        };
        let (a, b) = (operand("A", a_bits, ta)?, operand("B", b_bits, tb)?);
        let first = lo + active.trailing_zeros() as usize;
        let quarter = (lo / 32 % 4) as u64;
        let mut am = [[0f64; 16]; 16];
        for (r, row) in am.iter_mut().enumerate() {
            for (k, x) in row.iter_mut().enumerate() {
                *x = self.wgmma_read(first, i, &a, 16 * quarter + r as u64, k as u64, bf);
            }
        }
        // B by column: bm[n][k].
        let mut bm = vec![[0f64; 16]; n];
        for (col, column) in bm.iter_mut().enumerate() {
            for (k, x) in column.iter_mut().enumerate() {
                *x = self.wgmma_read(first, i, &b, col as u64, k as u64, bf);
            }
        }
        let scale = sa * sb;
        for t in lanes(active, lo) {
            let l = t - lo;
            for (reg, op) in d.iter().enumerate() {
                let (j, c) = (reg / 4, reg % 4);
                let (row, col) = (l / 4 + 8 * (c / 2), 8 * j + 2 * (l % 4) + c % 2);
                let mut s = scale * (0..16).map(|k| am[row][k] * bm[col][k]).sum::<f64>();
                if accumulate {
                    s += f64::from(f32::from_bits(self.read(t, op, Ty::F32) as u32));
                }
                self.set(t, op, u64::from((s as f32).to_bits()));
            }
        }
        Ok(())
    }

    /// Element (x, k) of a shared-memory operand, read as thread `t`'s 2-byte shared load.
    fn wgmma_read(
        &mut self,
        t: usize,
        i: usize,
        op: &SharedOperand,
        x: u64,
        k: u64,
        bf: bool,
    ) -> f64 {
        let addr = op.desc.address(x, k, op.mn_major);
        let len = self.shared.len() as u64;
        if addr + 2 > len {
            if self.wants(FindingKind::OutOfBounds, i) {
                let (index, start) = (if op.name == "A" { "row" } else { "column" }, op.desc.start);
                let msg = format!(
                    "wgmma operand {} (descriptor 0x{:016x}, start {start}) reads element ({index} {x}, k {k}) at shared-memory offset {addr}, past the {len} bytes of this block's shared memory",
                    op.name, op.bits
                );
                self.report(FindingKind::OutOfBounds, i, t, msg);
            }
            return 0.0;
        }
        let bits = self.load(t, i, Where::Shared, addr, 2).unwrap_or(0) as u16;
        if bf {
            bf16::from_bits(bits).to_f64()
        } else {
            f16::from_bits(bits).to_f64()
        }
    }

    /// Reports a wgmma issued by a warp whose warpgroup the block does not hold entirely.
    fn partial_warpgroup(&mut self, lo: usize, i: usize, active: u32) {
        let group = lo / 128 * 128;
        if group + 128 <= self.n || !self.wants(FindingKind::PartialWarp, i) {
            return;
        }
        let name = self.e.insts[i].text.to_string();
        let msg = format!(
            "{name} issued by warp {} of a warpgroup the block of {} threads does not fill (a warpgroup is the 4 warps of threads {group}..{}); it needs all of them",
            lo / 32,
            self.n,
            group + 127
        );
        let first = lo + active.trailing_zeros() as usize;
        self.report(FindingKind::PartialWarp, i, first, msg);
    }

    /// The value of `op` in the warp's active lanes, which must all agree.
    fn uniform(
        &self,
        lo: usize,
        i: usize,
        active: u32,
        op: &Operand,
        what: &str,
    ) -> Result<u64, EmuError> {
        let first = lo + active.trailing_zeros() as usize;
        let v = self.read(first, op, Ty::B64);
        match lanes(active, lo).find(|&t| self.read(t, op, Ty::B64) != v) {
            None => Ok(v),
            Some(t) => Err(because(
                &self.e.insts[i],
                &format!(
                    "{what} differs between lanes: 0x{v:x} in lane {}, 0x{:x} in lane {}; it must be warp-uniform",
                    first - lo,
                    self.read(t, op, Ty::B64),
                    t - lo
                ),
            )),
        }
    }
}

/// The unsupported error for `inst`, saying why.
fn because(inst: &Inst, why: &str) -> EmuError {
    EmuError::Unsupported {
        instruction: format!("{} ({why})", inst.text),
        ptx_line: inst.line,
    }
}

/// `imm-scale-a`/`-b`: 1 or -1.
fn sign(op: Option<&Operand>) -> Option<f64> {
    match op {
        Some(Operand::Imm(1)) => Some(1.0),
        Some(Operand::Imm(v)) if *v as i64 == -1 => Some(-1.0),
        _ => None,
    }
}

/// `imm-trans-a`/`-b`: 0 (K-major) or 1 (MN-major).
fn flag(op: Option<&Operand>) -> Option<bool> {
    match op {
        Some(Operand::Imm(0)) => Some(false),
        Some(Operand::Imm(1)) => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_fields_and_swizzled_addresses() {
        // start 0x400, LBO 16, SBO 1024, 128-byte swizzle.
        let bits = (0x400 >> 4) | (1 << 16) | ((1024u64 >> 4) << 32) | (1 << 62);
        let d = Descriptor::decode(bits).expect("base offset 0");
        assert_eq!((d.start, d.lbo, d.sbo, d.width), (0x400, 16, 1024, 128));
        // Row 1 of a K-major 128-byte-swizzled tile: its first 16-byte chunk moves to chunk 1.
        assert_eq!(d.address(1, 0, false), 0x400 + 128 + 16);
        // k = 8 is the second chunk of row 0 (not moved in row 0).
        assert_eq!(d.address(0, 8, false), 0x400 + 16);
        assert_eq!(Descriptor::decode(bits | (3 << 49)), Err(3));
    }
}
