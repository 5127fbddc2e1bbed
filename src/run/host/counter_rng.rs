//! Counter-based input draws: element `i` of a buffer is a pure function of the buffer's key and
//! `i`, so the host and the GPU make the same bits independently, in any order, on any number of
//! threads. The host makes them for the reference and the CPU backends; the worker makes them
//! on the device (`devgen`), so no input crosses PCIe.
//!
//! The random bits are SplitMix64's (a counter-based generator: output `c` is a mixing function
//! of `key + c·γ`). Normal draws are Box–Muller pairs: elements `2p` and `2p + 1` share the
//! pair's radius and take its cosine and sine. The logarithm and the trigonometry are written
//! here with `+ − × ÷` and `sqrt` alone (each correctly rounded by IEEE 754 on both sides) and
//! evaluated in the same order on both sides, with the GPU's multiply-add contraction off, so
//! the GPU's results are the host's to the bit. [`cuda_source`] writes the device code from
//! the same constants.

/// What a buffer's elements are drawn as. `lo`/`hi` clamp the stored (rounded) value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recipe {
    pub kind: Kind,
    /// randn: mean; uniform: low; uniform-int: the smallest value; constant: the value.
    pub p0: f64,
    /// randn: std; uniform: high; uniform-int: how many values (from `p0` up).
    pub p1: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The draw; the numbers are the device kernel's `kind` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    Randn = 0,
    Uniform = 1,
    UniformInt = 2,
    Arange = 3,
    Constant = 4,
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function.
pub fn mix(x: u64) -> u64 {
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A buffer's key from its seed.
pub fn key_of(seed: u64) -> u64 {
    mix(seed.wrapping_add(GAMMA))
}

/// Draw `c` of stream `key`, as a double in `[0, 1)` with 53 random bits.
fn unit(key: u64, c: u64) -> f64 {
    let bits = mix(key.wrapping_add(c.wrapping_add(1).wrapping_mul(GAMMA)));
    ((bits >> 11) as i64) as f64 * TWO_M53
}

const TWO_M53: f64 = 1.0 / 9_007_199_254_740_992.0;
const LN2: f64 = std::f64::consts::LN_2;
const HALF_PI: f64 = std::f64::consts::FRAC_PI_2;
const SQRT2: f64 = std::f64::consts::SQRT_2;
/// `1 / (2k + 1)`, k = 0..=10: ln(m) = 2s · Σ s^2k / (2k + 1), s = (m − 1)/(m + 1).
const LN_SERIES: [f64; 11] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
];
/// Taylor coefficients of sin(φ)/φ and cos(φ) in φ², for |φ| ≤ π/4.
const SIN_SERIES: [f64; 9] = [
    1.0,
    -1.0 / 6.0,
    1.0 / 120.0,
    -1.0 / 5040.0,
    1.0 / 362_880.0,
    -1.0 / 39_916_800.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 1_307_674_368_000.0,
    1.0 / 355_687_428_096_000.0,
];
const COS_SERIES: [f64; 10] = [
    1.0,
    -1.0 / 2.0,
    1.0 / 24.0,
    -1.0 / 720.0,
    1.0 / 40_320.0,
    -1.0 / 3_628_800.0,
    1.0 / 479_001_600.0,
    -1.0 / 87_178_291_200.0,
    1.0 / 20_922_789_888_000.0,
    -1.0 / 6_402_373_705_728_000.0,
];

/// `c[0] + x·(c[1] + x·(…))`, innermost first.
fn horner(c: &[f64], x: f64) -> f64 {
    let mut p = c[c.len() - 1];
    for k in (0..c.len() - 1).rev() {
        p = p * x + c[k];
    }
    p
}

/// ln(u) for a normal, positive `u`.
fn ln(u: f64) -> f64 {
    let bits = u.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mut m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    if m > SQRT2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    f64::from(e) * LN2 + (2.0 * s) * horner(&LN_SERIES, s * s)
}

/// (sin, cos) of `f·π/2` for `f` in `[0, 0.5]`.
fn quarter(f: f64) -> (f64, f64) {
    let phi = f * HALF_PI;
    let x = phi * phi;
    (phi * horner(&SIN_SERIES, x), horner(&COS_SERIES, x))
}

/// (cos, sin) of `2π·t` for `t` in `[0, 1)`.
fn turn(t: f64) -> (f64, f64) {
    let t4 = t * 4.0;
    let q = t4.floor();
    let f = t4 - q;
    let (s, c) = if f <= 0.5 {
        quarter(f)
    } else {
        let (s, c) = quarter(1.0 - f);
        (c, s)
    };
    match q as u32 {
        0 => (c, s),
        1 => (-s, c),
        2 => (-c, -s),
        _ => (s, -c),
    }
}

/// The standard normal pair `p` of stream `key`: (element 2p, element 2p + 1).
pub fn normal_pair(key: u64, p: u64) -> (f64, f64) {
    let u1 = 1.0 - unit(key, 2 * p); // in (0, 1]
    let r = (-2.0 * ln(u1)).sqrt();
    let (c, s) = turn(unit(key, 2 * p + 1));
    (r * c, r * s)
}

/// Pairs drawn together on the host: the same operations as [`ln`] and [`turn`], lane by
/// lane over arrays, so that the compiler runs lanes side by side (SIMD) instead of one
/// polynomial's chain of dependent operations at a time. Bit for bit the scalar results.
const LANES: usize = 8;
type Lanes = [f64; LANES];

fn horner_lanes(c: &[f64], x: &Lanes) -> Lanes {
    let mut p = [c[c.len() - 1]; LANES];
    for k in (0..c.len() - 1).rev() {
        for j in 0..LANES {
            p[j] = p[j] * x[j] + c[k];
        }
    }
    p
}

/// [`normal_pair`] for pairs `p .. p + LANES`: (even elements, odd elements).
fn normal_pairs(key: u64, p: u64) -> (Lanes, Lanes) {
    let (mut m, mut e, mut t) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
    for j in 0..LANES {
        let q = p + j as u64;
        let bits = (1.0 - unit(key, 2 * q)).to_bits();
        let mut ex = ((bits >> 52) & 0x7ff) as i32 - 1023;
        let mut mj = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
        if mj > SQRT2 {
            mj *= 0.5;
            ex += 1;
        }
        (m[j], e[j], t[j]) = (mj, f64::from(ex), unit(key, 2 * q + 1));
    }
    let s: Lanes = std::array::from_fn(|j| (m[j] - 1.0) / (m[j] + 1.0));
    let h = horner_lanes(&LN_SERIES, &std::array::from_fn(|j| s[j] * s[j]));
    let r: Lanes = std::array::from_fn(|j| (-2.0 * (e[j] * LN2 + (2.0 * s[j]) * h[j])).sqrt());
    let t4: Lanes = std::array::from_fn(|j| t[j] * 4.0);
    let q: Lanes = std::array::from_fn(|j| t4[j].floor());
    let f: Lanes = std::array::from_fn(|j| t4[j] - q[j]);
    let g: Lanes = std::array::from_fn(|j| if f[j] <= 0.5 { f[j] } else { 1.0 - f[j] });
    let phi: Lanes = std::array::from_fn(|j| g[j] * HALF_PI);
    let x: Lanes = std::array::from_fn(|j| phi[j] * phi[j]);
    let (ps, pc) = (horner_lanes(&SIN_SERIES, &x), horner_lanes(&COS_SERIES, &x));
    let (mut a, mut b) = ([0.0; LANES], [0.0; LANES]);
    for j in 0..LANES {
        let (qs, qc) = (phi[j] * ps[j], pc[j]);
        let (sn, cs) = if f[j] <= 0.5 { (qs, qc) } else { (qc, qs) };
        let (c, sn) = match q[j] as u32 {
            0 => (cs, sn),
            1 => (-sn, cs),
            2 => (-cs, -sn),
            _ => (sn, -cs),
        };
        (a[j], b[j]) = (r[j] * c, r[j] * sn);
    }
    (a, b)
}

impl Recipe {
    /// Element `i`'s value before rounding to the buffer's dtype.
    pub fn value(&self, key: u64, i: u64) -> f64 {
        match self.kind {
            Kind::Randn => {
                let (a, b) = normal_pair(key, i / 2);
                self.p0 + self.p1 * if i.is_multiple_of(2) { a } else { b }
            }
            Kind::Uniform => self.p0 + (self.p1 - self.p0) * unit(key, 2 * i),
            Kind::UniformInt => self.p0 + (self.p1 * unit(key, 2 * i)).floor(),
            Kind::Arange => i as f64,
            Kind::Constant => self.p0,
        }
    }

    /// Values of elements `start..start + out.len()` (pairs of normal draws made once).
    pub fn values(&self, key: u64, start: u64, out: &mut [f64]) {
        if self.kind != Kind::Randn {
            for (j, v) in out.iter_mut().enumerate() {
                *v = self.value(key, start + j as u64);
            }
            return;
        }
        let mut i = start;
        let mut rest = &mut out[..];
        if !i.is_multiple_of(2) && !rest.is_empty() {
            rest[0] = self.value(key, i);
            rest = &mut rest[1..];
            i += 1;
        }
        let mut groups = rest.chunks_exact_mut(2 * LANES);
        for group in &mut groups {
            let (a, b) = normal_pairs(key, i / 2);
            for (j, pair) in group.chunks_exact_mut(2).enumerate() {
                pair[0] = self.p0 + self.p1 * a[j];
                pair[1] = self.p0 + self.p1 * b[j];
            }
            i += 2 * LANES as u64;
        }
        for pair in groups.into_remainder().chunks_mut(2) {
            let (a, b) = normal_pair(key, i / 2);
            pair[0] = self.p0 + self.p1 * a;
            if let Some(second) = pair.get_mut(1) {
                *second = self.p0 + self.p1 * b;
            }
            i += 2;
        }
    }
}

/// The device generator's CUDA source, from the constants above (see `devgen.cu`).
pub fn cuda_source() -> String {
    let list = |c: &[f64]| {
        c.iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    include_str!("devgen.cu.in")
        .replace("@LN_SERIES@", &list(&LN_SERIES))
        .replace("@LN_N@", &LN_SERIES.len().to_string())
        .replace("@SIN_SERIES@", &list(&SIN_SERIES))
        .replace("@SIN_N@", &SIN_SERIES.len().to_string())
        .replace("@COS_SERIES@", &list(&COS_SERIES))
        .replace("@COS_N@", &COS_SERIES.len().to_string())
        .replace("@TWO_M53@", &format!("{TWO_M53:?}"))
        .replace("@LN2@", &format!("{LN2:?}"))
        .replace("@HALF_PI@", &format!("{HALF_PI:?}"))
        .replace("@SQRT2@", &format!("{SQRT2:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_written_functions_agree_with_the_library_ones() {
        for k in 1..2000u64 {
            let u = k as f64 / 2000.0;
            assert!(
                (ln(u) - u.ln()).abs() <= 4e-16 * u.ln().abs().max(1.0),
                "ln {u}"
            );
            let (c, s) = turn(u);
            let a = 2.0 * std::f64::consts::PI * u;
            assert!(
                (c - a.cos()).abs() < 1e-15 && (s - a.sin()).abs() < 1e-15,
                "{u}"
            );
        }
        assert_eq!(ln(1.0), 0.0);
        assert!((ln(TWO_M53) - TWO_M53.ln()).abs() < 1e-14);
    }

    #[test]
    fn draws_depend_on_key_and_index_only_and_pairs_match_single_values() {
        let r = Recipe {
            kind: Kind::Randn,
            p0: 0.5,
            p1: 2.0,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        };
        let key = key_of(42);
        let mut a = vec![0.0; 101];
        r.values(key, 7, &mut a);
        for (j, v) in a.iter().enumerate() {
            assert_eq!(*v, r.value(key, 7 + j as u64));
        }
        assert_ne!(r.value(key_of(43), 7), a[0]);
        let u = Recipe {
            kind: Kind::Uniform,
            p0: -1.0,
            p1: 3.0,
            ..r
        };
        let mut b = vec![0.0; 100_000];
        u.values(key, 0, &mut b);
        assert!(b.iter().all(|v| (-1.0..3.0).contains(v)));
        let mean = b.iter().sum::<f64>() / b.len() as f64;
        assert!((mean - 1.0).abs() < 0.02, "{mean}");
    }

    #[test]
    fn pairs_drawn_side_by_side_are_the_single_pairs_to_the_bit() {
        for (key, p) in [(key_of(1), 0), (key_of(2), 12_345), (u64::MAX, 1 << 40)] {
            let (a, b) = normal_pairs(key, p);
            for j in 0..LANES {
                let (x, y) = normal_pair(key, p + j as u64);
                assert_eq!((a[j].to_bits(), b[j].to_bits()), (x.to_bits(), y.to_bits()));
            }
        }
    }

    #[test]
    fn the_device_source_carries_the_same_constants() {
        let src = cuda_source();
        assert!(!src.contains('@'), "every placeholder is filled");
        assert!(src.contains(&format!("{:?}", 1.0 / 3.0)));
        assert!(src.contains("kwb_gen("));
    }
}
