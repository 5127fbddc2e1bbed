//! The emulated global address space: every buffer at a 256-byte-aligned address with a red
//! zone (64 KiB) on each side, so an access outside every buffer is caught and described by the
//! buffer it is nearest to. Bytes live in atomic words, so CTAs running in parallel on several
//! cores share memory soundly (a kernel that races between CTAs sees some order of their
//! writes, as on a GPU). Buffers allocated uninitialised track which bytes were written.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;

/// Whether a buffer's bytes count as written before the kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitState {
    Initialized,
    Uninitialized,
}

struct Alloc {
    name: String,
    base: u64,
    size: u64,
    words: Vec<AtomicU32>,
    /// One bit per byte: written since allocation (for uninitialised buffers).
    written: Option<Vec<AtomicU32>>,
}

/// Where an access that hit no buffer went, said in words.
pub(crate) struct Miss(pub String);

pub struct Memory {
    allocs: Vec<Alloc>,
    next: u64,
    red_zone: u64,
    /// 64-bit atomics take this lock, so their two words change together.
    wide: Mutex<()>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory::new()
    }
}

const BASE: u64 = 0x0000_7f00_0000_0000;

impl Memory {
    pub fn new() -> Memory {
        Memory {
            allocs: Vec::new(),
            next: BASE,
            red_zone: 64 << 10,
            wide: Mutex::new(()),
        }
    }

    /// Allocates a buffer holding `bytes`, 256-byte aligned, with red zones on both sides.
    pub fn alloc(&mut self, name: &str, bytes: &[u8], init: InitState) -> u64 {
        let base = (self.next + self.red_zone).div_ceil(256) * 256;
        let size = bytes.len() as u64;
        let words = bytes
            .chunks(4)
            .map(|c| {
                let mut w = [0u8; 4];
                w[..c.len()].copy_from_slice(c);
                AtomicU32::new(u32::from_le_bytes(w))
            })
            .collect();
        let written = (init == InitState::Uninitialized).then(|| {
            (0..bytes.len().div_ceil(32))
                .map(|_| AtomicU32::new(0))
                .collect()
        });
        self.allocs.push(Alloc {
            name: name.to_string(),
            base,
            size,
            words,
            written,
        });
        self.next = base + size.max(1);
        base
    }

    /// The address of the buffer called `name`, if one is.
    pub fn named(&self, name: &str) -> Option<u64> {
        self.allocs.iter().find(|a| a.name == name).map(|a| a.base)
    }

    /// The bytes at `addr..addr + len` (zeros where no buffer is).
    pub fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        (0..len as u64)
            .map(|i| self.load(addr + i, 1).map_or(0, |(v, _)| v as u8))
            .collect()
    }

    fn find(&self, addr: u64, len: u64) -> Result<(&Alloc, u64), Miss> {
        let i = self.allocs.partition_point(|a| a.base <= addr);
        if i > 0 {
            let a = &self.allocs[i - 1];
            if addr - a.base + len <= a.size {
                return Ok((a, addr - a.base));
            }
        }
        Err(Miss(self.describe_miss(addr)))
    }

    fn describe_miss(&self, addr: u64) -> String {
        let mut best: Option<(u64, String)> = None;
        for a in &self.allocs {
            let end = a.base + a.size;
            let (dist, text) = if addr >= end {
                let past = addr - end;
                let gap = if past == 0 {
                    "just past its end".to_string()
                } else {
                    format!("{past} bytes past its end")
                };
                (
                    past,
                    format!(
                        "byte {} of `{}`, {gap} (`{}` holds {} bytes)",
                        addr - a.base,
                        a.name,
                        a.name,
                        a.size
                    ),
                )
            } else if addr < a.base {
                let before = a.base - addr;
                (
                    before,
                    format!("{before} bytes before the start of `{}`", a.name),
                )
            } else {
                (
                    0,
                    format!(
                        "byte {} of `{}`, running past its end (`{}` holds {} bytes)",
                        addr - a.base,
                        a.name,
                        a.name,
                        a.size
                    ),
                )
            };
            if best.as_ref().is_none_or(|(d, _)| dist < *d) {
                best = Some((dist, text));
            }
        }
        match best {
            Some((d, t)) if d < self.red_zone => t,
            Some((_, t)) => format!("0x{addr:x}, outside every buffer (nearest: {t})"),
            None => format!("0x{addr:x}, and no buffer is allocated"),
        }
    }

    /// Loads `size` (1, 2, 4 or 8) aligned bytes; also says whether any was never written.
    pub(crate) fn load(&self, addr: u64, size: u64) -> Result<(u64, bool), Miss> {
        let (a, off) = self.find(addr, size)?;
        let mut v = 0u64;
        for k in 0..size {
            let b = off + k;
            let w = a.words[(b / 4) as usize].load(Relaxed);
            v |= u64::from((w >> ((b % 4) * 8)) as u8) << (8 * k);
        }
        let uninit = a.written.as_ref().is_some_and(|bits| {
            (off..off + size).any(|b| bits[(b / 32) as usize].load(Relaxed) & (1 << (b % 32)) == 0)
        });
        Ok((v, uninit))
    }

    pub(crate) fn store(&self, addr: u64, size: u64, v: u64) -> Result<(), Miss> {
        let (a, off) = self.find(addr, size)?;
        if size == 4 && off % 4 == 0 {
            a.words[(off / 4) as usize].store(v as u32, Relaxed);
        } else {
            for k in 0..size {
                let b = off + k;
                let shift = (b % 4) * 8;
                let byte = ((v >> (8 * k)) & 0xff) as u32;
                let _ = a.words[(b / 4) as usize].fetch_update(Relaxed, Relaxed, |w| {
                    Some((w & !(0xff << shift)) | (byte << shift))
                });
            }
        }
        if let Some(bits) = &a.written {
            for b in off..off + size {
                bits[(b / 32) as usize].fetch_or(1 << (b % 32), Relaxed);
            }
        }
        Ok(())
    }

    /// An atomic read-modify-write of `size` (2, 4 or 8) bytes; returns the old value.
    pub(crate) fn rmw(&self, addr: u64, size: u64, f: &dyn Fn(u64) -> u64) -> Result<u64, Miss> {
        let (a, off) = self.find(addr, size)?;
        let old = if size == 2 && off % 2 == 0 {
            // A half of a word: compare-and-swap the word, the other half kept.
            let w = &a.words[(off / 4) as usize];
            let shift = (off % 4) * 8;
            let mut cur = w.load(Relaxed);
            loop {
                let half = u64::from(cur >> shift) & 0xffff;
                let new = (cur & !(0xffff << shift)) | (((f(half) & 0xffff) as u32) << shift);
                match w.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                    Ok(_) => break half,
                    Err(x) => cur = x,
                }
            }
        } else if size == 4 {
            let w = &a.words[(off / 4) as usize];
            let mut cur = w.load(Relaxed);
            loop {
                let new = f(u64::from(cur)) as u32;
                match w.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                    Ok(_) => break u64::from(cur),
                    Err(x) => cur = x,
                }
            }
        } else {
            let _g = self.wide.lock().unwrap_or_else(|e| e.into_inner());
            let (old, _) = self.load(addr, size)?;
            self.store(addr, size, f(old))?;
            old
        };
        if let Some(bits) = &a.written {
            for b in off..off + size {
                bits[(b / 32) as usize].fetch_or(1 << (b % 32), Relaxed);
            }
        }
        Ok(old)
    }
}
