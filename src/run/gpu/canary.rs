//! Red zones, the part that needs no GPU: where a buffer's guard regions lie, the canary
//! pattern they are filled with, and how damage to them (or to an input a kernel must only
//! read) is found and put into words: "wrote 4 bytes past the end of `c` (first at
//! c[1048576+3])". The GPU worker lays a buffer out as `[guard][data, padded to 256][guard]`;
//! a CPU backend can use the same layout over host memory and the same scan.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::run::protocol::DEFAULT_GUARD_BYTES;
/// Buffers start on this boundary, so guards are multiples of it.
pub const ALIGN: usize = 256;

/// The canary byte at `offset` bytes from a buffer's first byte (negative: before it). It
/// depends on the position, so neither a constant fill nor bytes moved from elsewhere in a
/// guard pass for it.
pub fn canary_byte(offset: i64) -> u8 {
    let x = (offset as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 56) as u8) ^ 0xA5
}

/// The canary for `len` bytes starting at `start` (relative to the buffer's first byte).
pub fn pattern(start: i64, len: usize) -> Vec<u8> {
    (0..len as i64).map(|i| canary_byte(start + i)).collect()
}

/// Where the guards of one buffer lie in its allocation: `guard` bytes before the data, then
/// `bytes` of data, then padding up to [`ALIGN`] and `guard` bytes more after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardLayout {
    pub bytes: usize,
    pub guard: usize,
}

impl GuardLayout {
    /// `guard` is rounded up to a multiple of [`ALIGN`] so the data stays aligned.
    pub fn new(bytes: usize, guard: usize) -> GuardLayout {
        GuardLayout {
            bytes,
            guard: guard.div_ceil(ALIGN) * ALIGN,
        }
    }

    /// Where the data starts in the allocation (the size of the guard before it).
    pub fn data_offset(&self) -> usize {
        self.guard
    }

    /// Where the guard after the data starts in the allocation.
    pub fn after_offset(&self) -> usize {
        self.guard + self.bytes
    }

    /// The bytes after the data that belong to no element: the padding and the guard.
    pub fn after_len(&self) -> usize {
        self.bytes.div_ceil(ALIGN) * ALIGN - self.bytes + self.guard
    }

    /// The whole allocation.
    pub fn total(&self) -> usize {
        self.after_offset() + self.after_len()
    }

    /// The canary of the guard before the data.
    pub fn before_pattern(&self) -> Vec<u8> {
        pattern(-(self.guard as i64), self.guard)
    }

    /// The canary of the padding and guard after the data.
    pub fn after_pattern(&self) -> Vec<u8> {
        pattern(self.bytes as i64, self.after_len())
    }

    /// Scans both guards (as read back) for bytes that are not the canary any more.
    pub fn scan(&self, buffer: &Named, before: &[u8], after: &[u8]) -> Vec<Damage> {
        let found = [
            (Where::Before, -(self.guard as i64), before),
            (Where::After, self.bytes as i64, after),
        ];
        found
            .into_iter()
            .filter_map(|(side, start, got)| {
                let (first, count) =
                    first_and_count(got, buffer.elem_size, start, |off, b| b == canary_byte(off))?;
                Some(Damage::new(buffer, side, first, count))
            })
            .collect()
    }
}

/// A buffer as messages name it: its name, element size and length in elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub elem_size: usize,
    pub elems: usize,
}

/// Which part of a buffer was written that should not have been.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Where {
    /// The guard before the first element.
    Before,
    /// The padding and guard after the last element.
    After,
    /// The elements of an input, which a kernel must only read.
    Input,
}

/// One damaged region: which buffer, where, the first damaged element (an index from the
/// buffer's start, negative before it) and how many bytes the damaged elements span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damage {
    pub buffer: String,
    pub side: Where,
    pub first_elem: i64,
    pub bytes: u64,
    pub elems: u64,
}

impl Damage {
    fn new(b: &Named, side: Where, first_byte: i64, elems_hit: u64) -> Damage {
        Damage {
            buffer: b.name.clone(),
            side,
            first_elem: first_byte.div_euclid(b.elem_size.max(1) as i64),
            bytes: elems_hit * b.elem_size.max(1) as u64,
            elems: b.elems as u64,
        }
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, b, i) = (self.bytes, &self.buffer, self.first_elem);
        match self.side {
            Where::Before => write!(
                f,
                "wrote {n} bytes before the start of `{b}` (first at {b}[{i}])"
            ),
            Where::After => {
                let past = i - self.elems as i64;
                let len = self.elems;
                write!(
                    f,
                    "wrote {n} bytes past the end of `{b}` (first at {b}[{len}+{past}])"
                )
            }
            Where::Input => write!(
                f,
                "wrote {n} bytes into input `{b}`, which the kernel must only read (first at {b}[{i}])"
            ),
        }
    }
}

/// Compares an input as read back after a run with the bytes that were uploaded.
pub fn scan_input(buffer: &Named, uploaded: &[u8], got: &[u8]) -> Option<Damage> {
    if uploaded.len() != got.len() {
        return Some(Damage::new(buffer, Where::Input, 0, buffer.elems as u64));
    }
    let (first, count) = first_and_count(got, buffer.elem_size, 0, |off, b| {
        uploaded[off as usize] == b
    })?;
    Some(Damage::new(buffer, Where::Input, first, count))
}

/// The first byte offset (relative to the buffer's start) of an element slot with a byte that
/// fails `intact`, and how many such slots there are. `start` is the offset of `got[0]`; slots
/// are aligned to `elem` from the buffer's start.
fn first_and_count(
    got: &[u8],
    elem: usize,
    start: i64,
    intact: impl Fn(i64, u8) -> bool + Sync,
) -> Option<(i64, u64)> {
    const PIECE: usize = 1 << 20;
    let elem = elem.max(1) as i64;
    // Per piece: the first and last damaged slot, and how many there are.
    let pieces: Vec<(i64, i64, u64)> = got
        .par_chunks(PIECE)
        .enumerate()
        .filter_map(|(p, chunk)| {
            let base = start + (p * PIECE) as i64;
            let mut span: Option<(i64, i64, u64)> = None;
            for (j, &b) in chunk.iter().enumerate() {
                let off = base + j as i64;
                if intact(off, b) {
                    continue;
                }
                let slot = off.div_euclid(elem);
                span = Some(match span {
                    None => (slot, slot, 1),
                    Some((f, l, n)) if l == slot => (f, l, n),
                    Some((f, _, n)) => (f, slot, n + 1),
                });
            }
            span
        })
        .collect();
    let first = pieces.first()?.0;
    // A slot split across two pieces is counted once.
    let count = pieces.iter().map(|p| p.2).sum::<u64>()
        - pieces.windows(2).filter(|w| w[0].1 == w[1].0).count() as u64;
    Some((first * elem, count))
}

#[cfg(test)]
#[path = "canary_tests.rs"]
mod tests;
