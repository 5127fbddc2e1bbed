//! Builds an [`Expr`] from tokens with precedence climbing, reporting every error it can find in
//! one pass.
//!
//! Workspace files are edited by hand, so a person fixing `cdiv(N, * 2) + $` should see all of
//! its problems at once. The parser therefore never stops at the first error: it records it,
//! substitutes a placeholder node, skips to a sensible resynchronisation point (the operand after
//! a stray operator, the next `,` or `)` of a call) and carries on. A placeholder never reaches a
//! caller: any recorded error turns the result into `Err`.

use super::ast::{prec, BinaryOp, Expr, ExprKind, UnaryOp};
use super::error::{ExprError, Span};
use super::lexer::{tokenize, Token, TokenKind};

mod call;

/// Expressions nesting deeper than this are refused, keeping recursion in the parser and in
/// the evaluators far from the stack's limit.
pub const MAX_DEPTH: usize = 200;

/// Longer token streams are refused before parsing (real expressions have a few dozen).
const MAX_TOKENS: usize = 20_000;

/// Parses one expression; on failure returns every error found, in source order.
pub fn parse(source: &str) -> Result<Expr, Vec<ExprError>> {
    let (tokens, mut errors) = tokenize(source);
    if tokens.len() > MAX_TOKENS {
        let end = u32::try_from(source.len()).unwrap_or(u32::MAX);
        return Err(vec![ExprError::new(
            Span::new(0, end),
            format!(
                "expression is too long ({} tokens; at most {MAX_TOKENS} are allowed)",
                tokens.len()
            ),
        )]);
    }
    let mut p = Parser {
        src: source,
        tokens,
        pos: 0,
        errors: Vec::new(),
        depth: 0,
        gave_up: false,
    };
    let expr = p.parse_top();
    errors.append(&mut p.errors);
    if errors.is_empty() && expr.depth() > MAX_DEPTH {
        errors.push(ExprError::new(
            expr.span,
            format!("expression nests too deeply (more than {MAX_DEPTH} levels)"),
        ));
    }
    if errors.is_empty() {
        Ok(expr)
    } else {
        errors.sort_by_key(|e| (e.span.start, e.span.end));
        errors.dedup();
        Err(errors)
    }
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    errors: Vec<ExprError>,
    /// Current recursion depth of `parse_expr`.
    depth: usize,
    /// Set when nesting went too deep: the rest is skipped and no more errors are reported.
    gave_up: bool,
}

/// Binding powers of an infix operator: `(left, right)`; higher binds tighter.
fn infix(kind: TokenKind) -> Option<(BinaryOp, u8, u8)> {
    use TokenKind as T;
    let op = match kind {
        T::OrOr => BinaryOp::Or,
        T::AndAnd => BinaryOp::And,
        T::Lt => BinaryOp::Lt,
        T::Le => BinaryOp::Le,
        T::Gt => BinaryOp::Gt,
        T::Ge => BinaryOp::Ge,
        T::EqEq => BinaryOp::Eq,
        T::NotEq => BinaryOp::Ne,
        T::Plus => BinaryOp::Add,
        T::Minus => BinaryOp::Sub,
        T::Star => BinaryOp::Mul,
        T::Slash => BinaryOp::Div,
        T::SlashSlash => BinaryOp::FloorDiv,
        T::Percent => BinaryOp::Rem,
        T::StarStar => BinaryOp::Pow,
        _ => return None,
    };
    let p = op.precedence() * 2;
    Some(match op {
        // Right-associative, and its right side may start with a unary minus: `2**-1`.
        BinaryOp::Pow => (op, p, prec::UNARY * 2),
        _ => (op, p, p + 1),
    })
}

/// Operand binding power of prefix `-` and `!`: their operand may contain `**` but nothing
/// looser, so `-2**2` is `-(2**2)` and `-x * y` is `(-x) * y`.
const PREFIX_BP: u8 = prec::UNARY * 2;

/// Tokens that can only sit between two operands; met where an operand should be, they are
/// skipped so the operand after them is still parsed.
fn is_stray_operator(kind: TokenKind) -> bool {
    infix(kind).is_some() || kind == TokenKind::Assign
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        self.tokens[self.pos]
    }

    fn peek_kind(&self) -> TokenKind {
        self.tokens[self.pos].kind
    }

    fn nth_kind(&self, n: usize) -> TokenKind {
        self.tokens
            .get(self.pos + n)
            .map_or(TokenKind::Eof, |t| t.kind)
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos];
        if t.kind != TokenKind::Eof {
            self.pos += 1;
        }
        t
    }

    fn text(&self, t: Token) -> &str {
        &self.src[t.span.range()]
    }

    /// How a found token is named in "found ..." messages.
    fn describe(&self, t: Token) -> String {
        match t.kind {
            TokenKind::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.text(t)),
        }
    }

    /// Records an error, unless parsing gave up or the previous error is at the same place
    /// (a second complaint there is a consequence of the first: `((` lacks an operand, and so
    /// also its `)`).
    fn error(&mut self, span: Span, message: String) {
        if !self.gave_up && self.errors.last().map(|e| e.span) != Some(span) {
            self.errors.push(ExprError::new(span, message));
        }
    }

    /// A stand-in for a part that could not be parsed; only ever built next to a recorded
    /// error, so it never escapes [`parse`].
    fn placeholder(span: Span) -> Expr {
        Expr::new(ExprKind::Int(0), span)
    }

    fn at_expr_start(&self) -> bool {
        use TokenKind as T;
        matches!(
            self.peek_kind(),
            T::Int(_)
                | T::Float(_)
                | T::BadNumber
                | T::Ident
                | T::True
                | T::False
                | T::LParen
                | T::Minus
                | T::Bang
                | T::Unknown
        )
    }

    fn parse_top(&mut self) -> Expr {
        let expr = if self.at_expr_start() {
            self.parse_expr(0)
        } else {
            self.missing_operand(None, 0)
        };
        while self.peek_kind() != TokenKind::Eof {
            let t = self.peek();
            match t.kind {
                TokenKind::RParen => {
                    self.error(t.span, "unmatched `)`".into());
                    self.bump();
                    // Carry on as if it were not there: `N ) + 1` has one error.
                    self.parse_infix(Self::placeholder(t.span), 0);
                }
                TokenKind::Comma | TokenKind::Assign => {
                    let msg = if t.kind == TokenKind::Comma {
                        "unexpected `,`: commas only separate the arguments of a call"
                    } else {
                        "unexpected `=`: use `==` to compare; `name=value` is only for keyword \
                         arguments of a call"
                    };
                    self.error(t.span, msg.into());
                    self.bump();
                    // What follows is most likely meant as an operand: check it quietly.
                    if self.at_expr_start() {
                        self.parse_expr(0);
                    }
                }
                _ => {
                    let msg = format!(
                        "expected an operator or end of input, found {}",
                        self.describe(t)
                    );
                    self.error(t.span, msg);
                    if self.at_expr_start() {
                        // Parse the rest only to report the errors inside it.
                        self.parse_expr(0);
                    } else {
                        self.bump();
                    }
                }
            }
        }
        expr
    }

    fn parse_expr(&mut self, min_bp: u8) -> Expr {
        if self.depth >= MAX_DEPTH {
            let t = self.peek();
            self.error(
                t.span,
                format!("expression nests too deeply (more than {MAX_DEPTH} levels)"),
            );
            // Give up on the rest: nothing sensible can be resynchronised inside it.
            self.gave_up = true;
            self.pos = self.tokens.len() - 1;
            return Self::placeholder(t.span);
        }
        self.depth += 1;
        let expr = self.parse_expr_inner(min_bp);
        self.depth -= 1;
        expr
    }

    fn parse_expr_inner(&mut self, min_bp: u8) -> Expr {
        let lhs = self.parse_prefix();
        self.parse_infix(lhs, min_bp)
    }

    /// Extends `lhs` with the infix operators that follow, as long as they bind at least as
    /// tightly as `min_bp`.
    fn parse_infix(&mut self, mut lhs: Expr, min_bp: u8) -> Expr {
        let mut lhs_is_comparison = false;
        loop {
            let t = self.peek();
            if t.kind == TokenKind::Unknown && min_bp <= prec::ADD * 2 {
                // An unknown character between two operands (`3 $ 4`): already reported by the
                // lexer; treat it as some operator so the right side is still checked.
                self.bump();
                let rhs = self.parse_operand(prec::ADD * 2 + 1, t);
                lhs = Self::placeholder(lhs.span.to(rhs.span));
                continue;
            }
            let Some((op, lbp, rbp)) = infix(t.kind) else {
                break;
            };
            if lbp < min_bp {
                break;
            }
            self.bump();
            if op.is_comparison() && lhs_is_comparison {
                self.error(
                    t.span,
                    format!(
                        "comparisons cannot be chained: write `a < b && b < c`, or add \
                         parentheses, instead of a second `{}`",
                        op.symbol()
                    ),
                );
            }
            let rhs = self.parse_operand(rbp, t);
            let span = lhs.span.to(rhs.span);
            lhs = Expr::new(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            );
            lhs_is_comparison = op.is_comparison();
        }
        lhs
    }

    /// Parses the operand that must follow operator token `after`.
    fn parse_operand(&mut self, bp: u8, after: Token) -> Expr {
        if self.at_expr_start() {
            self.parse_expr(bp)
        } else {
            self.missing_operand(Some(after), bp)
        }
    }

    /// Reports a missing operand and recovers: a stray operator in its place is skipped and the
    /// operand after it parsed (`N + * 2`); anything else is left for the caller.
    fn missing_operand(&mut self, after: Option<Token>, bp: u8) -> Expr {
        let found = self.peek();
        // After an unknown character the lexer has said all there is to say.
        if after.map(|t| t.kind) != Some(TokenKind::Unknown) {
            let msg = match after {
                Some(op) => format!(
                    "expected an expression after `{}`, found {}",
                    self.text(op),
                    self.describe(found)
                ),
                None => format!("expected an expression, found {}", self.describe(found)),
            };
            self.error(found.span, msg);
        }
        if is_stray_operator(found.kind) {
            self.bump();
            if self.at_expr_start() {
                let operand = self.parse_expr(bp);
                return Self::placeholder(found.span.to(operand.span));
            }
        }
        Self::placeholder(found.span)
    }

    fn parse_prefix(&mut self) -> Expr {
        let t = self.bump();
        let kind = match t.kind {
            TokenKind::Int(v) => ExprKind::Int(v),
            TokenKind::Float(v) => ExprKind::Float(v),
            TokenKind::True => ExprKind::Bool(true),
            TokenKind::False => ExprKind::Bool(false),
            // Reported by the lexer.
            TokenKind::BadNumber => return Self::placeholder(t.span),
            TokenKind::Ident if self.peek_kind() == TokenKind::LParen => {
                return self.parse_call(t);
            }
            TokenKind::Ident => ExprKind::Var(self.text(t).to_string()),
            TokenKind::LParen => return self.parse_paren(t),
            TokenKind::Minus | TokenKind::Bang => {
                let op = if t.kind == TokenKind::Minus {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Not
                };
                let operand = self.parse_operand(PREFIX_BP, t);
                let span = t.span.to(operand.span);
                let operand = Box::new(operand);
                return Expr::new(ExprKind::Unary { op, operand }, span);
            }
            TokenKind::Unknown => {
                // Reported by the lexer; check what follows it, if it is an operand.
                let span = if self.at_expr_start() {
                    t.span.to(self.parse_expr(PREFIX_BP).span)
                } else {
                    t.span
                };
                return Self::placeholder(span);
            }
            _ => {
                // Callers check `at_expr_start` first; undo and report just in case.
                self.pos -= usize::from(t.kind != TokenKind::Eof);
                return self.missing_operand(None, 0);
            }
        };
        Expr::new(kind, t.span)
    }

    fn parse_paren(&mut self, open: Token) -> Expr {
        let mut inner = if self.at_expr_start() {
            self.parse_expr(0)
        } else {
            self.missing_operand(Some(open), 0)
        };
        let close = self.expect_close(open, "`)` to close this `(`");
        inner.span = open.span.to(close);
        inner
    }

    /// Expects the `)` matching `open`; on a mismatch reports it and skips to that `)` (or the
    /// end). Returns the span up to where parsing stopped.
    fn expect_close(&mut self, open: Token, what: &str) -> Span {
        let t = self.peek();
        if t.kind == TokenKind::RParen {
            return self.bump().span;
        }
        let msg = if t.kind == TokenKind::Eof {
            format!("expected {what}, found end of input")
        } else {
            format!("expected an operator or {what}, found {}", self.describe(t))
        };
        self.error(t.span, msg);
        let end = self.skip_until_close(false);
        open.span.to(end)
    }

    /// Skips tokens up to the `)` closing the current level (consumed) or, with `stop_at_comma`,
    /// up to a `,` of this level (not consumed). Returns the span of the last token passed.
    fn skip_until_close(&mut self, stop_at_comma: bool) -> Span {
        let mut depth = 0usize;
        let mut last = self.peek().span;
        loop {
            let t = self.peek();
            match t.kind {
                TokenKind::Eof => return last,
                TokenKind::Comma if depth == 0 && stop_at_comma => return last,
                TokenKind::RParen if depth == 0 => {
                    if !stop_at_comma {
                        self.bump();
                        return t.span;
                    }
                    return last;
                }
                TokenKind::RParen => depth -= 1,
                TokenKind::LParen => depth += 1,
                _ => {}
            }
            last = self.bump().span;
        }
    }
}
