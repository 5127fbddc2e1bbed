//! Evaluates reference expressions (`softmax(x, axis=-1)`, `where(x > 0, x, 0.1 * x)`,
//! `matmul(a, b)`) on the CPU in `f64` over whole arrays, producing the expected output a
//! kernel's result is checked against.
//!
//! Evaluation goes node by node, each node computing a whole array with one tight loop (see
//! `kernels`), never walking the tree per element: inputs can hold 2^28 elements. Inputs are
//! borrowed from the environment, temporaries are overwritten in place where shapes allow, and
//! numbers stay numbers until they meet an array (they broadcast).

mod kernels;
mod reduce;
pub(crate) mod special;
mod tensor;

pub use tensor::Tensor;

use super::ast::{BinaryOp, Call, Expr, ExprKind, UnaryOp};
use super::error::ExprError;
use kernels::{map, select, zip, Val};
use reduce::Reduction;
use std::collections::{BTreeMap, HashMap};

/// A value an array expression can name: a whole array, or one number that broadcasts.
#[derive(Debug, Clone, Copy)]
pub enum ArrayValue<'a> {
    Scalar(f64),
    Tensor(&'a Tensor),
}

/// What an array expression can refer to. Arrays are borrowed, never copied, for the whole
/// evaluation.
pub trait ArrayEnv {
    /// The array or number called `name`, if defined.
    fn var(&self, name: &str) -> Option<ArrayValue<'_>>;

    /// The defined names, listed in "unknown array" messages.
    fn var_names(&self) -> Vec<String> {
        Vec::new()
    }
}

impl ArrayEnv for HashMap<String, Tensor> {
    fn var(&self, name: &str) -> Option<ArrayValue<'_>> {
        self.get(name).map(ArrayValue::Tensor)
    }

    fn var_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.keys().cloned().collect();
        names.sort();
        names
    }
}

impl ArrayEnv for BTreeMap<String, Tensor> {
    fn var(&self, name: &str) -> Option<ArrayValue<'_>> {
        self.get(name).map(ArrayValue::Tensor)
    }

    fn var_names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

/// An elementwise function of one number.
type UnaryFn = fn(f64) -> f64;

/// Elementwise functions of one array, by name.
const UNARY_FUNCS: &[(&str, UnaryFn)] = &[
    ("abs", f64::abs),
    ("ceil", f64::ceil),
    ("cos", f64::cos),
    ("erf", special::erf),
    ("exp", f64::exp),
    ("floor", f64::floor),
    ("gelu_erf", special::gelu_erf),
    ("gelu_tanh", special::gelu_tanh),
    ("log", f64::ln),
    ("log2", f64::log2),
    ("relu", |x| if x > 0.0 { x } else { 0.0 }),
    ("round", f64::round),
    ("rsqrt", |x| 1.0 / x.sqrt()),
    ("sigmoid", special::sigmoid),
    ("silu", |x| x * special::sigmoid(x)),
    ("sin", f64::sin),
    ("sqrt", f64::sqrt),
    ("tanh", f64::tanh),
];

/// Every function name an array expression accepts, for "unknown function" messages.
const OTHER_FUNCS: &[&str] = &[
    "log_softmax",
    "matmul",
    "max",
    "mean",
    "min",
    "pow",
    "softmax",
    "sum",
    "transpose",
    "where",
];

/// Evaluates `expr` over the arrays of `env`; a result that is a plain number comes back as a
/// 0-d tensor.
///
/// Operators broadcast as in NumPy. Arithmetic follows IEEE rules (`1/0` is infinity, not an
/// error); comparisons and `&&`, `||`, `!` give 1.0 or 0.0 and treat non-zero as true; `//`
/// floors and `%` is the Euclidean remainder, as in size expressions. Functions:
/// - elementwise: `exp log log2 sqrt rsqrt abs sin cos tanh erf sigmoid relu silu gelu_tanh
///   gelu_erf floor ceil round`, `pow(a, b)`, and `min(a, b)` / `max(a, b)` (NaN wins);
/// - reductions: `sum`, `mean`, `max`, `min` of one array, over all elements (a 0-d result) or
///   along `axis=k` (negative counts from the end), keeping the reduced axis with size 1 when
///   `keepdims=true`;
/// - `softmax(x, axis=-1)` and `log_softmax(x, axis=-1)`, shifted by the maximum for stability;
/// - `where(cond, a, b)`; `matmul(a, b)` for 1-D and 2-D arrays.
pub fn eval_array(expr: &Expr, env: &dyn ArrayEnv) -> Result<Tensor, ExprError> {
    Evaluator { env }.eval(expr).map(Val::into_tensor)
}

struct Evaluator<'a> {
    env: &'a dyn ArrayEnv,
}

fn err(node: &Expr, message: String) -> ExprError {
    ExprError::new(node.span, message)
}

fn truth(x: f64) -> bool {
    x != 0.0
}

fn bool_f(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

impl<'a> Evaluator<'a> {
    fn eval(&self, e: &Expr) -> Result<Val<'a>, ExprError> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Val::Scalar(*v as f64)),
            ExprKind::Float(v) => Ok(Val::Scalar(*v)),
            ExprKind::Bool(b) => Ok(Val::Scalar(bool_f(*b))),
            ExprKind::Var(name) => match self.env.var(name) {
                Some(ArrayValue::Scalar(v)) => Ok(Val::Scalar(v)),
                Some(ArrayValue::Tensor(t)) => Ok(Val::Ref(t)),
                None => {
                    let known = self.env.var_names();
                    Err(err(
                        e,
                        if known.is_empty() {
                            format!("unknown array `{name}`")
                        } else {
                            format!("unknown array `{name}`; known: {}", known.join(", "))
                        },
                    ))
                }
            },
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand)?;
                Ok(match op {
                    UnaryOp::Neg => map(v, |x| -x),
                    UnaryOp::Not => map(v, |x| bool_f(!truth(x))),
                })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.eval(lhs)?, self.eval(rhs)?);
                binary(*op, a, b).map_err(|m| err(e, format!("{m} in `{e}`")))
            }
            ExprKind::Call(call) => self.call(e, call),
        }
    }

    /// Checks the argument list of `call`: exactly `positional` positional arguments and
    /// keyword arguments only from `keywords`.
    fn check_args(
        &self,
        e: &Expr,
        call: &Call,
        positional: usize,
        keywords: &[&str],
    ) -> Result<(), ExprError> {
        let name = &call.func.name;
        if call.args.len() != positional {
            let s = if positional == 1 { "" } else { "s" };
            return Err(err(
                e,
                format!(
                    "{name} expects {positional} positional argument{s}, got {}",
                    call.args.len()
                ),
            ));
        }
        for kw in &call.kwargs {
            if !keywords.contains(&kw.name.name.as_str()) {
                let accepted = if keywords.is_empty() {
                    "it takes no keyword arguments".to_string()
                } else {
                    format!("it accepts: {}", keywords.join(", "))
                };
                return Err(ExprError::new(
                    kw.name.span,
                    format!(
                        "{name} got an unexpected keyword argument `{}`; {accepted}",
                        kw.name.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The value of keyword `key` as one number, if given.
    fn kw_number<'c>(
        &self,
        call: &'c Call,
        key: &str,
    ) -> Result<Option<(f64, &'c Expr)>, ExprError> {
        let Some(node) = call.kwarg(key) else {
            return Ok(None);
        };
        match self.eval(node)? {
            Val::Scalar(v) => Ok(Some((v, node))),
            v => match v.data() {
                [x] if v.shape().is_empty() => Ok(Some((*x, node))),
                _ => Err(err(
                    node,
                    format!(
                        "`{key}` must be a single number, but `{node}` has shape {:?}",
                        v.shape()
                    ),
                )),
            },
        }
    }

    /// The `axis` keyword resolved against an array of `shape` (negative counts from the end).
    fn axis(&self, call: &Call, shape: &[usize]) -> Result<Option<usize>, ExprError> {
        let Some((v, node)) = self.kw_number(call, "axis")? else {
            return Ok(None);
        };
        let rank = shape.len() as i64;
        if v.fract() != 0.0 || !v.is_finite() {
            return Err(err(node, format!("axis must be a whole number, got {v}")));
        }
        let a = v as i64;
        if rank == 0 {
            return Err(err(
                node,
                format!("axis {a} is out of range: the argument is a single number (shape [])"),
            ));
        }
        if a < -rank || a >= rank {
            return Err(err(
                node,
                format!(
                    "axis {a} is out of range for shape {shape:?} (valid: {} to {})",
                    -rank,
                    rank - 1
                ),
            ));
        }
        Ok(Some(a.rem_euclid(rank) as usize))
    }

    fn call(&self, e: &Expr, call: &Call) -> Result<Val<'a>, ExprError> {
        let name = call.func.name.as_str();
        if let Some(&(_, f)) = UNARY_FUNCS.iter().find(|(n, _)| *n == name) {
            self.check_args(e, call, 1, &[])?;
            return Ok(map(self.eval(&call.args[0])?, f));
        }
        let shape_err = |m: String| err(e, format!("{m} in `{e}`"));
        match name {
            "min" | "max" if call.args.len() == 2 && call.kwargs.is_empty() => {
                let (a, b) = (self.eval(&call.args[0])?, self.eval(&call.args[1])?);
                let r = if name == "min" {
                    zip(a, b, |x, y| if x.is_nan() || x < y { x } else { y })
                } else {
                    zip(a, b, |x, y| if x.is_nan() || x > y { x } else { y })
                };
                r.map_err(shape_err)
            }
            "pow" => {
                self.check_args(e, call, 2, &[])?;
                let (a, b) = (self.eval(&call.args[0])?, self.eval(&call.args[1])?);
                zip(a, b, f64::powf).map_err(shape_err)
            }
            "sum" | "mean" | "min" | "max" => {
                self.check_args(e, call, 1, &["axis", "keepdims"])?;
                let how = match name {
                    "sum" => Reduction::Sum,
                    "mean" => Reduction::Mean,
                    "min" => Reduction::Min,
                    _ => Reduction::Max,
                };
                let v = self.eval(&call.args[0])?;
                let axis = self.axis(call, v.shape())?;
                let keepdims = self
                    .kw_number(call, "keepdims")?
                    .is_some_and(|(k, _)| truth(k));
                reduce::reduce(v.shape(), v.data(), axis, keepdims, how)
                    .map(Val::Owned)
                    .map_err(shape_err)
            }
            "softmax" | "log_softmax" => {
                self.check_args(e, call, 1, &["axis"])?;
                let mut t = self.eval(&call.args[0])?.into_tensor();
                if t.shape.is_empty() {
                    return Err(err(
                        &call.args[0],
                        format!(
                            "{name} needs an array, but `{}` is a single number",
                            call.args[0]
                        ),
                    ));
                }
                let axis = self.axis(call, &t.shape)?.unwrap_or(t.shape.len() - 1);
                reduce::softmax(&mut t, axis, name == "log_softmax");
                Ok(Val::Owned(t))
            }
            "transpose" => {
                self.check_args(e, call, 1, &[])?;
                let t = self.eval(&call.args[0])?.into_tensor();
                if t.shape.len() != 2 {
                    return Err(err(
                        &call.args[0],
                        format!(
                            "transpose needs a 2-D array, but `{}` has shape {:?}",
                            call.args[0], t.shape
                        ),
                    ));
                }
                let (r, c) = (t.shape[0], t.shape[1]);
                let mut data = vec![0.0; r * c];
                for i in 0..r {
                    for j in 0..c {
                        data[j * r + i] = t.data[i * c + j];
                    }
                }
                Ok(Val::Owned(Tensor {
                    shape: vec![c, r],
                    data,
                }))
            }
            "where" => {
                self.check_args(e, call, 3, &[])?;
                let c = self.eval(&call.args[0])?;
                let a = self.eval(&call.args[1])?;
                let b = self.eval(&call.args[2])?;
                select(c, a, b).map_err(shape_err)
            }
            "matmul" => {
                self.check_args(e, call, 2, &[])?;
                let (a, b) = (self.eval(&call.args[0])?, self.eval(&call.args[1])?);
                reduce::matmul((a.shape(), a.data()), (b.shape(), b.data()))
                    .map(Val::Owned)
                    .map_err(shape_err)
            }
            _ => {
                let mut names: Vec<&str> = UNARY_FUNCS.iter().map(|(n, _)| *n).collect();
                names.extend_from_slice(OTHER_FUNCS);
                names.sort_unstable();
                Err(ExprError::new(
                    call.func.span,
                    format!(
                        "unknown function `{name}`; array expressions can use: {}",
                        names.join(", ")
                    ),
                ))
            }
        }
    }
}

/// Applies binary operator `op` elementwise with broadcasting.
fn binary<'a>(op: BinaryOp, a: Val<'a>, b: Val<'a>) -> Result<Val<'a>, String> {
    use BinaryOp::*;
    match op {
        Add => zip(a, b, |x, y| x + y),
        Sub => zip(a, b, |x, y| x - y),
        Mul => zip(a, b, |x, y| x * y),
        Div => zip(a, b, |x, y| x / y),
        FloorDiv => zip(a, b, |x, y| (x / y).floor()),
        Rem => zip(a, b, f64::rem_euclid),
        Pow => zip(a, b, f64::powf),
        Lt => zip(a, b, |x, y| bool_f(x < y)),
        Le => zip(a, b, |x, y| bool_f(x <= y)),
        Gt => zip(a, b, |x, y| bool_f(x > y)),
        Ge => zip(a, b, |x, y| bool_f(x >= y)),
        Eq => zip(a, b, |x, y| bool_f(x == y)),
        Ne => zip(a, b, |x, y| bool_f(x != y)),
        And => zip(a, b, |x, y| bool_f(truth(x) && truth(y))),
        Or => zip(a, b, |x, y| bool_f(truth(x) || truth(y))),
    }
}
