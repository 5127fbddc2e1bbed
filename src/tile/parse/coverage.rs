//! The parser's safety net: every piece of code in a kernel's source text must be inside a
//! statement the parser built, or the kernel is not compiled.
//!
//! A lexer or parser bug that ends a function early (a stray DEDENT, a block closed too soon)
//! would otherwise drop the rest of the body without a word: in a `.py` module whatever
//! follows a kernel is host code that the parser skips. So the extent of each `def` is found
//! here a second time, straight from the text and by a different method (a scan of brackets,
//! strings, comments and indentation that shares no code with [`lex`](super::super::lex)),
//! and every byte of code in it must lie in the `def`'s header or in the span of one of its
//! statements. A byte that does not is reported as an internal error at its line: the kernel
//! then fails to compile instead of compiling without part of its body.

use crate::tile::ast::{FuncDef, Stmt, StmtKind};
use crate::tile::span::Span;

/// The first byte of code inside `f`'s text (found from the source alone) that no statement of
/// `f` covers, if any.
pub fn uncovered(source: &str, f: &FuncDef) -> Option<Span> {
    let b = source.as_bytes();
    let start = f.def_span.start as usize;
    if start >= b.len() {
        return None;
    }
    let mut covered: Vec<(usize, usize)> = Vec::new();
    // The header: decorators, `def`, the signature, up to the first statement.
    let header_end = f
        .body
        .first()
        .map_or(f.span.end as usize, |s| s.span.start as usize);
    covered.push((f.span.start as usize, header_end));
    collect(&f.body, &mut covered);
    covered.sort_unstable();
    // Merged into disjoint intervals, then walked with the code bytes (both ascending).
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in covered {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut i = 0;
    for at in code_bytes(b, start) {
        while i < merged.len() && merged[i].1 <= at {
            i += 1;
        }
        if i == merged.len() || merged[i].0 > at {
            return Some(Span::new(at, at + 1));
        }
    }
    None
}

fn collect(body: &[Stmt], out: &mut Vec<(usize, usize)>) {
    for s in body {
        out.push((s.span.start as usize, s.span.end as usize));
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect(then, out);
                collect(otherwise, out);
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => collect(body, out),
            _ => {}
        }
    }
}

/// The offsets of the code bytes of the `def` at `start`: every byte that is not blank, not a
/// comment, not a line-joining backslash and not a `;` between statements, from `start` up to
/// the first line after the `def`'s line that starts (outside brackets and strings) at the
/// `def`'s indentation or less.
fn code_bytes(b: &[u8], start: usize) -> Vec<usize> {
    let line_start = b[..start]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let indent = width(&b[line_start..start]);
    let mut out = Vec::new();
    let mut depth = 0u32;
    let mut pos = start;
    let mut first_line = true;
    // True at the start of a physical line that begins a logical line.
    let mut at_line_start = false;
    while pos < b.len() {
        if at_line_start {
            at_line_start = false;
            let mut p = pos;
            while p < b.len() && matches!(b[p], b' ' | b'\t' | b'\x0c' | b'\r') {
                p += 1;
            }
            let blank = p >= b.len() || matches!(b[p], b'\n' | b'#');
            if !blank && !first_line && width(&b[pos..p]) <= indent {
                break;
            }
            pos = p;
            continue;
        }
        match b[pos] {
            b'\n' => {
                pos += 1;
                if depth == 0 {
                    at_line_start = true;
                    first_line = false;
                }
            }
            b' ' | b'\t' | b'\x0c' | b'\r' | b';' => pos += 1,
            b'\\' => pos += 1, // outside a string: joins lines (a stray one is the lexer's error)
            b'#' => {
                while pos < b.len() && b[pos] != b'\n' {
                    pos += 1;
                }
            }
            b'"' | b'\'' => {
                let end = string_end(b, pos);
                out.extend(pos..end);
                pos = end;
            }
            c => {
                match c {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                out.push(pos);
                pos += 1;
            }
        }
    }
    out
}

/// Python's indentation width of a run of blanks (a tab goes to the next multiple of 8).
fn width(blanks: &[u8]) -> usize {
    blanks.iter().fold(0, |col, &c| match c {
        b' ' => col + 1,
        b'\t' => (col / 8 + 1) * 8,
        _ => col,
    })
}

/// The offset just past the string literal whose opening quote is at `pos` (a scan of its
/// own, not the lexer's; the tests' re-layout tool uses it too).
pub fn string_end(b: &[u8], pos: usize) -> usize {
    let q = b[pos];
    let triple = b.get(pos + 1) == Some(&q) && b.get(pos + 2) == Some(&q);
    let mut p = pos + if triple { 3 } else { 1 };
    while p < b.len() {
        match b[p] {
            b'\\' => p += 2,
            b'\n' if !triple => return p,
            c if c == q => {
                if !triple {
                    return p + 1;
                }
                if b.get(p + 1) == Some(&q) && b.get(p + 2) == Some(&q) {
                    return p + 3;
                }
                p += 1;
            }
            _ => p += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::parse::{parse, FileKind};

    /// The uncovered code of each function of a `.py` module, as (line, text of that line).
    fn gaps(src: &str) -> Vec<(usize, String)> {
        let (m, _) = parse(src, FileKind::Python);
        m.funcs
            .iter()
            .filter_map(|f| uncovered(src, f))
            .map(|s| {
                let line = src[..s.start as usize].matches('\n').count() + 1;
                (line, src.lines().nth(line - 1).unwrap_or("").to_string())
            })
            .collect()
    }

    #[test]
    fn a_whole_kernel_is_covered() {
        let src = "import triton\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    \"\"\"doc\n    # not a comment\"\"\"\n    offs = tl.arange(0, B)  # a comment\n    x = tl.load(x_ptr + offs,\n                mask=offs < n).to(tl.float32)\n    if n > 3:\n        x = x + 1; x = x * 2\n    else:\n        pass\n    tl.store(x_ptr + offs, x, \\\n             mask=offs < n)\n\ndef host():\n    return 1\n";
        assert_eq!(gaps(src), vec![]);
    }

    #[test]
    fn code_the_parser_did_not_take_is_found() {
        // A function whose statements stop early, as a lexer that ends the body at a
        // continuation line would leave it: the last statement is removed from the tree.
        let src = "@triton.jit\ndef k(x):\n    a = 1\n    b = 2\n";
        let (mut m, _) = parse(src, FileKind::Python);
        m.funcs[0].body.pop();
        let at = uncovered(src, &m.funcs[0]).expect("a gap");
        assert_eq!(&src[at.start as usize..at.end as usize], "b");
    }

    #[test]
    fn strings_and_brackets_do_not_end_the_extent() {
        let src = "@triton.jit\ndef k(x):\n    s = '''\nnot code at column 0\n'''\n    y = f(\nx)\n    z = 1\nw = 2\n";
        let (m, _) = parse(src, FileKind::Python);
        assert_eq!(uncovered(src, &m.funcs[0]), None);
        let bytes = code_bytes(src.as_bytes(), src.find("def").unwrap_or(0));
        let last = *bytes.last().unwrap_or(&0);
        assert_eq!(&src[last..last + 1], "1", "the extent ends before `w = 2`");
    }
}
