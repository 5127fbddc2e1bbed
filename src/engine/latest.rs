//! The latest save wins: per key (a version), at most one job in flight and one pending. A
//! newer offer replaces the pending one, so a burst of saves costs one extra job, never a
//! backlog, and what finishes last is what was saved last. Compiles and runs both go through
//! it (gitui's `AsyncSingleJob` is the model).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// What became of an offered job.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer<T> {
    /// Nothing was in flight for the key: start this job now (the key is now busy).
    Start(T),
    /// A job is in flight: this one waits, replacing any older pending job for the key.
    Queued,
}

/// One job in flight and one pending, per key.
#[derive(Debug)]
pub struct LatestWins<K, T> {
    in_flight: HashSet<K>,
    pending: HashMap<K, T>,
}

impl<K: Eq + Hash + Clone, T> Default for LatestWins<K, T> {
    fn default() -> Self {
        LatestWins {
            in_flight: HashSet::new(),
            pending: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone, T> LatestWins<K, T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers a job for `key`: start it now, or keep it as the one pending job.
    pub fn offer(&mut self, key: K, job: T) -> Offer<T> {
        if self.in_flight.insert(key.clone()) {
            Offer::Start(job)
        } else {
            self.pending.insert(key, job);
            Offer::Queued
        }
    }

    /// The job in flight for `key` is over: the pending job to start next (the key stays
    /// busy), or `None` (the key is idle).
    pub fn finished(&mut self, key: &K) -> Option<T> {
        match self.pending.remove(key) {
            Some(next) => Some(next),
            None => {
                self.in_flight.remove(key);
                None
            }
        }
    }

    /// A newer job waits for `key`: the one in flight is superseded, and may be cancelled.
    pub fn superseded(&self, key: &K) -> bool {
        self.pending.contains_key(key)
    }

    pub fn busy(&self, key: &K) -> bool {
        self.in_flight.contains(key)
    }

    /// No job in flight or pending for any key.
    pub fn idle(&self) -> bool {
        self.in_flight.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_key_starts_at_once() {
        let mut q = LatestWins::new();
        assert_eq!(q.offer("v1", 1), Offer::Start(1));
        assert_eq!(q.offer("v2", 2), Offer::Start(2));
        assert!(q.busy(&"v1") && q.busy(&"v2"));
    }

    #[test]
    fn a_burst_of_saves_leaves_only_the_last_pending() {
        let mut q = LatestWins::new();
        assert_eq!(q.offer("v", 1), Offer::Start(1));
        assert!(!q.superseded(&"v"));
        for g in 2..=5 {
            assert_eq!(q.offer("v", g), Offer::Queued);
        }
        assert!(q.superseded(&"v"));
        assert_eq!(q.finished(&"v"), Some(5));
        assert!(q.busy(&"v") && !q.superseded(&"v"));
        assert_eq!(q.finished(&"v"), None);
        assert!(!q.busy(&"v"));
        assert!(q.idle());
    }

    #[test]
    fn keys_do_not_replace_each_other() {
        let mut q = LatestWins::new();
        q.offer(1, "a");
        q.offer(2, "b");
        q.offer(1, "a2");
        q.offer(2, "b2");
        assert_eq!(q.finished(&1), Some("a2"));
        assert_eq!(q.finished(&2), Some("b2"));
        assert_eq!(q.finished(&1), None);
        assert!(q.busy(&2));
    }

    #[test]
    fn finishing_an_idle_key_is_harmless() {
        let mut q: LatestWins<u8, u8> = LatestWins::new();
        assert_eq!(q.finished(&7), None);
        assert!(q.idle());
    }
}
