//! The tile-language parser: tokens → [`ast::Module`](super::ast::Module), by recursive descent.
//!
//! A file is a list of top-level statements. `@triton.jit` (also `@jit`, `@kernel`,
//! `@triton.jit(...)`) functions are parsed in full, and so are imports (for aliases such as
//! `import triton.language as tl`). In a `.py` module everything else (host code, classes,
//! `if __name__ == "__main__":`) is skipped without a word, lexical errors included; in a
//! `.tile` file it is an error. Spans are byte offsets into the whole file, so lines and
//! columns stay true.
//!
//! Errors recover: a bad statement is reported and skipped up to the end of its line (and its
//! block), and parsing goes on, so one file yields all of its errors.

pub mod coverage;
mod expr;
mod globals;
mod stmt;

pub(crate) use stmt::is_constexpr_annotation;

use super::ast::{self, ExprKind, Import, Module};
use super::lex::{self, Tok, Token};
use super::span::Span;
use std::path::Path;

/// A syntax error: where, and what was found and expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub span: Span,
    pub message: String,
}

/// What surrounds the kernels: a `.tile` file holds only kernels and imports, a `.py` module
/// may hold anything else, which is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Tile,
    Python,
}

impl FileKind {
    pub fn of(path: &Path) -> FileKind {
        match path.extension().and_then(|e| e.to_str()) {
            Some("py") => FileKind::Python,
            _ => FileKind::Tile,
        }
    }
}

/// Parses a whole file: its kernels and imports, and every syntax error (lexical ones
/// included) in the parts that are parsed.
pub fn parse(source: &str, kind: FileKind) -> (Module, Vec<ParseError>) {
    let (toks, lex_errors) = lex::lex(source);
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        errors: Vec::new(),
        kind,
        regions: Vec::new(),
        nest: 0,
    };
    let mut module = p.module();
    if kind == FileKind::Python {
        // A top-level assignment of a `.py` module is host code until a kernel reads it: its
        // lexical errors are not reported, but kwb never reads a value it could not lex.
        for g in &mut module.globals {
            if (lex_errors.iter())
                .any(|e| e.span.start >= g.span.start && e.span.start < g.span.end)
            {
                g.def = ast::GlobalDef::Opaque;
            }
        }
    }
    let mut errors: Vec<ParseError> = lex_errors
        .into_iter()
        .filter(|e| {
            kind == FileKind::Tile
                || p.regions
                    .iter()
                    .any(|r| e.span.start >= r.start && e.span.start < r.end.max(r.start + 1))
        })
        .map(|e| ParseError {
            span: e.span,
            message: e.message,
        })
        .collect();
    errors.extend(p.errors);
    // The safety net: code inside a kernel's text that no statement holds is an error, never
    // silently dropped (coverage.rs).
    for f in module.funcs.iter().filter(|f| !f.has_errors) {
        if let Some(span) = coverage::uncovered(source, f) {
            errors.push(ParseError {
                span,
                message: format!(
                    "internal error: kwb's parser did not take this code into `{}`, so the kernel is not compiled rather than compiled without it; please report this with the file",
                    f.name.name
                ),
            });
        }
    }
    errors.sort_by_key(|e| (e.span.start, e.span.end));
    errors.dedup();
    (module, errors)
}

/// Recovery marker: the error is already recorded; the caller skips to a safe point.
pub(crate) struct Recover;

pub(crate) type PResult<T> = Result<T, Recover>;

pub(crate) struct Parser<'t> {
    toks: &'t [Token],
    pos: usize,
    errors: Vec<ParseError>,
    kind: FileKind,
    /// The spans that were parsed (kernels, imports): lexical errors count only there in `.py`.
    regions: Vec<Span>,
    /// How deeply expressions and blocks nest here: bounded so the recursion (here and in
    /// the checker) cannot overflow the stack.
    nest: u32,
}

/// The deepest nesting of expressions and blocks, and the longest chain of one operator.
pub(crate) const MAX_NEST: u32 = 100;
pub(crate) const MAX_CHAIN: usize = 200;

impl<'t> Parser<'t> {
    fn tok(&self) -> &'t Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn tok_at(&self, k: usize) -> &'t Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span
    }

    /// The span of the token just consumed.
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1).min(self.toks.len() - 1)].span
    }

    fn bump(&mut self) -> &'t Token {
        let t = &self.toks[self.pos.min(self.toks.len() - 1)];
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn at_op(&self, op: &str) -> bool {
        matches!(self.tok(), Tok::Op(o) if *o == op)
    }

    fn at_kw(&self, kw: &str) -> bool {
        matches!(self.tok(), Tok::Kw(k) if *k == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let yes = self.at_op(op);
        if yes {
            self.bump();
        }
        yes
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.at_kw(kw);
        if yes {
            self.bump();
        }
        yes
    }

    fn error(&mut self, span: Span, message: impl Into<String>) -> Recover {
        self.errors.push(ParseError {
            span,
            message: message.into(),
        });
        Recover
    }

    /// An error about the current token: "expected X, found Y".
    fn expected(&mut self, what: &str) -> Recover {
        let found = describe(self.tok());
        let span = self.span();
        self.error(span, format!("expected {what}, found {found}"))
    }

    fn expect_op(&mut self, op: &str) -> PResult<Span> {
        if self.at_op(op) {
            Ok(self.bump().span)
        } else {
            Err(self.expected(&format!("`{op}`")))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<ast::Ident> {
        match self.tok() {
            Tok::Name(n) => {
                let span = self.bump().span;
                Ok(ast::Ident {
                    name: n.clone(),
                    span,
                })
            }
            _ => Err(self.expected(what)),
        }
    }

    /// An "unsupported construct" error naming it.
    fn unsupported(&mut self, span: Span, what: &str) -> Recover {
        self.error(span, format!("unsupported construct: {what}"))
    }

    /// Skips the rest of the current logical line, and the indented block after it if any.
    fn skip_statement(&mut self) {
        loop {
            match self.tok() {
                Tok::Eof => return,
                Tok::Newline => {
                    self.bump();
                    break;
                }
                Tok::Dedent if self.pos > 0 => return,
                _ => {
                    self.bump();
                }
            }
        }
        if matches!(self.tok(), Tok::Indent) {
            self.skip_block();
        }
    }

    /// Skips from an INDENT to its matching DEDENT (both included).
    fn skip_block(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.tok() {
                Tok::Eof => return,
                Tok::Indent => depth += 1,
                Tok::Dedent => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn module(&mut self) -> Module {
        let mut m = Module::default();
        loop {
            let start = self.span();
            match self.tok() {
                Tok::Eof => break,
                Tok::Newline | Tok::Dedent => {
                    self.bump();
                }
                Tok::Indent => {
                    if self.kind == FileKind::Tile {
                        self.error(start, "unexpected indent at the top level");
                    }
                    self.skip_block();
                }
                Tok::Op("@") => self.decorated(&mut m),
                Tok::Kw("import") | Tok::Kw("from") => {
                    let n = self.errors.len();
                    match self.import() {
                        Ok(i) => {
                            self.regions.push(i.span);
                            m.imports.push(i);
                        }
                        Err(Recover) => {
                            if self.kind == FileKind::Python {
                                self.errors.truncate(n);
                            }
                            self.skip_statement();
                        }
                    }
                }
                Tok::Kw("def") if self.kind == FileKind::Tile => {
                    let name = match self.tok_at(1) {
                        Tok::Name(n) => format!("function `{n}`"),
                        _ => "this function".to_string(),
                    };
                    self.error(
                        start,
                        format!("{name} has no `@triton.jit` decorator; write `@triton.jit` on the line before the `def`"),
                    );
                    self.skip_statement();
                }
                Tok::Name(_) => self.global_statement(&mut m),
                Tok::Kw(
                    "if" | "elif" | "else" | "for" | "while" | "try" | "except" | "finally"
                    | "with",
                ) if self.kind == FileKind::Python => {
                    let from = self.pos;
                    self.skip_statement();
                    self.opaque_assignments(from, &mut m);
                }
                _ => {
                    if self.kind == FileKind::Tile {
                        self.error(
                            start,
                            format!(
                                "expected a `@triton.jit` function, an import or an assignment at the top level of a .tile file, found {}",
                                describe(self.tok())
                            ),
                        );
                    }
                    self.skip_statement();
                }
            }
        }
        m
    }

    /// `@decorator`s, then a `def`: parsed when one decorator makes it a kernel.
    fn decorated(&mut self, m: &mut Module) {
        let first = self.span();
        let n = self.errors.len();
        let mut decorators = Vec::new();
        while self.at_op("@") {
            self.bump();
            match self.expr() {
                Ok(e) => decorators.push(e),
                Err(Recover) => {
                    if self.kind == FileKind::Python {
                        self.errors.truncate(n);
                    }
                    self.skip_statement();
                    return;
                }
            }
            if !matches!(self.tok(), Tok::Newline) {
                let r = self.expected("the end of the decorator's line");
                let _ = r;
                if self.kind == FileKind::Python {
                    self.errors.truncate(n);
                }
                self.skip_statement();
                return;
            }
            self.bump();
        }
        let is_kernel = decorators.iter().any(is_jit_decorator);
        if !self.at_kw("def") || !is_kernel {
            if self.kind == FileKind::Tile {
                if !is_kernel {
                    self.error(
                        first,
                        "only `@triton.jit` functions may appear in a .tile file; this decorator is not `@triton.jit`",
                    );
                } else {
                    let _ = self.expected("`def` after `@triton.jit`");
                }
            }
            self.skip_statement();
            return;
        }
        let errors_before = self.errors.len();
        let func = self.funcdef(decorators, first);
        if let Some(mut f) = func {
            f.has_errors = self.errors.len() > errors_before;
            self.regions.push(first.to(f.span));
            m.funcs.push(f);
        }
    }

    /// `import a.b as c` or `from a.b import x as y, z`.
    fn import(&mut self) -> PResult<Import> {
        let start = self.span();
        let from = self.eat_kw("from");
        if !from {
            self.bump();
        }
        let mut level = 0;
        while from && (self.at_op(".") || self.at_op("...")) {
            level += if self.at_op(".") { 1 } else { 3 };
            self.bump();
        }
        let mut module = Vec::new();
        if level == 0 || !self.at_kw("import") {
            module.push(self.ident("a module name")?.name);
            while self.eat_op(".") {
                module.push(self.ident("a module name after `.`")?.name);
            }
        }
        let mut alias = None;
        let mut names = Vec::new();
        if from {
            if !self.eat_kw("import") {
                return Err(self.expected("`import`"));
            }
            let paren = self.eat_op("(");
            loop {
                let name = self.ident("a name to import")?.name;
                let a = if self.eat_kw("as") {
                    Some(self.ident("an alias after `as`")?.name)
                } else {
                    None
                };
                names.push((name, a));
                if !self.eat_op(",") {
                    break;
                }
                if paren && self.at_op(")") {
                    break;
                }
            }
            if paren {
                self.expect_op(")")?;
            }
        } else if self.eat_kw("as") {
            alias = Some(self.ident("an alias after `as`")?.name);
        }
        if !matches!(self.tok(), Tok::Newline | Tok::Eof) {
            return Err(self.expected("the end of the import"));
        }
        let span = start.to(self.prev_span());
        self.bump();
        Ok(Import {
            level,
            module,
            alias,
            names,
            from,
            span,
            conditional: false,
        })
    }
}

/// `@triton.jit`, `@jit`, `@kernel`, `@triton.jit(...)`, `@tl.jit`.
fn is_jit_decorator(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Name(n) => n == "jit" || n == "kernel",
        ExprKind::Attr { attr, .. } => attr.name == "jit",
        ExprKind::Call { func, .. } => is_jit_decorator(func),
        _ => false,
    }
}

/// A token, as an error message names it.
fn describe(t: &Tok) -> String {
    match t {
        Tok::Name(n) => format!("`{n}`"),
        Tok::Kw(k) => format!("`{k}`"),
        Tok::Int(v) => format!("`{v}`"),
        Tok::Float(v) => format!("`{v}`"),
        Tok::Str { .. } => "a string".to_string(),
        Tok::Op(o) => format!("`{o}`"),
        Tok::Newline => "the end of the line".to_string(),
        Tok::Indent => "an indent".to_string(),
        Tok::Dedent => "the end of the block".to_string(),
        Tok::Eof => "the end of the file".to_string(),
    }
}

/// A parsed kernel's functions, for tests: parses a `.tile` source and fails on any error.
#[cfg(test)]
pub(crate) fn parse_ok(src: &str) -> Module {
    let (m, errors) = parse(src, FileKind::Tile);
    assert!(errors.is_empty(), "{errors:?}");
    m
}

#[cfg(test)]
mod tests;
