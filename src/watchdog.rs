//! The limits of one CPU launch: a wall-clock watchdog and a cancel flag. The emulator and the
//! tile interpreter poll [`Watchdog::check`] every few thousand steps; the flag lets the engine
//! stop a job whose source was saved again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Set to stop the work that holds it.
pub type CancelFlag = Arc<AtomicBool>;

/// Why a launch was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It ran past its watchdog of this many milliseconds.
    Timeout(u64),
    /// Its work is no longer wanted.
    Cancelled,
}

/// A launch's limits, started when the launch starts.
#[derive(Debug, Clone)]
pub struct Watchdog {
    until: Option<(Instant, u64)>,
    cancel: Option<CancelFlag>,
}

impl Watchdog {
    /// Limits starting now: `ms` of wall-clock time (none if `None`), and `cancel`. `None` when
    /// there is nothing to watch.
    pub fn start(ms: Option<u64>, cancel: Option<&CancelFlag>) -> Option<Watchdog> {
        if ms.is_none() && cancel.is_none() {
            return None;
        }
        Some(Watchdog {
            until: ms.map(|ms| (Instant::now() + Duration::from_millis(ms), ms)),
            cancel: cancel.cloned(),
        })
    }

    /// `Err` once the launch must stop.
    pub fn check(&self) -> Result<(), Stopped> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(Stopped::Cancelled);
        }
        match self.until {
            Some((at, ms)) if Instant::now() > at => Err(Stopped::Timeout(ms)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_to_watch_is_none() {
        assert!(Watchdog::start(None, None).is_none());
    }

    #[test]
    fn a_spent_watchdog_times_out() {
        let w = Watchdog::start(Some(0), None).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(w.check(), Err(Stopped::Timeout(0)));
        assert_eq!(Watchdog::start(Some(60_000), None).unwrap().check(), Ok(()));
    }

    #[test]
    fn the_flag_cancels_and_outranks_the_clock() {
        let flag: CancelFlag = Arc::new(AtomicBool::new(false));
        let w = Watchdog::start(Some(0), Some(&flag)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        flag.store(true, Ordering::Relaxed);
        assert_eq!(w.check(), Err(Stopped::Cancelled));
    }
}
