//! Host-side buffer contents: the bytes a buffer starts with, and the same values as `f64`,
//! rounded to the buffer's dtype so the CPU reference sees exactly what the kernel sees. Random
//! inits are counter-based draws ([`crate::run::host::counter_rng`]): element `i` depends on the seed and
//! `i` only, never on the thread count, and the GPU worker draws the same bits on the device.
//! Also here: the poison pattern output buffers start as (to catch elements a kernel never
//! wrote), and decoding device bytes back to `f64`.

use super::counter_rng::{key_of, Kind, Recipe};
use super::npy::{self, NpyError};
use crate::workspace::{DType, Init};
use half::{bf16, f16, slice::HalfFloatSliceExt};
use rayon::prelude::*;
use std::path::PathBuf;

/// Runs `$body` with `$E` naming the [`Elem`] type of `$dtype`.
#[rustfmt::skip]
macro_rules! with_elem {
    ($dtype:expr, $E:ident => $body:expr) => { match $dtype {
        $crate::workspace::DType::F32 => { type $E = $crate::run::host::inputs::F32; $body }
        $crate::workspace::DType::F16 => { type $E = $crate::run::host::inputs::F16; $body }
        $crate::workspace::DType::BF16 => { type $E = $crate::run::host::inputs::BF16; $body }
        $crate::workspace::DType::I32 => { type $E = $crate::run::host::inputs::I32; $body }
        $crate::workspace::DType::F64 => { type $E = $crate::run::host::inputs::F64; $body }
        $crate::workspace::DType::I64 => { type $E = $crate::run::host::inputs::I64; $body }
        $crate::workspace::DType::I16 => { type $E = $crate::run::host::inputs::I16; $body }
        $crate::workspace::DType::I8 => { type $E = $crate::run::host::inputs::I8; $body }
        $crate::workspace::DType::U8 => { type $E = $crate::run::host::inputs::U8; $body }
        $crate::workspace::DType::Bool => { type $E = $crate::run::host::inputs::Bool; $body }
    } };
}
pub(crate) use with_elem;

/// Elements per chunk: the unit of parallel work.
pub(crate) const CHUNK: usize = 1 << 16;

/// A buffer's bytes as uploaded (little-endian) and the exact values they hold.
#[derive(Debug, Clone, PartialEq)]
pub struct HostBuffer {
    pub dtype: DType,
    pub bytes: Vec<u8>,
    pub values: Vec<f64>,
}

/// Why a buffer's contents could not be made.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error(transparent)]
    Npy(#[from] NpyError),
    #[error("{path}: the file holds shape {1:?}, but the buffer has shape {2:?}", path = .0.display())]
    NpyShape(PathBuf, Vec<usize>, Vec<usize>),
    /// A shape that disagrees with the element count, a buffer too large, or bad init parameters.
    #[error("{0}")]
    Invalid(String),
}

/// The poison bits of one element: quiet NaNs with a payload no arithmetic makes for floats. The
/// f64 one repeats every 32 bits, the integer ones every 8 (0x7F, which no bool and few
/// integer results are), so a device memset can lay any one down.
pub const fn poison_bits(dtype: DType) -> u64 {
    match dtype {
        DType::F32 => 0x7FC0_DEAD,
        DType::F16 => 0x7E5A,
        DType::BF16 => 0x7FDA,
        DType::F64 => 0x7FFA_DEAD_7FFA_DEAD,
        DType::I64 => 0x7F7F_7F7F_7F7F_7F7F,
        DType::I32 => 0x7F7F_7F7F,
        DType::I16 => 0x7F7F,
        DType::I8 | DType::U8 | DType::Bool => 0x7F,
    }
}

/// `elems` elements of the poison pattern, little-endian.
pub fn poison(dtype: DType, elems: usize) -> Vec<u8> {
    poison_bits(dtype).to_le_bytes()[..dtype.size() as usize].repeat(elems)
}

/// Whether `bytes` (one element) hold the poison pattern of `dtype`.
pub fn is_poison(dtype: DType, bytes: &[u8]) -> bool {
    bytes == &poison_bits(dtype).to_le_bytes()[..dtype.size() as usize]
}

/// Device bytes back to `f64`, exactly (NaN stays NaN); a trailing partial element is ignored.
pub fn decode(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    with_elem!(dtype, E => bytes.par_chunks_exact(E::SIZE).map(E::load).collect())
}

/// `values` rounded to `dtype` (nearest, ties to even; integers saturate, NaN becomes 0, and
/// a bool is 1 for any value but 0).
pub fn encode(dtype: DType, values: &[f64]) -> HostBuffer {
    fill(dtype, values.len(), FULL, &|start, out| {
        out.copy_from_slice(&values[start..start + out.len()])
    })
}

/// How `init` draws the elements of a `dtype` buffer, with the bounds the stored values are
/// clamped into; `None` for an `npy` file (its values are read, not drawn). Uniform draws lie
/// in `[low, high)` after rounding; for integer types they are integers in
/// `[ceil(low), ceil(high))`, within the type's range.
pub fn recipe(dtype: DType, init: &Init) -> Result<Option<Recipe>, InputError> {
    let invalid = |msg: String| Err(InputError::Invalid(msg));
    let (lo, hi) = match *init {
        Init::Randn { mean, std } if !(mean.is_finite() && std.is_finite() && std >= 0.0) => {
            return invalid(format!("randn needs finite mean, std >= 0, got {init:?}"));
        }
        Init::Uniform { low, high } if !(high - low > 0.0 && (high - low).is_finite()) => {
            return invalid(format!("uniform needs finite low < high, got {init:?}"));
        }
        Init::Uniform { low, high } if !dtype.is_float() => {
            let (min, max) = dtype.int_range().unwrap_or(FULL);
            let lo = low.ceil().max(min);
            (lo, high.ceil().min(max + 1.0) - 1.0)
        }
        Init::Uniform { low, high } => {
            with_elem!(dtype, E => (E::nearest(low, true), E::nearest(high, false)))
        }
        _ => FULL,
    };
    if lo > hi {
        return invalid(format!("{init:?} holds no {dtype} value"));
    }
    let r = |kind, p0, p1| {
        Ok(Some(Recipe {
            kind,
            p0,
            p1,
            lo,
            hi,
        }))
    };
    match *init {
        Init::Randn { mean, std } => r(Kind::Randn, mean, std),
        Init::Uniform { low, high } if dtype.is_float() => r(Kind::Uniform, low, high),
        Init::Uniform { .. } => r(Kind::UniformInt, lo, hi - lo + 1.0),
        Init::Arange => r(Kind::Arange, 0.0, 0.0),
        Init::Constant { value } => r(Kind::Constant, value, 0.0),
        Init::Npy { .. } => Ok(None),
    }
}

/// Makes `elems` elements of `dtype` as `init` says, from `seed` (see [`recipe`] and
/// [`crate::run::host::counter_rng`]). `shape` (whose element count must be `elems`) is what an `npy`
/// file must match.
pub fn generate(
    dtype: DType,
    elems: usize,
    init: &Init,
    shape: &[usize],
    seed: u64,
) -> Result<HostBuffer, InputError> {
    let invalid = |msg: String| Err(InputError::Invalid(msg));
    if shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) != Some(elems) {
        return invalid(format!("shape {shape:?} does not hold {elems} elements"));
    }
    let bytes = elems.checked_mul(dtype.size() as usize);
    if bytes.is_none_or(|b| b > isize::MAX as usize) {
        return invalid(format!("{elems} elements of {dtype} do not fit in memory"));
    }
    if let Init::Npy { path } = init {
        let a = npy::read(path)?;
        if a.shape != shape {
            return Err(InputError::NpyShape(path.clone(), a.shape, shape.to_vec()));
        }
        if let Some(i) = a.data.iter().position(|&v| !holds_exactly(dtype, v)) {
            return invalid(format!(
                "{}: element {i} ({}) is not a {dtype} value kwb can hold exactly",
                path.display(),
                a.data[i]
            ));
        }
        return Ok(fill(dtype, elems, FULL, &|start, out| {
            out.copy_from_slice(&a.data[start..start + out.len()])
        }));
    }
    let Some(r) = recipe(dtype, init)? else {
        return invalid(format!("{init:?} is neither drawn nor read"));
    };
    let key = key_of(seed);
    Ok(fill(dtype, elems, (r.lo, r.hi), &|start, out| {
        r.values(key, start as u64, out)
    }))
}

const FULL: (f64, f64) = (f64::NEG_INFINITY, f64::INFINITY);

/// Whether a value read from a file is one `dtype` stores as is: any value for floats (they
/// round as a cast does), and for integers a whole number in the type's range that `f64` holds
/// exactly (an int64 beyond ±2^53 may already have rounded on the way in).
fn holds_exactly(dtype: DType, v: f64) -> bool {
    match dtype.int_range() {
        None => true,
        Some((lo, hi)) => {
            v.fract() == 0.0 && v >= lo && v <= hi && v.abs() <= 9_007_199_254_740_992.0
        }
    }
}

/// A buffer of the values `f(start, out)` writes for elements `start..start + out.len()`,
/// rounded to `dtype` and clamped into `bounds` (both inclusive), made in chunks in parallel.
fn fill<F>(dtype: DType, elems: usize, bounds: (f64, f64), f: &F) -> HostBuffer
where
    F: Fn(usize, &mut [f64]) + Sync,
{
    with_elem!(dtype, E => {
        let mut bytes = vec![0u8; elems * E::SIZE];
        let mut values = vec![0f64; elems];
        let work = bytes.par_chunks_mut(CHUNK * E::SIZE).zip(values.par_chunks_mut(CHUNK));
        work.enumerate().for_each(|(c, (b, v))| {
            f(c * CHUNK, v);
            E::store_all(v, b);
            for (x, out) in v.iter_mut().zip(b.chunks_exact_mut(E::SIZE)) {
                if *x < bounds.0 || *x > bounds.1 {
                    *x = E::store(x.clamp(bounds.0, bounds.1), out);
                }
            }
        });
        HostBuffer { dtype, bytes, values }
    })
}

/// `v` rounded to f32 by round-to-odd, so rounding that to f16 or bf16 is correct (`as` is not).
fn f32_odd(v: f64) -> f32 {
    let x = v as f32;
    let toward_zero = x.to_bits() - u32::from((x as f64).abs() > v.abs());
    let exact = x as f64 == v || v.is_nan();
    f32::from_bits(if exact { x.to_bits() } else { toward_zero | 1 })
}

/// One element type's storage: how a value is rounded and laid out little-endian.
pub(crate) trait Elem {
    const DTYPE: DType;
    const SIZE: usize;
    /// The bits of `v` rounded to this type.
    fn round(v: f64) -> u64;
    /// The value of an element's bits.
    fn value(bits: u64) -> f64;

    /// Rounds `v`, writes it to `out` (`SIZE` bytes) and returns the stored value.
    fn store(v: f64, out: &mut [u8]) -> f64 {
        let bits = Self::round(v);
        out.copy_from_slice(&bits.to_le_bytes()[..Self::SIZE]);
        Self::value(bits)
    }
    /// Rounds `v` in place and writes it to `out`; f16 uses half's vectorised conversions.
    fn store_all(v: &mut [f64], out: &mut [u8]) {
        if Self::DTYPE == DType::F16 {
            let narrow: Vec<f32> = v.iter().map(|&x| f32_odd(x)).collect();
            let mut h = vec![f16::ZERO; v.len()];
            h.convert_from_f32_slice(&narrow);
            h.convert_to_f64_slice(v);
            for (o, x) in out.chunks_exact_mut(2).zip(&h) {
                o.copy_from_slice(&x.to_le_bytes());
            }
        } else {
            for (x, o) in v.iter_mut().zip(out.chunks_exact_mut(Self::SIZE)) {
                *x = Self::store(*x, o);
            }
        }
    }
    fn bits(b: &[u8]) -> u64 {
        let mut a = [0; 8];
        a[..Self::SIZE].copy_from_slice(&b[..Self::SIZE]);
        u64::from_le_bytes(a)
    }
    fn load(b: &[u8]) -> f64 {
        Self::value(Self::bits(b))
    }
    /// For float types: the representable value nearest `v` that is `>= v` (`at_least`) or `< v`.
    fn nearest(v: f64, at_least: bool) -> f64 {
        let (bits, sign) = (Self::round(v), 1u64 << (8 * Self::SIZE - 1));
        let r = Self::value(bits);
        if (at_least && r >= v) || (!at_least && r < v) {
            return r;
        }
        // One step in the sign-magnitude encoding; below +0 comes the smallest negative value.
        let bits = if bits == 0 && !at_least { sign } else { bits };
        let neg = bits & sign != 0;
        Self::value(if neg == at_least { bits - 1 } else { bits + 1 })
    }
}

/// The [`Elem`] types: a name, a size, how a value becomes bits and how bits become a value.
#[rustfmt::skip]
macro_rules! elems {
    ($($T:ident, $size:literal, |$v:ident| $round:expr, |$b:ident| $value:expr;)*) => {$(
        pub(crate) struct $T;
        impl Elem for $T {
            const DTYPE: DType = DType::$T;
            const SIZE: usize = $size;
            fn round($v: f64) -> u64 { $round }
            fn value($b: u64) -> f64 { $value }
        }
    )*};
}
elems! {
    F32, 4, |v| (v as f32).to_bits().into(), |b| f32::from_bits(b as u32).into();
    F16, 2, |v| f16::from_f32(f32_odd(v)).to_bits().into(), |b| f16::from_bits(b as u16).into();
    BF16, 2, |v| bf16::from_f32(f32_odd(v)).to_bits().into(), |b| f32::from_bits((b as u32) << 16).into();
    I32, 4, |v| (v.round_ties_even() as i32 as u32).into(), |b| (b as u32 as i32).into();
    F64, 8, |v| v.to_bits(), |b| f64::from_bits(b);
    I64, 8, |v| v.round_ties_even() as i64 as u64, |b| b as i64 as f64;
    I16, 2, |v| (v.round_ties_even() as i16 as u16).into(), |b| (b as u16 as i16).into();
    I8, 1, |v| (v.round_ties_even() as i8 as u8).into(), |b| (b as u8 as i8).into();
    U8, 1, |v| (v.round_ties_even() as u8).into(), |b| (b as u8).into();
    Bool, 1, |v| u64::from(v != 0.0 && !v.is_nan()), |b| f64::from(b as u8 != 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 3 * CHUNK + 123;

    fn gen(dtype: DType, init: Init, seed: u64) -> HostBuffer {
        generate(dtype, N, &init, &[N], seed).unwrap()
    }

    fn fails(dtype: DType, init: Init, shape: &[usize]) -> String {
        let n = shape.iter().product();
        generate(dtype, n, &init, shape, 0).unwrap_err().to_string()
    }

    fn uniform(low: f64, high: f64) -> Init {
        Init::Uniform { low, high }
    }

    fn randn(mean: f64, std: f64) -> Init {
        Init::Randn { mean, std }
    }

    #[test]
    fn reproducible_per_seed_and_independent_of_threads() {
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build();
        for dtype in DType::ALL {
            let a = pool(1).unwrap().install(|| gen(dtype, Init::DEFAULT, 7));
            let b = pool(3).unwrap().install(|| gen(dtype, Init::DEFAULT, 7));
            assert_eq!(a, b, "{dtype}");
            assert_eq!(decode(dtype, &a.bytes), a.values, "{dtype}"); // also checks the length
            let c = gen(dtype, Init::DEFAULT, 8).values;
            let same = a.values.iter().zip(&c).filter(|(x, y)| x == y).count();
            // randn rounds to few integers (half of them 0 in u8), and to 1 for almost any bool.
            let limit = match dtype {
                DType::Bool => N + 1,
                DType::U8 => 3 * N / 4,
                d if !d.is_float() => N / 2,
                _ => N / 50,
            };
            assert!(same < limit, "{dtype}: {same} equal elements across seeds");
        }
    }

    #[test]
    fn stored_values_are_exact_and_correctly_rounded() {
        let a = gen(DType::F16, randn(0.5, 10.0), 1);
        assert!(a.values.iter().all(|&v| f16::from_f64(v).to_f64() == v));
        let b = gen(DType::BF16, uniform(-3.0, 3.0), 1);
        assert!(b.values.iter().all(|&v| bf16::from_f64(v).to_f64() == v));
        // Just above a halfway point: rounding through f32 with `as` would land on the tie.
        let (t, p) = (2f64.powi(-40), |e| 2f64.powi(e));
        let e = encode(DType::F16, &[1.0 + p(-11) + t, 1.0 + p(-11), -65520.0]);
        assert_eq!(e.values, [1.0 + p(-10), 1.0, f64::NEG_INFINITY]);
        assert_eq!(e.bytes[..2], [0x01, 0x3C]);
        let e = encode(DType::BF16, &[1.0 + p(-8) + t, 1e-45, f64::NAN]);
        assert_eq!(e.values[..2], [1.0 + p(-7), 0.0]);
        assert!(e.values[2].is_nan());
        let e = encode(DType::I32, &[2.5, -3.5, 1e12, f64::NAN]);
        assert_eq!(e.values, [2.0, -4.0, i32::MAX as f64, 0.0]);
        let v = [2.5, -3.5, 1e12, f64::NAN, -1e30, 300.0];
        assert_eq!(encode(DType::I64, &v).values[..4], [2.0, -4.0, 1e12, 0.0]);
        assert_eq!(
            encode(DType::I16, &v).values,
            [2.0, -4.0, 32767.0, 0.0, -32768.0, 300.0]
        );
        assert_eq!(
            encode(DType::I8, &v).values,
            [2.0, -4.0, 127.0, 0.0, -128.0, 127.0]
        );
        assert_eq!(
            encode(DType::U8, &v).values,
            [2.0, 0.0, 255.0, 0.0, 0.0, 255.0]
        );
        assert_eq!(
            encode(DType::Bool, &v).values,
            [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
        );
        assert_eq!(encode(DType::I64, &[-5.0]).bytes, (-5i64).to_le_bytes());
    }

    #[test]
    fn narrow_and_wide_integers_draw_within_their_range() {
        for dtype in [DType::I64, DType::I16, DType::I8, DType::U8, DType::Bool] {
            let (lo, hi) = dtype.int_range().unwrap();
            let a = gen(dtype, uniform(-1e6, 1e6), 3);
            assert!(
                a.values
                    .iter()
                    .all(|&x| x >= lo && x <= hi && x.fract() == 0.0),
                "{dtype}"
            );
            let a = gen(dtype, uniform(0.0, 2.0), 3);
            let ones = a.values.iter().filter(|&&x| x == 1.0).count();
            assert!(a.values.iter().all(|&x| x == 0.0 || x == 1.0), "{dtype}");
            assert!(ones > N / 3 && ones < 2 * N / 3, "{dtype}: {ones} ones");
        }
    }

    #[test]
    fn an_npy_integer_that_does_not_fit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.npy");
        npy::write(&path, &[3], DType::F64, &[1.0, 300.0, 2.0]).unwrap();
        let e = fails(DType::I8, Init::Npy { path: path.clone() }, &[3]);
        assert!(e.contains("element 1 (300) is not a i8 value"), "{e}");
        let ok = generate(DType::I16, 3, &Init::Npy { path }, &[3], 0).unwrap();
        assert_eq!(ok.values, [1.0, 300.0, 2.0]);
        assert_eq!(ok.bytes, [1, 0, 44, 1, 2, 0]);
    }

    #[test]
    fn randn_has_the_asked_mean_and_std() {
        let a = generate(DType::F32, 1_000_000, &randn(2.0, 3.0), &[1000, 1000], 3).unwrap();
        let mean = a.values.iter().sum::<f64>() / 1e6;
        let var = a.values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 1e6;
        let (dm, ds) = ((mean - 2.0).abs(), (var.sqrt() - 3.0).abs());
        assert!(dm < 0.015 && ds < 0.015, "mean {mean}, variance {var}");
    }

    #[test]
    fn uniform_stays_in_bounds() {
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let a = gen(dtype, uniform(0.0, 1.0), 5);
            assert!(a.values.iter().all(|v| (0.0..1.0).contains(v)), "{dtype}");
            assert!(a.values.iter().any(|&v| v > 0.99), "{dtype}");
        }
        let a = gen(DType::F16, uniform(1000.0, 1001.0), 5);
        assert!(a.values.iter().all(|&v| v == 1000.0 || v == 1000.5));
        let a = gen(DType::I32, uniform(-0.5, 9.5), 5);
        for k in 0..10 {
            let count = a.values.iter().filter(|&&v| v == k as f64).count();
            assert!(count.abs_diff(N / 10) < N / 50, "{k}: {count}");
        }
        let e = fails(DType::F16, uniform(1.0001, 1.0002), &[4]);
        assert!(e.ends_with("holds no f16 value"), "{e}");
        let e = fails(DType::F32, uniform(2.0, 1.0), &[4]);
        assert!(
            e.starts_with("uniform needs finite low < high, got Uniform"),
            "{e}"
        );
        let e = fails(DType::F32, randn(0.0, -1.0), &[4]);
        assert!(e.contains("std >= 0"), "{e}");
    }

    #[test]
    fn arange_constant_and_shapes() {
        let a = generate(DType::F16, 3000, &Init::Arange, &[3, 1000], 0).unwrap();
        assert_eq!(a.values[..4], [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(a.values[2047..2051], [2047.0, 2048.0, 2048.0, 2050.0]);
        let a = gen(DType::I32, Init::Arange, 0);
        assert!(a.values.iter().enumerate().all(|(i, &v)| v == i as f64));
        let a = generate(DType::BF16, 5, &Init::Constant { value: 0.1 }, &[5], 0).unwrap();
        assert_eq!(a.values, vec![bf16::from_f64(0.1).to_f64(); 5]);
        assert_eq!(a.bytes, [0xCD, 0x3D].repeat(5));
        let e = generate(DType::F32, 6, &Init::Arange, &[2, 2], 0).unwrap_err();
        assert_eq!(e.to_string(), "shape [2, 2] does not hold 6 elements");
    }

    #[test]
    fn npy_init_checks_the_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.npy");
        npy::write(&path, &[2, 3], DType::F64, &[1.0, 2.0, 3.0, 4.0, 5.0, 0.1]).unwrap();
        let init = Init::Npy { path };
        let a = generate(DType::F16, 6, &init, &[2, 3], 0).unwrap();
        assert_eq!(a.values[..5], [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(a.values[5], f16::from_f64(0.1).to_f64());
        let e = fails(DType::F16, init, &[3, 2]);
        assert!(e.ends_with("w.npy: the file holds shape [2, 3], but the buffer has shape [3, 2]"));
        let path = dir.path().join("no.npy");
        assert!(fails(DType::F16, Init::Npy { path }, &[6]).contains("no.npy: "));
    }

    #[test]
    fn poison_is_a_recognisable_nan_and_decodes() {
        for dtype in DType::ALL {
            let (p, size) = (poison(dtype, 3), dtype.size() as usize);
            assert!(p.len() == 3 * size && p.chunks(size).all(|e| is_poison(dtype, e)));
            assert!(!is_poison(dtype, &encode(dtype, &[0.0]).bytes) && !is_poison(dtype, &p[1..]));
            let v = decode(dtype, &p);
            assert!(v.iter().all(|x| x.is_nan() == dtype.is_float()), "{dtype}");
        }
        assert_eq!(poison(DType::F32, 1), [0xAD, 0xDE, 0xC0, 0x7F]);
        assert_eq!(decode(DType::I32, &poison(DType::I32, 1)), [2139062143.0]);
        assert_eq!(decode(DType::I8, &poison(DType::I8, 1)), [127.0]);
        let f16s = decode(DType::F16, &[0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00]);
        assert_eq!(f16s, [1.0, -2.0, 2f64.powi(-24)]);
        assert_eq!(decode(DType::BF16, &[0x80, 0x3F, 0x7]), [1.0]);
    }
}
