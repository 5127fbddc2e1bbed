//! Statements and function definitions. Each statement that fails to parse is reported and
//! skipped (its line, and its block if it opens one); its neighbours still parse.

use super::{PResult, Parser, Recover, MAX_NEST};
use crate::tile::ast::{BinaryOp, Expr, ExprKind, FuncDef, Param, Stmt, StmtKind};
use crate::tile::lex::Tok;
use crate::tile::span::Span;

/// Python statements the tile language does not have, and how an error names them.
const UNSUPPORTED_STMTS: &[(&str, &str)] = &[
    ("with", "`with` statements"),
    ("try", "`try` statements"),
    ("except", "`except` (of a `try` statement)"),
    ("finally", "`finally` (of a `try` statement)"),
    ("class", "class definitions"),
    (
        "def",
        "nested functions (define helpers at the top level with `@triton.jit`)",
    ),
    ("async", "`async` code"),
    ("global", "`global` statements"),
    ("nonlocal", "`nonlocal` statements"),
    ("del", "`del` statements"),
    ("raise", "`raise` statements"),
    (
        "import",
        "imports inside a function (import at the top level)",
    ),
    (
        "from",
        "imports inside a function (import at the top level)",
    ),
    (
        "break",
        "`break` (a tile-language loop always runs to its end)",
    ),
    (
        "continue",
        "`continue` (a tile-language loop always runs to its end)",
    ),
    ("yield", "`yield`"),
];

const AUG_OPS: &[(&str, BinaryOp)] = &[
    ("+=", BinaryOp::Add),
    ("-=", BinaryOp::Sub),
    ("*=", BinaryOp::Mul),
    ("/=", BinaryOp::Div),
    ("//=", BinaryOp::FloorDiv),
    ("%=", BinaryOp::Mod),
    ("**=", BinaryOp::Pow),
    ("@=", BinaryOp::MatMul),
    ("&=", BinaryOp::BitAnd),
    ("|=", BinaryOp::BitOr),
    ("^=", BinaryOp::BitXor),
    ("<<=", BinaryOp::Shl),
    (">>=", BinaryOp::Shr),
];

impl Parser<'_> {
    /// `def name(params) [-> ann]: body`, the current token being `def`. A bad header still
    /// gives the function (marked as having errors) so later stages know it exists.
    pub(super) fn funcdef(&mut self, decorators: Vec<Expr>, first: Span) -> Option<FuncDef> {
        let def_span = self.bump().span;
        let name = match self.ident("the function's name") {
            Ok(n) => n,
            Err(Recover) => {
                self.skip_statement();
                return None;
            }
        };
        let mut f = FuncDef {
            name,
            decorators,
            params: Vec::new(),
            body: Vec::new(),
            span: first.to(def_span),
            def_span,
            has_errors: false,
        };
        match self.signature(&mut f.params) {
            Ok(()) => match self.block() {
                Ok(body) => f.body = body,
                Err(Recover) => self.skip_statement(),
            },
            Err(Recover) => self.skip_statement(),
        }
        f.span = f.span.to(self.prev_span());
        Some(f)
    }

    /// `(params) [-> ann] :`
    fn signature(&mut self, params: &mut Vec<Param>) -> PResult<()> {
        self.expect_op("(")?;
        while !self.at_op(")") {
            let start = self.span();
            if self.at_op("*") || self.at_op("**") {
                return Err(self.unsupported(start, "`*args` and `**kwargs` parameters"));
            }
            if self.at_op("/") {
                return Err(self.unsupported(start, "positional-only parameters (`/`)"));
            }
            let name = self.ident("a parameter name")?;
            let ann = if self.eat_op(":") {
                Some(self.expr()?)
            } else {
                None
            };
            let default = if self.eat_op("=") {
                Some(self.expr()?)
            } else {
                None
            };
            let constexpr = ann.as_ref().is_some_and(is_constexpr_annotation);
            params.push(Param {
                name,
                ann,
                default,
                constexpr,
                span: start.to(self.prev_span()),
            });
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        if self.eat_op("->") {
            self.expr()?;
        }
        self.expect_op(":")?;
        Ok(())
    }

    /// The body after a `:`: an indented block, or simple statements on the same line.
    pub(super) fn block(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        if !matches!(self.tok(), Tok::Newline) {
            self.simple_line(&mut out)?;
            return Ok(out);
        }
        self.bump();
        if !matches!(self.tok(), Tok::Indent) {
            return Err(self.expected("an indented block"));
        }
        if self.nest > MAX_NEST {
            return Err(self.error(self.span(), "blocks are nested too deeply"));
        }
        self.bump();
        self.nest += 4;
        loop {
            match self.tok() {
                Tok::Dedent => {
                    self.bump();
                    break;
                }
                Tok::Eof => break,
                _ => self.statement(&mut out),
            }
        }
        self.nest -= 4;
        Ok(out)
    }

    /// One statement (compound, or a line of simple ones); on error, skips it.
    fn statement(&mut self, out: &mut Vec<Stmt>) {
        let r = match self.tok() {
            Tok::Kw("if") => self.if_stmt(false).map(|s| out.push(s)),
            Tok::Kw("for") => self.for_stmt().map(|s| out.push(s)),
            Tok::Kw("while") => self.while_stmt().map(|s| out.push(s)),
            Tok::Op("@") => Err(self.unsupported(self.span(), "decorators inside a function")),
            Tok::Indent => {
                self.error(self.span(), "unexpected indent");
                self.skip_block();
                return;
            }
            _ => self.simple_line(out),
        };
        if r.is_err() {
            let was_try = matches!(self.tok(), Tok::Kw("try"));
            self.skip_statement();
            // The clauses of a refused `try` go with it.
            while was_try && (self.at_kw("except") || self.at_kw("finally") || self.at_kw("else")) {
                self.skip_statement();
            }
        }
    }

    /// `if`/`elif` (the current token) with its branches.
    fn if_stmt(&mut self, _elif: bool) -> PResult<Stmt> {
        let start = self.bump().span;
        let cond = self.expr()?;
        self.expect_op(":")?;
        let then = self.block()?;
        let otherwise = if self.at_kw("elif") {
            if self.nest > MAX_NEST {
                return Err(self.error(self.span(), "too many `elif`s in a row"));
            }
            self.nest += 1;
            let r = self.if_stmt(true);
            self.nest -= 1;
            vec![r?]
        } else if self.eat_kw("else") {
            self.expect_op(":")?;
            self.block()?
        } else {
            Vec::new()
        };
        Ok(Stmt {
            kind: StmtKind::If {
                cond,
                then,
                otherwise,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn for_stmt(&mut self) -> PResult<Stmt> {
        let start = self.bump().span;
        let target = self.target_list()?;
        if !self.eat_kw("in") {
            return Err(self.expected("`in`"));
        }
        let iter = self.expr()?;
        self.expect_op(":")?;
        let body = self.block()?;
        self.loop_else()?;
        Ok(Stmt {
            kind: StmtKind::For { target, iter, body },
            span: start.to(self.prev_span()),
        })
    }

    fn while_stmt(&mut self) -> PResult<Stmt> {
        let start = self.bump().span;
        let cond = self.expr()?;
        self.expect_op(":")?;
        let body = self.block()?;
        self.loop_else()?;
        Ok(Stmt {
            kind: StmtKind::While { cond, body },
            span: start.to(self.prev_span()),
        })
    }

    fn loop_else(&mut self) -> PResult<()> {
        if self.at_kw("else") {
            return Err(self.unsupported(self.span(), "`else` after a loop"));
        }
        Ok(())
    }

    /// A `for` target: names, possibly in a tuple (`for i, j in …` is parsed, then refused by
    /// the checker).
    fn target_list(&mut self) -> PResult<Expr> {
        let first = self.bitor()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") && !self.at_kw("in") {
            items.push(self.bitor()?);
        }
        let span = items[0].span.to(self.prev_span());
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span,
        })
    }

    /// Simple statements separated by `;`, up to the end of the line.
    pub(super) fn simple_line(&mut self, out: &mut Vec<Stmt>) -> PResult<()> {
        loop {
            out.push(self.simple_stmt()?);
            if !self.eat_op(";") || matches!(self.tok(), Tok::Newline | Tok::Eof) {
                break;
            }
        }
        match self.tok() {
            Tok::Newline => {
                self.bump();
                Ok(())
            }
            Tok::Eof | Tok::Dedent => Ok(()),
            _ => Err(self.expected("the end of the statement")),
        }
    }

    fn simple_stmt(&mut self) -> PResult<Stmt> {
        let start = self.span();
        if let Tok::Kw(k) = self.tok() {
            if let Some((_, what)) = UNSUPPORTED_STMTS.iter().find(|(kw, _)| kw == k) {
                return Err(self.unsupported(start, what));
            }
            match *k {
                "pass" => {
                    self.bump();
                    return Ok(Stmt {
                        kind: StmtKind::Pass,
                        span: start,
                    });
                }
                "return" => {
                    self.bump();
                    let value = if matches!(self.tok(), Tok::Newline | Tok::Eof | Tok::Dedent)
                        || self.at_op(";")
                    {
                        None
                    } else {
                        Some(self.expr_list()?)
                    };
                    return Ok(Stmt {
                        kind: StmtKind::Return(value),
                        span: start.to(self.prev_span()),
                    });
                }
                "assert" => {
                    self.bump();
                    let cond = self.expr()?;
                    let msg = if self.eat_op(",") {
                        Some(self.expr()?)
                    } else {
                        None
                    };
                    return Ok(Stmt {
                        kind: StmtKind::Assert { cond, msg },
                        span: start.to(self.prev_span()),
                    });
                }
                _ => {}
            }
        }
        let first = self.expr_list()?;
        if self.at_op("=") {
            let mut targets = vec![first];
            let mut value;
            loop {
                self.bump();
                value = self.expr_list()?;
                if !self.at_op("=") {
                    break;
                }
                targets.push(value);
            }
            for t in &targets {
                self.check_target(t)?;
            }
            return Ok(Stmt {
                kind: StmtKind::Assign { targets, value },
                span: start.to(self.prev_span()),
            });
        }
        if let Tok::Op(o) = self.tok() {
            if let Some((_, op)) = AUG_OPS.iter().find(|(s, _)| s == o) {
                self.bump();
                let value = self.expr()?;
                self.check_target(&first)?;
                if matches!(first.kind, ExprKind::Tuple(_)) {
                    return Err(
                        self.error(first.span, "an augmented assignment needs a single name")
                    );
                }
                return Ok(Stmt {
                    kind: StmtKind::AugAssign {
                        target: first,
                        op: *op,
                        value,
                    },
                    span: start.to(self.prev_span()),
                });
            }
        }
        if self.at_op(":") {
            self.bump();
            let ann = self.expr()?;
            let value = if self.eat_op("=") {
                Some(self.expr_list()?)
            } else {
                None
            };
            self.check_target(&first)?;
            return Ok(Stmt {
                kind: StmtKind::AnnAssign {
                    target: first,
                    ann,
                    value,
                },
                span: start.to(self.prev_span()),
            });
        }
        Ok(Stmt {
            span: first.span,
            kind: StmtKind::Expr(first),
        })
    }

    /// Names, or tuples/lists of names, may be assigned to.
    fn check_target(&mut self, e: &Expr) -> PResult<()> {
        match &e.kind {
            ExprKind::Name(_) => Ok(()),
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for i in items {
                    self.check_target(i)?;
                }
                Ok(())
            }
            ExprKind::Subscript { .. } => Err(self.unsupported(
                e.span,
                "assignment to a subscript (tiles are values: build a new one, e.g. with `tl.where`)",
            )),
            ExprKind::Attr { .. } => Err(self.unsupported(e.span, "assignment to an attribute")),
            _ => Err(self.error(e.span, "cannot assign to this expression; expected a name")),
        }
    }
}

/// `tl.constexpr`, `triton.language.constexpr` or a bare `constexpr`.
pub(crate) fn is_constexpr_annotation(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(n) => n == "constexpr",
        ExprKind::Attr { attr, .. } => attr.name == "constexpr",
        ExprKind::Str(s) => s.ends_with("constexpr"),
        _ => false,
    }
}
