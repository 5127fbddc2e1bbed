//! Formulas: workspace expressions kept with their source text, evaluated against problem-size
//! variables and (for `bytes`/`flops`) the sizes of a version's buffers.

use super::Buffer;
use crate::expr::{self, Expr, Scalar, ScalarEnv};

/// A parsed expression with the text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    pub text: String,
    pub expr: Expr,
}

impl Formula {
    /// Parses `text`; the error is every parse problem, rendered with an underline.
    pub fn parse(text: &str) -> Result<Formula, String> {
        match expr::parse(text) {
            Ok(expr) => Ok(Formula {
                text: text.to_string(),
                expr,
            }),
            Err(errors) => Err(errors
                .iter()
                .map(|e| {
                    let r = expr::render_error(text, e);
                    r.strip_prefix("error: ").map(str::to_string).unwrap_or(r)
                })
                .collect::<Vec<_>>()
                .join("\n")),
        }
    }

    pub fn free_variables(&self) -> Vec<String> {
        expr::free_variables(&self.expr)
    }

    pub fn eval(&self, env: &SizeEnv) -> Result<Scalar, String> {
        expr::eval_scalar(&self.expr, env).map_err(|e| format!("in `{}`: {}", self.text, e.message))
    }

    /// Evaluates to an integer, or says why it is not one.
    pub fn eval_int(&self, env: &SizeEnv) -> Result<i64, String> {
        match self.eval(env)? {
            Scalar::Int(i) => Ok(i),
            Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
            other => Err(format!(
                "`{}` must be a whole number, got {other}",
                self.text
            )),
        }
    }

    /// Evaluates to a non-negative integer.
    pub fn eval_u64(&self, env: &SizeEnv) -> Result<u64, String> {
        let v = self.eval_int(env)?;
        u64::try_from(v).map_err(|_| format!("`{}` must not be negative, got {v}", self.text))
    }

    pub fn eval_f64(&self, env: &SizeEnv) -> Result<f64, String> {
        match self.eval(env)? {
            Scalar::Int(i) => Ok(i as f64),
            Scalar::Float(f) => Ok(f),
            Scalar::Bool(b) => Ok(f64::from(u8::from(b))),
        }
    }
}

/// What a formula can see: size variables and, optionally, buffers for `bytes(x)` / `elems(x)`.
pub struct SizeEnv<'a> {
    vars: &'a [(String, i64)],
    buffers: &'a [Buffer],
}

impl<'a> SizeEnv<'a> {
    pub fn vars(vars: &'a [(String, i64)]) -> Self {
        SizeEnv { vars, buffers: &[] }
    }

    pub fn with_buffers(vars: &'a [(String, i64)], buffers: &'a [Buffer]) -> Self {
        SizeEnv { vars, buffers }
    }

    /// Element count of a buffer at these sizes.
    pub fn elems(&self, b: &Buffer) -> Result<u64, String> {
        let no_buffers = SizeEnv::vars(self.vars);
        let mut n: u64 = 1;
        for d in &b.shape {
            let dim = d.eval_u64(&no_buffers)?;
            n = n
                .checked_mul(dim)
                .ok_or_else(|| format!("buffer `{}` is too large", b.name))?;
        }
        Ok(n)
    }

    /// Size in bytes of a buffer at these sizes.
    pub fn bytes(&self, b: &Buffer) -> Result<u64, String> {
        self.elems(b)?
            .checked_mul(b.dtype.size())
            .ok_or_else(|| format!("buffer `{}` is too large", b.name))
    }
}

impl ScalarEnv for SizeEnv<'_> {
    fn var_names(&self) -> Vec<String> {
        self.vars.iter().map(|(n, _)| n.clone()).collect()
    }

    fn var(&self, name: &str) -> Option<Scalar> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| Scalar::Int(*v))
    }

    fn call_ident(&self, func: &str, ident: &str) -> Option<Result<Scalar, String>> {
        let size: fn(&Self, &Buffer) -> Result<u64, String> = match func {
            "bytes" => Self::bytes,
            "elems" => Self::elems,
            _ => return None,
        };
        let Some(b) = self.buffers.iter().find(|b| b.name == ident) else {
            return Some(Err(format!(
                "`{func}` needs a buffer name, and there is no buffer `{ident}`"
            )));
        };
        Some(
            size(self, b)
                .and_then(|n| i64::try_from(n).map(Scalar::Int).map_err(|e| e.to_string())),
        )
    }
}
