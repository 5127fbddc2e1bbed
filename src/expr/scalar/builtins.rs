//! The built-in functions of size expressions (`cdiv`, `min`, `max`, ...) and the integer
//! helpers they share with the operators, kept apart from the evaluator's tree walk.

use super::{err, finite, float_to_i64, Scalar};
use crate::expr::ast::{Call, Expr};
use crate::expr::error::ExprError;

/// Reserved names: a call to one of these never reaches the environment.
pub(super) const NAMES: &[&str] = &[
    "abs",
    "cdiv",
    "ceil",
    "float",
    "floor",
    "int",
    "log2",
    "max",
    "min",
    "next_pow2",
    "pow",
    "round",
    "sqrt",
];

/// Floor division (rounds toward negative infinity); `None` on overflow. `y` must not be 0.
pub(super) fn floor_div(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    if x % y != 0 && ((x % y < 0) != (y < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// Ceiling division (rounds toward positive infinity); `None` on overflow. `y` must not be 0.
fn ceil_div(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    if x % y != 0 && ((x % y > 0) == (y > 0)) {
        q.checked_add(1)
    } else {
        Some(q)
    }
}

/// `x ** y` for `y >= 0`; `None` on overflow.
pub(super) fn int_pow(x: i64, y: i64) -> Option<i64> {
    match u32::try_from(y) {
        Ok(y) => x.checked_pow(y),
        Err(_) => match x {
            0 | 1 => Some(x),
            -1 => Some(if y % 2 == 0 { 1 } else { -1 }),
            _ => None,
        },
    }
}

/// Evaluates built-in `call` (node `e`) on its evaluated `args`.
pub(super) fn call(e: &Expr, call: &Call, args: &[Scalar]) -> Result<Scalar, ExprError> {
    let name = call.func.name.as_str();
    let overflow = || err(e, format!("integer overflow in `{e}`"));
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            let s = if n == 1 { "" } else { "s" };
            Err(err(
                e,
                format!("{name} expects {n} argument{s}, got {}", args.len()),
            ))
        }
    };
    let number = |i: usize| match args[i] {
        Scalar::Bool(_) => Err(err(
            &call.args[i],
            format!("{name} expects numbers, but `{}` is a bool", call.args[i]),
        )),
        v => Ok(v),
    };
    let integer = |i: usize| match args[i] {
        Scalar::Int(v) => Ok(v),
        v => Err(err(
            &call.args[i],
            format!(
                "{name} expects integers, but `{}` is {} ({v}); convert it with int(...)",
                call.args[i],
                v.a_type()
            ),
        )),
    };
    // Rounds a float to an int, or says why it cannot.
    let to_int = |v: f64| {
        float_to_i64(v)
            .map(Scalar::Int)
            .ok_or_else(|| err(e, format!("`{e}` does not fit in an integer (it is {v})")))
    };
    match name {
        "cdiv" => {
            arity(2)?;
            let (x, y) = (integer(0)?, integer(1)?);
            if y == 0 {
                return Err(err(&call.args[1], format!("division by zero in `{e}`")));
            }
            ceil_div(x, y).map(Scalar::Int).ok_or_else(overflow)
        }
        "next_pow2" => {
            // The smallest power of two >= x (Triton's `next_power_of_2`); 1 for x <= 1.
            arity(1)?;
            let x = integer(0)?;
            if x <= 1 {
                return Ok(Scalar::Int(1));
            }
            (x as u64)
                .checked_next_power_of_two()
                .and_then(|p| i64::try_from(p).ok())
                .map(Scalar::Int)
                .ok_or_else(overflow)
        }
        "min" | "max" => {
            if args.is_empty() {
                return Err(err(e, format!("{name} expects at least 1 argument, got 0")));
            }
            let values = (0..args.len()).map(number).collect::<Result<Vec<_>, _>>()?;
            let ints: Option<Vec<i64>> = values
                .iter()
                .map(|v| match v {
                    Scalar::Int(i) => Some(*i),
                    _ => None,
                })
                .collect();
            if let Some(ints) = ints {
                let r = if name == "min" {
                    ints.into_iter().min()
                } else {
                    ints.into_iter().max()
                };
                return Ok(Scalar::Int(r.expect("at least one argument")));
            }
            let floats = values.iter().map(|v| v.as_f64().expect("a number"));
            let r = if name == "min" {
                floats.fold(f64::INFINITY, f64::min)
            } else {
                floats.fold(f64::NEG_INFINITY, f64::max)
            };
            finite(e, r)
        }
        "abs" => {
            arity(1)?;
            match number(0)? {
                Scalar::Int(v) => v.checked_abs().map(Scalar::Int).ok_or_else(overflow),
                v => finite(e, v.as_f64().expect("a number").abs()),
            }
        }
        "ceil" | "floor" | "round" => {
            arity(1)?;
            match number(0)? {
                Scalar::Float(v) => to_int(match name {
                    "ceil" => v.ceil(),
                    "floor" => v.floor(),
                    // Halves round away from zero: round(2.5) is 3.
                    _ => v.round(),
                }),
                v => Ok(v),
            }
        }
        "sqrt" | "log2" => {
            arity(1)?;
            let v = number(0)?.as_f64().expect("a number");
            if name == "sqrt" && v < 0.0 {
                return Err(err(e, format!("sqrt of a negative number ({v})")));
            }
            if name == "log2" && v <= 0.0 {
                return Err(err(
                    e,
                    format!("log2 of a number that is not positive ({v})"),
                ));
            }
            finite(e, if name == "sqrt" { v.sqrt() } else { v.log2() })
        }
        "pow" => {
            arity(2)?;
            match (number(0)?, number(1)?) {
                (Scalar::Int(x), Scalar::Int(y)) if y >= 0 => {
                    int_pow(x, y).map(Scalar::Int).ok_or_else(overflow)
                }
                (x, y) => finite(e, x.as_f64().unwrap().powf(y.as_f64().unwrap())),
            }
        }
        "int" => {
            arity(1)?;
            match args[0] {
                Scalar::Float(v) => to_int(v.trunc()),
                Scalar::Bool(b) => Ok(Scalar::Int(i64::from(b))),
                v => Ok(v),
            }
        }
        "float" => {
            arity(1)?;
            match args[0] {
                Scalar::Bool(b) => Ok(Scalar::Float(f64::from(u8::from(b)))),
                v => finite(e, v.as_f64().expect("a number")),
            }
        }
        _ => unreachable!("`{name}` is listed in NAMES but not implemented"),
    }
}
