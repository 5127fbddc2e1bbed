//! kwb's own encoding of a TMA tensor map, the 128-byte `CUtensorMap` a kernel takes as a
//! `__grid_constant__` parameter and names in `cp.async.bulk.tensor`. The driver's encoding is
//! opaque, so the CPU runtime passes [`TensorMap::to_bytes`] instead, and the emulator reads it
//! back with [`TensorMap::from_bytes`]: a magic number first, so that a parameter holding
//! anything else (zeros, a real driver map) is rejected rather than misread.

/// "KWBTMAP1", little-endian.
const MAGIC: u64 = u64::from_le_bytes(*b"KWBTMAP1");
/// Field offsets in the 128 bytes.
const ADDRESS: usize = 8;
const RANK: usize = 16;
const ELEM: usize = 17;
const SWIZZLE: usize = 18;
const DIMS: usize = 24;
const STRIDES: usize = 64;
const BOX: usize = 96;
pub const MAX_RANK: usize = 5;

/// A tiled tensor map: a tensor of `dims` elements (innermost first) at `address`, each
/// `elem_bytes` wide, dimension `d > 0` `strides[d - 1]` bytes apart; copies move boxes of
/// `box_dims` elements, written to shared memory with a `swizzle` of 0, 32, 64 or 128 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMap {
    pub address: u64,
    pub elem_bytes: u32,
    pub dims: Vec<u64>,
    /// Bytes between consecutive indices of dimensions 1.. (rank - 1 entries).
    pub strides: Vec<u64>,
    pub box_dims: Vec<u32>,
    pub swizzle: u32,
}

impl TensorMap {
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The map as the 128 bytes of a kernel parameter.
    pub fn to_bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[ADDRESS..ADDRESS + 8].copy_from_slice(&self.address.to_le_bytes());
        b[RANK] = self.dims.len().min(MAX_RANK) as u8;
        b[ELEM] = self.elem_bytes as u8;
        b[SWIZZLE..SWIZZLE + 2].copy_from_slice(&(self.swizzle as u16).to_le_bytes());
        for (k, d) in self.dims.iter().take(MAX_RANK).enumerate() {
            b[DIMS + 8 * k..DIMS + 8 * k + 8].copy_from_slice(&d.to_le_bytes());
        }
        for (k, s) in self.strides.iter().take(MAX_RANK - 1).enumerate() {
            b[STRIDES + 8 * k..STRIDES + 8 * k + 8].copy_from_slice(&s.to_le_bytes());
        }
        for (k, d) in self.box_dims.iter().take(MAX_RANK).enumerate() {
            b[BOX + 2 * k..BOX + 2 * k + 2].copy_from_slice(&(*d as u16).to_le_bytes());
        }
        b
    }

    /// Reads a map written by [`TensorMap::to_bytes`]; `None` for anything else (no magic
    /// number, a rank outside 1..=5, a short slice).
    pub fn from_bytes(b: &[u8]) -> Option<TensorMap> {
        let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
        let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
        if b.len() < 128 || u64_at(0)? != MAGIC {
            return None;
        }
        let rank = usize::from(b[RANK]);
        if !(1..=MAX_RANK).contains(&rank) {
            return None;
        }
        Some(TensorMap {
            address: u64_at(ADDRESS)?,
            elem_bytes: u32::from(b[ELEM]),
            dims: (0..rank)
                .map(|k| u64_at(DIMS + 8 * k))
                .collect::<Option<_>>()?,
            strides: (1..rank)
                .map(|k| u64_at(STRIDES + 8 * (k - 1)))
                .collect::<Option<_>>()?,
            box_dims: (0..rank)
                .map(|k| u16_at(BOX + 2 * k).map(u32::from))
                .collect::<Option<_>>()?,
            swizzle: u32::from(u16_at(SWIZZLE)?),
        })
    }

    /// The rules `cuTensorMapEncodeTiled` enforces, so that a map the GPU runtime could not
    /// encode does not run here either; `Err` says which one is broken.
    pub fn check(&self) -> Result<(), String> {
        let rank = self.rank();
        if !(1..=MAX_RANK).contains(&rank)
            || self.strides.len() + 1 != rank
            || self.box_dims.len() != rank
        {
            return Err(format!(
                "a tensor map of rank {rank} needs {rank} box dimensions and {} strides",
                rank.saturating_sub(1)
            ));
        }
        if !matches!(self.elem_bytes, 1 | 2 | 4 | 8) {
            return Err(format!("element size {} bytes", self.elem_bytes));
        }
        if !matches!(self.swizzle, 0 | 32 | 64 | 128) {
            return Err(format!(
                "swizzle of {} bytes (0, 32, 64 or 128)",
                self.swizzle
            ));
        }
        if !self.address.is_multiple_of(16) {
            return Err(format!(
                "global address 0x{:x} not 16-byte aligned",
                self.address
            ));
        }
        if let Some(s) = self.strides.iter().find(|s| *s % 16 != 0 || **s >= 1 << 40) {
            return Err(format!("stride of {s} bytes (a multiple of 16 below 2^40)"));
        }
        if let Some(d) = self.dims.iter().find(|d| **d == 0 || **d > 1 << 32) {
            return Err(format!("dimension of {d} elements (1 to 2^32)"));
        }
        if let Some(d) = self.box_dims.iter().find(|d| !(1..=256).contains(*d)) {
            return Err(format!("box dimension of {d} elements (1 to 256)"));
        }
        let inner = u64::from(self.box_dims[0]) * u64::from(self.elem_bytes);
        if inner % 16 != 0 {
            return Err(format!(
                "a box row of {inner} bytes (a multiple of 16 bytes)"
            ));
        }
        if self.swizzle > 0 && inner > u64::from(self.swizzle) {
            return Err(format!(
                "a box row of {inner} bytes, wider than the {}-byte swizzle",
                self.swizzle
            ));
        }
        Ok(())
    }

    /// Bytes one box fills in shared memory.
    pub fn box_bytes(&self) -> u64 {
        let n: u64 = self.box_dims.iter().map(|&d| u64::from(d)).product();
        n * u64::from(self.elem_bytes)
    }
}

/// Shared-memory byte address `a` after a `width`-byte swizzle (0: none): its 16-byte chunk
/// index XORed with the address bits 7 and up, as TMA writes and `wgmma` reads.
pub(crate) fn swizzle(a: u64, width: u32) -> u64 {
    if width == 0 {
        a
    } else {
        a ^ (((a >> 7) & (u64::from(width) / 16 - 1)) << 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_survives_its_bytes_and_garbage_is_rejected() {
        let m = TensorMap {
            address: 0x7f00_0001_0000,
            elem_bytes: 2,
            dims: vec![100, 70, 3],
            strides: vec![208, 208 * 70],
            box_dims: vec![64, 128, 1],
            swizzle: 128,
        };
        assert_eq!(TensorMap::from_bytes(&m.to_bytes()), Some(m.clone()));
        assert_eq!(m.check(), Ok(()));
        assert_eq!(TensorMap::from_bytes(&[0u8; 128]), None);
        assert_eq!(TensorMap::from_bytes(&m.to_bytes()[..64]), None);
        let wide = TensorMap {
            box_dims: vec![128, 128, 1],
            ..m
        };
        assert!(wide.check().unwrap_err().contains("wider than"));
        assert_eq!(swizzle(0x80 + 0x10, 128), 0x80);
        assert_eq!(swizzle(0x380, 32), 0x390);
    }
}
