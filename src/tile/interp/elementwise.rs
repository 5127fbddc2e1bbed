//! Elementwise ops over whole tiles: constants, `arange`, casts, binary and unary arithmetic,
//! `fma` and `where`. Each op picks its dtype behaviour once and then runs one loop; float
//! results are computed in f64 and rounded to the destination dtype (f16/bf16 through f32),
//! integer results wrap at the destination's width.
//!
//! Choices the IR leaves to the interpreter, made as the GPU does: integer division by zero
//! gives -1 (all ones) and the remainder the dividend; a shift by the width or more gives 0
//! (or the sign for `>>` of a negative signed value).

use super::exec::Env;
use super::math;
use super::value::{convert_float, float_to_int, int_to_float, round_all, wrap, wrap_all, Data};
use super::Fault;
use crate::tile::ir::{BinOp, Const, Elem, Scalar, Type, UnOp, VarId};

/// `f` over two operands, each the output's length or a single (scalar) value.
pub(super) fn map2<A: Copy + Default, B: Copy + Default, O>(
    out: &mut [O],
    a: &[A],
    b: &[B],
    f: impl Fn(A, B) -> O,
) {
    let n = out.len();
    if a.len() == n && b.len() == n {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = f(x, y);
        }
    } else {
        let (sa, sb) = (usize::from(a.len() == n), usize::from(b.len() == n));
        for (i, o) in out.iter_mut().enumerate() {
            let x = a.get(i * sa).copied().unwrap_or_default();
            *o = f(x, b.get(i * sb).copied().unwrap_or_default());
        }
    }
}

pub(super) fn map1<A: Copy + Default, O>(out: &mut [O], a: &[A], f: impl Fn(A) -> O) {
    let n = out.len();
    if a.len() == n {
        for (o, &x) in out.iter_mut().zip(a) {
            *o = f(x);
        }
    } else {
        let x = a.first().copied().unwrap_or_default();
        out.iter_mut().for_each(|o| *o = f(x));
    }
}

/// The element dtype of a number type (pointers never reach the arithmetic here).
fn dtype(ty: &Type) -> Scalar {
    match ty.elem {
        Elem::Scalar(s) | Elem::Ptr(s) => s,
    }
}

fn wrong_kind() -> Fault {
    Fault::interp("an operand of the wrong kind for its op")
}

pub(super) fn constant(ty: &Type, c: Const, out: &mut Data) -> Result<(), Fault> {
    let s = dtype(ty);
    match out {
        Data::Int(v) => v.fill(match c {
            Const::Int(x) => wrap(s, x),
            Const::Float(x) => float_to_int(s, x),
            Const::Bool(b) => i64::from(b),
        }),
        Data::Float(v) => v.fill(match c {
            Const::Int(x) => int_to_float(Scalar::I64, s, x),
            Const::Float(x) => convert_float(s, x),
            Const::Bool(b) => f64::from(u8::from(b)),
        }),
        Data::Ptr(_) => return Err(Fault::interp("a constant pointer")),
    }
    Ok(())
}

pub(super) fn set_int(out: &mut Data, x: u32) -> Result<(), Fault> {
    match out {
        Data::Int(v) => v.fill(i64::from(x)),
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

pub(super) fn arange(ty: &Type, start: i64, out: &mut Data) -> Result<(), Fault> {
    let s = dtype(ty);
    match out {
        Data::Int(v) => v
            .iter_mut()
            .zip(0i64..)
            .for_each(|(o, i)| *o = wrap(s, start.wrapping_add(i))),
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

pub(super) fn cast(env: &Env, src: VarId, ty: &Type, out: &mut Data) -> Result<(), Fault> {
    let (from, to) = (env.scalar(src), dtype(ty));
    match (env.get(src)?, out) {
        (Data::Int(a), Data::Int(o)) if to == Scalar::I1 => map1(o, a, |x| i64::from(x != 0)),
        (Data::Int(a), Data::Int(o)) => map1(o, a, |x| wrap(to, x)),
        (Data::Int(a), Data::Float(o)) => map1(o, a, |x| int_to_float(from, to, x)),
        (Data::Float(a), Data::Int(o)) => map1(o, a, |x| float_to_int(to, x)),
        (Data::Float(a), Data::Float(o)) => map1(o, a, |x| convert_float(to, x)),
        // A pointer to another dtype: the same address (offsets are kept in bytes).
        (Data::Ptr(a), Data::Ptr(o)) => map1(o, a, |p| p),
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

pub(super) fn binary(
    env: &Env,
    op: BinOp,
    lhs: VarId,
    rhs: VarId,
    ty: &Type,
    out: &mut Data,
) -> Result<(), Fault> {
    let s = dtype(ty);
    let operand = env.scalar(lhs);
    match (env.get(lhs)?, env.get(rhs)?, out) {
        (Data::Float(a), Data::Float(b), Data::Float(o)) => {
            float_binary(op, a, b, o)?;
            round_all(s, o);
        }
        (Data::Float(a), Data::Float(b), Data::Int(o)) => float_compare(op, a, b, o)?,
        (Data::Int(a), Data::Int(b), Data::Int(o)) => {
            if is_compare(op) {
                int_compare(op, operand == Scalar::U64, a, b, o)?;
            } else {
                int_binary(op, s, a, b, o);
                wrap_all(s, o);
            }
        }
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

fn is_compare(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
    )
}

/// `fminf`/`fmaxf`: a NaN operand gives the other one.
pub(super) fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() || y < x {
        y
    } else {
        x
    }
}

pub(super) fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() || y > x {
        y
    } else {
        x
    }
}

fn float_binary(op: BinOp, a: &[f64], b: &[f64], o: &mut [f64]) -> Result<(), Fault> {
    match op {
        BinOp::Add => map2(o, a, b, |x, y| x + y),
        BinOp::Sub => map2(o, a, b, |x, y| x - y),
        BinOp::Mul => map2(o, a, b, |x, y| x * y),
        BinOp::Div => map2(o, a, b, |x, y| x / y),
        // C's fmod.
        BinOp::Rem => map2(o, a, b, |x, y| x % y),
        BinOp::Min => map2(o, a, b, fmin),
        BinOp::Max => map2(o, a, b, fmax),
        BinOp::Pow => map2(o, a, b, f64::powf),
        BinOp::Atan2 => map2(o, a, b, f64::atan2),
        BinOp::Copysign => map2(o, a, b, f64::copysign),
        BinOp::Hypot => map2(o, a, b, f64::hypot),
        _ => return Err(Fault::interp(format!("{op:?} on floats"))),
    }
    Ok(())
}

fn float_compare(op: BinOp, a: &[f64], b: &[f64], o: &mut [i64]) -> Result<(), Fault> {
    match op {
        BinOp::Eq => map2(o, a, b, |x, y| i64::from(x == y)),
        BinOp::Ne => map2(o, a, b, |x, y| i64::from(x != y)),
        BinOp::Lt => map2(o, a, b, |x, y| i64::from(x < y)),
        BinOp::Le => map2(o, a, b, |x, y| i64::from(x <= y)),
        BinOp::Gt => map2(o, a, b, |x, y| i64::from(x > y)),
        BinOp::Ge => map2(o, a, b, |x, y| i64::from(x >= y)),
        _ => return Err(Fault::interp(format!("{op:?} of floats into an integer"))),
    }
    Ok(())
}

fn int_compare(
    op: BinOp,
    unsigned64: bool,
    a: &[i64],
    b: &[i64],
    o: &mut [i64],
) -> Result<(), Fault> {
    // Narrower unsigned values are held non-negative, so only u64 needs its own order.
    let key = |x: i64| {
        if unsigned64 {
            (x as u64 ^ (1 << 63)) as i64
        } else {
            x
        }
    };
    match op {
        BinOp::Eq => map2(o, a, b, |x, y| i64::from(x == y)),
        BinOp::Ne => map2(o, a, b, |x, y| i64::from(x != y)),
        BinOp::Lt => map2(o, a, b, |x, y| i64::from(key(x) < key(y))),
        BinOp::Le => map2(o, a, b, |x, y| i64::from(key(x) <= key(y))),
        BinOp::Gt => map2(o, a, b, |x, y| i64::from(key(x) > key(y))),
        BinOp::Ge => map2(o, a, b, |x, y| i64::from(key(x) >= key(y))),
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

fn int_binary(op: BinOp, s: Scalar, a: &[i64], b: &[i64], o: &mut [i64]) {
    let u64s = s == Scalar::U64;
    let bits = u64::from(s.size() * 8);
    let signed = s.is_signed_int();
    match op {
        BinOp::Add => map2(o, a, b, i64::wrapping_add),
        BinOp::Sub => map2(o, a, b, i64::wrapping_sub),
        BinOp::Mul => map2(o, a, b, i64::wrapping_mul),
        BinOp::BitAnd => map2(o, a, b, |x, y| x & y),
        BinOp::BitOr => map2(o, a, b, |x, y| x | y),
        BinOp::BitXor => map2(o, a, b, |x, y| x ^ y),
        BinOp::Div if u64s => map2(o, a, b, |x, y| match y {
            0 => -1,
            _ => ((x as u64) / (y as u64)) as i64,
        }),
        BinOp::Rem if u64s => map2(o, a, b, |x, y| match y {
            0 => x,
            _ => ((x as u64) % (y as u64)) as i64,
        }),
        BinOp::Div => map2(o, a, b, |x, y| if y == 0 { -1 } else { x.wrapping_div(y) }),
        BinOp::Rem => map2(o, a, b, |x, y| if y == 0 { x } else { x.wrapping_rem(y) }),
        BinOp::Min if u64s => map2(o, a, b, |x, y| (x as u64).min(y as u64) as i64),
        BinOp::Max if u64s => map2(o, a, b, |x, y| (x as u64).max(y as u64) as i64),
        BinOp::Min => map2(o, a, b, i64::min),
        BinOp::Max => map2(o, a, b, i64::max),
        BinOp::Shl => map2(o, a, b, |x, y| {
            if (y as u64) >= bits {
                0
            } else {
                x.wrapping_shl(y as u32)
            }
        }),
        BinOp::Shr => map2(o, a, b, |x, y| {
            let y = y as u64;
            if signed {
                // Held sign-extended: an arithmetic shift, the sign filling in past the width.
                x >> y.min(63)
            } else if y >= bits {
                0
            } else {
                ((x as u64) >> y) as i64
            }
        }),
        BinOp::MulHi => {
            let mask = u64::MAX >> (64 - bits.clamp(1, 64));
            map2(o, a, b, |x, y| {
                let p = u128::from(x as u64 & mask) * u128::from(y as u64 & mask);
                (p >> bits) as u64 as i64
            })
        }
        // Comparisons are handled by `int_compare`.
        _ => o.fill(0),
    }
}

pub(super) fn unary(
    env: &Env,
    op: UnOp,
    src: VarId,
    ty: &Type,
    out: &mut Data,
) -> Result<(), Fault> {
    let s = dtype(ty);
    match (env.get(src)?, out) {
        (Data::Float(a), Data::Float(o)) => {
            let f: fn(f64) -> f64 = match op {
                UnOp::Neg => |x| -x,
                UnOp::Exp => f64::exp,
                UnOp::Exp2 => f64::exp2,
                UnOp::Log => f64::ln,
                UnOp::Log2 => f64::log2,
                UnOp::Sqrt => f64::sqrt,
                UnOp::Rsqrt => |x| 1.0 / x.sqrt(),
                UnOp::Abs => f64::abs,
                UnOp::Sigmoid => |x| 1.0 / (1.0 + (-x).exp()),
                UnOp::Erf => math::erf,
                UnOp::Sin => f64::sin,
                UnOp::Cos => f64::cos,
                UnOp::Tanh => f64::tanh,
                UnOp::Floor => f64::floor,
                UnOp::Ceil => f64::ceil,
                UnOp::Tan => f64::tan,
                UnOp::Asin => f64::asin,
                UnOp::Acos => f64::acos,
                UnOp::Atan => f64::atan,
                UnOp::Sinh => f64::sinh,
                UnOp::Cosh => f64::cosh,
                UnOp::Asinh => f64::asinh,
                UnOp::Acosh => f64::acosh,
                UnOp::Atanh => f64::atanh,
                UnOp::Erfc => math::erfc,
                UnOp::Erfinv => math::erfinv,
                UnOp::Log1p => f64::ln_1p,
                UnOp::Expm1 => f64::exp_m1,
                UnOp::Log10 => f64::log10,
                UnOp::Cbrt => f64::cbrt,
                UnOp::Rint => f64::round_ties_even,
                UnOp::Round => f64::round,
                UnOp::Trunc => f64::trunc,
                UnOp::Rcp => |x| 1.0 / x,
                UnOp::Not => return Err(Fault::interp("`~` on a float")),
            };
            map1(o, a, f);
            round_all(s, o);
        }
        (Data::Int(a), Data::Int(o)) => {
            match op {
                UnOp::Neg => map1(o, a, i64::wrapping_neg),
                UnOp::Not if s == Scalar::I1 => map1(o, a, |x| i64::from(x == 0)),
                UnOp::Not => map1(o, a, |x| !x),
                UnOp::Abs if s.is_unsigned_int() => map1(o, a, |x| x),
                UnOp::Abs => map1(o, a, i64::wrapping_abs),
                _ => return Err(Fault::interp(format!("{op:?} on an integer"))),
            }
            wrap_all(s, o);
        }
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

pub(super) fn fma(
    env: &Env,
    a: VarId,
    b: VarId,
    c: VarId,
    ty: &Type,
    out: &mut Data,
) -> Result<(), Fault> {
    let s = dtype(ty);
    let (a, b, c) = (env.floats(a)?, env.floats(b)?, env.floats(c)?);
    let Data::Float(o) = out else {
        return Err(wrong_kind());
    };
    // `a * b` first (into `o`), then `+ c` rounded once.
    map2(o, a, b, |x, y| x * y);
    let n = o.len();
    let sc = usize::from(c.len() == n);
    let f: fn(f64, f64, f64) -> f64 = match s {
        Scalar::F64 => f64::mul_add,
        _ => math::fma_f32,
    };
    let (sa, sb) = (usize::from(a.len() == n), usize::from(b.len() == n));
    for (i, v) in o.iter_mut().enumerate() {
        let x = a.get(i * sa).copied().unwrap_or_default();
        let y = b.get(i * sb).copied().unwrap_or_default();
        *v = f(x, y, c.get(i * sc).copied().unwrap_or_default());
    }
    if matches!(s, Scalar::F16 | Scalar::BF16) {
        round_all(s, o);
    }
    Ok(())
}

pub(super) fn select(
    env: &Env,
    cond: VarId,
    a: VarId,
    b: VarId,
    out: &mut Data,
) -> Result<(), Fault> {
    let c = env.ints(cond)?;
    match (env.get(a)?, env.get(b)?, out) {
        (Data::Float(x), Data::Float(y), Data::Float(o)) => pick(c, x, y, o),
        (Data::Int(x), Data::Int(y), Data::Int(o)) => pick(c, x, y, o),
        (Data::Ptr(x), Data::Ptr(y), Data::Ptr(o)) => pick(c, x, y, o),
        _ => return Err(wrong_kind()),
    }
    Ok(())
}

fn pick<T: Copy + Default>(c: &[i64], x: &[T], y: &[T], o: &mut [T]) {
    let n = o.len();
    let (sc, sx, sy) = (
        usize::from(c.len() == n),
        usize::from(x.len() == n),
        usize::from(y.len() == n),
    );
    for (i, v) in o.iter_mut().enumerate() {
        *v = if c.get(i * sc).is_some_and(|&t| t != 0) {
            x.get(i * sx).copied().unwrap_or_default()
        } else {
            y.get(i * sy).copied().unwrap_or_default()
        };
    }
}
