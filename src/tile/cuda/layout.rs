//! Where each element of a tile lives: the blocked register layout. A tile of `numel`
//! elements is a per-thread array of `ept` registers; thread `t` owns runs of `vec` contiguous
//! elements (row-major flat index), `f = ((e / vec) * T + t) * vec + e % vec` for register `e`.
//! When the tile is smaller than `T * vec` the layout wraps (`f % numel`): several threads hold
//! copies, and only the first holder *owns* the element (stores, atomics, sums).
//!
//! Layouts are keyed by element count, not shape, so `[N]`, `[1, N]` and a reshape of either
//! share one layout and converting between them is a plain register copy. The exception is a
//! `tl.dot` result and every tile that must share its layout (`unify.rs`): those take the
//! tensor-core accumulator layout of [`Mma`], which has the same interface (flat index of a
//! register, holder of a flat index, ownership) so the rest of the writer treats both alike.

use super::mma::Mma;
use crate::tile::ir::sums::{self, Blocked};
use crate::tile::ir::{Kernel, VarId};
use crate::tile::Target;
use std::collections::{BTreeMap, HashMap};

/// The layout of every tile with `numel` elements in one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub numel: u64,
    /// Threads per program.
    pub threads: u64,
    /// Contiguous elements per run.
    pub vec: u64,
    /// Registers per thread.
    pub ept: u64,
    /// The tensor-core accumulator layout instead of the blocked one (then `vec` is 2).
    pub mma: Option<Mma>,
}

impl Layout {
    /// The layout for `numel` elements over `threads`, aiming at runs of `want_vec` elements.
    pub fn new(numel: u64, threads: u64, want_vec: u64) -> Layout {
        let b = Blocked::new(numel, threads, want_vec);
        Layout {
            numel: b.numel,
            threads: b.threads,
            vec: b.vec,
            ept: b.ept,
            mma: None,
        }
    }

    /// The blocked layout, if this is one (not the tensor-core accumulator's).
    pub fn blocked(&self) -> Option<Blocked> {
        self.mma.is_none().then_some(Blocked {
            numel: self.numel,
            threads: self.threads,
            vec: self.vec,
            ept: self.ept,
        })
    }

    /// The accumulator layout of `mma` over `threads`.
    pub fn of_mma(mma: Mma, threads: u64) -> Layout {
        Layout {
            numel: mma.m * mma.n,
            threads: threads.max(1),
            vec: 2,
            ept: mma.ept(),
            mma: Some(mma),
        }
    }

    /// `if (owner) ` before a statement only the owners of their registers may run (empty
    /// when every thread owns its registers).
    pub fn owner_if(&self) -> String {
        self.owner_expr()
            .map(|o| format!("if ({o}) "))
            .unwrap_or_default()
    }

    /// Whether some threads hold copies of elements others hold.
    pub fn replicated(&self) -> bool {
        self.ept * self.threads > self.numel
    }

    /// The flat index thread `t` holds in register `e`.
    pub fn flat(&self, t: u64, e: u64) -> u64 {
        if let Some(m) = &self.mma {
            return m.flat(t, e);
        }
        Blocked::new(self.numel, self.threads, self.vec).flat(t, e)
    }

    /// Whether thread `t` owns (is the first holder of) its register `e`.
    pub fn owns(&self, t: u64, e: u64) -> bool {
        if let Some(m) = &self.mma {
            return m.owns(t);
        }
        Blocked::new(self.numel, self.threads, self.vec).owns(t, e)
    }

    /// The register of thread `t` that holds flat index `g`, if it holds it.
    pub fn holds(&self, t: u64, g: u64) -> Option<u64> {
        if let Some(m) = &self.mma {
            return m.holds(t, g);
        }
        if g >= self.numel {
            return None;
        }
        if !self.replicated() {
            let run = g / self.vec;
            if run % self.threads != t {
                return None;
            }
            return Some((run / self.threads) * self.vec + g % self.vec);
        }
        // Wrapped: ept == vec and thread t holds (t * vec + e) % numel.
        let e = g % self.vec;
        ((t * self.vec + e) % self.numel == g).then_some(e)
    }

    /// C expression of the flat index of register `e` (a C expression) in thread `kwb_tid`.
    pub fn flat_expr(&self, e: &str) -> String {
        if let Some(m) = &self.mma {
            return m.flat_expr(e);
        }
        let run = if self.ept == self.vec {
            "kwb_tid".to_string()
        } else {
            format!("({e} / {}) * {} + kwb_tid", self.vec, self.threads)
        };
        let base = if self.vec == 1 {
            run
        } else {
            format!("({run}) * {} + {e} % {}", self.vec, self.vec)
        };
        if self.replicated() {
            format!("({base}) % {}", self.numel)
        } else {
            base
        }
    }

    /// C condition: thread `kwb_tid` owns its register `e` (None when every thread owns all).
    pub fn owner_expr(&self) -> Option<String> {
        if let Some(m) = &self.mma {
            return self
                .replicated()
                .then(|| format!("kwb_tid < {}", m.active() * 32));
        }
        // Wrapped layouts have ept == vec, so ownership does not depend on e.
        self.replicated()
            .then(|| format!("kwb_tid < {}", self.numel / self.vec))
    }
}

/// The layout of each tile size used in `k`, and of the tiles that take the mma layout.
pub struct Layouts {
    by_numel: BTreeMap<u64, Layout>,
    by_var: HashMap<VarId, Layout>,
    threads: u64,
}

impl Layouts {
    /// Vector width per size: 16 bytes over the widest element of that size's global accesses.
    pub fn plan(k: &Kernel, target: Target) -> Layouts {
        let runs = sums::run_lengths(k);
        let threads = u64::from(k.threads().max(1));
        let by_numel = k
            .vars
            .iter()
            .filter(|v| v.ty.is_tile())
            .map(|v| v.ty.numel())
            .map(|n| (n, Layout::new(n, threads, sums::run_length(&runs, n))))
            .collect();
        let by_var = super::unify::mma_tiles(k, target)
            .into_iter()
            .map(|(v, m)| (v, Layout::of_mma(m, threads)))
            .collect();
        Layouts {
            by_numel,
            by_var,
            threads,
        }
    }

    /// The layout of a blocked tile of `numel` elements.
    pub fn of(&self, numel: u64) -> Layout {
        self.by_numel
            .get(&numel)
            .copied()
            .unwrap_or_else(|| Layout::new(numel, self.threads, 4))
    }

    /// The layout of tile variable `v` of `numel` elements.
    pub fn of_var(&self, v: VarId, numel: u64) -> Layout {
        match self.by_var.get(&v) {
            Some(l) => *l,
            None => self.of(numel),
        }
    }
}

pub use crate::tile::ir::visit;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_layout_covers_every_element_once() {
        for (numel, threads, vec) in [(4096, 128, 8), (1024, 128, 4), (2048, 512, 4), (8, 32, 4)] {
            let l = Layout::new(numel, threads, vec);
            let mut seen = vec![0u32; numel as usize];
            for t in 0..threads {
                for e in 0..l.ept {
                    let f = l.flat(t, e);
                    if l.owns(t, e) {
                        seen[f as usize] += 1;
                    }
                    assert_eq!(l.holds(t, f), Some(e), "{numel} {threads} t{t} e{e}");
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{numel}/{threads}/{vec}");
        }
    }

    #[test]
    fn vector_runs_are_capped_by_the_tile() {
        let l = Layout::new(4096, 128, 8);
        assert_eq!((l.vec, l.ept), (8, 32));
        assert_eq!(l.flat(1, 0), 8);
        assert_eq!(l.flat(0, 8), 1024);
        let small = Layout::new(64, 128, 4);
        assert_eq!((small.vec, small.ept), (1, 1));
        assert!(small.replicated());
        assert_eq!(small.flat(65, 0), 1);
        assert!(!small.owns(65, 0));
        assert_eq!(small.owner_expr().as_deref(), Some("kwb_tid < 64"));
        let mid = Layout::new(256, 128, 4);
        assert_eq!((mid.vec, mid.ept), (2, 2));
    }

    #[test]
    fn flat_expressions_match_the_mapping() {
        let l = Layout::new(4096, 128, 8);
        assert_eq!(l.flat_expr("e"), "((e / 8) * 128 + kwb_tid) * 8 + e % 8");
        let w = Layout::new(32, 128, 4);
        assert_eq!(w.flat_expr("e"), "(kwb_tid) % 32");
    }
}
