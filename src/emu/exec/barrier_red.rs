//! Barrier reductions, `bar.red.{and,or}.pred` and `bar.red.popc.u32` (what NVRTC emits for
//! `__syncthreads_and`, `__syncthreads_or` and `__syncthreads_count`): a CTA-wide barrier,
//! waited at and released as `bar.sync` is, after which every thread there gets the AND or
//! OR of the predicates the threads brought, or the number of them that were true. Threads
//! that exited take no part (the barrier is then reported as divergent, as `bar.sync` is).

use super::{lanes, Cta, State};
use crate::emu::inst::*;

/// The predicate each thread brought to the barrier, and the instruction it waits at.
#[derive(Debug)]
pub(crate) struct Votes {
    brought: Vec<Option<(usize, bool)>>,
    any: bool,
}

impl Votes {
    pub(super) fn new(n: usize) -> Votes {
        Votes {
            brought: vec![None; n],
            any: false,
        }
    }
}

impl Cta<'_> {
    /// Instruction `i`, a `bar.red`, for the lanes of `mask`: the `active` ones (their guard
    /// true) bring their predicate, the last operand, and wait at the barrier.
    pub(super) fn bar_red(&mut self, lo: usize, i: usize, mask: u32, active: u32) {
        let inst = &self.e.insts[i];
        let pred = inst.args.last().cloned().unwrap_or(Operand::Imm(0));
        for t in lanes(mask, lo) {
            self.pc[t] = (i + 1) as u32;
        }
        for t in lanes(active, lo) {
            let p = self.read(t, &pred, Ty::Pred) & 1 != 0;
            self.votes.brought[t] = Some((i, p));
            self.votes.any = true;
            self.st[t] = State::Bar;
            self.bar_at = Some(i);
        }
    }

    /// The barrier releases `threads`: each that brought a predicate gets the reduction its
    /// instruction asks for, over all that brought one.
    pub(super) fn reduce_votes(&mut self, threads: &[usize]) {
        if !self.votes.any {
            return;
        }
        self.votes.any = false;
        let preds: Vec<bool> = (threads.iter())
            .filter_map(|&t| self.votes.brought[t].map(|(_, p)| p))
            .collect();
        let count = preds.iter().filter(|&&p| p).count() as u64;
        let all = u64::from(count == preds.len() as u64);
        let some = u64::from(count > 0);
        let e = self.e;
        for &t in threads {
            let Some((i, _)) = self.votes.brought[t].take() else {
                continue;
            };
            let inst = &e.insts[i];
            let v = match inst.mods.sub {
                RED_AND => all,
                RED_OR => some,
                _ => count,
            };
            if let Some(d) = inst.args.first() {
                self.set(t, d, v);
            }
        }
    }
}
