//! The warp-wide matrix instructions that tensor-core kernels are made of: `ldmatrix` (a warp
//! loads up to four 8x8 tiles of 16-bit values from shared memory, each lane receiving its
//! fragment) and `mma.sync.aligned.m16n8k16.row.col` (a warp multiplies a 16x16 tile by a 16x8
//! one and adds a 16x8 accumulator, every matrix spread across the lanes' registers). The
//! fragment layouts are the PTX ISA's: with `g = lane / 4` and `q = lane % 4`, lane `l` holds
//! A's rows `g`, `g + 8` at columns `2q`, `2q + 1` (and `+ 8`), B's rows `2q`, `2q + 1` (and
//! `+ 8`) at column `g`, and C's and D's rows `g`, `g + 8` at columns `2q`, `2q + 1`.
//!
//! Both are `.sync.aligned`: every lane of the warp must execute them together; when only some
//! do, that is a finding, and the missing lanes' values count as zero. `ldmatrix` reads go
//! through the same checks as any shared-memory load (bounds, alignment, initialisation,
//! races), each row charged to the lane that supplied its address.

use super::memory_ops::Where;
use super::{lanes, unsupported, Cta};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::EmuError;
use half::{bf16, f16};

const MMA_NOTE: &str = "mma.sync (tensor cores add the products in their own order and \
                        rounding; here in f64, rounded once to the accumulator type)";

impl Cta<'_> {
    /// Reports that `.sync.aligned` instruction `i` ran on only the lanes of `active`.
    pub(super) fn partial_warp(&mut self, lo: usize, i: usize, active: u32) {
        if active == u32::MAX || !self.wants(FindingKind::PartialWarp, i) {
            return;
        }
        let name = self.e.insts[i].text.to_string();
        let missing = (!active).trailing_zeros();
        let first = if active == 0 {
            lo
        } else {
            lo + active.trailing_zeros() as usize
        };
        let why = if lo + missing as usize >= self.n {
            "does not exist: the block is not a whole number of warps".to_string()
        } else {
            "did not execute it (diverged, exited or predicated off)".to_string()
        };
        let msg = format!(
            "{name} executed by {} of the warp's 32 lanes; it needs all of them, and lane {missing} {why}",
            active.count_ones()
        );
        self.report(FindingKind::PartialWarp, i, first, msg);
    }

    /// `ldmatrix`: lanes `8j .. 8j + 7` give the row addresses of tile `j`; lane `l` receives,
    /// in its `j`-th register, row `l / 4`, elements `2(l % 4)` and `2(l % 4) + 1` of tile `j`
    /// (of its transpose with `.trans`).
    pub(super) fn ldmatrix(&mut self, lo: usize, i: usize, active: u32) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        let tiles = usize::from(inst.mods.vec);
        let trans = inst.mods.trans;
        let dst: Vec<Operand> = match inst.args.first() {
            Some(Operand::Vec(v)) => v.clone(),
            Some(o @ Operand::Reg(_)) => vec![o.clone()],
            _ => return Err(unsupported(inst)),
        };
        let Some(Operand::Addr(base, off)) = inst.args.get(1).cloned() else {
            return Err(unsupported(inst));
        };
        if dst.len() != tiles || !matches!(tiles, 1 | 2 | 4) {
            return Err(unsupported(inst));
        }
        if active == 0 {
            return Ok(());
        }
        self.partial_warp(lo, i, active);
        // tile[j][row][col], each row read by the lane that gave its address.
        let mut tile = [[[0u16; 8]; 8]; 4];
        for (j, rows) in tile.iter_mut().enumerate().take(tiles) {
            for (r, row) in rows.iter_mut().enumerate() {
                let src = j * 8 + r;
                if active & (1 << src) == 0 {
                    continue;
                }
                let t = lo + src;
                let (space, addr) = self.address(t, i, base, off);
                if space != Where::Shared {
                    if self.wants(FindingKind::OutOfBounds, i) {
                        let msg = format!(
                            "ldmatrix row address 0x{addr:x} (from lane {src}) is not in shared memory"
                        );
                        self.report(FindingKind::OutOfBounds, i, t, msg);
                    }
                    continue;
                }
                if addr % 16 != 0 {
                    if self.wants(FindingKind::Misaligned, i) {
                        let msg = format!(
                            "ldmatrix row of 16 bytes at shared-memory offset {addr} (from lane {src}), which is not 16-byte aligned"
                        );
                        self.report(FindingKind::Misaligned, i, t, msg);
                    }
                    continue;
                }
                for (w, pair) in row.chunks_mut(2).enumerate() {
                    let v = self.load(t, i, space, addr + 4 * w as u64, 4).unwrap_or(0);
                    pair[0] = v as u16;
                    pair[1] = (v >> 16) as u16;
                }
            }
        }
        for t in lanes(active, lo) {
            let l = t - lo;
            let (r, c) = (l / 4, 2 * (l % 4));
            for (j, d) in dst.iter().enumerate() {
                let m = &tile[j];
                let (x, y) = if trans {
                    (m[c][r], m[c + 1][r])
                } else {
                    (m[r][c], m[r][c + 1])
                };
                self.set(t, d, u64::from(x) | (u64::from(y) << 16));
            }
        }
        Ok(())
    }

    /// `mma.sync.aligned.m16n8k16.row.col`: D = A·B + C for the warp, summed in f64 and
    /// rounded once to D's type.
    pub(super) fn mma(&mut self, lo: usize, i: usize, active: u32) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        let (d_ty, c_ty) = (inst.ty, inst.mods.c_ty.unwrap_or(inst.ty));
        let ab_ty = inst.mods.src_ty.unwrap_or(Ty::F16);
        let regs = |ty: Ty| if ty == Ty::F32 { 4 } else { 2 };
        let vec = |k: usize| match inst.args.get(k) {
            Some(Operand::Vec(v)) => Some(v.clone()),
            _ => None,
        };
        let (Some(d), Some(a), Some(b), Some(c)) = (vec(0), vec(1), vec(2), vec(3)) else {
            return Err(unsupported(inst));
        };
        if d.len() != regs(d_ty) || a.len() != 4 || b.len() != 2 || c.len() != regs(c_ty) {
            return Err(unsupported(inst));
        }
        if active == 0 {
            return Ok(());
        }
        self.approx.insert(MMA_NOTE);
        self.partial_warp(lo, i, active);
        let half = |bits: u64| match ab_ty {
            Ty::Bf16 => bf16::from_bits(bits as u16).to_f64(),
            _ => f16::from_bits(bits as u16).to_f64(),
        };
        let mut am = [[0f64; 16]; 16];
        let mut bm = [[0f64; 8]; 16];
        let mut cm = [[0f64; 8]; 16];
        for t in lanes(active, lo) {
            let l = t - lo;
            let (g, q) = (l / 4, l % 4);
            for (k, op) in a.iter().enumerate() {
                let v = self.read(t, op, Ty::B32);
                let row = g + 8 * (k % 2);
                let col = 2 * q + 8 * (k / 2);
                am[row][col] = half(v & 0xffff);
                am[row][col + 1] = half((v >> 16) & 0xffff);
            }
            for (k, op) in b.iter().enumerate() {
                let v = self.read(t, op, Ty::B32);
                let row = 2 * q + 8 * k;
                bm[row][g] = half(v & 0xffff);
                bm[row + 1][g] = half((v >> 16) & 0xffff);
            }
            for e in 0..4 {
                let (row, col) = (g + 8 * (e / 2), 2 * q + e % 2);
                cm[row][col] = if c_ty == Ty::F32 {
                    let v = self.read(t, &c[e], Ty::F32);
                    f64::from(f32::from_bits(v as u32))
                } else {
                    let v = self.read(t, &c[e / 2], Ty::B32);
                    f16::from_bits((v >> (16 * (e % 2))) as u16).to_f64()
                };
            }
        }
        let mut dm = [[0f64; 8]; 16];
        for (r, drow) in dm.iter_mut().enumerate() {
            for (col, out) in drow.iter_mut().enumerate() {
                let mut s = cm[r][col];
                for (k, arow) in am[r].iter().enumerate() {
                    s += arow * bm[k][col];
                }
                *out = s;
            }
        }
        for t in lanes(active, lo) {
            let l = t - lo;
            let (g, q) = (l / 4, l % 4);
            let at = |e: usize| dm[g + 8 * (e / 2)][2 * q + e % 2];
            if d_ty == Ty::F32 {
                for (e, op) in d.iter().enumerate() {
                    self.set(t, op, u64::from((at(e) as f32).to_bits()));
                }
            } else {
                for (k, op) in d.iter().enumerate() {
                    let lo16 = f16::from_f64(at(2 * k)).to_bits();
                    let hi16 = f16::from_f64(at(2 * k + 1)).to_bits();
                    self.set(t, op, u64::from(lo16) | (u64::from(hi16) << 16));
                }
            }
        }
        Ok(())
    }
}
