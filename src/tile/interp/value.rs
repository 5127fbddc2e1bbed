//! How the interpreter holds values: one typed, flat, row-major vector per IR variable (integers
//! as `i64` kept wrapped to their width, floats as `f64` kept rounded to their dtype, pointers
//! as a buffer and a byte offset), and the conversions between those and the bytes of a buffer.
//! Keeping each variable's storage in one vector of one kind lets every op run as a tight loop
//! over a whole tile, with the dtype decided once per op rather than once per element.

use crate::tile::ir::{Elem, Scalar, Type};
use half::{bf16, f16};

/// A pointer: which launch buffer it points into (it always remembers, even once arithmetic
/// has taken it outside), and where, in bytes from element 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Ptr {
    pub buf: u32,
    pub byte: i64,
}

/// One variable's elements.
#[derive(Debug, Clone)]
pub(super) enum Data {
    /// Every integer dtype, `I1` included (0 or 1); `U64` holds its bits.
    Int(Vec<i64>),
    Float(Vec<f64>),
    Ptr(Vec<Ptr>),
}

impl Default for Data {
    fn default() -> Self {
        Data::Int(Vec::new())
    }
}

impl Data {
    /// Zeroed storage for a value of type `ty`.
    pub fn zeroed(ty: &Type) -> Data {
        let mut d = Data::default();
        d.reset(ty);
        d
    }

    /// Makes this storage the right kind and length for `ty`, reusing its allocation when it
    /// already is; the contents are unspecified afterwards (zero when newly made).
    pub fn reset(&mut self, ty: &Type) {
        let n = usize::try_from(ty.numel()).unwrap_or(0);
        match (ty.elem, &mut *self) {
            (Elem::Ptr(_), Data::Ptr(v)) => v.resize(n, Ptr::default()),
            (Elem::Ptr(_), _) => *self = Data::Ptr(vec![Ptr::default(); n]),
            (Elem::Scalar(s), Data::Float(v)) if s.is_float() => v.resize(n, 0.0),
            (Elem::Scalar(s), _) if s.is_float() => *self = Data::Float(vec![0.0; n]),
            (Elem::Scalar(_), Data::Int(v)) => v.resize(n, 0),
            (Elem::Scalar(_), _) => *self = Data::Int(vec![0; n]),
        }
    }

    /// The first element as a truth value (conditions are I1 scalars).
    pub fn truth(&self) -> bool {
        match self {
            Data::Int(v) => v.first().is_some_and(|&x| x != 0),
            Data::Float(v) => v.first().is_some_and(|&x| x != 0.0),
            Data::Ptr(_) => true,
        }
    }

    /// The first element as an integer (loop bounds are integer scalars).
    pub fn first_int(&self) -> Option<i64> {
        match self {
            Data::Int(v) => v.first().copied(),
            _ => None,
        }
    }
}

/// Wraps an integer result to the width and signedness of `s` (`I1` keeps its low bit).
#[inline]
pub(super) fn wrap(s: Scalar, x: i64) -> i64 {
    match s {
        Scalar::I1 => x & 1,
        Scalar::I8 => i64::from(x as i8),
        Scalar::I16 => i64::from(x as i16),
        Scalar::I32 => i64::from(x as i32),
        Scalar::U8 => i64::from(x as u8),
        Scalar::U16 => i64::from(x as u16),
        Scalar::U32 => i64::from(x as u32),
        _ => x,
    }
}

pub(super) fn wrap_all(s: Scalar, v: &mut [i64]) {
    if !matches!(s, Scalar::I64 | Scalar::U64) {
        for x in v {
            *x = wrap(s, *x);
        }
    }
}

/// Rounds an arithmetic result to `s`: f32 results directly, fp16 and bf16 through f32 (they
/// are computed in f32 and then rounded, as the GPU does).
#[inline]
pub(super) fn round(s: Scalar, x: f64) -> f64 {
    match s {
        Scalar::F32 => f64::from(x as f32),
        Scalar::F16 => f16::from_f32(x as f32).to_f64(),
        Scalar::BF16 => bf16::from_f32(x as f32).to_f64(),
        _ => x,
    }
}

pub(super) fn round_all(s: Scalar, v: &mut [f64]) {
    match s {
        Scalar::F32 => v.iter_mut().for_each(|x| *x = f64::from(*x as f32)),
        Scalar::F16 | Scalar::BF16 => v.iter_mut().for_each(|x| *x = round(s, *x)),
        _ => {}
    }
}

/// A conversion of a float to `s` (a C cast: one rounding, straight from the source value).
#[inline]
pub(super) fn convert_float(s: Scalar, x: f64) -> f64 {
    match s {
        Scalar::F32 => f64::from(x as f32),
        Scalar::F16 => f16::from_f64(x).to_f64(),
        Scalar::BF16 => bf16::from_f64(x).to_f64(),
        _ => x,
    }
}

/// An integer of dtype `from` as a float of dtype `to`, rounded once.
#[inline]
pub(super) fn int_to_float(from: Scalar, to: Scalar, x: i64) -> f64 {
    match (from == Scalar::U64, to) {
        (true, Scalar::F32) => f64::from(x as u64 as f32),
        (true, _) => convert_float(to, x as u64 as f64),
        (false, Scalar::F32) => f64::from(x as f32),
        (false, _) => convert_float(to, x as f64),
    }
}

/// A float converted to the integer dtype `to`: truncated toward zero and saturated at the
/// dtype's range (NaN becomes 0) — C leaves out-of-range conversions undefined; the GPU's
/// `cvt.rzi` saturates the same way. To `I1` it is `x != 0`.
#[inline]
pub(super) fn float_to_int(to: Scalar, x: f64) -> i64 {
    match to {
        Scalar::I1 => i64::from(x != 0.0),
        Scalar::I8 => i64::from(x as i8),
        Scalar::I16 => i64::from(x as i16),
        Scalar::I32 => i64::from(x as i32),
        Scalar::U8 => i64::from(x as u8),
        Scalar::U16 => i64::from(x as u16),
        Scalar::U32 => i64::from(x as u32),
        Scalar::U64 => x as u64 as i64,
        _ => x as i64,
    }
}

/// Reads the element of dtype `s` at `bytes[0..size]` (little-endian) as a float.
pub(super) fn read_float(s: Scalar, b: &[u8]) -> f64 {
    match s {
        Scalar::F16 => f16::from_bits(u16::from_le_bytes(arr(b))).to_f64(),
        Scalar::BF16 => bf16::from_bits(u16::from_le_bytes(arr(b))).to_f64(),
        Scalar::F32 => f64::from(f32::from_le_bytes(arr(b))),
        Scalar::F64 => f64::from_le_bytes(arr(b)),
        _ => 0.0,
    }
}

/// Reads the element of integer dtype `s` at `bytes[0..size]` (little-endian).
pub(super) fn read_int(s: Scalar, b: &[u8]) -> i64 {
    match s {
        Scalar::I1 => i64::from(b.first().is_some_and(|&x| x != 0)),
        Scalar::I8 => i64::from(i8::from_le_bytes(arr(b))),
        Scalar::U8 => i64::from(u8::from_le_bytes(arr(b))),
        Scalar::I16 => i64::from(i16::from_le_bytes(arr(b))),
        Scalar::U16 => i64::from(u16::from_le_bytes(arr(b))),
        Scalar::I32 => i64::from(i32::from_le_bytes(arr(b))),
        Scalar::U32 => i64::from(u32::from_le_bytes(arr(b))),
        _ => i64::from_le_bytes(arr(b)),
    }
}

/// Writes a float as dtype `s` into `out[0..size]` (the value is already rounded to `s`).
pub(super) fn write_float(s: Scalar, x: f64, out: &mut [u8]) {
    match s {
        Scalar::F16 => put(out, &f16::from_f64(x).to_bits().to_le_bytes()),
        Scalar::BF16 => put(out, &bf16::from_f64(x).to_bits().to_le_bytes()),
        Scalar::F32 => put(out, &(x as f32).to_le_bytes()),
        Scalar::F64 => put(out, &x.to_le_bytes()),
        // A float stored through an integer pointer: converted as a C assignment would.
        _ => write_int(s, float_to_int(s, x), out),
    }
}

/// Writes an integer as dtype `s` into `out[0..size]`.
pub(super) fn write_int(s: Scalar, x: i64, out: &mut [u8]) {
    match s {
        Scalar::I1 => put(out, &[u8::from(x != 0)]),
        Scalar::I8 | Scalar::U8 => put(out, &(x as u8).to_le_bytes()),
        Scalar::I16 | Scalar::U16 => put(out, &(x as u16).to_le_bytes()),
        Scalar::I32 | Scalar::U32 => put(out, &(x as u32).to_le_bytes()),
        Scalar::I64 | Scalar::U64 => put(out, &x.to_le_bytes()),
        _ => write_float(s, int_to_float(Scalar::I64, s, x), out),
    }
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    a
}

fn put(out: &mut [u8], src: &[u8]) {
    for (d, s) in out.iter_mut().zip(src) {
        *d = *s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_to_their_width() {
        assert_eq!(
            wrap(Scalar::I32, i64::from(i32::MAX) + 1),
            i64::from(i32::MIN)
        );
        assert_eq!(wrap(Scalar::U8, -1), 255);
        assert_eq!(wrap(Scalar::I1, 3), 1);
    }

    #[test]
    fn bytes_round_trip() {
        let mut b = [0u8; 8];
        for s in [Scalar::F16, Scalar::BF16, Scalar::F32, Scalar::F64] {
            write_float(s, 1.5, &mut b);
            assert_eq!(read_float(s, &b), 1.5, "{s:?}");
        }
        write_int(Scalar::I32, -7, &mut b);
        assert_eq!(read_int(Scalar::I32, &b), -7);
    }

    #[test]
    fn float_to_int_truncates_and_saturates() {
        assert_eq!(float_to_int(Scalar::I32, -2.7), -2);
        assert_eq!(float_to_int(Scalar::I32, 1e20), i64::from(i32::MAX));
        assert_eq!(float_to_int(Scalar::I32, f64::NAN), 0);
        assert_eq!(float_to_int(Scalar::I1, 0.25), 1);
    }
}
