//! TMA loads: `cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes
//! [dst], [map, {c0, …}], [bar]` copies one box of the tensor a map describes into shared
//! memory and counts its bytes as a transaction done on the mbarrier. The emulator copies when
//! the copy is issued, as it does `cp.async`: for each element of the box (innermost dimension
//! first), the element at coordinates c + box index, or zero where that lies outside the tensor,
//! is written at the next shared-memory offset, swizzled as the map says (the 16-byte chunk
//! index XORed with the address bits 7 and up, as `wgmma` reads it).
//!
//! The map is kwb's own encoding ([`TensorMap`]), read from the parameter space (a
//! `__grid_constant__` parameter, through `cvta.param`) or from global memory; anything else is
//! an error naming the PTX line. Global reads are checked as the issuing thread's (bounds,
//! initialisation); the shared-memory writes are the copy's, which threads that waited on the
//! barrier's phase read without a race.

use super::memory_ops::Where;
use super::{unsupported, Cta, PARAM_WINDOW};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::tensor_map::{swizzle, TensorMap};
use crate::emu::EmuError;

impl Cta<'_> {
    /// The tensor map at the address operand `op` of instruction `i`, for thread `t`.
    pub(super) fn tensor_map(
        &self,
        t: usize,
        i: usize,
        op: &Operand,
    ) -> Result<TensorMap, EmuError> {
        let inst = &self.e.insts[i];
        let &Operand::Addr(base, off) = op else {
            return Err(unsupported(inst));
        };
        let a = self.base(t, base).wrapping_add(off as u64);
        let param = match base {
            Base::Param(_) => Some(a),
            _ => a.checked_sub(PARAM_WINDOW).filter(|&o| o < 1 << 32),
        };
        let (place, bytes) = match param {
            Some(o) => (
                format!("parameter offset {o}"),
                (self.params.get(o as usize..o as usize + 128)).map(<[u8]>::to_vec),
            ),
            None => (
                format!("address 0x{a:x}"),
                (0..16)
                    .map(|w| self.mem.load(a + 8 * w, 8).ok().map(|(v, _)| v))
                    .collect::<Option<Vec<u64>>>()
                    .map(|ws| ws.iter().flat_map(|w| w.to_le_bytes()).collect()),
            ),
        };
        let fail = |message: String| EmuError::TensorMap {
            message,
            ptx_line: inst.line,
        };
        let map = bytes
            .as_deref()
            .and_then(TensorMap::from_bytes)
            .ok_or_else(|| {
                fail(format!(
                    "`{}` names a tensor map at {place} that is not one kwb encoded \
                 (the CPU runtime passes kwb::emu::TensorMap::to_bytes())",
                    inst.text
                ))
            })?;
        map.check()
            .map_err(|m| fail(format!("the tensor map at {place} is invalid: {m}")))?;
        Ok(map)
    }

    /// `prefetch.tensormap [map]`: the map must be valid; nothing else happens.
    pub(super) fn prefetch_tensor_map(&mut self, t: usize, i: usize) -> Result<(), EmuError> {
        let op = self.e.insts[i]
            .args
            .first()
            .cloned()
            .unwrap_or(Operand::Sink);
        self.tensor_map(t, i, &op).map(|_| ())
    }

    /// `cp.async.bulk.tensor` by thread `t`: copies the box at once, then completes its bytes
    /// on the barrier.
    pub(super) fn bulk_tensor(&mut self, t: usize, i: usize) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        let rank = usize::from(inst.mods.vec);
        let (Some(&Operand::Addr(db, doff)), Some(Operand::Vec(src)), Some(bar)) =
            (inst.args.first(), inst.args.get(1), inst.args.get(2))
        else {
            return Err(unsupported(inst));
        };
        let (Some(map_op), Some(Operand::Vec(coords))) = (src.first(), src.get(1)) else {
            return Err(unsupported(inst));
        };
        if coords.len() != rank || src.len() != 2 {
            return Err(unsupported(inst));
        }
        let map = self.tensor_map(t, i, map_op)?;
        if map.rank() != rank {
            return Err(EmuError::TensorMap {
                message: format!("a .{rank}d copy with a tensor map of rank {}", map.rank()),
                ptx_line: inst.line,
            });
        }
        let c: Vec<i64> = (coords.iter())
            .map(|o| self.read(t, o, Ty::S32) as u32 as i32 as i64)
            .collect();
        let bar = bar.clone();
        let Some(bar) = self.barrier_at(t, i, &bar) else {
            return Ok(());
        };
        let (space, dst) = self.address(t, i, db, doff);
        let repeat = 8 * u64::from(map.swizzle).max(16);
        if space != Where::Shared || dst % repeat != 0 {
            if self.wants(FindingKind::Misaligned, i) {
                let msg = format!(
                    "bulk tensor copy to 0x{dst:x}, which is not {repeat}-byte aligned shared memory{}",
                    if map.swizzle > 0 { format!(" (the {}-byte swizzle repeats every {repeat} bytes)", map.swizzle) } else { String::new() }
                );
                self.report(FindingKind::Misaligned, i, t, msg);
            }
            return Ok(());
        }
        let writer = self.copy_writer(t, i, bar);
        let elem = u64::from(map.elem_bytes);
        let total = map.box_bytes() / elem;
        let mut idx = vec![0u64; rank];
        for n in 0..total {
            let mut inside = true;
            let mut addr = map.address;
            for k in 0..rank {
                let g = c[k] + idx[k] as i64;
                inside &= g >= 0 && (g as u64) < map.dims[k];
                let stride = if k == 0 { elem } else { map.strides[k - 1] };
                addr = addr.wrapping_add((g as u64).wrapping_mul(stride));
            }
            let v = if inside {
                self.load(t, i, Where::Global, addr, elem).unwrap_or(0)
            } else {
                0
            };
            let at = swizzle(dst + n * elem, map.swizzle);
            self.store_shared_as(t, writer, i, at, elem, v);
            // The next box index, innermost first.
            for (x, &d) in idx.iter_mut().zip(&map.box_dims) {
                *x += 1;
                if *x < u64::from(d) {
                    break;
                }
                *x = 0;
            }
        }
        self.complete_tx(bar, map.box_bytes());
        Ok(())
    }
}
