//! Per-lane semantics of the value instructions, as the PTX ISA defines them: integer widths
//! and signedness, IEEE rounding of `.rn/.rz/.rm/.rp` (f32 results computed exactly in f64, or
//! from an exact f64 pair where f64 alone could round twice), `.ftz`, `.sat`, NaN rules of
//! `min`/`max`, `cvt` in all directions, fp16/bf16 (scalar and x2). Approximate instructions
//! are computed exactly; the caller records that they ran.

use super::inst::*;
use half::{bf16, f16};

pub fn mask(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let s = 64 - bits;
        ((v << s) as i64) >> s
    }
}

fn f32b(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

fn bits32(x: f32) -> u64 {
    u64::from(x.to_bits())
}

fn ftz(x: f32, on: bool) -> f32 {
    if on && x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

fn next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// The f32 rounding of the exact value `hi + lo` (an f64 pair with |lo| tiny against hi).
pub fn round_pair(hi: f64, lo: f64, mode: Round) -> f32 {
    let r = hi as f32;
    if !r.is_finite() || !hi.is_finite() {
        return r;
    }
    let d = hi - f64::from(r);
    match mode {
        Round::Rz | Round::Rm | Round::Rp => {
            let above = d + lo; // exact - r, sign reliable
            match mode {
                Round::Rm if above < 0.0 => next_down(r),
                Round::Rp if above > 0.0 => next_up(r),
                Round::Rz if r > 0.0 && above < 0.0 => next_down(r),
                Round::Rz if r < 0.0 && above > 0.0 => next_up(r),
                _ => r,
            }
        }
        _ => {
            if d != 0.0 && lo != 0.0 {
                let step = if d > 0.0 { next_up(r) } else { next_down(r) };
                let half = (f64::from(step) - f64::from(r)).abs() / 2.0;
                if d.abs() == half && (lo > 0.0) == (d > 0.0) {
                    return step;
                }
            }
            r
        }
    }
}

/// `a + b` exactly, as `(sum, error)`.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

fn round_f64(x: f64, mode: Round) -> f32 {
    round_pair(x, 0.0, mode)
}

fn h2f(v: u64, ty: Ty) -> f32 {
    match ty {
        Ty::Bf16 | Ty::Bf16x2 => bf16::from_bits(v as u16).to_f32(),
        _ => f16::from_bits(v as u16).to_f32(),
    }
}

fn f2h(x: f64, ty: Ty) -> u64 {
    u64::from(match ty {
        Ty::Bf16 | Ty::Bf16x2 => bf16::from_f64(x).to_bits(),
        _ => f16::from_f64(x).to_bits(),
    })
}

/// Applies `f` to each half of an x2 value (or the one half of a scalar 16-bit float).
fn halves(ty: Ty, a: &[u64], f: &dyn Fn(&[f64]) -> f64) -> u64 {
    let lanes = if matches!(ty, Ty::F16x2 | Ty::Bf16x2) {
        2
    } else {
        1
    };
    let mut out = 0u64;
    for h in 0..lanes {
        let xs: Vec<f64> = a
            .iter()
            .map(|v| f64::from(h2f((v >> (16 * h)) & 0xffff, ty)))
            .collect();
        out |= f2h(f(&xs), ty) << (16 * h);
    }
    out
}

fn is_half(ty: Ty) -> bool {
    matches!(ty, Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2)
}

/// The value of a float op on f32/f64/f16 operands, rounded as the modifiers say.
fn float2(inst: &Inst, a: u64, b: u64, f: fn(f64, f64) -> f64) -> u64 {
    let m = inst.mods;
    match inst.ty {
        Ty::F64 => f(f64::from_bits(a), f64::from_bits(b)).to_bits(),
        Ty::F32 => {
            let (x, y) = (ftz(f32b(a), m.ftz), ftz(f32b(b), m.ftz));
            let r = round_f64(f(f64::from(x), f64::from(y)), m.round);
            bits32(sat(ftz(r, m.ftz), m.sat))
        }
        t if is_half(t) => halves(t, &[a, b], &|v| f(v[0], v[1])),
        _ => 0,
    }
}

fn sat(x: f32, on: bool) -> f32 {
    if !on {
        x
    } else if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        y
    } else if y.is_nan() {
        x
    } else if x == y {
        // -0 < +0 for min
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else {
        x.min(y)
    }
}

fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        y
    } else if y.is_nan() {
        x
    } else if x == y {
        if x.is_sign_positive() {
            x
        } else {
            y
        }
    } else {
        x.max(y)
    }
}

/// The result bits of value instruction `inst` on operand values `v` (already read with the
/// instruction's types). `None`: a combination the emulator does not support.
pub fn eval(inst: &Inst, v: &[u64]) -> Option<u64> {
    let ty = inst.ty;
    let bits = ty.bits();
    let m = inst.mods;
    let int = !ty.float();
    let arg = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(match inst.op {
        Op::Mov => arg(0),
        Op::Add | Op::Sub if int => {
            let (a, b) = (arg(0), arg(1));
            if m.sat && ty == Ty::S32 {
                let (x, y) = (sext(a, 32), sext(b, 32));
                let r = if inst.op == Op::Add { x + y } else { x - y };
                mask(r.clamp(i32::MIN as i64, i32::MAX as i64) as u64, 32)
            } else if inst.op == Op::Add {
                mask(a.wrapping_add(b), bits)
            } else {
                mask(a.wrapping_sub(b), bits)
            }
        }
        Op::Add => float2(inst, arg(0), arg(1), |x, y| x + y),
        Op::Sub => float2(inst, arg(0), arg(1), |x, y| x - y),
        Op::Mul if int => mul_int(ty, m.half, arg(0), arg(1)),
        Op::Mul => float2(inst, arg(0), arg(1), |x, y| x * y),
        Op::Mad if int => {
            let p = mul_int(ty, m.half, arg(0), arg(1));
            let wb = if m.half == Half::Wide { bits * 2 } else { bits };
            mask(p.wrapping_add(arg(2)), wb)
        }
        Op::Mad | Op::Fma => fma(inst, arg(0), arg(1), arg(2)),
        Op::Div if int => {
            let (a, b) = (arg(0), arg(1));
            if mask(b, bits) == 0 {
                mask(u64::MAX, bits)
            } else if ty.signed() {
                mask(sext(a, bits).wrapping_div(sext(b, bits)) as u64, bits)
            } else {
                mask(a / b, bits)
            }
        }
        Op::Div => float2(inst, arg(0), arg(1), |x, y| x / y),
        Op::Rem => {
            let (a, b) = (arg(0), arg(1));
            if mask(b, bits) == 0 {
                mask(a, bits)
            } else if ty.signed() {
                mask(sext(a, bits).wrapping_rem(sext(b, bits)) as u64, bits)
            } else {
                mask(a % b, bits)
            }
        }
        Op::Neg if int => mask(arg(0).wrapping_neg(), bits),
        Op::Neg => match ty {
            Ty::F64 => (-f64::from_bits(arg(0))).to_bits(),
            Ty::F32 => bits32(-ftz(f32b(arg(0)), m.ftz)),
            Ty::F16 | Ty::Bf16 => arg(0) ^ 0x8000,
            _ => arg(0) ^ 0x8000_8000,
        },
        Op::Abs if int => mask(sext(arg(0), bits).unsigned_abs(), bits),
        Op::Abs => match ty {
            Ty::F64 => f64::from_bits(arg(0)).abs().to_bits(),
            Ty::F32 => bits32(ftz(f32b(arg(0)), m.ftz).abs()),
            Ty::F16 | Ty::Bf16 => arg(0) & 0x7fff,
            _ => arg(0) & 0x7fff_7fff,
        },
        Op::Min | Op::Max if int => {
            let (a, b) = (arg(0), arg(1));
            let less = if ty.signed() {
                sext(a, bits) < sext(b, bits)
            } else {
                mask(a, bits) < mask(b, bits)
            };
            if (inst.op == Op::Min) == less {
                a
            } else {
                b
            }
        }
        Op::Min => float2(inst, arg(0), arg(1), fmin),
        Op::Max => float2(inst, arg(0), arg(1), fmax),
        Op::And => arg(0) & arg(1),
        Op::Or => arg(0) | arg(1),
        Op::Xor => arg(0) ^ arg(1),
        Op::Not => mask(!arg(0), if ty == Ty::Pred { 1 } else { bits }),
        Op::Cnot => u64::from(arg(0) == 0),
        Op::Shl => {
            let s = arg(1) as u32;
            if s >= bits {
                0
            } else {
                mask(arg(0) << s, bits)
            }
        }
        Op::Shr => {
            let s = (arg(1) as u32).min(bits);
            if ty.signed() {
                mask((sext(arg(0), bits) >> s.min(63)) as u64, bits)
            } else if s >= bits {
                0
            } else {
                mask(arg(0), bits) >> s
            }
        }
        Op::Setp => {
            let c = compare(ty, m.cmp?, arg(0), arg(1), m.ftz);
            let c = match (m.bool_op, v.get(2)) {
                (Some(0), Some(&p)) => c && p != 0,
                (Some(1), Some(&p)) => c || p != 0,
                (Some(2), Some(&p)) => c ^ (p != 0),
                _ => c,
            };
            u64::from(c)
        }
        Op::Selp => {
            if arg(2) != 0 {
                arg(0)
            } else {
                arg(1)
            }
        }
        // `cvt.rn.f16x2.f32 d, a, b`: a converted into the upper half, b into the lower.
        Op::Cvt if matches!(ty, Ty::F16x2 | Ty::Bf16x2) && v.len() == 2 => {
            let h = if ty == Ty::F16x2 { Ty::F16 } else { Ty::Bf16 };
            let src = m.src_ty?;
            (cvt(h, src, m, arg(0))? << 16) | cvt(h, src, m, arg(1))?
        }
        Op::Cvt => cvt(ty, m.src_ty?, m, arg(0))?,
        Op::Rcp => unary_float(inst, arg(0), |x| 1.0 / x),
        Op::Sqrt => unary_float(inst, arg(0), f64::sqrt),
        Op::Rsqrt => unary_float(inst, arg(0), |x| 1.0 / x.sqrt()),
        Op::Ex2 => unary_float(inst, arg(0), f64::exp2),
        Op::Lg2 => unary_float(inst, arg(0), f64::log2),
        Op::Sin => unary_float(inst, arg(0), f64::sin),
        Op::Cos => unary_float(inst, arg(0), f64::cos),
        Op::Tanh => unary_float(inst, arg(0), f64::tanh),
        Op::Copysign => float2(inst, arg(0), arg(1), |a, b| b.copysign(a)),
        Op::Popc => u64::from(mask(arg(0), bits).count_ones()),
        Op::Clz => u64::from(mask(arg(0), bits).leading_zeros() - (64 - bits)),
        Op::Brev => mask(arg(0).reverse_bits() >> (64 - bits), bits),
        Op::Bfe => {
            let (a, pos, len) = (arg(0), (arg(1) & 0xff) as u32, (arg(2) & 0xff) as u32);
            let len = len.min(bits);
            if len == 0 {
                0
            } else {
                let field = if pos >= bits { 0 } else { mask(a >> pos, len) };
                if ty.signed() {
                    let top = if pos + len > bits {
                        bits - 1
                    } else {
                        pos + len - 1
                    };
                    let sign = (a >> top) & 1;
                    let field = if pos >= bits {
                        if sign == 1 {
                            u64::MAX
                        } else {
                            0
                        }
                    } else {
                        field
                    };
                    mask(sext(field, len) as u64, bits)
                } else {
                    field
                }
            }
        }
        Op::Bfi => {
            let (f, b, pos, len) = (
                arg(0),
                arg(1),
                (arg(2) & 0xff) as u32,
                (arg(3) & 0xff) as u32,
            );
            if len == 0 || pos >= bits {
                mask(b, bits)
            } else {
                let len = len.min(bits - pos);
                let msk = mask(u64::MAX, len) << pos;
                mask((b & !msk) | ((f << pos) & msk), bits)
            }
        }
        Op::Prmt => {
            let (a, b, c) = (arg(0) as u32, arg(1) as u32, arg(2) as u32);
            let bytes = (u64::from(b) << 32 | u64::from(a)).to_le_bytes();
            let mut out = 0u32;
            for k in 0..4 {
                let sel = (c >> (4 * k)) & 0xf;
                let byte = bytes[(sel & 7) as usize];
                let byte = if sel & 8 != 0 {
                    if byte & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    }
                } else {
                    byte
                };
                out |= u32::from(byte) << (8 * k);
            }
            u64::from(out)
        }
        Op::Dp4a => {
            let (a, b, c) = (arg(0) as u32, arg(1) as u32, arg(2) as u32);
            let byte = |x: u32, k: u32, signed: bool| {
                let v = (x >> (8 * k)) & 0xff;
                if signed {
                    i64::from(v as u8 as i8)
                } else {
                    i64::from(v)
                }
            };
            let a_signed = m.src_ty == Some(Ty::S32);
            let b_signed = ty == Ty::S32;
            let dot: i64 = (0..4)
                .map(|k| byte(a, k, a_signed) * byte(b, k, b_signed))
                .sum();
            u64::from((i64::from(c) + dot) as u32)
        }
        Op::Lop3 => {
            let (a, b, c, lut) = (arg(0), arg(1), arg(2), arg(3) as u8);
            let mut out = 0u64;
            for i in 0..bits {
                let idx = ((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1);
                out |= u64::from((lut >> idx) & 1) << i;
            }
            out
        }
        Op::Shf => {
            let (lo, hi, n) = (arg(0) as u32, arg(1) as u32, arg(2) as u32);
            let n = if m.clamp { n.min(32) } else { n & 31 };
            let wide = u64::from(hi) << 32 | u64::from(lo);
            u64::from(if m.sub == 0 {
                ((wide << n) >> 32) as u32
            } else {
                (wide >> n) as u32
            })
        }
        _ => return None,
    })
}

fn unary_float(inst: &Inst, a: u64, f: fn(f64) -> f64) -> u64 {
    let m = inst.mods;
    match inst.ty {
        Ty::F64 => f(f64::from_bits(a)).to_bits(),
        Ty::F32 => {
            let x = ftz(f32b(a), m.ftz);
            bits32(sat(ftz(round_f64(f(f64::from(x)), m.round), m.ftz), m.sat))
        }
        t => halves(t, &[a], &|v| f(v[0])),
    }
}

fn mul_int(ty: Ty, half: Half, a: u64, b: u64) -> u64 {
    let bits = ty.bits();
    let full: i128 = if ty.signed() {
        i128::from(sext(a, bits)) * i128::from(sext(b, bits))
    } else {
        i128::from(mask(a, bits)) * i128::from(mask(b, bits))
    };
    match half {
        Half::Hi => mask((full >> bits) as u64, bits),
        Half::Wide => mask(full as u64, bits * 2),
        _ => mask(full as u64, bits),
    }
}

fn fma(inst: &Inst, a: u64, b: u64, c: u64) -> u64 {
    let m = inst.mods;
    match inst.ty {
        Ty::F64 => f64::from_bits(a)
            .mul_add(f64::from_bits(b), f64::from_bits(c))
            .to_bits(),
        Ty::F32 => {
            let (x, y, z) = (
                ftz(f32b(a), m.ftz),
                ftz(f32b(b), m.ftz),
                ftz(f32b(c), m.ftz),
            );
            // The product is exact in f64; the sum is kept as an exact pair.
            let p = f64::from(x) * f64::from(y);
            let (s, e) = two_sum(p, f64::from(z));
            let r = round_pair(s, e, m.round);
            bits32(sat(ftz(r, m.ftz), m.sat))
        }
        t => halves(t, &[a, b, c], &|v| v[0].mul_add(v[1], v[2])),
    }
}

/// `setp`'s comparison of two values of type `ty`.
pub fn compare(ty: Ty, cmp: Cmp, a: u64, b: u64, ftz_on: bool) -> bool {
    let bits = ty.bits();
    if ty.float() {
        let (x, y) = match ty {
            Ty::F64 => (f64::from_bits(a), f64::from_bits(b)),
            Ty::F32 => (
                f64::from(ftz(f32b(a), ftz_on)),
                f64::from(ftz(f32b(b), ftz_on)),
            ),
            t => (f64::from(h2f(a, t)), f64::from(h2f(b, t))),
        };
        let nan = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => !nan && x == y,
            Cmp::Ne => !nan && x != y,
            Cmp::Lt => !nan && x < y,
            Cmp::Le => !nan && x <= y,
            Cmp::Gt => !nan && x > y,
            Cmp::Ge => !nan && x >= y,
            Cmp::Equ => nan || x == y,
            Cmp::Neu => nan || x != y,
            Cmp::Ltu => nan || x < y,
            Cmp::Leu => nan || x <= y,
            Cmp::Gtu => nan || x > y,
            Cmp::Geu => nan || x >= y,
            Cmp::Num => !nan,
            Cmp::Nan => nan,
            _ => false,
        };
    }
    let (sa, sb) = (sext(a, bits), sext(b, bits));
    let (ua, ub) = (mask(a, bits), mask(b, bits));
    let signed = ty.signed();
    match cmp {
        Cmp::Eq => ua == ub,
        Cmp::Ne => ua != ub,
        Cmp::Lt if signed => sa < sb,
        Cmp::Le if signed => sa <= sb,
        Cmp::Gt if signed => sa > sb,
        Cmp::Ge if signed => sa >= sb,
        Cmp::Lt | Cmp::Lo => ua < ub,
        Cmp::Le | Cmp::Ls => ua <= ub,
        Cmp::Gt | Cmp::Hi => ua > ub,
        Cmp::Ge | Cmp::Hs => ua >= ub,
        _ => false,
    }
}

fn round_int(x: f64, r: Round) -> f64 {
    match r {
        Round::Rni | Round::Rn => {
            let f = x.round();
            // ties to even
            if (x - x.trunc()).abs() == 0.5 {
                2.0 * (x / 2.0).round_ties_even_compat()
            } else {
                f
            }
        }
        Round::Rmi | Round::Rm => x.floor(),
        Round::Rpi | Round::Rp => x.ceil(),
        _ => x.trunc(),
    }
}

trait TiesEven {
    fn round_ties_even_compat(self) -> f64;
}

impl TiesEven for f64 {
    fn round_ties_even_compat(self) -> f64 {
        self.round_ties_even()
    }
}

/// `cvt.dst.src` with its rounding and saturation.
fn cvt(dst: Ty, src: Ty, m: Mods, v: u64) -> Option<u64> {
    let sb = src.bits();
    let db = dst.bits();
    // The source as a number.
    let as_f64 = |v: u64| -> f64 {
        match src {
            Ty::F64 => f64::from_bits(v),
            Ty::F32 => f64::from(ftz(f32b(v), m.ftz)),
            Ty::F16 | Ty::Bf16 => f64::from(h2f(v, src)),
            t if t.signed() => sext(v, sb) as f64,
            _ => mask(v, sb) as f64,
        }
    };
    Some(match (src.float(), dst.float()) {
        (false, false) => {
            let x: i128 = if src.signed() {
                i128::from(sext(v, sb))
            } else {
                i128::from(mask(v, sb))
            };
            if m.sat {
                let (lo, hi): (i128, i128) = if dst.signed() {
                    (-(1i128 << (db - 1)), (1i128 << (db - 1)) - 1)
                } else {
                    (0, (1i128 << db) - 1)
                };
                mask(x.clamp(lo, hi) as u64, db)
            } else {
                mask(x as u64, db)
            }
        }
        (true, false) => {
            let x = as_f64(v);
            if x.is_nan() {
                return Some(0);
            }
            let r = round_int(
                x,
                if m.round == Round::None {
                    Round::Rzi
                } else {
                    m.round
                },
            );
            let (lo, hi) = if dst.signed() {
                (-(2f64.powi(db as i32 - 1)), 2f64.powi(db as i32 - 1) - 1.0)
            } else {
                (0.0, 2f64.powi(db as i32) - 1.0)
            };
            let c = r.clamp(lo, hi);
            mask(
                if dst.signed() {
                    c as i64 as u64
                } else {
                    c as u64
                },
                db,
            )
        }
        (false, true) => {
            let x: f64 = if src.signed() {
                sext(v, sb) as f64
            } else {
                mask(v, sb) as f64
            };
            to_float(dst, x, m)
        }
        (true, true) => {
            let x = as_f64(v);
            let x = if matches!(m.round, Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi) {
                round_int(x, m.round)
            } else {
                x
            };
            to_float(dst, x, m)
        }
    })
}

fn to_float(dst: Ty, x: f64, m: Mods) -> u64 {
    match dst {
        Ty::F64 => x.to_bits(),
        Ty::F32 => {
            let mode = match m.round {
                Round::Rz | Round::Rm | Round::Rp => m.round,
                _ => Round::Rn,
            };
            bits32(sat(ftz(round_f64(x, mode), m.ftz), m.sat))
        }
        t => {
            let x = if m.sat {
                if x.is_nan() {
                    0.0
                } else {
                    x.clamp(0.0, 1.0)
                }
            } else {
                x
            };
            f2h(x, t)
        }
    }
}

/// The approximate instructions, with the GPU's documented error, for the report.
pub fn approx_note(inst: &Inst) -> Option<&'static str> {
    if !inst.mods.approx && !matches!(inst.op, Op::Tanh | Op::Ex2 | Op::Lg2 | Op::Sin | Op::Cos) {
        return None;
    }
    Some(match inst.op {
        Op::Ex2 => "ex2.approx.f32 (max relative error 2^-22 on the GPU)",
        Op::Lg2 => "lg2.approx.f32 (max absolute error 2^-22 on the GPU)",
        Op::Rcp => "rcp.approx.f32 (max relative error 2^-23 on the GPU)",
        Op::Rsqrt => "rsqrt.approx.f32 (max relative error 2^-22.9 on the GPU)",
        Op::Sqrt => "sqrt.approx.f32 (max relative error 2^-23 on the GPU)",
        Op::Sin => "sin.approx.f32 (max absolute error 2^-20.5 in [-pi, pi] on the GPU)",
        Op::Cos => "cos.approx.f32 (max absolute error 2^-20.5 in [-pi, pi] on the GPU)",
        Op::Tanh => "tanh.approx.f32 (max relative error 2^-10.987 on the GPU)",
        Op::Div => "div.approx/full.f32 (max error 2 ulp on the GPU)",
        _ => return None,
    })
}
