//! Unit tests of the expression language, one file per concern, with the helpers they share.

mod array;
mod fuzz;
mod parse;
mod scalar;

use super::{parse, Expr, ExprError, ExprKind};

/// Parses `src`, failing the test with every rendered error if it does not parse.
fn p(src: &str) -> Expr {
    match parse(src) {
        Ok(e) => e,
        Err(errs) => panic!(
            "`{src}` failed to parse:\n{}",
            super::render_errors(src, &errs)
        ),
    }
}

/// Parses `src`, expecting errors.
fn errs(src: &str) -> Vec<ExprError> {
    match parse(src) {
        Ok(e) => panic!("`{src}` parsed as {e}, expected errors"),
        Err(errs) => errs,
    }
}

/// The tree as a fully parenthesised prefix form, e.g. `(+ 1 (* 2 3))`, spans left out.
fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Bool(v) => v.to_string(),
        ExprKind::Var(n) => n.clone(),
        ExprKind::Unary { op, operand } => format!("({} {})", op.symbol(), sexpr(operand)),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), sexpr(lhs), sexpr(rhs))
        }
        ExprKind::Call(c) => {
            let mut parts = vec![format!("call {}", c.func.name)];
            parts.extend(c.args.iter().map(sexpr));
            parts.extend(
                c.kwargs
                    .iter()
                    .map(|k| format!("{}={}", k.name.name, sexpr(&k.value))),
            );
            format!("({})", parts.join(" "))
        }
    }
}
