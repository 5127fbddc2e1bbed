//! How a ring buffer lays out its tile: kwb's chunk swizzle for `ldmatrix`, or the layouts
//! `wgmma` reads. Each has a C expression (`at`, for the generated code) and the same map in
//! Rust (`offset`), with which the writer proves that a thread's copies lie at fixed
//! distances from its first one (`fixed_steps`).

/// How a ring buffer lays out its `[rows, cols]` tile of 2-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingSwizzle {
    /// Row-major with kwb's chunk swizzle (`kwb_swz`), for `ldmatrix`.
    Ldmatrix,
    /// A `wgmma` operand (`wgmma.rs`): blocks of `width`-byte rows, swizzled as the hardware
    /// reads them; `permute_mt` > 0 permutes the rows of an A operand for warps of that many
    /// 16-row tiles.
    Wgmma { width: u64, permute_mt: u64 },
}

impl RingSwizzle {
    /// C expression of the byte offset, in a buffer of `rows x cols`, of flat element `f`
    /// (a C expression).
    pub fn at(&self, f: &str, rows: u64, cols: u64) -> String {
        match *self {
            RingSwizzle::Ldmatrix => format!(
                "kwb_swz<{}>({f} / {cols}, ({f} % {cols}) / 8) + ({f} % 8) * 2",
                cols / 8
            ),
            RingSwizzle::Wgmma { width, permute_mt } => {
                let row = if permute_mt > 0 {
                    format!("kwb_wgrow<{permute_mt}>({f} / {cols})")
                } else {
                    format!("{f} / {cols}")
                };
                format!("kwb_wgswz<{rows}, {width}>({row}, ({f} % {cols}) * 2)")
            }
        }
    }
}

impl RingSwizzle {
    /// The byte offset [`RingSwizzle::at`] computes, for flat element `f` (as the device
    /// helpers `kwb_swz`, `kwb_wgswz` and `kwb_wgrow` compute it).
    pub fn offset(&self, f: u64, rows: u64, cols: u64) -> u64 {
        let (row, col) = (f / cols, f % cols);
        match *self {
            RingSwizzle::Ldmatrix => {
                let cpr = cols / 8;
                let l = row * cpr + col / 8;
                (l ^ ((l / cpr.max(8)) % 8)) * 16 + (f % 8) * 2
            }
            RingSwizzle::Wgmma { width, permute_mt } => {
                let row = if permute_mt > 0 {
                    let w = row / (16 * permute_mt);
                    ((w / 4) * permute_mt + (row / 16) % permute_mt) * 64 + (w % 4) * 16 + row % 16
                } else {
                    row
                };
                let byte = col * 2;
                let o = (byte / width) * (rows * width) + row * width + byte % width;
                o ^ (((o >> 7) & (width / 16).saturating_sub(1)) << 4)
            }
        }
    }
}

/// For a layout `l` copied `w` elements at a time: the byte distance of each vector from the
/// thread's first, when it is the same in every thread (`offset` maps a flat element to its
/// byte offset in the buffer).
pub fn fixed_steps(
    l: &super::layout::Layout,
    w: u64,
    offset: impl Fn(u64) -> u64,
) -> Option<Vec<u64>> {
    let mut steps = Vec::new();
    for e in (0..l.ept).step_by(w as usize) {
        let d = |t: u64| offset(l.flat(t, e)).checked_sub(offset(l.flat(t, 0)));
        let first = d(0)?;
        if (1..l.threads).any(|t| d(t) != Some(first)) {
            return None;
        }
        steps.push(first);
    }
    Some(steps)
}

#[cfg(test)]
mod tests {
    use super::super::layout::Layout;
    use super::*;

    /// Every element of a `rows x cols` fp16 tile lands on its own 2-byte slot of the buffer.
    fn is_bijection(s: RingSwizzle, rows: u64, cols: u64) -> bool {
        let mut seen = vec![false; (rows * cols) as usize];
        (0..rows * cols).all(|f| {
            let o = s.offset(f, rows, cols);
            o.is_multiple_of(2)
                && o < rows * cols * 2
                && !std::mem::replace(&mut seen[(o / 2) as usize], true)
        })
    }

    #[test]
    fn every_swizzle_places_each_element_once() {
        for (rows, cols) in [(64, 64), (128, 32), (64, 256), (32, 16)] {
            assert!(
                is_bijection(RingSwizzle::Ldmatrix, rows, cols),
                "ldmatrix {rows}x{cols}"
            );
            let width = (cols * 2).min(128);
            for permute_mt in [0, 1, 2] {
                let s = RingSwizzle::Wgmma { width, permute_mt };
                if permute_mt == 0 || rows % (64 * permute_mt) == 0 {
                    assert!(is_bijection(s, rows, cols), "{s:?} {rows}x{cols}");
                }
            }
        }
    }

    #[test]
    fn the_matmul_copies_lie_at_fixed_distances() {
        // B of the 128x256x64 matmul: [64, 256] fp16 over 256 threads, 16-byte vectors, rows
        // of 128-byte blocks: every thread's vectors are 1 KiB apart (8 rows of a block).
        let b = RingSwizzle::Wgmma {
            width: 128,
            permute_mt: 0,
        };
        let l = Layout::new(64 * 256, 256, 8);
        let steps = fixed_steps(&l, 8, |f| b.offset(f, 64, 256)).unwrap();
        assert_eq!(steps, (0..8).map(|i| i * 1024).collect::<Vec<_>>());
        // A: [128, 64] with its rows permuted for warps of one 16-row tile.
        let a = RingSwizzle::Wgmma {
            width: 128,
            permute_mt: 1,
        };
        let l = Layout::new(128 * 64, 256, 8);
        assert_eq!(
            fixed_steps(&l, 8, |f| a.offset(f, 128, 64)).unwrap(),
            [0, 4096, 8192, 12288]
        );
    }

    #[test]
    fn distances_that_differ_between_threads_are_refused() {
        // Four 8-element vectors per thread along a 32-wide row: the XOR of the chunk swizzle
        // moves the later chunks differently in different rows.
        let l = Layout::new(32 * 32, 8, 8);
        assert!(fixed_steps(&l, 8, |f| RingSwizzle::Ldmatrix.offset(f, 32, 32)).is_none());
    }
}
