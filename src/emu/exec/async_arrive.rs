//! Which of a thread's `cp.async` copies are still in flight, and the arrivals that hand them
//! to an mbarrier. The emulator copies at issue, and the copies' shared-memory writes count as
//! the issuing thread's own until something tracks them: `cp.async.wait_group` and
//! `wait_all` complete them for the thread (other threads see them after a CTA barrier, as
//! before), while `cp.async.mbarrier.arrive[.noinc]` hands every copy the thread issued before
//! it to the barrier's current phase. From then on their writer is that phase, as a bulk
//! copy's is (see `mbarrier`): a thread that waited for the phase reads them without a race,
//! one that did not races with them, CTA barriers or not.
//!
//! The arrive-on itself happens at once, since the copies are done: without `.noinc` the
//! pending count goes up by one and back down (no change); with `.noinc` it is an arrival of
//! its own, counted against the barrier's expected count.

use super::{lanes, unsupported, Cta};
use crate::emu::inst::*;
use crate::emu::EmuError;
use std::collections::VecDeque;

/// Copies a thread keeps track of before it forgets the oldest (a kernel that never waits).
const MAX_TRACKED: usize = 1 << 14;

/// Each thread's copies in flight.
#[derive(Debug)]
pub(crate) struct InFlight {
    threads: Vec<Copies>,
}

#[derive(Debug, Default, Clone)]
struct Copies {
    /// Shared-memory offset and size of each copy in flight, oldest first.
    ranges: Vec<(u64, u64)>,
    /// How many of `ranges` each committed group holds, oldest first; the rest are not
    /// committed yet.
    groups: VecDeque<usize>,
}

impl InFlight {
    pub(super) fn new(n: usize) -> InFlight {
        InFlight {
            threads: vec![Copies::default(); n],
        }
    }

    /// Thread `t` copied `bytes` to shared-memory offset `at`.
    pub(super) fn record(&mut self, t: usize, at: u64, bytes: u64) {
        let c = &mut self.threads[t];
        if c.ranges.len() >= MAX_TRACKED {
            *c = Copies::default();
        }
        c.ranges.push((at, bytes));
    }
}

impl Copies {
    fn commit(&mut self) {
        let committed: usize = self.groups.iter().sum();
        self.groups.push_back(self.ranges.len() - committed);
    }

    /// All but the `n` most recent committed groups are complete.
    fn wait_group(&mut self, n: usize) {
        while self.groups.len() > n {
            let k = self.groups.pop_front().unwrap_or(0);
            self.ranges.drain(..k.min(self.ranges.len()));
        }
    }

    /// Every copy, handed over (its groups stay, empty, for `wait_group` to count).
    fn take(&mut self) -> Vec<(u64, u64)> {
        self.groups.iter_mut().for_each(|g| *g = 0);
        std::mem::take(&mut self.ranges)
    }
}

impl Cta<'_> {
    /// `cp.async.{commit_group, wait_group, wait_all}` and `cp.async.mbarrier.arrive` for the
    /// lanes of `active`.
    pub(super) fn track_copies(
        &mut self,
        lo: usize,
        i: usize,
        active: u32,
    ) -> Result<(), EmuError> {
        let e = self.e;
        let inst = &e.insts[i];
        for t in lanes(active, lo) {
            match (inst.op, inst.mods.sub) {
                (Op::CpAsyncGroup, CPA_COMMIT) => self.in_flight.threads[t].commit(),
                (Op::CpAsyncGroup, CPA_WAIT_GROUP) => {
                    let n = inst.args.first().ok_or_else(|| unsupported(inst))?;
                    let n = self.read(t, n, Ty::U32) & 0xFFFF_FFFF;
                    self.in_flight.threads[t].wait_group(n as usize);
                }
                (Op::CpAsyncGroup, _) => self.in_flight.threads[t] = Copies::default(),
                (_, noinc) => {
                    let bar = inst.args.first().ok_or_else(|| unsupported(inst))?;
                    self.copies_arrive(t, i, bar, noinc == 1);
                }
            }
        }
        Ok(())
    }

    /// Thread `t`'s `cp.async.mbarrier.arrive` on the barrier at operand `bar`: its copies
    /// complete in the barrier's current phase; with `noinc`, an arrival too.
    fn copies_arrive(&mut self, t: usize, i: usize, bar: &Operand, noinc: bool) {
        let Some(a) = self.barrier_at(t, i, bar) else {
            return;
        };
        let Some(slot) = self.initialised(t, i, a) else {
            return;
        };
        let writer = self.mbars.writer(slot, true);
        let epoch = self.epoch;
        for (at, bytes) in self.in_flight.threads[t].take() {
            for w in at / 4..(at + bytes).div_ceil(4) {
                if let Some(s) = self.sh_shadow.get_mut(w as usize) {
                    s.hand_over(t as u32, writer, epoch);
                }
            }
        }
        if noinc {
            self.arrive(t, i, slot, 1);
        }
    }
}
