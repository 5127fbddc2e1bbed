//! One CTA from start to end: its state set up for a launch, then its warps run one after
//! another, barriers released, parked mbarrier waiters revived (or a deadlock reported); in a
//! warp, the lanes at the lowest program counter step together.

use super::{async_arrive, barrier_red, lanes, mbarrier, Cta, State};
use crate::emu::checks::{FindingKind, Findings, Shadow};
use crate::emu::memory::Memory;
use crate::emu::{EmuError, Entry, Launch, SymbolKind};
use std::collections::{BTreeSet, HashMap};

/// Lane-instructions one CTA may execute before it counts as hung.
const CTA_BUDGET: u64 = 400_000_000;

impl<'a> Cta<'a> {
    pub(super) fn new(
        e: &'a Entry,
        files: &'a HashMap<u32, String>,
        mem: &'a Memory,
        params: &'a [u8],
        launch: &Launch,
        ctaid: [u32; 3],
    ) -> Cta<'a> {
        let n = launch.block.iter().product::<u32>() as usize;
        let nregs = e.nregs.max(1) as usize;
        let shared_len = (e.static_shared + launch.dynamic_shared) as usize;
        let mut shared = vec![0u8; shared_len];
        let mut sh_written = vec![0u64; shared_len.div_ceil(64)];
        // Initialised shared variables (rare) start written.
        for s in &e.symbols {
            if s.kind == SymbolKind::Shared && !s.init.is_empty() {
                let o = s.offset as usize;
                let end = (o + s.init.len()).min(shared_len);
                shared[o..end].copy_from_slice(&s.init[..end - o]);
                for b in o..end {
                    sh_written[b / 64] |= 1 << (b % 64);
                }
            }
        }
        Cta {
            e,
            files,
            mem,
            params,
            globals: &[],
            grid: launch.grid,
            block: launch.block,
            ctaid,
            dyn_shared: launch.dynamic_shared,
            n,
            nregs,
            regs: vec![0; n * nregs],
            pc: vec![0; n],
            st: vec![State::Run; n],
            shared,
            sh_written,
            sh_shadow: vec![Shadow::default(); shared_len.div_ceil(4)],
            local: vec![0; n * e.local_bytes as usize],
            gshadow: HashMap::new(),
            epoch: 1,
            findings: Findings::default(),
            deadline: None,
            ticks: 0,
            count: 0,
            approx: BTreeSet::new(),
            bar_at: None,
            mbars: mbarrier::Barriers::default(),
            in_flight: async_arrive::InFlight::new(n),
            votes: barrier_red::Votes::new(n),
        }
    }

    pub(super) fn run(&mut self) -> Result<(), EmuError> {
        let warps = self.n.div_ceil(32);
        loop {
            for w in 0..warps {
                self.run_warp(w)?;
            }
            if self.st.contains(&State::Wait) {
                // Threads spin on an mbarrier: run them again, unless nothing changed.
                if self.stuck() {
                    self.report_deadlock();
                    return Ok(());
                }
                self.revive_waiters();
                continue;
            }
            self.forget_waiters();
            let waiting: Vec<usize> = (0..self.n).filter(|&t| self.st[t] == State::Bar).collect();
            if waiting.is_empty() {
                return Ok(());
            }
            if waiting.len() < self.n {
                let absent = (0..self.n).find(|&t| self.st[t] != State::Bar).unwrap_or(0);
                if let Some(i) = self.bar_at {
                    let line = self.e.insts[i].line;
                    let msg = format!(
                        "barrier at PTX line {line} reached by {} of {} threads (thread {:?} {} it)",
                        waiting.len(),
                        self.n,
                        self.coords(absent),
                        if self.st[absent] == State::Done { "exited before" } else { "never reached" }
                    );
                    self.report(FindingKind::DivergentBarrier, i, waiting[0], msg);
                }
            }
            self.epoch += 1;
            self.bar_at = None;
            self.mbars.join_seen(&waiting);
            self.reduce_votes(&waiting);
            for t in waiting {
                self.st[t] = State::Run;
            }
        }
    }

    fn run_warp(&mut self, w: usize) -> Result<(), EmuError> {
        let lo = w * 32;
        let hi = (lo + 32).min(self.n);
        let end = self.e.insts.len() as u32;
        loop {
            let mut min = u32::MAX;
            for t in lo..hi {
                if self.st[t] == State::Run && self.pc[t] < min {
                    min = self.pc[t];
                }
            }
            if min == u32::MAX {
                return Ok(());
            }
            let mut mask = 0u32;
            for t in lo..hi {
                if self.st[t] == State::Run && self.pc[t] == min {
                    mask |= 1 << (t - lo);
                }
            }
            if min >= end {
                // Falling off the end is a return.
                for t in lanes(mask, lo) {
                    self.st[t] = State::Done;
                }
                continue;
            }
            self.step(lo, min as usize, mask)?;
            if self.count > CTA_BUDGET {
                return Err(EmuError::Budget(CTA_BUDGET));
            }
            self.ticks = self.ticks.wrapping_add(1);
            if self.ticks.is_multiple_of(4096) {
                if let Some(w) = &self.deadline {
                    w.check()?;
                }
            }
        }
    }
}
