//! Findings: what the emulator reports beyond the kernel's output, each with its kind, CTA,
//! thread, PTX line and source line. Also the shadow state that race detection keeps per
//! memory word: the last writer and reader within the current barrier interval.

use std::collections::HashSet;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// An access outside every buffer, or inside a red zone.
    OutOfBounds,
    /// An address not aligned to the access size.
    Misaligned,
    /// A local-memory access past the thread's stack frame.
    LocalOverflow,
    /// Two threads of a CTA touch the same shared-memory bytes, one writing, no barrier between.
    SharedRace,
    /// The same, in global memory, within one CTA.
    GlobalRace,
    /// Shared memory read before any write since the launch.
    UninitShared,
    /// A buffer that starts uninitialised (an output, a scratch buffer) read before written.
    UninitGlobal,
    /// A barrier reached by only part of a CTA.
    DivergentBarrier,
    /// A shuffle or vote executed by a lane missing from its member mask, or naming a lane
    /// that did not execute it.
    ShuffleMask,
    /// A `.sync.aligned` warp-wide instruction (`mma`, `ldmatrix`, `wgmma`) that only part of
    /// the warp executed, or a `wgmma` in a block that does not hold its whole warpgroup.
    PartialWarp,
    /// An mbarrier used before `mbarrier.init`, outside shared memory, or arrived on more
    /// often than its count.
    Mbarrier,
    /// Threads that wait on an mbarrier phase that nothing left running will complete.
    Deadlock,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::OutOfBounds => "out-of-bounds",
            FindingKind::Misaligned => "misaligned",
            FindingKind::LocalOverflow => "local-overflow",
            FindingKind::SharedRace => "shared-race",
            FindingKind::GlobalRace => "global-race",
            FindingKind::UninitShared => "uninit-shared",
            FindingKind::UninitGlobal => "uninit-global",
            FindingKind::DivergentBarrier => "divergent-barrier",
            FindingKind::ShuffleMask => "shuffle-mask",
            FindingKind::PartialWarp => "partial-warp",
            FindingKind::Mbarrier => "mbarrier",
            FindingKind::Deadlock => "deadlock",
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    pub message: String,
    pub cta: [u32; 3],
    pub thread: [u32; 3],
    pub ptx_line: u32,
    /// The source file and line, from the PTX's `.loc`.
    pub source: Option<(String, u32)>,
}

/// Findings of one CTA or one launch: the first of each kind at each PTX line is kept, the
/// rest counted.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub list: Vec<Finding>,
    seen: HashSet<(FindingKind, u32)>,
    pub repeats: u64,
}

impl Findings {
    /// Whether a finding of `kind` at `line` is new (callers build the message only then).
    pub fn wants(&self, kind: FindingKind, line: u32) -> bool {
        !self.seen.contains(&(kind, line))
    }

    pub fn push(&mut self, f: Finding) {
        if self.seen.insert((f.kind, f.ptx_line)) {
            self.list.push(f);
        } else {
            self.repeats += 1;
        }
    }

    pub fn merge(&mut self, other: Findings) {
        self.repeats += other.repeats;
        for f in other.list {
            self.push(f);
        }
    }
}

/// Race-detection state of one 4-byte word: who last wrote and read it, in which barrier
/// interval (`epoch`, 0 = never).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shadow {
    w_tid: u32,
    w_epoch: u32,
    r_tid: u32,
    r_epoch: u32,
    /// Which of the word's bytes were written / read in those intervals.
    w_bytes: u8,
    r_bytes: u8,
}

/// More than one thread read the word in this interval.
const MANY: u32 = u32::MAX;

/// The bit of a writer id that marks an asynchronous copy completing on an mbarrier (the rest
/// names the barrier and phase), rather than a thread: such a write is not ordered by CTA
/// barriers, only by waiting for its phase.
pub(crate) const ASYNC_WRITER: u32 = 1 << 31;

/// Whether writer id `w` is an asynchronous copy's.
pub(crate) fn is_async(w: u32) -> bool {
    w & ASYNC_WRITER != 0 && w != MANY
}

impl Shadow {
    /// Records an access by thread `tid` in interval `epoch`; returns the other thread it races
    /// with (`u32::MAX` when several readers), if any. An asynchronous copy's write races in
    /// every later interval too (the caller forgives threads that waited for it).
    /// `bytes` says which bytes of the word the access covers (bit i: byte i); accesses to
    /// different bytes of one word do not race.
    pub fn access(&mut self, tid: u32, epoch: u32, write: bool, bytes: u8) -> Option<u32> {
        let mut other = None;
        let live = self.w_epoch == epoch || (self.w_epoch != 0 && is_async(self.w_tid));
        if live && self.w_tid != tid && self.w_bytes & bytes != 0 {
            other = Some(self.w_tid);
        }
        if write {
            if other.is_none()
                && self.r_epoch == epoch
                && self.r_tid != tid
                && self.r_bytes & bytes != 0
            {
                other = Some(self.r_tid);
            }
            if self.w_epoch == epoch && self.w_tid != tid {
                self.w_bytes |= bytes;
            } else {
                self.w_bytes = bytes;
            }
            self.w_tid = tid;
            self.w_epoch = epoch;
        } else if self.r_epoch == epoch {
            if self.r_tid != tid {
                self.r_tid = MANY;
            }
            self.r_bytes |= bytes;
        } else {
            self.r_tid = tid;
            self.r_epoch = epoch;
            self.r_bytes = bytes;
        }
        other
    }

    /// Hands the last write over from thread `from` to `to` (its copies, now tracked by an
    /// mbarrier) as of interval `epoch`, if `from` still is the last writer.
    pub fn hand_over(&mut self, from: u32, to: u32, epoch: u32) {
        if self.w_epoch != 0 && self.w_tid == from {
            self.w_tid = to;
            self.w_epoch = epoch;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn races_need_two_threads_one_writing_and_no_barrier_between() {
        let all = 0b1111;
        let mut s = Shadow::default();
        assert_eq!(s.access(1, 1, true, all), None);
        assert_eq!(
            s.access(1, 1, false, all),
            None,
            "a thread reads its own write"
        );
        assert_eq!(
            s.access(2, 1, false, all),
            Some(1),
            "read after another's write"
        );
        let mut s = Shadow::default();
        assert_eq!(s.access(1, 1, true, all), None);
        assert_eq!(s.access(2, 2, false, all), None, "a barrier in between");
        assert_eq!(s.access(3, 2, false, all), None, "readers do not race");
        assert_eq!(
            s.access(2, 2, true, all),
            Some(MANY),
            "a write after others read"
        );
        let mut s = Shadow::default();
        assert_eq!(s.access(1, 1, true, 0b0011), None);
        assert_eq!(s.access(2, 1, true, 0b1100), None, "two halves of one word");
        assert_eq!(s.access(3, 1, false, 0b1000), Some(2));
    }

    #[test]
    fn an_async_copy_races_in_later_intervals_too_and_takes_over_its_threads_writes() {
        let all = 0b1111;
        let copy = ASYNC_WRITER | 5;
        let mut s = Shadow::default();
        assert_eq!(s.access(copy, 1, true, all), None);
        assert_eq!(
            s.access(2, 3, false, all),
            Some(copy),
            "no barrier orders it"
        );
        let mut s = Shadow::default();
        assert_eq!(s.access(1, 1, true, all), None);
        s.hand_over(2, copy, 1);
        assert_eq!(s.access(1, 2, false, all), None, "not thread 2's write");
        s.hand_over(1, copy, 2);
        assert_eq!(
            s.access(1, 2, false, all),
            Some(copy),
            "its own, handed over"
        );
    }
}
