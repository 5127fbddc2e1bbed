//! Evaluates size and launch expressions (`cdiv(N, 256)`, `3 * N * 4`, `bytes(a) + bytes(c)`)
//! to one [`Scalar`].
//!
//! These numbers size buffers and grids, so a wrong one must never be produced silently:
//! integer arithmetic is checked (overflow is an error, never a wrap or a panic), division by
//! zero is an error, and every error points at the sub-expression at fault. Integers stay
//! integers wherever the result is exact; see [`eval_scalar`] for the rules.

use super::ast::{BinaryOp, Call, Expr, ExprKind, UnaryOp};
use super::error::ExprError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

mod builtins;

/// A scalar value: sizes are `Int`, ratios and tolerances `Float`, conditions `Bool`.
///
/// Serialises untagged, so `Int(3)` is `3`, `Float(0.5)` is `0.5` and `Bool(true)` is `true`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    /// The value as a non-negative whole number: an `Int` ≥ 0, or a `Float` that is exactly one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Scalar::Int(v) => u64::try_from(v).ok(),
            // 2^64 is exactly representable; anything below it and whole converts exactly.
            Scalar::Float(v)
                if (0.0..18_446_744_073_709_551_616.0).contains(&v) && v.fract() == 0.0 =>
            {
                Some(v as u64)
            }
            _ => None,
        }
    }

    /// The value as a whole number: an `Int`, or a `Float` that is exactly one.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Scalar::Int(v) => Some(v),
            Scalar::Float(v) => float_to_i64(v).filter(|_| v.fract() == 0.0),
            Scalar::Bool(_) => None,
        }
    }

    /// The value as a float; `None` for a `Bool`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Scalar::Int(v) => Some(v as f64),
            Scalar::Float(v) => Some(v),
            Scalar::Bool(_) => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Scalar::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// `int`, `float` or `bool`, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Scalar::Int(_) => "int",
            Scalar::Float(_) => "float",
            Scalar::Bool(_) => "bool",
        }
    }

    /// `an int`, `a float` or `a bool`, for messages.
    pub(crate) fn a_type(&self) -> &'static str {
        match self {
            Scalar::Int(_) => "an int",
            Scalar::Float(_) => "a float",
            Scalar::Bool(_) => "a bool",
        }
    }
}

/// `v` truncated to an `i64`, if it is finite and in range.
pub(crate) fn float_to_i64(v: f64) -> Option<i64> {
    // -2^63 is representable and in range; 2^63 is the first value out of range.
    (v.is_finite() && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v))
        .then_some(v as i64)
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Float(v) => write!(f, "{v:?}"),
            Scalar::Bool(v) => write!(f, "{v}"),
        }
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

/// What a scalar expression can refer to: variables, and functions beyond the built-ins.
///
/// Built-in function names (`cdiv`, `min`, ...) are reserved: a call to one never reaches the
/// environment. Any other call `f(...)` is offered first to [`call_ident`](Self::call_ident)
/// when its one argument is a bare name (`bytes(a)`, where `a` names a buffer, not a variable),
/// then, with its arguments evaluated, to [`call`](Self::call).
pub trait ScalarEnv {
    /// The value of variable `name`, if defined.
    fn var(&self, name: &str) -> Option<Scalar>;

    /// The defined variable names, listed in "unknown variable" messages.
    fn var_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Calls function `name` on evaluated arguments. `None`: no such function.
    /// `Some(Err(message))`: the function exists but refused these arguments.
    fn call(&self, name: &str, args: &[Scalar]) -> Option<Result<Scalar, String>> {
        let _ = (name, args);
        None
    }

    /// Calls function `name` on one argument written as a bare name, before (and instead of)
    /// evaluating that name as a variable. `None`: not a function of names; the call then goes
    /// on to [`call`](Self::call) as usual.
    fn call_ident(&self, name: &str, ident: &str) -> Option<Result<Scalar, String>> {
        let _ = (name, ident);
        None
    }
}

/// No variables, no functions: for constant expressions.
impl ScalarEnv for () {
    fn var(&self, _name: &str) -> Option<Scalar> {
        None
    }
}

impl ScalarEnv for HashMap<String, Scalar> {
    fn var(&self, name: &str) -> Option<Scalar> {
        self.get(name).copied()
    }

    fn var_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.keys().cloned().collect();
        names.sort();
        names
    }
}

impl ScalarEnv for BTreeMap<String, Scalar> {
    fn var(&self, name: &str) -> Option<Scalar> {
        self.get(name).copied()
    }

    fn var_names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

/// Evaluates `expr` to one scalar.
///
/// - `+ - *` on two `Int`s stay `Int`, with overflow an error; with a `Float`, they are `Float`.
/// - `/` is true division: `Int / Int` is an `Int` when it divides exactly (`N / 4` for N = 1024
///   is 256), otherwise a `Float` (`7 / 2` is 3.5).
/// - `//` is floor division (`-7 // 2` is -4) and `%` the Euclidean remainder (never negative:
///   `-7 % 2` is 1); both stay `Int` on `Int`s.
/// - `**` on `Int`s with a non-negative exponent is a checked `Int`; otherwise a `Float`.
/// - Division or remainder by zero, and any non-finite `Float` result, are errors.
/// - Comparisons compare numbers by value (`1 == 1.0`); `&&`, `||` and `!` take `Bool`s and
///   short-circuit.
/// - Built-ins: `cdiv`, `min`, `max`, `abs`, `ceil`, `floor`, `round`, `sqrt`, `log2`, `pow`,
///   `int`, `float`; other functions come from `env`.
pub fn eval_scalar(expr: &Expr, env: &dyn ScalarEnv) -> Result<Scalar, ExprError> {
    Evaluator { env }.eval(expr)
}

/// The distinct variable names `expr` refers to, in order of first appearance. Function names
/// are not variables; a bare name passed to a function (`a` in `bytes(a)`) is listed.
pub fn free_variables(expr: &Expr) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        if let ExprKind::Var(name) = &e.kind {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        // Reversed so children pop in source order.
        stack.extend(e.children().into_iter().rev());
    }
    names
}

struct Evaluator<'e> {
    env: &'e dyn ScalarEnv,
}

fn err(node: &Expr, message: String) -> ExprError {
    ExprError::new(node.span, message)
}

/// Rejects NaN and infinities, which never make a useful size.
fn finite(node: &Expr, v: f64) -> Result<Scalar, ExprError> {
    if v.is_finite() {
        Ok(Scalar::Float(v))
    } else {
        Err(err(
            node,
            format!("`{node}` is not a finite number (it is {v})"),
        ))
    }
}

impl Evaluator<'_> {
    fn eval(&self, e: &Expr) -> Result<Scalar, ExprError> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Scalar::Int(*v)),
            ExprKind::Float(v) => Ok(Scalar::Float(*v)),
            ExprKind::Bool(v) => Ok(Scalar::Bool(*v)),
            ExprKind::Var(name) => self.env.var(name).ok_or_else(|| {
                let known = self.env.var_names();
                let msg = if known.is_empty() {
                    format!("unknown variable `{name}`")
                } else {
                    format!("unknown variable `{name}`; known: {}", known.join(", "))
                };
                err(e, msg)
            }),
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand)?;
                match (op, v) {
                    (UnaryOp::Neg, Scalar::Int(x)) => x
                        .checked_neg()
                        .map(Scalar::Int)
                        .ok_or_else(|| err(e, format!("integer overflow in `{e}`"))),
                    (UnaryOp::Neg, Scalar::Float(x)) => Ok(Scalar::Float(-x)),
                    (UnaryOp::Not, Scalar::Bool(b)) => Ok(Scalar::Bool(!b)),
                    (UnaryOp::Neg, Scalar::Bool(_)) => Err(err(
                        operand,
                        format!("`-` expects a number, but `{operand}` is a bool"),
                    )),
                    (UnaryOp::Not, v) => Err(err(
                        operand,
                        format!("`!` expects a bool, but `{operand}` is {}", v.a_type()),
                    )),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(e, *op, lhs, rhs),
            ExprKind::Call(call) => self.call(e, call),
        }
    }

    fn bool_operand(&self, e: &Expr, op: BinaryOp) -> Result<bool, ExprError> {
        match self.eval(e)? {
            Scalar::Bool(b) => Ok(b),
            v => Err(err(
                e,
                format!(
                    "`{}` expects bools, but `{e}` is {}",
                    op.symbol(),
                    v.a_type()
                ),
            )),
        }
    }

    fn binary(&self, e: &Expr, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> Result<Scalar, ExprError> {
        use BinaryOp::*;
        if matches!(op, And | Or) {
            let l = self.bool_operand(lhs, op)?;
            if l == (op == Or) {
                return Ok(Scalar::Bool(l));
            }
            return self.bool_operand(rhs, op).map(Scalar::Bool);
        }
        let a = self.eval(lhs)?;
        let b = self.eval(rhs)?;
        if let (Eq | Ne, Scalar::Bool(x), Scalar::Bool(y)) = (op, a, b) {
            return Ok(Scalar::Bool((x == y) == (op == Eq)));
        }
        for (v, node) in [(a, lhs), (b, rhs)] {
            if let Scalar::Bool(_) = v {
                let msg = format!("`{}` expects numbers, but `{node}` is a bool", op.symbol());
                return Err(err(node, msg));
            }
        }
        if op.is_comparison() {
            let ord = match (a, b) {
                (Scalar::Int(x), Scalar::Int(y)) => Some(x.cmp(&y)),
                _ => a.as_f64().unwrap().partial_cmp(&b.as_f64().unwrap()),
            };
            let Some(ord) = ord else {
                return Ok(Scalar::Bool(op == Ne));
            };
            let r = match op {
                Lt => ord.is_lt(),
                Le => ord.is_le(),
                Gt => ord.is_gt(),
                Ge => ord.is_ge(),
                Eq => ord.is_eq(),
                _ => ord.is_ne(),
            };
            return Ok(Scalar::Bool(r));
        }
        let overflow = || err(e, format!("integer overflow in `{e}`"));
        let div_zero = || err(rhs, format!("division by zero in `{e}`"));
        if let (Scalar::Int(x), Scalar::Int(y)) = (a, b) {
            let r = match op {
                Add => x.checked_add(y),
                Sub => x.checked_sub(y),
                Mul => x.checked_mul(y),
                Div | FloorDiv | Rem if y == 0 => return Err(div_zero()),
                Div if x.checked_rem(y) == Some(0) => x.checked_div(y),
                Div => return finite(e, x as f64 / y as f64),
                FloorDiv => builtins::floor_div(x, y),
                Rem => x.checked_rem_euclid(y),
                Pow if y < 0 => return finite(e, (x as f64).powf(y as f64)),
                Pow => builtins::int_pow(x, y),
                _ => unreachable!("comparisons and logic handled above"),
            };
            return r.map(Scalar::Int).ok_or_else(overflow);
        }
        let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
        let r = match op {
            Add => x + y,
            Sub => x - y,
            Mul => x * y,
            Div | FloorDiv | Rem if y == 0.0 => return Err(div_zero()),
            Div => x / y,
            FloorDiv => (x / y).floor(),
            Rem => x.rem_euclid(y),
            Pow => x.powf(y),
            _ => unreachable!("comparisons and logic handled above"),
        };
        finite(e, r)
    }

    fn call(&self, e: &Expr, call: &Call) -> Result<Scalar, ExprError> {
        let name = call.func.name.as_str();
        let is_builtin = builtins::NAMES.contains(&name);
        if let Some(kw) = call.kwargs.first() {
            let msg = if is_builtin {
                format!("`{name}` takes no keyword arguments")
            } else {
                format!("keyword arguments are not supported in size expressions (in `{name}`)")
            };
            return Err(ExprError::new(kw.name.span, msg));
        }
        if !is_builtin {
            if let [arg] = call.args.as_slice() {
                if let Some(ident) = arg.as_var() {
                    if let Some(r) = self.env.call_ident(name, ident) {
                        return r.map_err(|m| err(e, m));
                    }
                }
            }
        }
        let args = call
            .args
            .iter()
            .map(|a| self.eval(a))
            .collect::<Result<Vec<_>, _>>()?;
        if is_builtin {
            return builtins::call(e, call, &args);
        }
        match self.env.call(name, &args) {
            Some(r) => r.map_err(|m| err(e, m)),
            None => Err(ExprError::new(
                call.func.span,
                format!(
                    "unknown function `{name}`; built-in functions are: {}",
                    builtins::NAMES.join(", ")
                ),
            )),
        }
    }
}
