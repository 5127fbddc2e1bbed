//! Executing one instruction for the lanes of a warp: the guard predicate, control flow
//! (branches, exits, barriers), `cvta`, register packing and the ALU here; every other family
//! handed to the file that holds it.

use super::{lanes, unsupported, Cta, State, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW};
use crate::emu::alu;
use crate::emu::inst::*;
use crate::emu::EmuError;

impl Cta<'_> {
    /// Executes instruction `i` for the lanes of `mask` (warp starting at thread `lo`).
    pub(super) fn step(&mut self, lo: usize, i: usize, mask: u32) -> Result<(), EmuError> {
        let e = self.e;
        let inst = &e.insts[i];
        let mut active = mask;
        if let Some((g, neg)) = inst.guard {
            for t in lanes(mask, lo) {
                if (self.reg(t, g) != 0) == neg {
                    active &= !(1 << (t - lo));
                }
            }
        }
        self.count += u64::from(active.count_ones());
        let next = (i + 1) as u32;
        match inst.op {
            Op::Bra => {
                let target = match inst.args.first() {
                    Some(Operand::Label(l)) => *l,
                    _ => return Err(unsupported(inst)),
                };
                for t in lanes(mask, lo) {
                    self.pc[t] = if active & (1 << (t - lo)) != 0 {
                        target
                    } else {
                        next
                    };
                }
                return Ok(());
            }
            Op::Ret | Op::Exit => {
                for t in lanes(mask, lo) {
                    if active & (1 << (t - lo)) != 0 {
                        self.st[t] = State::Done;
                    } else {
                        self.pc[t] = next;
                    }
                }
                return Ok(());
            }
            Op::Bar if !inst.text.contains("warp") && !inst.text.contains("arrive") => {
                for t in lanes(mask, lo) {
                    self.pc[t] = next;
                    if active & (1 << (t - lo)) != 0 {
                        self.st[t] = State::Bar;
                        self.bar_at = Some(i);
                    }
                }
                return Ok(());
            }
            Op::BarRed => {
                self.bar_red(lo, i, mask, active);
                return Ok(());
            }
            Op::CpAsyncGroup | Op::CpAsyncArrive => self.track_copies(lo, i, active)?,
            Op::Bar | Op::Membar | Op::Nop => {}
            Op::Shfl => self.shfl(lo, i, active)?,
            Op::Mma => self.mma(lo, i, active)?,
            Op::Ldmatrix => self.ldmatrix(lo, i, active)?,
            Op::Wgmma => self.wgmma(lo, i, active)?,
            Op::CpAsync => {
                for t in lanes(active, lo) {
                    self.cp_async(t, i)?;
                }
            }
            Op::Mbarrier => {
                let park = self.mbarrier(lo, i, active)?;
                for t in lanes(mask, lo) {
                    self.pc[t] = next;
                }
                for t in lanes(park, lo) {
                    self.st[t] = State::Wait;
                }
                return Ok(());
            }
            Op::BulkTensor => {
                for t in lanes(active, lo) {
                    self.bulk_tensor(t, i)?;
                }
            }
            Op::PrefetchTensorMap => {
                for t in lanes(active, lo) {
                    self.prefetch_tensor_map(t, i)?;
                }
            }
            Op::Vote | Op::Activemask | Op::Redux => self.vote(lo, i, active)?,
            Op::Ld | Op::Ldu | Op::St | Op::Atom | Op::Red => {
                for t in lanes(active, lo) {
                    self.memory_op(t, i)?;
                }
            }
            Op::Cvta => {
                for t in lanes(active, lo) {
                    let v = self.read(t, &inst.args[1], inst.ty);
                    let r = match (inst.mods.to, inst.mods.space) {
                        (false, Some(Space::Shared)) => SHARED_WINDOW.wrapping_add(v),
                        (false, Some(Space::Local)) => LOCAL_WINDOW.wrapping_add(v),
                        (true, Some(Space::Shared)) => v.wrapping_sub(SHARED_WINDOW),
                        (true, Some(Space::Local)) => v.wrapping_sub(LOCAL_WINDOW),
                        (false, Some(Space::Param)) => PARAM_WINDOW.wrapping_add(v),
                        (true, Some(Space::Param)) => v.wrapping_sub(PARAM_WINDOW),
                        _ => v,
                    };
                    let r = alu::mask(r, inst.ty.bits());
                    self.set(t, &inst.args[0], r);
                }
            }
            Op::Mov
                if matches!(inst.args.get(1), Some(Operand::Vec(_)))
                    || matches!(inst.args.first(), Some(Operand::Vec(_))) =>
            {
                self.pack(lo, i, active);
            }
            _ => {
                if let Some(note) = alu::approx_note(inst) {
                    self.approx.insert(note);
                }
                let srcs = &inst.args[1.min(inst.args.len())..];
                let mut vals = [0u64; 4];
                for t in lanes(active, lo) {
                    for (k, s) in srcs.iter().take(4).enumerate() {
                        let ty = if k == 2 && matches!(inst.op, Op::Selp | Op::Setp) {
                            Ty::Pred
                        } else {
                            inst.ty
                        };
                        vals[k] = self.read(t, s, ty);
                    }
                    let r = alu::eval(inst, &vals[..srcs.len().min(4)])
                        .ok_or_else(|| unsupported(inst))?;
                    self.set(t, &inst.args[0], r);
                }
            }
        }
        for t in lanes(mask, lo) {
            self.pc[t] = next;
        }
        Ok(())
    }

    /// `mov` that packs several registers into one or unpacks one into several.
    fn pack(&mut self, lo: usize, i: usize, active: u32) {
        let inst = &self.e.insts[i];
        let total = inst.ty.bits();
        for t in lanes(active, lo) {
            match (&inst.args[0], &inst.args[1]) {
                (d, Operand::Vec(parts)) => {
                    let w = total / parts.len() as u32;
                    let mut v = 0u64;
                    for (k, p) in parts.iter().enumerate() {
                        v |= alu::mask(self.read(t, p, inst.ty), w) << (w * k as u32);
                    }
                    self.set(t, d, v);
                }
                (Operand::Vec(parts), s) => {
                    let w = total / parts.len() as u32;
                    let v = self.read(t, s, inst.ty);
                    for (k, p) in parts.iter().enumerate() {
                        self.set(t, p, alu::mask(v >> (w * k as u32), w));
                    }
                }
                _ => {}
            }
        }
    }
}
