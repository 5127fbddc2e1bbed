//! Top-level statements other than `def` and `import`: the module's globals. A kernel may read
//! a global made with `tl.constexpr(...)` (and a few others, `check/globals.rs`), so
//! `NAME = value` and `NAME: ann = value` are parsed and kept. A statement kwb cannot parse
//! or would not run (host code in a `.py` module, an assignment inside a top-level `if`) still
//! records the names it binds as [`GlobalDef::Opaque`], so that a kernel reading one gets an
//! error rather than an older value.

use super::{Parser, Recover};
use crate::tile::ast::{ExprKind, Global, GlobalDef, Ident, Module, StmtKind};
use crate::tile::lex::Tok;
use crate::tile::parse::FileKind;

impl Parser<'_> {
    /// A top-level simple statement starting with a name (`X = 3`, `X: tl.constexpr = 3`,
    /// `foo(x)`): its assigned names become globals.
    pub(super) fn global_statement(&mut self, m: &mut Module) {
        let start = self.pos;
        let first = self.span();
        let n = self.errors.len();
        let mut stmts = Vec::new();
        match self.simple_line(&mut stmts) {
            Ok(()) => {
                for s in stmts {
                    let span = s.span;
                    match s.kind {
                        StmtKind::Assign { targets, value } => {
                            for t in &targets {
                                match &t.kind {
                                    ExprKind::Name(name) => m.globals.push(Global {
                                        name: Ident {
                                            name: name.clone(),
                                            span: t.span,
                                        },
                                        def: GlobalDef::Assign {
                                            value: value.clone(),
                                            constexpr_ann: false,
                                        },
                                        span,
                                    }),
                                    _ => opaque_names(t, span, m),
                                }
                            }
                        }
                        StmtKind::AnnAssign {
                            target,
                            ann,
                            value: Some(value),
                        } => match &target.kind {
                            ExprKind::Name(name) => m.globals.push(Global {
                                name: Ident {
                                    name: name.clone(),
                                    span: target.span,
                                },
                                def: GlobalDef::Assign {
                                    value,
                                    constexpr_ann: super::is_constexpr_annotation(&ann),
                                },
                                span,
                            }),
                            _ => opaque_names(&target, span, m),
                        },
                        StmtKind::AugAssign { target, .. } => opaque_names(&target, span, m),
                        StmtKind::Expr(_) if self.kind == FileKind::Tile => {
                            self.error(
                                span,
                                "expected a `@triton.jit` function, an import or an assignment at the top level of a .tile file, found an expression",
                            );
                        }
                        _ => {}
                    }
                }
                if self.kind == FileKind::Tile {
                    self.regions.push(first.to(self.prev_span()));
                }
            }
            Err(Recover) => {
                if self.kind == FileKind::Python {
                    self.errors.truncate(n);
                }
                self.pos = start;
                self.skip_statement();
                self.opaque_assignments(start, m);
            }
        }
    }

    /// The names a skipped top-level statement (from token `start` to here) may assign:
    /// each name written just before `=` outside brackets (not a keyword argument).
    pub(super) fn opaque_assignments(&mut self, start: usize, m: &mut Module) {
        let end = self.pos.min(self.toks.len());
        self.conditional_imports(start, end, m);
        let mut depth = 0i32;
        for w in self.toks[start..end].windows(2) {
            match &w[0].tok {
                Tok::Op("(" | "[" | "{") => depth += 1,
                Tok::Op(")" | "]" | "}") => depth -= 1,
                _ => {}
            }
            if depth != 0 {
                continue;
            }
            if let (Tok::Name(name), Tok::Op("=")) = (&w[0].tok, &w[1].tok) {
                m.globals.push(Global {
                    name: Ident {
                        name: name.clone(),
                        span: w[0].span,
                    },
                    def: GlobalDef::Opaque,
                    span: w[0].span,
                });
            }
        }
    }
}

impl Parser<'_> {
    /// The imports that start a line inside the top-level block `start..end` (already
    /// skipped), kept as conditional: `try: from a import f` / `except ...: from b import f`.
    fn conditional_imports(&mut self, start: usize, end: usize, m: &mut Module) {
        let (pos, errors) = (self.pos, self.errors.len());
        for i in start..end {
            let line_start = i == start
                || matches!(
                    self.toks[i - 1].tok,
                    Tok::Newline | Tok::Indent | Tok::Dedent | Tok::Op(":")
                );
            if !line_start || !matches!(self.toks[i].tok, Tok::Kw("import" | "from")) {
                continue;
            }
            self.pos = i;
            if let Ok(mut imp) = self.import() {
                imp.conditional = true;
                self.regions.push(imp.span);
                m.imports.push(imp);
            }
            self.errors.truncate(errors);
        }
        self.pos = pos;
    }
}

/// Every name in an assignment target kwb does not evaluate (`a, b = ...`, `x += 1`).
fn opaque_names(t: &crate::tile::ast::Expr, span: crate::tile::span::Span, m: &mut Module) {
    match &t.kind {
        ExprKind::Name(name) => m.globals.push(Global {
            name: Ident {
                name: name.clone(),
                span: t.span,
            },
            def: GlobalDef::Opaque,
            span,
        }),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            items.iter().for_each(|i| opaque_names(i, span, m))
        }
        _ => {}
    }
}
