//! Parsing of calls, `f(a, b, axis=-1)`: the argument list is where most hand-written mistakes
//! sit (a missing argument, a stray comma, a keyword given twice), so its recovery rules live
//! here on their own: on a bad argument, skip to the next `,` or `)` of the same call.

use super::Parser;
use crate::expr::ast::{Call, Expr, ExprKind, Ident, KwArg};
use crate::expr::lexer::{Token, TokenKind};

impl Parser<'_> {
    pub(super) fn parse_call(&mut self, name: Token) -> Expr {
        let open = self.bump();
        let func = Ident {
            name: self.text(name).to_string(),
            span: name.span,
        };
        let mut call = Call {
            func,
            args: Vec::new(),
            kwargs: Vec::new(),
        };
        let mut end = open.span;
        let mut after_comma = false;
        loop {
            let t = self.peek();
            match t.kind {
                TokenKind::RParen => {
                    end = self.bump().span;
                    break;
                }
                TokenKind::Eof => {
                    let msg = if after_comma {
                        format!(
                            "expected an argument or `)` after `,` in the call to `{}`, found end \
                             of input",
                            call.func.name
                        )
                    } else {
                        format!(
                            "expected an argument or `)` to close the call to `{}`, found end \
                             of input",
                            call.func.name
                        )
                    };
                    self.error(t.span, msg);
                    break;
                }
                _ => {}
            }
            self.parse_argument(&mut call, after_comma);
            end = end.to(self.tokens[self.pos.saturating_sub(1)].span);
            let t = self.peek();
            match t.kind {
                TokenKind::Comma => {
                    self.bump();
                    after_comma = true;
                }
                TokenKind::RParen => {}
                TokenKind::Eof => {
                    let msg = format!(
                        "expected `,` or `)` after an argument of `{}`, found end of input",
                        call.func.name
                    );
                    self.error(t.span, msg);
                    break;
                }
                _ => {
                    let msg = format!(
                        "expected `,` or `)` after an argument of `{}`, found {}",
                        call.func.name,
                        self.describe(t)
                    );
                    self.error(t.span, msg);
                    self.skip_until_close(true);
                    // Resume at the `,` or `)` (or end) the skip stopped at.
                    if self.peek_kind() == TokenKind::Comma {
                        self.bump();
                        after_comma = true;
                    }
                }
            }
        }
        let span = name.span.to(end);
        Expr::new(ExprKind::Call(call), span)
    }

    /// Parses one positional or keyword argument into `call`.
    fn parse_argument(&mut self, call: &mut Call, after_comma: bool) {
        let t = self.peek();
        if t.kind == TokenKind::Ident && self.nth_kind(1) == TokenKind::Assign {
            self.bump();
            let assign = self.bump();
            let name = Ident {
                name: self.text(t).to_string(),
                span: t.span,
            };
            let value = self.parse_operand(0, assign);
            if call.kwargs.iter().any(|k| k.name.name == name.name) {
                self.error(
                    name.span,
                    format!(
                        "keyword argument `{}` is given twice in the call to `{}`",
                        name.name, call.func.name
                    ),
                );
            }
            call.kwargs.push(KwArg { name, value });
        } else if self.at_expr_start() {
            let arg = self.parse_expr(0);
            if let Some(kw) = call.kwargs.last() {
                let msg = format!(
                    "positional argument after keyword argument `{}`; positional arguments come \
                     first",
                    kw.name.name
                );
                self.error(arg.span, msg);
            }
            call.args.push(arg);
        } else {
            let msg = if after_comma {
                format!(
                    "expected an argument or `)` after `,`, found {}",
                    self.describe(t)
                )
            } else {
                format!("expected an argument or `)`, found {}", self.describe(t))
            };
            self.error(t.span, msg);
            self.skip_until_close(true);
        }
    }
}
