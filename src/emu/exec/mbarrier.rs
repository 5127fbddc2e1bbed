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
//! a thread that has seen that phase complete reads them without a race (so do `cp.async`
//! copies an mbarrier tracks, see `async_arrive`). A CTA barrier does not order such writes,
//! but it passes on what its threads have seen: after it, each has seen what any of them had.

use super::memory_ops::Where;
use super::{lanes, unsupported, Cta, State};
use crate::emu::checks::{is_async, FindingKind, ASYNC_WRITER};
use crate::emu::inst::*;
use crate::emu::EmuError;
use std::collections::HashMap;

/// Writer ids of asynchronous copies for the race shadow: [`ASYNC_WRITER`], the barrier's
/// slot (bits 23..31), [`CP_ASYNC`] for `cp.async` copies (else a bulk copy) and the phase
/// (low 22 bits). Thread ids stay below 1024.
const MAX_SLOTS: usize = 255;
const CP_ASYNC: u32 = 1 << 22;
const PHASE: u32 = CP_ASYNC - 1;

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
        if !is_async(writer) {
            return false;
        }
        let slot = (writer >> 23) & 0xFF;
        let phase = writer & PHASE;
        self.seen
            .get(&(t as u32, slot))
            .is_some_and(|&s| s & PHASE > phase)
    }

    /// The writer id of copies completing in the current phase of `slot`.
    pub(super) fn writer(&self, slot: usize, cp_async: bool) -> u32 {
        let phase = self.slots[slot].phase & PHASE;
        let kind = if cp_async { CP_ASYNC } else { 0 };
        ASYNC_WRITER | (slot as u32) << 23 | kind | phase
    }

    /// A CTA barrier released `threads`: each has now seen every phase any of them had.
    pub(super) fn join_seen(&mut self, threads: &[usize]) {
        if self.seen.is_empty() {
            return;
        }
        let mut max: HashMap<u32, u32> = HashMap::new();
        for &t in threads {
            for slot in 0..self.slots.len() as u32 {
                if let Some(&p) = self.seen.get(&(t as u32, slot)) {
                    let m = max.entry(slot).or_default();
                    *m = (*m).max(p);
                }
            }
        }
        for (slot, p) in max {
            for &t in threads {
                self.seen.insert((t as u32, slot), p);
            }
        }
    }
}

/// What wrote with asynchronous writer id `writer`, for messages.
pub(super) fn async_writer(b: &Barriers, writer: u32) -> Option<String> {
    if !is_async(writer) {
        return None;
    }
    let bar = b.slots.get(((writer >> 23) & 0xFF) as usize)?.offset;
    Some(if writer & CP_ASYNC != 0 {
        format!("cp.async copies tracked by the mbarrier at shared offset {bar} (not waited for)")
    } else {
        format!(
            "a bulk tensor copy completing on the mbarrier at shared offset {bar} (not waited for)"
        )
    })
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
    pub(super) fn initialised(&mut self, t: usize, i: usize, a: u64) -> Option<usize> {
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
                    let state = u64::from(self.mbars.slots[slot].phase);
                    let n = match sub {
                        MBAR_ARRIVE => v.unwrap_or(1) as u32,
                        MBAR_ARRIVE_EXPECT_TX => 1,
                        _ => 0,
                    };
                    if sub != MBAR_ARRIVE {
                        self.mbars.slots[slot].tx += v.ok_or_else(|| unsupported(inst))? as i64;
                    } else if n == 0 && self.wants(FindingKind::Mbarrier, i) {
                        let msg = format!("an arrive with a count of 0 on the mbarrier at shared offset {a} (PTX requires 1 or more)");
                        self.report(FindingKind::Mbarrier, i, t, msg);
                    }
                    self.arrive(t, i, slot, n);
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

    /// `n` arrivals (and no bytes) of thread `t` on the barrier of `slot`, reported when the
    /// phase expects fewer.
    pub(super) fn arrive(&mut self, t: usize, i: usize, slot: usize, n: u32) {
        let b = &mut self.mbars.slots[slot];
        let over = n > b.pending;
        b.pending = b.pending.saturating_sub(n);
        if over && self.wants(FindingKind::Mbarrier, i) {
            let b = self.mbars.slots[slot];
            let msg = format!(
                "more arrivals on the mbarrier at shared offset {} than its count of {}",
                b.offset, b.count
            );
            self.report(FindingKind::Mbarrier, i, t, msg);
        }
        self.mbars.settle(slot);
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
            Some(slot) => self.mbars.writer(slot, false),
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
