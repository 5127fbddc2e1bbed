//! Source locations and the error type shared by the lexer, the parser and both evaluators.
//!
//! Every problem an expression can have is reported as an [`ExprError`] pointing at a byte range
//! of the expression text, so a workspace loader can turn it into a diagnostic and a person can
//! see exactly which part of `cdiv(N, 256) * M` is wrong ([`render_error`]).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::ops::Range;

/// A half-open byte range `start..end` into the expression source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: u32, end: u32) -> Self {
        Span { start, end }
    }

    /// The empty span at byte offset `at` (used for "found end of input").
    pub fn at(at: u32) -> Self {
        Span { start: at, end: at }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn len(self) -> u32 {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One problem in an expression: where it is and what is wrong, in words meant for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct ExprError {
    pub span: Span,
    pub message: String,
}

impl ExprError {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        ExprError {
            span,
            message: message.into(),
        }
    }
}

/// Renders `err` as plain text: the message, then the source line holding the error with `^`
/// marks under the offending span, e.g.
///
/// ```text
/// error: expected an expression after `+`, found `*`
///   | N + * 2
///   |     ^
/// ```
///
/// A span running past the end of its line is underlined to the end of that line; an empty span
/// (something missing) gets a single `^` where the missing piece belongs.
pub fn render_error(source: &str, err: &ExprError) -> String {
    let start = clamp_to_boundary(source, err.span.start as usize);
    let end = clamp_to_boundary(source, (err.span.end as usize).max(start));
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    let line = &source[line_start..line_end];
    let end = end.min(line_end);

    let mut out = format!("error: {}\n", err.message);
    if source.contains('\n') {
        let line_no = source[..line_start].matches('\n').count() + 1;
        let _ = writeln!(out, "  line {line_no}:");
    }
    // Tabs are shown as single spaces so columns line up with the underline.
    let shown: String = line
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let _ = writeln!(out, "  | {}", shown.trim_end());
    let pad = source[line_start..start].chars().count();
    let width = source[start..end].chars().count().max(1);
    let _ = write!(out, "  | {}{}", " ".repeat(pad), "^".repeat(width));
    out
}

/// Renders several errors of one source, separated by blank lines.
pub fn render_errors(source: &str, errs: &[ExprError]) -> String {
    errs.iter()
        .map(|e| render_error(source, e))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn clamp_to_boundary(source: &str, mut i: usize) -> usize {
    i = i.min(source.len());
    while !source.is_char_boundary(i) {
        i -= 1;
    }
    i
}
