//! The syntax tree one parser produces for both uses of the language: launch/size expressions
//! evaluated to a [`Scalar`](super::Scalar) and reference expressions evaluated over whole arrays.
//!
//! Every node carries the [`Span`] of the source text it came from (parentheses included), so an
//! evaluator can point at the exact sub-expression that overflowed or had the wrong shape.
//! `Display` prints a node back as source with the fewest parentheses that keep its meaning;
//! evaluators quote that text in their messages ("integer overflow in `N * N * N`").

use super::error::Span;
use std::fmt;

/// An expression node: what it is and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// An integer literal, size suffixes already applied (`256Mi` is `Int(268435456)`).
    Int(i64),
    /// A literal with a decimal point or an exponent (`0.5`, `1e-3`).
    Float(f64),
    Bool(bool),
    /// A name: a problem-size variable or an array.
    Var(String),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Call(Call),
}

/// A name as written, with its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `name(args..., key=value...)`: positional arguments always precede keyword arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub func: Ident,
    pub args: Vec<Expr>,
    pub kwargs: Vec<KwArg>,
}

impl Call {
    /// The value of keyword argument `name`, if given.
    pub fn kwarg(&self, name: &str) -> Option<&Expr> {
        self.kwargs
            .iter()
            .find(|k| k.name.name == name)
            .map(|k| &k.value)
    }
}

/// `name=value` inside a call.
#[derive(Debug, Clone, PartialEq)]
pub struct KwArg {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Or,
    And,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Add,
    Sub,
    Mul,
    /// `/`: true division.
    Div,
    /// `//`: floor division.
    FloorDiv,
    /// `%`: Euclidean remainder.
    Rem,
    /// `**`
    Pow,
}

/// Precedence levels, loosest first; `Display` and the parser agree on them.
pub(crate) mod prec {
    pub const OR: u8 = 1;
    pub const AND: u8 = 2;
    pub const CMP: u8 = 3;
    pub const ADD: u8 = 4;
    pub const MUL: u8 = 5;
    pub const UNARY: u8 = 6;
    pub const POW: u8 = 7;
    pub const ATOM: u8 = 8;
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Or => "||",
            And => "&&",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Rem => "%",
            Pow => "**",
        }
    }

    /// The precedence level (see [`prec`]); higher binds tighter.
    pub(crate) fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Or => prec::OR,
            And => prec::AND,
            Lt | Le | Gt | Ge | Eq | Ne => prec::CMP,
            Add | Sub => prec::ADD,
            Mul | Div | FloorDiv | Rem => prec::MUL,
            Pow => prec::POW,
        }
    }

    pub fn is_comparison(self) -> bool {
        self.precedence() == prec::CMP
    }
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "!",
        }
    }
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr { kind, span }
    }

    /// The name, if this node is a bare variable.
    pub fn as_var(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Var(name) => Some(name),
            _ => None,
        }
    }

    /// The direct sub-expressions, in source order (call arguments, then keyword values).
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Var(_) => {
                Vec::new()
            }
            ExprKind::Unary { operand, .. } => vec![operand],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Call(call) => call
                .args
                .iter()
                .chain(call.kwargs.iter().map(|k| &k.value))
                .collect(),
        }
    }

    /// How deeply the tree nests (a leaf is 1), computed without recursion.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((e, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(e.children().into_iter().map(|c| (c, d + 1)));
        }
        deepest
    }

    /// The precedence of this node as printed.
    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Int(v) if *v < 0 => prec::UNARY,
            ExprKind::Float(v) if v.is_sign_negative() => prec::UNARY,
            ExprKind::Unary { .. } => prec::UNARY,
            ExprKind::Binary { op, .. } => op.precedence(),
            _ => prec::ATOM,
        }
    }

    /// Writes `self`, parenthesised when its precedence is below `min`.
    fn write(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        let parens = self.precedence() < min;
        if parens {
            f.write_str("(")?;
        }
        match &self.kind {
            ExprKind::Int(v) => write!(f, "{v}")?,
            ExprKind::Float(v) => write!(f, "{v:?}")?,
            ExprKind::Bool(v) => write!(f, "{v}")?,
            ExprKind::Var(name) => f.write_str(name)?,
            ExprKind::Unary { op, operand } => {
                f.write_str(op.symbol())?;
                operand.write(f, prec::UNARY)?;
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                let (l, r) = match op {
                    // Right-associative; its left side may not be a bare unary (`(-2)**2`).
                    BinaryOp::Pow => (prec::ATOM, prec::UNARY),
                    // Comparisons do not chain.
                    _ if op.is_comparison() => (p + 1, p + 1),
                    _ => (p, p + 1),
                };
                lhs.write(f, l)?;
                write!(f, " {} ", op.symbol())?;
                rhs.write(f, r)?;
            }
            ExprKind::Call(call) => {
                write!(f, "{}(", call.func.name)?;
                let mut first = true;
                for a in &call.args {
                    if !first {
                        f.write_str(", ")?;
                    }
                    first = false;
                    a.write(f, 0)?;
                }
                for k in &call.kwargs {
                    if !first {
                        f.write_str(", ")?;
                    }
                    first = false;
                    write!(f, "{}=", k.name.name)?;
                    k.value.write(f, 0)?;
                }
                f.write_str(")")?;
            }
        }
        if parens {
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, 0)
    }
}
