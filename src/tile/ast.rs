//! The tile language's syntax tree: what the parser builds and the checker reads. Every node
//! carries the [`Span`] of its source text, so any later stage can point at it. The tree is
//! Python's, cut down to what a `@triton.jit` function may contain.

use super::span::Span;

/// A name with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl BinaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::FloorDiv => "//",
            BinaryOp::Mod => "%",
            BinaryOp::Pow => "**",
            BinaryOp::MatMul => "@",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Pos,
    Invert,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Is,
    IsNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

/// One element of a subscript: a bare `:` (keep the dimension) or an expression (`None`
/// inserts a dimension; an integer picks a tuple element).
#[derive(Debug, Clone, PartialEq)]
pub enum Index {
    Full(Span),
    Expr(Expr),
}

/// A keyword argument `name=value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyword {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    Attr {
        value: Box<Expr>,
        attr: Ident,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Expr>,
        kwargs: Vec<Keyword>,
    },
    Subscript {
        value: Box<Expr>,
        index: Vec<Index>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Logic {
        op: BoolOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `a < b <= c`: `first`, then each operator with its right operand.
    Compare {
        first: Box<Expr>,
        rest: Vec<(CmpOp, Expr)>,
    },
    /// `then if cond else otherwise`.
    IfExp {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    Expr(Expr),
    /// `a = b = value` has two targets.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    AugAssign {
        target: Expr,
        op: BinaryOp,
        value: Expr,
    },
    /// `x: ann = value` (the annotation is kept but means nothing to the checker).
    AnnAssign {
        target: Expr,
        ann: Expr,
        value: Option<Expr>,
    },
    /// `elif` is an `If` alone in `otherwise`.
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    Return(Option<Expr>),
    Assert {
        cond: Expr,
        msg: Option<Expr>,
    },
    Pass,
}

/// A function parameter: `x`, `x: ann`, `x=3`, `X: tl.constexpr = 128`.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ann: Option<Expr>,
    pub default: Option<Expr>,
    /// Annotated `tl.constexpr` (or `triton.language.constexpr`, `constexpr`).
    pub constexpr: bool,
    pub span: Span,
}

/// A `def`: a kernel, or a `@triton.jit` helper it calls.
#[derive(Debug, Clone, PartialEq)]
pub struct FuncDef {
    pub name: Ident,
    pub decorators: Vec<Expr>,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    /// From `def` to the end of the body.
    pub span: Span,
    /// The span of the `def` keyword (kernel diagnostics point here).
    pub def_span: Span,
    /// The parser reported an error inside this function: the checker leaves it alone.
    pub has_errors: bool,
}

/// `import a.b as c` (`names` empty) or `from a.b import x as y, z`.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// `from ..pkg import x`: the number of leading dots (0 for an absolute import).
    pub level: u32,
    pub module: Vec<String>,
    /// `import a.b as c`: the alias `c`.
    pub alias: Option<String>,
    /// `from a.b import x as y`: `(x, Some(y))`.
    pub names: Vec<(String, Option<String>)>,
    pub from: bool,
    pub span: Span,
    /// Inside a top-level `if`/`try`/... block (`try: from a import f` / `except: from b
    /// import f`): Python runs one branch, so kwb takes the name only when every such import
    /// binds it to the same thing.
    pub conditional: bool,
}

/// A name bound at the top level of a file, other than by `def` or `import`.
#[derive(Debug, Clone, PartialEq)]
pub struct Global {
    pub name: Ident,
    pub def: GlobalDef,
    /// The whole statement.
    pub span: Span,
}

/// How a top-level name is bound.
#[derive(Debug, Clone, PartialEq)]
pub enum GlobalDef {
    /// `NAME = value` or `NAME: ann = value`; `constexpr_ann`: the annotation is
    /// `tl.constexpr`.
    Assign { value: Expr, constexpr_ann: bool },
    /// Bound by a statement kwb does not evaluate (an augmented assignment, a tuple target, an
    /// expression it cannot parse, or an assignment inside an `if`/`for`/`try`/`with` block).
    Opaque,
}

/// A parsed file: its kernels (every `@triton.jit` top-level function), imports and
/// top-level names (in source order; the last binding of a name is the one kernels see).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Module {
    pub funcs: Vec<FuncDef>,
    pub imports: Vec<Import>,
    pub globals: Vec<Global>,
}
