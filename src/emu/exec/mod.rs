//! Running a grid: CTAs in parallel across cores; in each CTA, warps one after another until
//! every thread has exited, waits at a barrier or has parked after a failed mbarrier wait;
//! parked threads run again (and again, while that changes anything: else it is a deadlock)
//! until none is left, then the barrier is released. Inside a warp
//! the lanes run in lockstep: each step takes the lowest program counter among the running
//! lanes and executes that instruction for every lane there, so lanes that branched apart
//! reconverge where their paths meet (the immediate post-dominator of structured code), and a
//! loop's exited lanes wait for the others.
//!
//! This file holds a CTA's state ([`Cta`]), the generic-address windows, and the helpers every
//! instruction family uses (findings, [`lanes`], [`unsupported`]). [`grid`] checks a launch
//! and runs its CTAs; [`schedule`] sets a CTA up and runs its warps and barriers; [`dispatch`]
//! executes one instruction for a warp's lanes; [`operands`] reads and writes registers,
//! special registers and addresses. The other files hold instruction families (memory,
//! warp, matrix, warpgroup, async copies, TMA, mbarriers, barrier reductions).

mod async_arrive;
mod async_copy;
mod barrier_red;
mod bulk_copy;
mod dispatch;
mod grid;
mod matrix_ops;
mod mbarrier;
mod memory_ops;
mod operands;
mod schedule;
mod warp_ops;
mod warpgroup_ops;

pub use grid::run;

use super::checks::{Finding, FindingKind, Findings, Shadow};
use super::inst::*;
use super::memory::Memory;
use super::{EmuError, Entry};
use std::collections::{BTreeSet, HashMap};

/// Generic addresses of a CTA's shared memory and a thread's local memory start here.
pub(crate) const SHARED_WINDOW: u64 = 0x0000_1000_0000_0000;
pub(crate) const LOCAL_WINDOW: u64 = 0x0000_2000_0000_0000;
/// Generic addresses of the kernel's parameters (`cvta.param`) start here.
pub(crate) const PARAM_WINDOW: u64 = 0x0000_3000_0000_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Run,
    Bar,
    /// Parked after a failed mbarrier wait, until the other warps have run.
    Wait,
    Done,
}

pub(crate) struct Cta<'a> {
    e: &'a Entry,
    files: &'a HashMap<u32, String>,
    mem: &'a Memory,
    params: &'a [u8],
    /// Per symbol of the entry: the address of a module-scope `.global` variable in `mem`.
    globals: &'a [u64],
    grid: [u32; 3],
    block: [u32; 3],
    ctaid: [u32; 3],
    dyn_shared: u32,
    n: usize,
    nregs: usize,
    regs: Vec<u64>,
    pc: Vec<u32>,
    st: Vec<State>,
    shared: Vec<u8>,
    sh_written: Vec<u64>,
    sh_shadow: Vec<Shadow>,
    local: Vec<u8>,
    gshadow: HashMap<u64, Shadow>,
    epoch: u32,
    findings: Findings,
    count: u64,
    /// When the launch's watchdog runs out, and its length in ms.
    deadline: Option<crate::watchdog::Watchdog>,
    /// Warp steps since the clock was last read.
    ticks: u32,
    approx: BTreeSet<&'static str>,
    /// The barrier instruction the waiting threads reached (for the divergence report).
    bar_at: Option<usize>,
    mbars: mbarrier::Barriers,
    /// Each thread's `cp.async` copies that no wait or mbarrier has tracked yet.
    in_flight: async_arrive::InFlight,
    /// The predicates that threads brought to a barrier reduction (`bar.red`).
    votes: barrier_red::Votes,
}

impl Cta<'_> {
    pub(crate) fn report(&mut self, kind: FindingKind, inst: usize, t: usize, message: String) {
        let i = &self.e.insts[inst];
        let source = i
            .loc
            .and_then(|(f, l)| self.files.get(&f).map(|p| (p.clone(), l)));
        let f = Finding {
            kind,
            message,
            cta: self.ctaid,
            thread: self.coords(t),
            ptx_line: i.line,
            source,
        };
        self.findings.push(f);
    }

    pub(crate) fn wants(&self, kind: FindingKind, inst: usize) -> bool {
        self.findings.wants(kind, self.e.insts[inst].line)
    }
}

pub(crate) fn unsupported(inst: &Inst) -> EmuError {
    EmuError::Unsupported {
        instruction: inst.text.to_string(),
        ptx_line: inst.line,
    }
}

/// The thread ids of the set bits of `mask`, for a warp starting at `lo`.
pub(crate) fn lanes(mask: u32, lo: usize) -> impl Iterator<Item = usize> {
    (0..32)
        .filter(move |l| mask & (1 << l) != 0)
        .map(move |l| lo + l)
}
