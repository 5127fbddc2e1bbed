//! The expression language of workspace files.
//!
//! One small language serves two jobs:
//!
//! - **size and launch expressions** (`cdiv(N, 256)`, `256Mi`, `3 * N * 4`, `bytes(a) + bytes(c)`)
//!   are evaluated to a [`Scalar`] by [`eval_scalar`], with problem-size variables and
//!   caller-supplied functions coming from a [`ScalarEnv`];
//! - **reference expressions** (`softmax(x, axis=-1)`, `where(x > 0, x, 0.1 * x)`,
//!   `matmul(a, b)`) are evaluated on the CPU in `f64` over whole arrays by [`eval_array`], with
//!   the input buffers coming from an [`ArrayEnv`].
//!
//! [`parse`] turns text into an [`Expr`] whose every node carries a byte [`Span`]; parsing
//! recovers from mistakes and returns all of them, and every evaluation error points at the
//! sub-expression at fault. [`render_error`] shows an error under its source text.
//!
//! Syntax, loosest binding first: `||`; `&&`; `< <= > >= == !=` (not chainable); `+ -`;
//! `* / // %`; prefix `- !`; `**` (right-associative, tighter than a unary minus on its left:
//! `-2**2` is `-4`). Calls take positional then keyword arguments: `sum(x, axis=-1)`.
//! Numbers may carry a size suffix: `K M G T` (powers of 1000) or `Ki Mi Gi Ti` (powers of 1024),
//! and a suffixed number must come out whole (`1.5Ki` is 1536, `1.3Ki` is an error).

mod array;
mod ast;
mod error;
mod lexer;
mod parser;
mod scalar;

pub use array::{eval_array, ArrayEnv, ArrayValue, Tensor};
pub use ast::{BinaryOp, Call, Expr, ExprKind, Ident, KwArg, UnaryOp};
pub use error::{render_error, render_errors, ExprError, Span};
pub use parser::{parse, MAX_DEPTH};
pub use scalar::{eval_scalar, free_variables, Scalar, ScalarEnv};

#[cfg(test)]
mod tests;
