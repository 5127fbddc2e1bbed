//! The tensor-core accumulator layout: where each element of a `tl.dot` result (and of every
//! tile computed elementwise with it) lives. The `[M, N]` tile is split over a grid of
//! `warps_m x warps_n` warps, each owning a `[M / warps_m, N / warps_n]` block made of
//! `mt x nt` tiles of 16 x 8, held as `mma.sync.m16n8k16` keeps its accumulator: with
//! `g = lane / 4` and `q = lane % 4`, lane `l` holds rows `g` and `g + 8`, columns `2q` and
//! `2q + 1` of each tile, in registers `4 * (i * nt + j) + {0, 1, 2, 3}` for tile `(i, j)`.
//! Registers `2c` and `2c + 1` are neighbours in a row, so accesses pair up (runs of 2).
//!
//! When the tile has fewer 16 x 16 blocks than the program has warps, the extra warps hold
//! copies (warp `w` acts as warp `w % active`), and only the first `active` warps own.

/// A warp tiling of an `[m, n]` accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mma {
    pub m: u64,
    pub n: u64,
    pub warps_m: u64,
    pub warps_n: u64,
    /// 16-row tiles per warp.
    pub mt: u64,
    /// 8-column tiles per warp (always even: B fragments come 16 columns per `ldmatrix`).
    pub nt: u64,
    /// Tiled for Hopper's `wgmma` (`wgmma.rs`): each warp owns whole rows.
    pub wgmma: bool,
}

impl Mma {
    /// The tiling of `[m, n]` (powers of two, at least 16) over `warps` warps: split the
    /// longer side of the warp's block while both stay at least 16 wide.
    pub fn new(m: u64, n: u64, warps: u64) -> Mma {
        let (mut wm, mut wn) = (1u64, 1u64);
        while wm * wn < warps {
            let can_m = m / (wm * 2) >= 16;
            let can_n = n / (wn * 2) >= 16;
            match (can_m, can_n) {
                (false, false) => break,
                (true, false) => wm *= 2,
                (false, true) => wn *= 2,
                (true, true) if m / wm > n / wn => wm *= 2,
                (true, true) => wn *= 2,
            }
        }
        Mma {
            m,
            n,
            warps_m: wm,
            warps_n: wn,
            mt: (m / wm / 16).max(1),
            nt: (n / wn / 8).max(2),
            wgmma: false,
        }
    }

    /// The tiling `wgmma` needs, if `[m, n]` has it at `warps` warps: warpgroups (4 warps)
    /// split M in 64-row steps and each covers all N columns (at most 256), so every warp owns
    /// `mt` tiles of 16 whole rows. A warp's rows as the layout numbers them are not those
    /// `wgmma` gives it (warp `q` of a warpgroup gets rows `16q ..` of each 64-row step); the
    /// writer permutes A's rows in shared memory to match (`wgmma.rs`).
    pub fn wgmma(m: u64, n: u64, warps: u64) -> Option<Mma> {
        let groups = warps / 4;
        let fits = warps.is_multiple_of(4)
            && groups > 0
            && m.is_multiple_of(64 * groups)
            && n.is_multiple_of(16)
            && (16..=256).contains(&n);
        fits.then(|| Mma {
            m,
            n,
            warps_m: warps,
            warps_n: 1,
            mt: m / warps / 16,
            nt: n / 8,
            wgmma: true,
        })
    }

    /// Warps that own elements.
    pub fn active(&self) -> u64 {
        self.warps_m * self.warps_n
    }

    /// Rows and columns of one warp's block.
    pub fn warp_rows(&self) -> u64 {
        self.m / self.warps_m
    }

    pub fn warp_cols(&self) -> u64 {
        self.n / self.warps_n
    }

    /// Registers per thread.
    pub fn ept(&self) -> u64 {
        self.mt * self.nt * 4
    }

    /// (row, column) of register `e` in thread `t`.
    pub fn coord(&self, t: u64, e: u64) -> (u64, u64) {
        let w = (t / 32) % self.active();
        let lane = t % 32;
        let (wr, wc) = (w / self.warps_n, w % self.warps_n);
        let (tile, c) = (e / 4, e % 4);
        let (i, j) = (tile / self.nt, tile % self.nt);
        let row = wr * self.warp_rows() + i * 16 + lane / 4 + 8 * (c / 2);
        let col = wc * self.warp_cols() + j * 8 + 2 * (lane % 4) + c % 2;
        (row, col)
    }

    pub fn flat(&self, t: u64, e: u64) -> u64 {
        let (r, c) = self.coord(t, e);
        r * self.n + c
    }

    pub fn owns(&self, t: u64) -> bool {
        t / 32 < self.active()
    }

    /// The register of thread `t` that holds flat index `g`, if it holds it.
    pub fn holds(&self, t: u64, g: u64) -> Option<u64> {
        if g >= self.m * self.n {
            return None;
        }
        let (row, col) = (g / self.n, g % self.n);
        let w = (row / self.warp_rows()) * self.warps_n + col / self.warp_cols();
        let (r, c) = (row % self.warp_rows(), col % self.warp_cols());
        let lane = (r % 8) * 4 + (c % 8) / 2;
        if (t / 32) % self.active() != w || t % 32 != lane {
            return None;
        }
        Some(((r / 16) * self.nt + c / 8) * 4 + ((r % 16) / 8) * 2 + c % 2)
    }

    /// C expressions (row, column) of register `e` (a C expression) in thread `kwb_tid`.
    pub fn coord_expr(&self, e: &str) -> (String, String) {
        let w = if self.active() == 1 {
            "0".to_string()
        } else {
            format!("((kwb_tid / 32) % {})", self.active())
        };
        let row = format!(
            "({w} / {wn}) * {wr} + ({e} / {tiles}) * 16 + (kwb_tid % 32) / 4 + 8 * (({e} % 4) / 2)",
            wn = self.warps_n,
            wr = self.warp_rows(),
            tiles = 4 * self.nt,
        );
        let col = format!(
            "({w} % {wn}) * {wc} + (({e} / 4) % {nt}) * 8 + 2 * (kwb_tid % 4) + {e} % 2",
            wn = self.warps_n,
            wc = self.warp_cols(),
            nt = self.nt,
        );
        (row, col)
    }

    /// C expression of the flat index of register `e`.
    pub fn flat_expr(&self, e: &str) -> String {
        let (r, c) = self.coord_expr(e);
        format!("({r}) * {} + {c}", self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warp_tilings() {
        let t = Mma::new(128, 128, 8);
        assert_eq!((t.warps_m, t.warps_n, t.mt, t.nt), (2, 4, 4, 4));
        let t = Mma::new(64, 64, 4);
        assert_eq!((t.warps_m, t.warps_n, t.mt, t.nt), (2, 2, 2, 4));
        let t = Mma::new(16, 16, 4);
        assert_eq!((t.warps_m, t.warps_n, t.active()), (1, 1, 1));
        let t = Mma::new(16, 256, 4);
        assert_eq!((t.warps_m, t.warps_n, t.mt, t.nt), (1, 4, 1, 8));
    }

    #[test]
    fn every_element_is_owned_once_and_found_again() {
        for (m, n, w) in [
            (128, 128, 8),
            (32, 64, 4),
            (16, 16, 4),
            (64, 16, 2),
            (16, 32, 1),
        ] {
            let l = Mma::new(m, n, w);
            let mut seen = vec![0u32; (m * n) as usize];
            for t in 0..w * 32 {
                for e in 0..l.ept() {
                    let f = l.flat(t, e);
                    if l.owns(t) {
                        seen[f as usize] += 1;
                    }
                    assert_eq!(l.holds(t, f), Some(e), "{m}x{n}/{w} t{t} e{e}");
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{m}x{n}/{w}");
            // Register pairs are row neighbours.
            assert_eq!(l.flat(5, 1), l.flat(5, 0) + 1);
            assert_eq!(l.flat(5, 3), l.flat(5, 2) + 1);
        }
    }
}
