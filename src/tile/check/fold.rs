//! Constexpr folding: arithmetic, comparisons and logic on Python numbers with Python's
//! semantics (`//` and `%` round toward negative infinity, `/` gives a float, ints do not
//! silently wrap: an overflow is an error).

use super::value::Val;
use crate::tile::ast::{BinaryOp, CmpOp, UnaryOp};

enum Num {
    I(i64),
    F(f64),
}

fn num(v: &Val) -> Option<Num> {
    match v {
        Val::Int(i) => Some(Num::I(*i)),
        Val::Bool(b) => Some(Num::I(i64::from(*b))),
        Val::Float(f) => Some(Num::F(*f)),
        _ => None,
    }
}

fn as_f64(n: &Num) -> f64 {
    match n {
        Num::I(i) => *i as f64,
        Num::F(f) => *f,
    }
}

const OVERFLOW: &str = "integer overflow in a constant expression";

/// `a op b` on compile-time numbers.
pub(super) fn binary(op: BinaryOp, a: &Val, b: &Val) -> Result<Val, String> {
    if let (Val::Bool(x), Val::Bool(y)) = (a, b) {
        match op {
            BinaryOp::BitAnd => return Ok(Val::Bool(*x & *y)),
            BinaryOp::BitOr => return Ok(Val::Bool(*x | *y)),
            BinaryOp::BitXor => return Ok(Val::Bool(*x ^ *y)),
            _ => {}
        }
    }
    let (Some(x), Some(y)) = (num(a), num(b)) else {
        return Err(format!("`{}` needs numbers", op.symbol()));
    };
    match (x, y) {
        (Num::I(x), Num::I(y)) => int_binary(op, x, y),
        (x, y) => float_binary(op, as_f64(&x), as_f64(&y)),
    }
}

fn int_binary(op: BinaryOp, x: i64, y: i64) -> Result<Val, String> {
    let ovf = || OVERFLOW.to_string();
    let v = match op {
        BinaryOp::Add => x.checked_add(y).ok_or_else(ovf)?,
        BinaryOp::Sub => x.checked_sub(y).ok_or_else(ovf)?,
        BinaryOp::Mul => x.checked_mul(y).ok_or_else(ovf)?,
        BinaryOp::Div => {
            if y == 0 {
                return Err("division by zero in a constant expression".into());
            }
            return Ok(Val::Float(x as f64 / y as f64));
        }
        BinaryOp::FloorDiv => floor_div(x, y)?,
        BinaryOp::Mod => floor_mod(x, y)?,
        BinaryOp::Pow => {
            if y < 0 {
                return Ok(Val::Float((x as f64).powf(y as f64)));
            }
            let e = u32::try_from(y).map_err(|_| ovf())?;
            x.checked_pow(e).ok_or_else(ovf)?
        }
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
        BinaryOp::Shl => {
            if y < 0 {
                return Err("negative shift count in a constant expression".into());
            }
            if x == 0 {
                0
            } else if y >= 64 {
                return Err(ovf());
            } else {
                i64::try_from(i128::from(x) << y).map_err(|_| ovf())?
            }
        }
        BinaryOp::Shr => {
            if y < 0 {
                return Err("negative shift count in a constant expression".into());
            }
            if y >= 64 {
                if x < 0 {
                    -1
                } else {
                    0
                }
            } else {
                x >> y
            }
        }
        BinaryOp::MatMul => return Err("`@` (matrix multiply) needs tiles".into()),
    };
    Ok(Val::Int(v))
}

/// Python's `//` on ints: rounds toward negative infinity.
pub(super) fn floor_div(x: i64, y: i64) -> Result<i64, String> {
    if y == 0 {
        return Err("integer division by zero in a constant expression".into());
    }
    let q = x.checked_div(y).ok_or(OVERFLOW)?;
    let r = x.wrapping_rem(y);
    Ok(if r != 0 && ((r < 0) != (y < 0)) {
        q - 1
    } else {
        q
    })
}

/// Python's `%` on ints: the sign of the divisor.
pub(super) fn floor_mod(x: i64, y: i64) -> Result<i64, String> {
    if y == 0 {
        return Err("integer modulo by zero in a constant expression".into());
    }
    let r = x.wrapping_rem(y);
    Ok(if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    })
}

fn float_binary(op: BinaryOp, x: f64, y: f64) -> Result<Val, String> {
    let v = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::Mod if y == 0.0 => {
            return Err("float division by zero in a constant expression".into())
        }
        BinaryOp::Div => x / y,
        BinaryOp::FloorDiv => (x / y).floor(),
        BinaryOp::Mod => {
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        BinaryOp::Pow => x.powf(y),
        _ => return Err(format!("`{}` needs integers, not floats", op.symbol())),
    };
    Ok(Val::Float(v))
}

/// `a op b` for a comparison of compile-time numbers.
pub(super) fn compare(op: CmpOp, a: &Val, b: &Val) -> Result<bool, String> {
    let (Some(x), Some(y)) = (num(a), num(b)) else {
        return Err("comparisons need numbers".into());
    };
    let ord = match (x, y) {
        (Num::I(x), Num::I(y)) => x.partial_cmp(&y),
        (x, y) => as_f64(&x).partial_cmp(&as_f64(&y)),
    };
    use std::cmp::Ordering::*;
    Ok(match op {
        CmpOp::Eq | CmpOp::Is => ord == Some(Equal),
        CmpOp::Ne | CmpOp::IsNot => ord != Some(Equal),
        CmpOp::Lt => ord == Some(Less),
        CmpOp::Le => matches!(ord, Some(Less | Equal)),
        CmpOp::Gt => ord == Some(Greater),
        CmpOp::Ge => matches!(ord, Some(Greater | Equal)),
    })
}

/// `op a` on a compile-time value.
pub(super) fn unary(op: UnaryOp, a: &Val) -> Result<Val, String> {
    if op == UnaryOp::Not {
        return a
            .truthy()
            .map(|t| Val::Bool(!t))
            .ok_or_else(|| "`not` needs a value".to_string());
    }
    match (op, num(a)) {
        (UnaryOp::Neg, Some(Num::I(i))) => i.checked_neg().map(Val::Int).ok_or(OVERFLOW.into()),
        (UnaryOp::Neg, Some(Num::F(f))) => Ok(Val::Float(-f)),
        (UnaryOp::Pos, Some(Num::I(i))) => Ok(Val::Int(i)),
        (UnaryOp::Pos, Some(Num::F(f))) => Ok(Val::Float(f)),
        (UnaryOp::Invert, Some(Num::I(i))) => Ok(Val::Int(!i)),
        (UnaryOp::Invert, Some(Num::F(_))) => Err("`~` needs an integer, not a float".into()),
        _ => Err("this operator needs a number".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(op: BinaryOp, x: Val, y: Val) -> Val {
        binary(op, &x, &y).unwrap()
    }

    #[test]
    fn python_integer_semantics() {
        use BinaryOp::*;
        assert_eq!(b(FloorDiv, Val::Int(-7), Val::Int(2)), Val::Int(-4));
        assert_eq!(b(Mod, Val::Int(-7), Val::Int(2)), Val::Int(1));
        assert_eq!(b(Mod, Val::Int(7), Val::Int(-2)), Val::Int(-1));
        assert_eq!(b(Div, Val::Int(7), Val::Int(2)), Val::Float(3.5));
        assert_eq!(b(Pow, Val::Int(2), Val::Int(10)), Val::Int(1024));
        assert_eq!(b(Shl, Val::Int(1), Val::Int(40)), Val::Int(1 << 40));
        assert_eq!(b(Add, Val::Bool(true), Val::Int(1)), Val::Int(2));
        assert_eq!(b(Mul, Val::Int(3), Val::Float(0.5)), Val::Float(1.5));
        assert_eq!(b(Mod, Val::Float(-1.0), Val::Float(3.0)), Val::Float(2.0));
    }

    #[test]
    fn errors_instead_of_panics() {
        use BinaryOp::*;
        assert!(binary(Add, &Val::Int(i64::MAX), &Val::Int(1)).is_err());
        assert!(binary(FloorDiv, &Val::Int(i64::MIN), &Val::Int(-1)).is_err());
        assert!(binary(Mod, &Val::Int(1), &Val::Int(0)).is_err());
        assert!(binary(Shl, &Val::Int(1), &Val::Int(64)).is_err());
        assert!(binary(Pow, &Val::Int(10), &Val::Int(100)).is_err());
        assert!(unary(UnaryOp::Neg, &Val::Int(i64::MIN)).is_err());
        assert_eq!(floor_mod(i64::MIN, -1), Ok(0));
    }

    #[test]
    fn comparisons() {
        assert_eq!(compare(CmpOp::Lt, &Val::Int(1), &Val::Float(1.5)), Ok(true));
        assert_eq!(compare(CmpOp::Eq, &Val::Int(2), &Val::Int(2)), Ok(true));
        assert_eq!(
            compare(CmpOp::Ge, &Val::Float(f64::NAN), &Val::Int(0)),
            Ok(false)
        );
    }
}
