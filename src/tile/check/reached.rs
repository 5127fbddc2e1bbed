//! The checker's half of the safety net (the parser's is `parse/coverage.rs`): every
//! statement of a kernel's body reaches the IR, or was left out for a reason the language
//! gives (the untaken branch of a constexpr `if`, a `tl.static_range` of no iterations, code
//! after a `return`). A statement that did neither is an internal error at its line, so a
//! checker bug can never drop code silently.

use super::emit::Ck;
use crate::diag::Severity;
use crate::tile::ast::{Stmt, StmtKind};
use crate::tile::span::Span;

/// What the checker did with each statement: those it checked (by span start), and the spans
/// of the statements it left out on purpose.
#[derive(Debug, Default)]
pub(super) struct Reached {
    checked: Vec<u32>,
    folded: Vec<Span>,
}

impl Reached {
    pub fn checked(&mut self, s: &Stmt) {
        self.checked.push(s.span.start);
    }

    /// Statements left out on purpose (none when `body` is empty).
    pub fn folded(&mut self, body: &[Stmt]) {
        if let (Some(first), Some(last)) = (body.first(), body.last()) {
            self.folded.push(first.span.to(last.span));
        }
    }

    /// The first statement of `body` (recursively) that was neither checked nor left out.
    pub fn missed<'s>(&mut self, body: &'s [Stmt]) -> Option<&'s Stmt> {
        self.checked.sort_unstable();
        self.find(body)
    }

    fn find<'s>(&self, body: &'s [Stmt]) -> Option<&'s Stmt> {
        for s in body {
            let inside_fold = self
                .folded
                .iter()
                .any(|f| f.start <= s.span.start && s.span.end <= f.end);
            if inside_fold {
                continue;
            }
            if self.checked.binary_search(&s.span.start).is_err() {
                return Some(s);
            }
            let missed = match &s.kind {
                StmtKind::If {
                    then, otherwise, ..
                } => self.find(then).or_else(|| self.find(otherwise)),
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => self.find(body),
                _ => None,
            };
            if missed.is_some() {
                return missed;
            }
        }
        None
    }
}

impl Ck<'_> {
    /// After the kernel's body is checked without errors: an internal error at the first
    /// statement that did not reach the IR without a reason.
    pub(super) fn every_statement_reached(&mut self, body: &[Stmt]) {
        if self.findings.iter().any(|f| f.severity == Severity::Error) {
            return;
        }
        let mut reached = std::mem::take(&mut self.reached);
        if let Some(s) = reached.missed(body) {
            self.error(
                s.span,
                "internal error: kwb's checker did not take this statement into the kernel, so the kernel is not compiled rather than compiled without it; please report this with the file",
            );
        }
    }
}
