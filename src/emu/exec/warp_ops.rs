//! Warp-collective instructions: `shfl.sync`, `vote.sync`, `activemask`, `redux.sync`. Each
//! checks its member mask: a lane that executes the instruction but is missing from the mask,
//! or a lane the mask names that did not reach it, is a finding.

use super::{lanes, unsupported, Cta};
use crate::emu::alu::{mask, sext};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::EmuError;

impl Cta<'_> {
    /// Checks `membermask` against the lanes that execute: returns false if a finding was made.
    fn check_mask(&mut self, lo: usize, i: usize, active: u32, member: u32) {
        let outside = active & !member;
        if outside != 0 && self.wants(FindingKind::ShuffleMask, i) {
            let lane = outside.trailing_zeros();
            let name = self.e.insts[i].text.to_string();
            let msg = format!(
                "lane {lane} executes {name} but is not in its member mask 0x{member:08x} ({} lanes execute it, {} are named)",
                active.count_ones(),
                member.count_ones()
            );
            self.report(FindingKind::ShuffleMask, i, lo + lane as usize, msg);
        }
        // Lanes named in the mask that exist but did not execute it with the others.
        let exists = if lo + 32 <= self.n {
            u32::MAX
        } else {
            (1u32 << (self.n - lo)) - 1
        };
        let missing = member & exists & !active;
        if missing != 0 && active != 0 && self.wants(FindingKind::ShuffleMask, i) {
            let lane = missing.trailing_zeros();
            let name = self.e.insts[i].text.to_string();
            let first = lo + active.trailing_zeros() as usize;
            let msg = format!(
                "{name} names lane {lane} in its member mask 0x{member:08x}, but lane {lane} did not execute it (diverged or exited)"
            );
            self.report(FindingKind::ShuffleMask, i, first, msg);
        }
    }

    pub(super) fn shfl(&mut self, lo: usize, i: usize, active: u32) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        if inst.args.len() < 5 {
            return Err(unsupported(inst));
        }
        let (d, a, b, c, m) = (
            inst.args[0].clone(),
            inst.args[1].clone(),
            inst.args[2].clone(),
            inst.args[3].clone(),
            inst.args[4].clone(),
        );
        let mode = inst.mods.sub;
        if active == 0 {
            return Ok(());
        }
        let first = lo + active.trailing_zeros() as usize;
        let member = self.read(first, &m, Ty::B32) as u32;
        self.check_mask(lo, i, active, member);
        let mut src = [0u64; 32];
        for (l, s) in src.iter_mut().enumerate() {
            if lo + l < self.n {
                *s = self.read(lo + l, &a, Ty::B32);
            }
        }
        for t in lanes(active, lo) {
            let lane = (t - lo) as u32;
            let bval = self.read(t, &b, Ty::B32) as u32 & 31;
            let cval = self.read(t, &c, Ty::B32) as u32;
            let seg = (cval >> 8) & 31;
            let clamp = cval & 31;
            let max_lane = (lane & seg) | (clamp & !seg);
            let min_lane = lane & seg;
            let (j, ok) = match mode {
                SHFL_UP => {
                    let j = lane as i32 - bval as i32;
                    (j, j >= max_lane as i32)
                }
                SHFL_DOWN => {
                    let j = (lane + bval) as i32;
                    (j, j <= max_lane as i32)
                }
                SHFL_BFLY => {
                    let j = (lane ^ bval) as i32;
                    (j, j <= max_lane as i32)
                }
                _ => {
                    let j = (min_lane | (bval & !seg)) as i32;
                    (j, j <= max_lane as i32)
                }
            };
            let j = if ok && (0..32).contains(&j) {
                j as usize
            } else {
                lane as usize
            };
            self.set(t, &d, src[j]);
        }
        Ok(())
    }

    pub(super) fn vote(&mut self, lo: usize, i: usize, active: u32) -> Result<(), EmuError> {
        let inst = self.e.insts[i].clone();
        if active == 0 {
            return Ok(());
        }
        let first = lo + active.trailing_zeros() as usize;
        match inst.op {
            Op::Activemask => {
                for t in lanes(active, lo) {
                    self.set(t, &inst.args[0], u64::from(active));
                }
            }
            Op::Vote => {
                let member = inst
                    .args
                    .get(2)
                    .map_or(u32::MAX, |m| self.read(first, m, Ty::B32) as u32);
                self.check_mask(lo, i, active, member);
                let mut ballot = 0u32;
                for t in lanes(active, lo) {
                    if self.read(t, &inst.args[1], Ty::Pred) != 0 {
                        ballot |= 1 << (t - lo);
                    }
                }
                let v = match inst.mods.sub {
                    VOTE_ALL => u64::from(ballot == active),
                    VOTE_ANY => u64::from(ballot != 0),
                    VOTE_UNI => u64::from(ballot == 0 || ballot == active),
                    _ => u64::from(ballot),
                };
                for t in lanes(active, lo) {
                    self.set(t, &inst.args[0], v);
                }
            }
            _ => {
                let member = inst
                    .args
                    .get(2)
                    .map_or(u32::MAX, |m| self.read(first, m, Ty::B32) as u32);
                self.check_mask(lo, i, active, member);
                let bits = inst.ty.bits();
                let vals: Vec<u64> = lanes(active, lo)
                    .map(|t| mask(self.read(t, &inst.args[1], inst.ty), bits))
                    .collect();
                let r = vals.iter().copied().reduce(|x, y| match inst.mods.sub {
                    ATOM_ADD => mask(x.wrapping_add(y), bits),
                    ATOM_AND => x & y,
                    ATOM_OR => x | y,
                    ATOM_XOR => x ^ y,
                    ATOM_MIN | ATOM_MAX => {
                        let less = if inst.ty.signed() {
                            sext(y, bits) < sext(x, bits)
                        } else {
                            y < x
                        };
                        if (inst.mods.sub == ATOM_MIN) == less {
                            y
                        } else {
                            x
                        }
                    }
                    _ => x,
                });
                for t in lanes(active, lo) {
                    self.set(t, &inst.args[0], r.unwrap_or(0));
                }
            }
        }
        Ok(())
    }
}
