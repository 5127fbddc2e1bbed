//! Loads, stores and atomics of one thread, with the checks on each access: bounds (and red
//! zones) in global, shared and local memory, alignment, reads of bytes never written, and
//! races between the threads of a CTA within one barrier interval.

use super::mbarrier::async_writer;
use super::{unsupported, Cta, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW};
use crate::emu::alu::{mask, sext};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::{EmuError, SymbolKind};

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Where {
    Global,
    Shared,
    Local,
    Param,
    Const,
}

impl Cta<'_> {
    /// The space and address instruction `i`'s address operand `[base + off]` names for thread
    /// `t`: its state space, or for a generic address, the window it falls in.
    pub(super) fn address(&self, t: usize, i: usize, base: Base, off: i64) -> (Where, u64) {
        let inst = &self.e.insts[i];
        let addr = self.base(t, base).wrapping_add(off as u64);
        let space = match (inst.mods.space, base) {
            (Some(Space::Param), _) | (None, Base::Param(_)) => Where::Param,
            (Some(Space::Shared), _) => Where::Shared,
            (Some(Space::Local), _) => Where::Local,
            (Some(Space::Const), _) => Where::Const,
            (Some(Space::Global), _) => Where::Global,
            (None, Base::Sym(s)) => match self.e.symbols[s as usize].kind {
                SymbolKind::Shared => Where::Shared,
                SymbolKind::Local => Where::Local,
                SymbolKind::Const => Where::Const,
                SymbolKind::Global => Where::Global,
            },
            _ => Where::Global,
        };
        // Generic addresses into the shared and local windows.
        match space {
            Where::Global if (SHARED_WINDOW..LOCAL_WINDOW).contains(&addr) => {
                (Where::Shared, addr - SHARED_WINDOW)
            }
            Where::Global if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 32)).contains(&addr) => {
                (Where::Local, addr - LOCAL_WINDOW)
            }
            Where::Global if (PARAM_WINDOW..PARAM_WINDOW + (1 << 32)).contains(&addr) => {
                (Where::Param, addr - PARAM_WINDOW)
            }
            s => (s, addr),
        }
    }

    pub(super) fn memory_op(&mut self, t: usize, i: usize) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        let (addr_arg, data_arg) = match inst.op {
            Op::St | Op::Red => (0, 1),
            _ => (1, 0),
        };
        let Some(Operand::Addr(base, off)) = inst.args.get(addr_arg) else {
            return Err(unsupported(inst));
        };
        let (space, addr) = self.address(t, i, *base, *off);
        let size = u64::from(inst.ty.bytes());
        let n = u64::from(inst.mods.vec.max(1));
        if matches!(inst.op, Op::Atom | Op::Red) {
            return self.atomic(t, i, space, addr);
        }
        let write = inst.op == Op::St;
        if addr % (size * n) != 0 && space != Where::Param {
            if self.wants(FindingKind::Misaligned, i) {
                let what = if write { "write" } else { "read" };
                let msg = format!(
                    "{what} of {} bytes at address 0x{addr:x}, which is not {}-byte aligned",
                    size * n,
                    size * n
                );
                self.report(FindingKind::Misaligned, i, t, msg);
            }
            return Ok(());
        }
        let elems: Vec<Operand> = match inst.args.get(data_arg) {
            Some(Operand::Vec(v)) => v.clone(),
            Some(o) => vec![o.clone()],
            None => return Err(unsupported(inst)),
        };
        for (k, el) in elems.iter().enumerate() {
            let a = addr + k as u64 * size;
            if write {
                let v = self.read(t, el, inst.ty);
                self.store(t, i, space, a, size, v);
            } else if let Some(v) = self.load(t, i, space, a, size) {
                let v = if inst.ty.signed() && size < 8 {
                    mask(sext(v, inst.ty.bits()) as u64, 32.max(inst.ty.bits()))
                } else {
                    v
                };
                if !matches!(el, Operand::Sink) {
                    self.set(t, el, v);
                }
            } else if !matches!(el, Operand::Sink) {
                self.set(t, el, 0);
            }
        }
        Ok(())
    }

    fn out_of_bounds(&mut self, t: usize, i: usize, write: bool, size: u64, what: String) {
        if self.wants(FindingKind::OutOfBounds, i) {
            let verb = if write { "write" } else { "read" };
            let msg = format!("{verb} of {size} bytes at {what}");
            self.report(FindingKind::OutOfBounds, i, t, msg);
        }
    }

    fn race(&mut self, t: usize, i: usize, kind: FindingKind, key: u64, size: u64, write: bool) {
        self.race_by(t, t as u32, i, kind, key, size, write);
    }

    /// Records an access to `size` bytes at `key` made for thread `t` by `who` (the thread, or
    /// a bulk copy it issued), and reports a race with another thread or copy, unless `t` has
    /// seen that copy complete.
    #[allow(clippy::too_many_arguments)]
    fn race_by(
        &mut self,
        t: usize,
        who: u32,
        i: usize,
        kind: FindingKind,
        key: u64,
        size: u64,
        write: bool,
    ) {
        let epoch = self.epoch;
        // The bytes of the 4-byte word the access covers (8-byte accesses: both words).
        let mut other = None;
        let mut a = key;
        while a < key + size {
            let bytes = (((1u32 << (size.min(4 - a % 4))) - 1) << (a % 4)) as u8;
            let o = match kind {
                FindingKind::SharedRace => match self.sh_shadow.get_mut((a / 4) as usize) {
                    Some(s) => s.access(who, epoch, write, bytes),
                    None => None,
                },
                _ => self
                    .gshadow
                    .entry(a / 4)
                    .or_default()
                    .access(who, epoch, write, bytes),
            };
            other = other.or(o.filter(|&o| !self.mbars.has_seen(t, o)));
            a = (a / 4 + 1) * 4;
        }
        if let Some(o) = other {
            if self.wants(kind, i) {
                let who = if o == u32::MAX {
                    "other threads".to_string()
                } else if let Some(copy) = async_writer(&self.mbars, o) {
                    copy
                } else {
                    format!("thread {:?}", self.coords(o as usize))
                };
                let space = if kind == FindingKind::SharedRace {
                    "shared"
                } else {
                    "global"
                };
                let verb = if write { "writes" } else { "reads" };
                let msg = format!(
                    "{verb} {space} memory at {}0x{key:x} that {who} accessed with no barrier in between",
                    if kind == FindingKind::SharedRace { "offset " } else { "" }
                );
                self.report(kind, i, t, msg);
            }
        }
    }

    pub(super) fn load(
        &mut self,
        t: usize,
        i: usize,
        space: Where,
        a: u64,
        size: u64,
    ) -> Option<u64> {
        match space {
            Where::Param => {
                let a = a as usize;
                let b = self.params.get(a..a + size as usize)?;
                let mut w = [0u8; 8];
                w[..b.len()].copy_from_slice(b);
                Some(u64::from_le_bytes(w))
            }
            Where::Shared => {
                let len = self.shared.len() as u64;
                if a + size > len {
                    let what = format!("shared-memory offset {a}, past the {len} bytes of this block's shared memory");
                    self.out_of_bounds(t, i, false, size, what);
                    return None;
                }
                let unwritten = (a..a + size)
                    .any(|b| self.sh_written[(b / 64) as usize] & (1 << (b % 64)) == 0);
                if unwritten && self.wants(FindingKind::UninitShared, i) {
                    let msg = format!("read of {size} bytes of shared memory at offset {a} that no thread has written since the launch");
                    self.report(FindingKind::UninitShared, i, t, msg);
                }
                self.race(t, i, FindingKind::SharedRace, a, size, false);
                let mut w = [0u8; 8];
                w[..size as usize].copy_from_slice(&self.shared[a as usize..(a + size) as usize]);
                Some(u64::from_le_bytes(w))
            }
            Where::Local => {
                let frame = u64::from(self.e.local_bytes);
                if a + size > frame {
                    if self.wants(FindingKind::LocalOverflow, i) {
                        let msg = format!("read of {size} bytes at local offset {a}, past the thread's {frame}-byte stack frame");
                        self.report(FindingKind::LocalOverflow, i, t, msg);
                    }
                    return None;
                }
                let o = t * frame as usize + a as usize;
                let mut w = [0u8; 8];
                w[..size as usize].copy_from_slice(&self.local[o..o + size as usize]);
                Some(u64::from_le_bytes(w))
            }
            Where::Const => {
                let s = self
                    .e
                    .symbols
                    .iter()
                    .find(|s| s.kind == SymbolKind::Const)?;
                let a = a as usize;
                let b = s.init.get(a..a + size as usize)?;
                let mut w = [0u8; 8];
                w[..b.len()].copy_from_slice(b);
                Some(u64::from_le_bytes(w))
            }
            Where::Global => match self.mem.load(a, size) {
                Ok((v, uninit)) => {
                    if uninit && self.wants(FindingKind::UninitGlobal, i) {
                        let msg = format!("read of {size} bytes at 0x{a:x} of a buffer that starts uninitialised, before anything wrote them");
                        self.report(FindingKind::UninitGlobal, i, t, msg);
                    }
                    self.race(t, i, FindingKind::GlobalRace, a, size, false);
                    Some(v)
                }
                Err(miss) => {
                    self.out_of_bounds(t, i, false, size, miss.0);
                    None
                }
            },
        }
    }

    pub(super) fn store(&mut self, t: usize, i: usize, space: Where, a: u64, size: u64, v: u64) {
        match space {
            Where::Shared => self.store_shared_as(t, t as u32, i, a, size, v),
            Where::Local => {
                let frame = u64::from(self.e.local_bytes);
                if a + size > frame {
                    if self.wants(FindingKind::LocalOverflow, i) {
                        let msg = format!("write of {size} bytes at local offset {a}, past the thread's {frame}-byte stack frame");
                        self.report(FindingKind::LocalOverflow, i, t, msg);
                    }
                    return;
                }
                let o = t * frame as usize + a as usize;
                self.local[o..o + size as usize].copy_from_slice(&v.to_le_bytes()[..size as usize]);
            }
            Where::Global => {
                if let Err(miss) = self.mem.store(a, size, v) {
                    self.out_of_bounds(t, i, true, size, miss.0);
                } else {
                    self.race(t, i, FindingKind::GlobalRace, a, size, true);
                }
            }
            Where::Param | Where::Const => {}
        }
    }

    /// A shared-memory write for thread `t` by `who` (the thread, or a bulk copy it issued).
    pub(super) fn store_shared_as(
        &mut self,
        t: usize,
        who: u32,
        i: usize,
        a: u64,
        size: u64,
        v: u64,
    ) {
        let len = self.shared.len() as u64;
        if a + size > len {
            let what = format!(
                "shared-memory offset {a}, past the {len} bytes of this block's shared memory"
            );
            self.out_of_bounds(t, i, true, size, what);
            return;
        }
        self.race_by(t, who, i, FindingKind::SharedRace, a, size, true);
        self.shared[a as usize..(a + size) as usize]
            .copy_from_slice(&v.to_le_bytes()[..size as usize]);
        for b in a..a + size {
            self.sh_written[(b / 64) as usize] |= 1 << (b % 64);
        }
    }

    /// `atom`/`red`, scalar or a vector (`.v2`/`.v4`/`.v8`, global memory: one read-modify-write
    /// per lane, lane `k` at `a + k * size`).
    fn atomic(&mut self, t: usize, i: usize, space: Where, a: u64) -> Result<(), EmuError> {
        let inst = &self.e.insts[i];
        let ty = inst.ty;
        let size = u64::from(ty.bytes());
        let n = u64::from(inst.mods.vec.max(1));
        let (dst, b_arg, c_arg) = if inst.op == Op::Red {
            (None, 1, 2)
        } else {
            (Some(0), 2, 3)
        };
        let lanes = |k: usize| -> Vec<Option<Operand>> {
            (0..n as usize)
                .map(|j| match inst.args.get(k) {
                    Some(Operand::Vec(v)) => v.get(j).cloned(),
                    Some(o) if n == 1 => Some(o.clone()),
                    _ => None,
                })
                .collect()
        };
        let (bs, cs, ds) = (lanes(b_arg), lanes(c_arg), dst.map(lanes));
        let sub = inst.mods.sub;
        if sub > ATOM_DEC || (n > 1 && (bs.iter().any(Option::is_none) || space != Where::Global)) {
            return Err(unsupported(inst));
        }
        if !a.is_multiple_of(size * n) {
            if self.wants(FindingKind::Misaligned, i) {
                let bytes = size * n;
                let msg = format!(
                    "atomic on {bytes} bytes at 0x{a:x}, which is not {bytes}-byte aligned"
                );
                self.report(FindingKind::Misaligned, i, t, msg);
            }
            return Ok(());
        }
        for k in 0..n as usize {
            let read = |o: &Option<Operand>| o.as_ref().map_or(0, |o| self.read(t, o, ty));
            let (b, c) = (read(&bs[k]), read(&cs[k]));
            let at = a + k as u64 * size;
            let Some(old) = self.atomic_lane(t, i, space, at, size, &move |old| {
                atom_apply(sub, ty, old, b, c)
            }) else {
                return Ok(());
            };
            if let Some(Some(d)) = ds.as_ref().map(|d| d[k].clone()) {
                if !matches!(d, Operand::Sink) {
                    self.set(t, &d, old);
                }
            }
        }
        Ok(())
    }

    /// One read-modify-write of `size` bytes at `a`: the old value, or None after reporting an
    /// access out of bounds.
    fn atomic_lane(
        &mut self,
        t: usize,
        i: usize,
        space: Where,
        a: u64,
        size: u64,
        f: &dyn Fn(u64) -> u64,
    ) -> Option<u64> {
        match space {
            Where::Shared => {
                let len = self.shared.len() as u64;
                if a + size > len {
                    let what = format!("shared-memory offset {a}, past the {len} bytes of this block's shared memory");
                    self.out_of_bounds(t, i, true, size, what);
                    return None;
                }
                let mut w = [0u8; 8];
                w[..size as usize].copy_from_slice(&self.shared[a as usize..(a + size) as usize]);
                let old = u64::from_le_bytes(w);
                let new = f(old);
                self.shared[a as usize..(a + size) as usize]
                    .copy_from_slice(&new.to_le_bytes()[..size as usize]);
                for x in a..a + size {
                    self.sh_written[(x / 64) as usize] |= 1 << (x % 64);
                }
                Some(old)
            }
            Where::Global => match self.mem.rmw(a, size, f) {
                Ok(old) => Some(old),
                Err(miss) => {
                    self.out_of_bounds(t, i, true, size, miss.0);
                    None
                }
            },
            _ => None,
        }
    }
}

/// The new value of an atomic `sub` on `old` with operands `b` (and `c` for `cas`).
fn atom_apply(sub: u8, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let bits = ty.bits().max(32);
    match (sub, ty) {
        (ATOM_ADD, Ty::F32) => {
            u64::from((f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits())
        }
        (ATOM_ADD, Ty::F64) => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        // `.noftz` 16-bit float adds, each half of an x2 on its own, rounded once.
        (ATOM_ADD, Ty::F16 | Ty::Bf16 | Ty::F16x2 | Ty::Bf16x2) => {
            let halves = if matches!(ty, Ty::F16x2 | Ty::Bf16x2) {
                2
            } else {
                1
            };
            (0..halves).fold(0u64, |acc, h| {
                let (x, y) = ((old >> (16 * h)) & 0xffff, (b >> (16 * h)) & 0xffff);
                let sum = if matches!(ty, Ty::F16 | Ty::F16x2) {
                    let f = |v: u64| half::f16::from_bits(v as u16).to_f64();
                    u64::from(half::f16::from_f64(f(x) + f(y)).to_bits())
                } else {
                    let f = |v: u64| half::bf16::from_bits(v as u16).to_f64();
                    u64::from(half::bf16::from_f64(f(x) + f(y)).to_bits())
                };
                acc | (sum << (16 * h))
            })
        }
        (ATOM_ADD, _) => mask(old.wrapping_add(b), bits),
        (ATOM_MIN | ATOM_MAX, Ty::F32) => {
            let (x, y) = (f32::from_bits(old as u32), f32::from_bits(b as u32));
            let r = if sub == ATOM_MIN { x.min(y) } else { x.max(y) };
            u64::from(r.to_bits())
        }
        (ATOM_MIN | ATOM_MAX, t) => {
            let less = if t.signed() {
                sext(b, bits) < sext(old, bits)
            } else {
                mask(b, bits) < mask(old, bits)
            };
            if (sub == ATOM_MIN) == less {
                b
            } else {
                old
            }
        }
        (ATOM_EXCH, _) => b,
        (ATOM_CAS, _) => {
            if mask(old, bits) == mask(b, bits) {
                c
            } else {
                old
            }
        }
        (ATOM_AND, _) => old & b,
        (ATOM_OR, _) => old | b,
        (ATOM_XOR, _) => old ^ b,
        (ATOM_INC, _) => {
            if mask(old, bits) >= mask(b, bits) {
                0
            } else {
                mask(old + 1, bits)
            }
        }
        (ATOM_DEC, _) => {
            if mask(old, bits) == 0 || mask(old, bits) > mask(b, bits) {
                b
            } else {
                old - 1
            }
        }
        _ => old,
    }
}
