//! `cp.async`, the copy from global to shared memory that bypasses registers. The emulator
//! performs it when it is issued (`commit_group` and `wait_group` only track it, see
//! `async_arrive`), and checks it as what it is on the GPU: a global read and a shared-memory
//! write by the issuing thread (until an mbarrier tracks it), so a copy that lands in a buffer
//! other threads still read, with no barrier in between, is a race, and a copy from past a
//! buffer's end is out of bounds (unless its source size is 0).

use super::memory_ops::Where;
use super::{unsupported, Cta};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::EmuError;

impl Cta<'_> {
    /// `cp.async [dst], [src], cp-size[, src-size]`: copies at once, `src-size` bytes from
    /// global memory and zeros for the rest, checked as thread `t`'s global reads and
    /// shared-memory writes (so a copy into a buffer others still read is a race).
    pub(super) fn cp_async(&mut self, t: usize, i: usize) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        let (Some(Operand::Addr(db, doff)), Some(Operand::Addr(sb, soff)), Some(n)) =
            (inst.args.first(), inst.args.get(1), inst.args.get(2))
        else {
            return Err(unsupported(inst));
        };
        let (db, doff, sb, soff) = (*db, *doff, *sb, *soff);
        let n = self.read(t, n, Ty::U32);
        if !matches!(n, 4 | 8 | 16) {
            return Err(unsupported(inst));
        }
        let src_size = match inst.args.get(3) {
            Some(o @ (Operand::Reg(_) | Operand::Imm(_))) => {
                (self.read(t, o, Ty::U32) & 0xffff_ffff).min(n)
            }
            _ => n,
        };
        let (dspace, dst) = self.address(t, i, db, doff);
        let src = self.base(t, sb).wrapping_add(soff as u64);
        for (what, a) in [("shared-memory offset", dst), ("global address", src)] {
            if a % n != 0 {
                if self.wants(FindingKind::Misaligned, i) {
                    let msg = format!(
                        "cp.async of {n} bytes with {what} 0x{a:x}, which is not {n}-byte aligned"
                    );
                    self.report(FindingKind::Misaligned, i, t, msg);
                }
                return Ok(());
            }
        }
        if dspace != Where::Shared {
            if self.wants(FindingKind::OutOfBounds, i) {
                let msg = format!("cp.async destination 0x{dst:x} is not in shared memory");
                self.report(FindingKind::OutOfBounds, i, t, msg);
            }
            return Ok(());
        }
        // Word by word (the sizes are multiples of 4; src-size need not be).
        for w in (0..n).step_by(4) {
            let mut v = 0u64;
            if w < src_size {
                let keep = (src_size - w).min(4);
                if keep == 4 {
                    v = self.load(t, i, Where::Global, src + w, 4).unwrap_or(0);
                } else {
                    for b in 0..keep {
                        let byte = self.load(t, i, Where::Global, src + w + b, 1).unwrap_or(0);
                        v |= (byte & 0xff) << (8 * b);
                    }
                }
            }
            self.store(t, i, Where::Shared, dst + w, 4, v);
        }
        self.in_flight.record(t, dst, n);
        Ok(())
    }
}
