//! Expressions, by Python's precedence (loosest first): `x if c else y`, `or`, `and`, `not`,
//! comparisons, `|`, `^`, `&`, shifts, `+ -`, `* / // % @`, unary `- + ~`, `**`, then calls,
//! attributes and subscripts on atoms. Python syntax the tile language lacks (lambdas,
//! comprehensions, f-strings, dicts, slices with bounds, `*args`) is an "unsupported construct".

use super::{PResult, Parser, MAX_CHAIN, MAX_NEST};
use crate::tile::ast::{BinaryOp, BoolOp, CmpOp, Expr, ExprKind, Ident, Index, Keyword, UnaryOp};
use crate::tile::lex::Tok;
use crate::tile::span::Span;

fn boxed(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Parser<'_> {
    /// A comma-separated list: a tuple when there is a comma (`return a, b`, `a, b = …`).
    pub(super) fn expr_list(&mut self) -> PResult<Expr> {
        let first = self.expr()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if matches!(self.tok(), Tok::Newline | Tok::Eof) || self.at_op("=") || self.at_op(")") {
                break;
            }
            items.push(self.expr()?);
        }
        let span = items[0].span.to(self.prev_span());
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span,
        })
    }

    /// One expression (`test` in Python's grammar).
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        if self.nest > MAX_NEST {
            return Err(self.error(self.span(), "this expression is nested too deeply"));
        }
        self.nest += 1;
        let e = self.expr_inner();
        self.nest -= 1;
        e
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        if self.at_kw("lambda") {
            return Err(self.unsupported(self.span(), "`lambda`"));
        }
        if self.at_kw("yield") || self.at_kw("await") {
            return Err(self.unsupported(self.span(), "`yield` and `await`"));
        }
        let then = self.or_test()?;
        if self.at_op(":=") {
            return Err(self.unsupported(self.span(), "assignment expressions (`:=`)"));
        }
        if !self.eat_kw("if") {
            return Ok(then);
        }
        let cond = self.or_test()?;
        if !self.eat_kw("else") {
            return Err(self.expected("`else` in a conditional expression"));
        }
        let otherwise = self.expr()?;
        let span = then.span.to(otherwise.span);
        Ok(Expr {
            kind: ExprKind::IfExp {
                cond: boxed(cond),
                then: boxed(then),
                otherwise: boxed(otherwise),
            },
            span,
        })
    }

    fn or_test(&mut self) -> PResult<Expr> {
        self.bool_chain("or", BoolOp::Or, Self::and_test)
    }

    fn and_test(&mut self) -> PResult<Expr> {
        self.bool_chain("and", BoolOp::And, Self::not_test)
    }

    /// `next (kw next)*`, left-associative.
    fn bool_chain(
        &mut self,
        kw: &str,
        op: BoolOp,
        next: fn(&mut Self) -> PResult<Expr>,
    ) -> PResult<Expr> {
        let mut lhs = next(self)?;
        let mut chain = 0usize;
        while self.eat_kw(kw) {
            self.chain_link(&mut chain)?;
            let rhs = next(self)?;
            lhs = bool_op(op, lhs, rhs);
        }
        Ok(lhs)
    }

    /// Counts one more link of a chain of operators or postfixes: too many is an error, which
    /// keeps later recursive stages (checker, writer) from overflowing their stacks.
    fn chain_link(&mut self, chain: &mut usize) -> PResult<()> {
        *chain += 1;
        if *chain > MAX_CHAIN {
            return Err(self.error(
                self.span(),
                "this expression is too long; split it over several statements",
            ));
        }
        Ok(())
    }

    fn not_test(&mut self) -> PResult<Expr> {
        if self.at_kw("not") {
            let start = self.bump().span;
            if self.nest > MAX_NEST {
                return Err(self.error(start, "this expression is nested too deeply"));
            }
            self.nest += 1;
            let operand = self.not_test();
            self.nest -= 1;
            let operand = operand?;
            let span = start.to(operand.span);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op: UnaryOp::Not,
                    operand: boxed(operand),
                },
                span,
            });
        }
        self.comparison()
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let first = self.bitor()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.tok() {
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::Ne,
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::Le,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::Ge,
                Tok::Kw("is") => {
                    if matches!(self.tok_at(1), Tok::Kw("not")) {
                        self.bump();
                        CmpOp::IsNot
                    } else {
                        CmpOp::Is
                    }
                }
                Tok::Kw("in") => return Err(self.unsupported(self.span(), "`in` tests")),
                Tok::Kw("not") if matches!(self.tok_at(1), Tok::Kw("in")) => {
                    return Err(self.unsupported(self.span(), "`not in` tests"))
                }
                _ => break,
            };
            self.bump();
            rest.push((op, self.bitor()?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let span = first
            .span
            .to(rest.last().map_or(first.span, |(_, e)| e.span));
        Ok(Expr {
            kind: ExprKind::Compare {
                first: boxed(first),
                rest,
            },
            span,
        })
    }

    pub(super) fn bitor(&mut self) -> PResult<Expr> {
        self.binary_level(0)
    }

    /// The binary operators from `|` (level 0) to `* / // % @` (level 5), left-associative.
    fn binary_level(&mut self, level: usize) -> PResult<Expr> {
        const LEVELS: &[&[(&str, BinaryOp)]] = &[
            &[("|", BinaryOp::BitOr)],
            &[("^", BinaryOp::BitXor)],
            &[("&", BinaryOp::BitAnd)],
            &[("<<", BinaryOp::Shl), (">>", BinaryOp::Shr)],
            &[("+", BinaryOp::Add), ("-", BinaryOp::Sub)],
            &[
                ("*", BinaryOp::Mul),
                ("/", BinaryOp::Div),
                ("//", BinaryOp::FloorDiv),
                ("%", BinaryOp::Mod),
                ("@", BinaryOp::MatMul),
            ],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.unary();
        };
        let mut lhs = self.binary_level(level + 1)?;
        let mut chain = 0usize;
        loop {
            self.chain_link(&mut chain)?;
            let op = match self.tok() {
                Tok::Op(o) => ops.iter().find(|(s, _)| s == o).map(|(_, op)| *op),
                _ => None,
            };
            let Some(op) = op else { break };
            self.bump();
            let rhs = self.binary_level(level + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: boxed(lhs),
                    rhs: boxed(rhs),
                },
                span,
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.tok() {
            Tok::Op("-") => Some(UnaryOp::Neg),
            Tok::Op("+") => Some(UnaryOp::Pos),
            Tok::Op("~") => Some(UnaryOp::Invert),
            _ => None,
        };
        let Some(op) = op else {
            return self.power();
        };
        let start = self.bump().span;
        if self.nest > MAX_NEST {
            return Err(self.error(start, "this expression is nested too deeply"));
        }
        self.nest += 1;
        let operand = self.unary();
        self.nest -= 1;
        let operand = operand?;
        let span = start.to(operand.span);
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: boxed(operand),
            },
            span,
        })
    }

    /// `a ** b`: binds tighter than a unary minus on its left, looser on its right.
    fn power(&mut self) -> PResult<Expr> {
        let base = self.primary()?;
        if !self.eat_op("**") {
            return Ok(base);
        }
        if self.nest > MAX_NEST {
            return Err(self.error(self.prev_span(), "this expression is nested too deeply"));
        }
        self.nest += 1;
        let exp = self.unary();
        self.nest -= 1;
        let exp = exp?;
        let span = base.span.to(exp.span);
        Ok(Expr {
            kind: ExprKind::Binary {
                op: BinaryOp::Pow,
                lhs: boxed(base),
                rhs: boxed(exp),
            },
            span,
        })
    }

    /// An atom followed by calls, attributes and subscripts.
    fn primary(&mut self) -> PResult<Expr> {
        let mut e = self.atom()?;
        let mut chain = 0usize;
        loop {
            self.chain_link(&mut chain)?;
            if self.eat_op(".") {
                let attr = self.ident("an attribute name after `.`")?;
                let span = e.span.to(attr.span);
                e = Expr {
                    kind: ExprKind::Attr {
                        value: boxed(e),
                        attr,
                    },
                    span,
                };
            } else if self.at_op("(") {
                self.bump();
                let (args, kwargs) = self.call_args()?;
                let span = e.span.to(self.prev_span());
                e = Expr {
                    kind: ExprKind::Call {
                        func: boxed(e),
                        args,
                        kwargs,
                    },
                    span,
                };
            } else if self.at_op("[") {
                self.bump();
                let index = self.subscript()?;
                let span = e.span.to(self.prev_span());
                e = Expr {
                    kind: ExprKind::Subscript {
                        value: boxed(e),
                        index,
                    },
                    span,
                };
            } else {
                return Ok(e);
            }
        }
    }

    /// Arguments after `(`, up to and including `)`.
    fn call_args(&mut self) -> PResult<(Vec<Expr>, Vec<Keyword>)> {
        let mut args = Vec::new();
        let mut kwargs: Vec<Keyword> = Vec::new();
        while !self.at_op(")") {
            if self.at_op("*") || self.at_op("**") {
                return Err(self.unsupported(self.span(), "`*args` and `**kwargs` in a call"));
            }
            if let (Tok::Name(n), Tok::Op("=")) = (self.tok(), self.tok_at(1)) {
                let name = Ident {
                    name: n.clone(),
                    span: self.bump().span,
                };
                self.bump();
                let value = self.expr()?;
                kwargs.push(Keyword { name, value });
            } else {
                let e = self.expr()?;
                if self.at_kw("for") {
                    return Err(self.unsupported(self.span(), "generator expressions"));
                }
                if let Some(k) = kwargs.first() {
                    let span = e.span;
                    let _ = k;
                    return Err(self.error(
                        span,
                        "a positional argument cannot follow a keyword argument",
                    ));
                }
                args.push(e);
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        Ok((args, kwargs))
    }

    /// The elements of `[...]` after `[`, up to and including `]`.
    fn subscript(&mut self) -> PResult<Vec<Index>> {
        let mut out = Vec::new();
        loop {
            if self.at_op(":") {
                let span = self.bump().span;
                if !self.at_op(",") && !self.at_op("]") {
                    return Err(self.unsupported(
                        span,
                        "slices with bounds or steps (only a bare `:` is allowed)",
                    ));
                }
                out.push(Index::Full(span));
            } else if self.at_op("...") {
                return Err(self.unsupported(self.span(), "`...` in a subscript"));
            } else {
                let e = self.expr()?;
                if self.at_op(":") {
                    return Err(self.unsupported(
                        self.span(),
                        "slices with bounds or steps (only a bare `:` is allowed)",
                    ));
                }
                out.push(Index::Expr(e));
            }
            if !self.eat_op(",") || self.at_op("]") {
                break;
            }
        }
        self.expect_op("]")?;
        Ok(out)
    }

    fn atom(&mut self) -> PResult<Expr> {
        let span = self.span();
        let lit = |kind| Ok(Expr { kind, span });
        match self.tok() {
            Tok::Name(n) => {
                self.bump();
                lit(ExprKind::Name(n.clone()))
            }
            Tok::Int(v) => {
                self.bump();
                lit(ExprKind::Int(*v))
            }
            Tok::Float(v) => {
                self.bump();
                lit(ExprKind::Float(*v))
            }
            Tok::Kw("True") => {
                self.bump();
                lit(ExprKind::Bool(true))
            }
            Tok::Kw("False") => {
                self.bump();
                lit(ExprKind::Bool(false))
            }
            Tok::Kw("None") => {
                self.bump();
                lit(ExprKind::None)
            }
            Tok::Str { .. } => self.strings(),
            Tok::Op("(") => self.paren(),
            Tok::Op("[") => self.list(),
            Tok::Op("{") => Err(self.unsupported(span, "dict and set literals")),
            Tok::Op("...") => Err(self.unsupported(span, "`...` (Ellipsis)")),
            Tok::Kw("lambda") => Err(self.unsupported(span, "`lambda`")),
            Tok::Kw("yield") | Tok::Kw("await") => {
                Err(self.unsupported(span, "`yield` and `await`"))
            }
            Tok::Op("*") => Err(self.unsupported(span, "starred expressions (`*x`)")),
            _ => Err(self.expected("an expression")),
        }
    }

    /// Adjacent string literals concatenate; an f-string is unsupported.
    fn strings(&mut self) -> PResult<Expr> {
        let start = self.span();
        let mut s = String::new();
        while let Tok::Str { value, fstring } = self.tok() {
            if *fstring {
                return Err(self.unsupported(self.span(), "f-strings"));
            }
            s.push_str(value);
            self.bump();
        }
        Ok(Expr {
            kind: ExprKind::Str(s),
            span: start.to(self.prev_span()),
        })
    }

    /// `( … )`: a parenthesised expression or a tuple.
    fn paren(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let mut items = Vec::new();
        let mut comma = false;
        while !self.at_op(")") {
            items.push(self.expr()?);
            if self.at_kw("for") {
                return Err(self.unsupported(self.span(), "generator expressions"));
            }
            if !self.eat_op(",") {
                break;
            }
            comma = true;
        }
        self.expect_op(")")?;
        let span = start.to(self.prev_span());
        if items.len() == 1 && !comma {
            if let Some(mut e) = items.pop() {
                e.span = span;
                return Ok(e);
            }
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span,
        })
    }

    /// `[a, b]`: a list (shape literals).
    fn list(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let mut items = Vec::new();
        while !self.at_op("]") {
            items.push(self.expr()?);
            if self.at_kw("for") {
                return Err(self.unsupported(self.span(), "list comprehensions"));
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op("]")?;
        Ok(Expr {
            kind: ExprKind::List(items),
            span: start.to(self.prev_span()),
        })
    }
}

fn bool_op(op: BoolOp, lhs: Expr, rhs: Expr) -> Expr {
    let span: Span = lhs.span.to(rhs.span);
    Expr {
        kind: ExprKind::Logic {
            op,
            lhs: boxed(lhs),
            rhs: boxed(rhs),
        },
        span,
    }
}
