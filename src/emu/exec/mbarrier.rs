//! `mbarrier`, the shared-memory barrier that counts arrivals and transaction bytes, and the
//! scheduling its waits need. A barrier's state lives in a table of the CTA, keyed by its
//! shared-memory offset (its 8 bytes count as written, and are otherwise left alone): the
//! arrivals each phase expects, those still pending, the transaction bytes still owed, and the
//! number of phases completed. A phase completes when no arrival and no byte is pending; then
//! the next one begins with the full count. `try_wait.parity p, [bar], P` (and `test_wait`)
//! is true once the phase of parity P has completed, that is while the current phase's parity
//! differs from P (PTX ISA, mbarrier: `phaseParity` names the current or the immediately
//! preceding phase); the state forms compare with the phase an `arrive` returned.
//!
//! A thread whose wait fails sets its predicate to false and parks ([`State::Wait`]), so the
//! warps that may complete the phase run; the CTA revives the parked threads after every round
//! and reports a deadlock when a round changes nothing (no barrier state, no register, no
//! program counter of the threads that ran), rather than spinning forever.
//!
//! For the race checks, a bulk tensor copy's shared-memory writes are made by the copy, not by
//! the thread that issued it: their writer names the barrier and phase the copy completes, and
//! a thread that has seen that phase complete reads them without a race.

use super::memory_ops::Where;
use super::{lanes, unsupported, Cta, State};
use crate::emu::checks::FindingKind;
use crate::emu::inst::*;
use crate::emu::EmuError;
use std::collections::HashMap;

/// Writer ids of bulk copies for the race shadow: this bit, the barrier's slot (bits 23..31)
/// and the phase (low 23 bits). Thread ids stay below 1024.
const ASYNC_WRITER: u32 = 1 << 31;
const MAX_SLOTS: usize = 255;

#[derive(Debug, Clone, Copy)]
struct MBarrier {
    offset: u64,
    count: u32,
    pending: u32,
    tx: i64,
    /// Phases completed since `init`: the current phase's index.
    phase: u32,
}

/// The mbarriers of one CTA and what its threads have seen of them.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    slots: Vec<MBarrier>,
    /// Changes of any barrier's state, counted.
    generation: u64,
    /// (thread, slot) → phases of that barrier the thread has seen completed.
    seen: HashMap<(u32, u32), u32>,
    /// The generation and the parked threads when they were last revived.
    revived: Option<(u64, Vec<Parked>)>,
}

/// A parked thread: its id, program counter and registers.
type Parked = (usize, u32, Vec<u64>);

impl Barriers {
    fn slot(&self, offset: u64) -> Option<usize> {
        self.slots.iter().position(|b| b.offset == offset)
    }

    /// Completes the current phase of `slot` if nothing is pending.
    fn settle(&mut self, slot: usize) {
        let b = &mut self.slots[slot];
        if b.pending == 0 && b.tx == 0 {
            b.phase += 1;
            b.pending = b.count;
        }
        self.generation += 1;
    }

    /// Whether thread `t` has seen the write of `writer` (a thread id, or a bulk copy's writer)
    /// complete, so that it does not race with it.
    pub(super) fn has_seen(&self, t: usize, writer: u32) -> bool {
        if writer & ASYNC_WRITER == 0 || writer == u32::MAX {
            return false;
        }
        let slot = (writer >> 23) & 0xFF;
        let phase = writer & 0x7F_FFFF;
        self.seen
            .get(&(t as u32, slot))
            .is_some_and(|&s| s & 0x7F_FFFF > phase)
    }
}

/// A bulk copy's writer id, for messages: `Some(barrier offset)`.
pub(super) fn async_writer_barrier(b: &Barriers, writer: u32) -> Option<u64> {
    (writer & ASYNC_WRITER != 0 && writer != u32::MAX)
        .then(|| {
            b.slots
                .get(((writer >> 23) & 0xFF) as usize)
                .map(|s| s.offset)
        })
        .flatten()
}

impl Cta<'_> {
    /// The shared-memory offset of the barrier at address operand `op`, for thread `t`;
    /// `None` (reported) when it is not 8-byte aligned shared memory.
    pub(super) fn barrier_at(&mut self, t: usize, i: usize, op: &Operand) -> Option<u64> {
        let &Operand::Addr(base, off) = op else {
            return None;
        };
        let (space, a) = self.address(t, i, base, off);
        if space != Where::Shared || a % 8 != 0 || a + 8 > self.shared.len() as u64 {
            if self.wants(FindingKind::Mbarrier, i) {
                let msg = format!("an mbarrier at 0x{a:x}, which is not 8-byte aligned shared memory of this block");
                self.report(FindingKind::Mbarrier, i, t, msg);
            }
            return None;
        }
        Some(a)
    }

    /// The slot of the initialised barrier at `a`; `None` (reported) when there is none.
    fn initialised(&mut self, t: usize, i: usize, a: u64) -> Option<usize> {
        let slot = self.mbars.slot(a);
        if slot.is_none() && self.wants(FindingKind::Mbarrier, i) {
            let msg = format!("the mbarrier at shared offset {a} is used before `mbarrier.init`");
            self.report(FindingKind::Mbarrier, i, t, msg);
        }
        slot
    }

    /// Runs `mbarrier.*` for the lanes of `active`; returns the lanes whose wait failed.
    pub(super) fn mbarrier(&mut self, lo: usize, i: usize, active: u32) -> Result<u32, EmuError> {
        let inst = &self.e.insts[i];
        let sub = inst.mods.sub;
        let at = (inst.args.iter())
            .position(|a| matches!(a, Operand::Addr(..)))
            .ok_or_else(|| unsupported(inst))?;
        let dst = (at == 1).then(|| inst.args[0].clone());
        let value = inst.args.get(at + 1).cloned();
        let bar = inst.args[at].clone();
        let mut park = 0u32;
        for t in lanes(active, lo) {
            let Some(a) = self.barrier_at(t, i, &bar) else {
                continue;
            };
            let v = value
                .as_ref()
                .map(|o| self.read(t, o, Ty::U32) & 0xFFFF_FFFF);
            if sub == MBAR_INIT {
                let count = v.ok_or_else(|| unsupported(inst))? as u32;
                self.init_barrier(a, count);
                continue;
            }
            let waits = matches!(
                sub,
                MBAR_TRY_WAIT | MBAR_TRY_WAIT_PARITY | MBAR_TEST_WAIT | MBAR_TEST_WAIT_PARITY
            );
            let Some(slot) = self.initialised(t, i, a) else {
                // A wait fails (and parks, so that the spin loop ends if it never succeeds).
                if waits {
                    park |= 1 << (t - lo);
                    if let Some(d) = &dst {
                        self.set(t, d, 0);
                    }
                }
                continue;
            };
            match sub {
                MBAR_ARRIVE | MBAR_ARRIVE_EXPECT_TX | MBAR_EXPECT_TX => {
                    let b = &mut self.mbars.slots[slot];
                    let state = u64::from(b.phase);
                    let n = match sub {
                        MBAR_ARRIVE => v.unwrap_or(1) as u32,
                        MBAR_ARRIVE_EXPECT_TX => 1,
                        _ => 0,
                    };
                    if sub != MBAR_ARRIVE {
                        b.tx += v.ok_or_else(|| unsupported(inst))? as i64;
                    }
                    let over = n > b.pending;
                    b.pending = b.pending.saturating_sub(n);
                    if over && self.wants(FindingKind::Mbarrier, i) {
                        let msg = format!("more arrivals on the mbarrier at shared offset {a} than its count of {}", self.mbars.slots[slot].count);
                        self.report(FindingKind::Mbarrier, i, t, msg);
                    }
                    self.mbars.settle(slot);
                    if let Some(d) = &dst {
                        self.set(t, d, state);
                    }
                }
                MBAR_TRY_WAIT | MBAR_TRY_WAIT_PARITY | MBAR_TEST_WAIT | MBAR_TEST_WAIT_PARITY => {
                    let b = self.mbars.slots[slot];
                    let v = v.ok_or_else(|| unsupported(inst))?;
                    let done = match sub {
                        MBAR_TRY_WAIT_PARITY | MBAR_TEST_WAIT_PARITY => {
                            u64::from(b.phase & 1) != v & 1
                        }
                        _ => u64::from(b.phase) > v,
                    };
                    if done {
                        let seen = self.mbars.seen.entry((t as u32, slot as u32)).or_default();
                        *seen = (*seen).max(b.phase);
                    } else {
                        park |= 1 << (t - lo);
                    }
                    if let Some(d) = &dst {
                        self.set(t, d, u64::from(done));
                    }
                }
                MBAR_INVAL => {
                    // The slot stays (copies' writer ids name it) but no address finds it.
                    self.mbars.slots[slot].offset = u64::MAX;
                    self.mbars.generation += 1;
                }
                _ => return Err(unsupported(inst)),
            }
        }
        Ok(park)
    }

    fn init_barrier(&mut self, a: u64, count: u32) {
        let b = MBarrier {
            offset: a,
            count,
            pending: count,
            tx: 0,
            phase: 0,
        };
        match self.mbars.slot(a) {
            Some(s) => self.mbars.slots[s] = b,
            None if self.mbars.slots.len() < MAX_SLOTS => self.mbars.slots.push(b),
            None => {}
        }
        self.mbars.generation += 1;
        for x in a..a + 8 {
            self.sh_written[(x / 64) as usize] |= 1 << (x % 64);
        }
    }

    /// A bulk copy of `bytes` by thread `t` completing on the barrier at `a`: the writer id
    /// its shared-memory writes carry (the thread's own when there is no barrier).
    pub(super) fn copy_writer(&mut self, t: usize, i: usize, a: u64) -> u32 {
        match self.initialised(t, i, a) {
            Some(slot) => {
                let phase = self.mbars.slots[slot].phase & 0x7F_FFFF;
                ASYNC_WRITER | (slot as u32) << 23 | phase
            }
            None => t as u32,
        }
    }

    /// Counts `bytes` of a transaction as done on the barrier at `a`.
    pub(super) fn complete_tx(&mut self, a: u64, bytes: u64) {
        if let Some(slot) = self.mbars.slot(a) {
            self.mbars.slots[slot].tx -= bytes as i64;
            self.mbars.settle(slot);
        }
    }

    /// Revives the parked threads, remembering their state to tell whether the next round
    /// changed anything.
    pub(super) fn revive_waiters(&mut self) {
        let mut parked = Vec::new();
        for t in 0..self.n {
            if self.st[t] == State::Wait {
                let regs = self.regs[t * self.nregs..(t + 1) * self.nregs].to_vec();
                parked.push((t, self.pc[t], regs));
                self.st[t] = State::Run;
            }
        }
        self.mbars.revived = Some((self.mbars.generation, parked));
    }

    /// Forgets the revived threads' state once none is parked.
    pub(super) fn forget_waiters(&mut self) {
        self.mbars.revived = None;
    }

    /// Whether the last round left every revived thread parked where it was, with the same
    /// registers, and no barrier changed: nothing will ever change.
    pub(super) fn stuck(&self) -> bool {
        let Some((generation, parked)) = &self.mbars.revived else {
            return false;
        };
        let waiting = self.st.iter().filter(|&&s| s == State::Wait).count();
        *generation == self.mbars.generation
            && waiting == parked.len()
            && parked.iter().all(|(t, pc, regs)| {
                self.st[*t] == State::Wait
                    && self.pc[*t] == *pc
                    && self.regs[t * self.nregs..(t + 1) * self.nregs] == regs[..]
            })
    }

    /// Reports the deadlock: the first parked thread, its wait and the barrier's state.
    pub(super) fn report_deadlock(&mut self) {
        let parked: Vec<usize> = (0..self.n).filter(|&t| self.st[t] == State::Wait).collect();
        let Some(&t) = parked.first() else {
            return;
        };
        let i = self.pc[t].saturating_sub(1) as usize;
        let at = self.e.insts[i]
            .args
            .iter()
            .find(|a| matches!(a, Operand::Addr(..)));
        let state = at
            .and_then(|op| {
                let &Operand::Addr(base, off) = op else {
                    return None;
                };
                let (_, a) = self.address(t, i, base, off);
                let b = self.mbars.slots[self.mbars.slot(a)?];
                Some(format!(
                    "the mbarrier at shared offset {a} is in phase {} (parity {}) with {} of {} arrivals and {} transaction bytes pending",
                    b.phase, b.phase & 1, b.pending, b.count, b.tx
                ))
            })
            .unwrap_or_else(|| "the mbarrier is not initialised".into());
        let others = self.st.iter().filter(|&&s| s == State::Bar).count();
        let msg = format!(
            "{} threads wait on an mbarrier phase that nothing will complete ({state}); {others} other threads wait at a barrier, the rest have exited",
            parked.len()
        );
        self.report(FindingKind::Deadlock, i, t, msg);
    }
}
