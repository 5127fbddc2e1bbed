//! Tokens of the tile language: Python's token rules, as far as the tile language (and the host
//! code around `@triton.jit` functions in a `.py` module, which the parser skips) needs them.
//!
//! Indentation becomes [`Tok::Indent`]/[`Tok::Dedent`], the end of a logical line
//! [`Tok::Newline`]; lines join implicitly inside brackets and explicitly after a backslash.
//! A bad character is reported and skipped, so one pass finds every lexical error.

use super::span::Span;

/// One token's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Name(String),
    /// A keyword (`def`, `if`, `and`, `True`, …).
    Kw(&'static str),
    Int(i64),
    Float(f64),
    /// A string literal's value; `fstring` when it had an `f` prefix (unsupported).
    Str {
        value: String,
        fstring: bool,
    },
    /// An operator or delimiter (`+`, `//=`, `(`, `->`, …).
    Op(&'static str),
    Newline,
    Indent,
    Dedent,
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// A lexical error: what was found and where.
#[derive(Debug, Clone, PartialEq)]
pub struct LexError {
    pub span: Span,
    pub message: String,
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Operators, longest first so the first match is the longest.
const OPS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "->", "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "+=",
    "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ":=", "+", "-", "*", "/", "%", "@", "&", "|",
    "^", "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=",
];

/// Splits `src` into tokens (always ending with [`Tok::Eof`]) and every lexical error.
pub fn lex(src: &str) -> (Vec<Token>, Vec<LexError>) {
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        pos: 0,
        depth: 0,
        indents: vec![0],
        toks: Vec::new(),
        errors: Vec::new(),
    };
    lx.run();
    (lx.toks, lx.errors)
}

struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: u32,
    indents: Vec<usize>,
    toks: Vec<Token>,
    errors: Vec<LexError>,
}

impl Lexer<'_> {
    fn push(&mut self, tok: Tok, start: usize, end: usize) {
        self.toks.push(Token {
            tok,
            span: Span::new(start, end),
        });
    }

    fn error(&mut self, start: usize, end: usize, message: impl Into<String>) {
        self.errors.push(LexError {
            span: Span::new(start, end),
            message: message.into(),
        });
    }

    fn peek(&self, k: usize) -> u8 {
        self.b.get(self.pos + k).copied().unwrap_or(0)
    }

    fn logical_line_open(&self) -> bool {
        !matches!(
            self.toks.last().map(|t| &t.tok),
            None | Some(Tok::Newline) | Some(Tok::Indent) | Some(Tok::Dedent)
        )
    }

    fn run(&mut self) {
        let mut line_start = true;
        while self.pos < self.b.len() {
            if line_start && self.depth == 0 {
                line_start = false;
                if self.indentation() {
                    continue;
                }
            }
            let Some(&c) = self.b.get(self.pos) else {
                break;
            };
            match c {
                b'\n' => {
                    if self.depth == 0 && self.logical_line_open() {
                        self.push(Tok::Newline, self.pos, self.pos + 1);
                    }
                    self.pos += 1;
                    // A newline inside brackets joins lines: the next line's leading blanks
                    // are not indentation, and neither is whatever follows the closing
                    // bracket (`x = f(a,\n b).to(t)`).
                    line_start = self.depth == 0;
                }
                b' ' | b'\t' | b'\r' | b'\x0c' => self.pos += 1,
                b'#' => self.skip_comment(),
                b'\\' => {
                    let rest = &self.b[self.pos + 1..];
                    let skip = if rest.starts_with(b"\r\n") {
                        3
                    } else if rest.starts_with(b"\n") {
                        2
                    } else {
                        0
                    };
                    if skip == 0 {
                        self.error(
                            self.pos,
                            self.pos + 1,
                            "a backslash outside a string must end its line",
                        );
                        self.pos += 1;
                    } else {
                        self.pos += skip;
                    }
                }
                b'0'..=b'9' => self.number(),
                b'.' if self.peek(1).is_ascii_digit() => self.number(),
                b'"' | b'\'' => self.string(self.pos, false),
                _ if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 => self.word(),
                _ => self.operator(),
            }
        }
        if self.logical_line_open() {
            self.push(Tok::Newline, self.pos, self.pos);
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(Tok::Dedent, self.pos, self.pos);
        }
        self.push(Tok::Eof, self.pos, self.pos);
    }

    fn skip_comment(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos] != b'\n' {
            self.pos += 1;
        }
    }

    /// Measures a line's indentation and emits INDENT/DEDENT. Returns true when the line is
    /// blank or a comment (nothing emitted, the caller moves on).
    fn indentation(&mut self) -> bool {
        let start = self.pos;
        let mut col = 0usize;
        while self.pos < self.b.len() {
            match self.b[self.pos] {
                b' ' => col += 1,
                b'\t' => col = (col / 8 + 1) * 8,
                b'\x0c' | b'\r' => {}
                _ => break,
            }
            self.pos += 1;
        }
        match self.b.get(self.pos) {
            None => return true,
            Some(b'\n') => return false,
            Some(b'#') => {
                self.skip_comment();
                return false;
            }
            Some(b'\\') if matches!(self.b.get(self.pos + 1), Some(b'\n')) => return false,
            _ => {}
        }
        let top = self.indents.last().copied().unwrap_or(0);
        if col > top {
            self.indents.push(col);
            self.push(Tok::Indent, start, self.pos);
        } else if col < top {
            while self.indents.last().copied().unwrap_or(0) > col {
                self.indents.pop();
                self.push(Tok::Dedent, self.pos, self.pos);
            }
            if self.indents.last().copied().unwrap_or(0) != col {
                self.error(
                    start,
                    self.pos,
                    "unindent does not match any outer indentation level",
                );
                self.indents.push(col);
            }
        }
        false
    }

    fn word(&mut self) {
        let start = self.pos;
        let rest = &self.src[start..];
        let mut end = start;
        for (i, ch) in rest.char_indices() {
            if ch == '_' || ch.is_alphanumeric() {
                end = start + i + ch.len_utf8();
            } else {
                break;
            }
        }
        if end == start {
            // A non-ASCII character that cannot start a name.
            let ch = rest.chars().next().unwrap_or('?');
            self.error(
                start,
                start + ch.len_utf8(),
                format!("unexpected character `{ch}`"),
            );
            self.pos = start + ch.len_utf8().max(1);
            return;
        }
        let word = &self.src[start..end];
        // String prefixes: r"..", b'..', f"..", rb"..", …
        if word.len() <= 2
            && word.chars().all(|c| "rRbBuUfF".contains(c))
            && matches!(self.b.get(end), Some(b'"') | Some(b'\''))
        {
            let fstring = word.contains(['f', 'F']);
            self.pos = end;
            self.string(start, fstring);
            return;
        }
        self.pos = end;
        match KEYWORDS.iter().find(|k| **k == word) {
            Some(k) => self.push(Tok::Kw(k), start, end),
            None => self.push(Tok::Name(word.to_string()), start, end),
        }
    }

    fn string(&mut self, start: usize, fstring: bool) {
        let q = self.b[self.pos];
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.pos += if triple { 3 } else { 1 };
        let mut value = String::new();
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                self.error(start, self.pos, "unterminated string literal");
                break;
            };
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.pos += if triple { 3 } else { 1 };
                break;
            }
            if c == b'\n' && !triple {
                self.error(start, self.pos, "unterminated string literal");
                break;
            }
            if c == b'\\' {
                let esc = self.peek(1);
                let ch = match esc {
                    b'n' => Some('\n'),
                    b't' => Some('\t'),
                    b'\\' => Some('\\'),
                    b'\'' => Some('\''),
                    b'"' => Some('"'),
                    b'\n' => None,
                    _ => {
                        value.push('\\');
                        self.pos += 1;
                        continue;
                    }
                };
                value.extend(ch);
                self.pos += 2;
                continue;
            }
            let ch = self.src[self.pos..].chars().next().unwrap_or('?');
            value.push(ch);
            self.pos += ch.len_utf8().max(1);
        }
        self.push(Tok::Str { value, fstring }, start, self.pos);
    }

    fn number(&mut self) {
        let start = self.pos;
        let radix = match (self.b[self.pos], self.peek(1)) {
            (b'0', b'x' | b'X') => 16,
            (b'0', b'o' | b'O') => 8,
            (b'0', b'b' | b'B') => 2,
            _ => 10,
        };
        if radix != 10 {
            self.pos += 2;
            let digits_start = self.pos;
            while self.pos < self.b.len()
                && (self.b[self.pos].is_ascii_alphanumeric() || self.b[self.pos] == b'_')
            {
                self.pos += 1;
            }
            let digits: String = self.src[digits_start..self.pos].replace('_', "");
            match i64::from_str_radix(&digits, radix) {
                Ok(v) => self.push(Tok::Int(v), start, self.pos),
                Err(_) => {
                    let text = self.src[start..self.pos].to_string();
                    self.error(
                        start,
                        self.pos,
                        format!("invalid integer literal `{text}` (it must fit in 64 bits)"),
                    );
                    self.push(Tok::Int(0), start, self.pos);
                }
            }
            return;
        }
        let mut is_float = false;
        let digits = |lx: &mut Lexer| {
            while lx.pos < lx.b.len() && (lx.b[lx.pos].is_ascii_digit() || lx.b[lx.pos] == b'_') {
                lx.pos += 1;
            }
        };
        digits(self);
        if self.peek(0) == b'.' {
            is_float = true;
            self.pos += 1;
            digits(self);
        }
        if matches!(self.peek(0), b'e' | b'E')
            && (self.peek(1).is_ascii_digit()
                || (matches!(self.peek(1), b'+' | b'-') && self.peek(2).is_ascii_digit()))
        {
            is_float = true;
            self.pos += 2;
            digits(self);
        }
        let text: String = self.src[start..self.pos].replace('_', "");
        if matches!(self.peek(0), b'j' | b'J') {
            self.pos += 1;
            self.error(start, self.pos, "complex numbers are not supported");
            self.push(Tok::Int(0), start, self.pos);
            return;
        }
        if is_float {
            let v = text.parse::<f64>().unwrap_or(0.0);
            self.push(Tok::Float(v), start, self.pos);
        } else {
            match text.parse::<i64>() {
                Ok(v) => self.push(Tok::Int(v), start, self.pos),
                Err(_) => {
                    self.error(
                        start,
                        self.pos,
                        format!("integer literal `{text}` does not fit in 64 bits"),
                    );
                    self.push(Tok::Int(0), start, self.pos);
                }
            }
        }
    }

    fn operator(&mut self) {
        let start = self.pos;
        let rest = &self.b[start..];
        let Some(op) = OPS.iter().find(|op| rest.starts_with(op.as_bytes())) else {
            let ch = self.src[start..].chars().next().unwrap_or('?');
            self.error(
                start,
                start + ch.len_utf8(),
                format!("unexpected character `{ch}`"),
            );
            self.pos += ch.len_utf8().max(1);
            return;
        };
        self.pos += op.len();
        match *op {
            "(" | "[" | "{" => self.depth += 1,
            ")" | "]" | "}" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.push(Tok::Op(op), start, self.pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        let (toks, errors) = lex(src);
        assert!(errors.is_empty(), "{errors:?}");
        toks.into_iter().map(|t| t.tok).collect()
    }

    fn name(s: &str) -> Tok {
        Tok::Name(s.to_string())
    }

    #[test]
    fn indentation_becomes_indent_and_dedent() {
        let t = kinds("def f():\n    x = 1\n\n    # c\n    if x:\n        y\nz\n");
        assert_eq!(
            t,
            vec![
                Tok::Kw("def"),
                name("f"),
                Tok::Op("("),
                Tok::Op(")"),
                Tok::Op(":"),
                Tok::Newline,
                Tok::Indent,
                name("x"),
                Tok::Op("="),
                Tok::Int(1),
                Tok::Newline,
                Tok::Kw("if"),
                name("x"),
                Tok::Op(":"),
                Tok::Newline,
                Tok::Indent,
                name("y"),
                Tok::Newline,
                Tok::Dedent,
                Tok::Dedent,
                name("z"),
                Tok::Newline,
                Tok::Eof,
            ]
        );
    }

    #[test]
    fn brackets_and_backslashes_join_lines() {
        let t = kinds("f(a,\n  b)\nx = 1 + \\\n  2\n");
        assert_eq!(
            t,
            vec![
                name("f"),
                Tok::Op("("),
                name("a"),
                Tok::Op(","),
                name("b"),
                Tok::Op(")"),
                Tok::Newline,
                name("x"),
                Tok::Op("="),
                Tok::Int(1),
                Tok::Op("+"),
                Tok::Int(2),
                Tok::Newline,
                Tok::Eof,
            ]
        );
    }

    #[test]
    fn numbers_strings_and_operators() {
        let t = kinds("0x1F 1_000 1.5 1e-5 .5 'a' \"\"\"doc\nx\"\"\" // ** -> += >>=");
        assert_eq!(
            &t[..10],
            &[
                Tok::Int(31),
                Tok::Int(1000),
                Tok::Float(1.5),
                Tok::Float(1e-5),
                Tok::Float(0.5),
                Tok::Str {
                    value: "a".into(),
                    fstring: false
                },
                Tok::Str {
                    value: "doc\nx".into(),
                    fstring: false
                },
                Tok::Op("//"),
                Tok::Op("**"),
                Tok::Op("->"),
            ]
        );
        assert_eq!(&t[10..12], &[Tok::Op("+="), Tok::Op(">>=")]);
    }

    #[test]
    fn a_bad_character_is_reported_and_skipped() {
        let (toks, errors) = lex("x = 1 $ 2\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].span, Span::new(6, 7));
        assert!(toks.iter().any(|t| t.tok == Tok::Int(2)));
    }

    #[test]
    fn code_after_a_closing_bracket_on_a_continuation_line_is_not_indentation() {
        // `).to(...)` after a call that spans lines, and `(a\n + b).to(...)`: the `.`
        // follows the bracket on the same logical line, so no DEDENT may come before it.
        for src in [
            "def k():\n    x = f(a,\n          b).to(t)\n    y = 1\n",
            "def k():\n    x = (a\n         + b).to(t)\n    y = 1\n",
            "def k():\n    x = g([a,\nb])[0]\n    y = 1\n",
        ] {
            let t = kinds(src);
            let dedents = t.iter().filter(|t| **t == Tok::Dedent).count();
            assert_eq!(dedents, 1, "{src:?}: {t:?}");
            assert_eq!(t[t.len() - 2], Tok::Dedent, "{src:?}: {t:?}");
        }
    }

    #[test]
    fn a_comment_at_the_end_of_the_file() {
        assert_eq!(kinds("x\n  # c"), vec![name("x"), Tok::Newline, Tok::Eof]);
    }

    #[test]
    fn a_bad_dedent_is_an_error() {
        let (_, errors) = lex("if x:\n    a\n  b\n");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("unindent"));
    }
}
