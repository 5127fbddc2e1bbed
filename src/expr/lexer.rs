//! Turns expression text into tokens, so the parser works on whole numbers, names and operators
//! instead of characters.
//!
//! Number literals are decoded here, size suffixes included (`256Mi`, `1.5Ki`, `4K`), using exact
//! integer arithmetic so that `1.1K` is exactly 1100 and `1.3Ki` is rejected as fractional.
//! The lexer never stops at a problem: a bad number becomes [`TokenKind::BadNumber`] and a run of
//! characters the language does not use becomes [`TokenKind::Unknown`], each with an error, so
//! the parser can go on and report further mistakes.

use super::error::{ExprError, Span};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TokenKind {
    Int(i64),
    Float(f64),
    /// A malformed number literal; its error is already reported.
    BadNumber,
    Ident,
    True,
    False,
    LParen,
    RParen,
    Comma,
    /// `=`, only meaningful in keyword arguments.
    Assign,
    Plus,
    Minus,
    Star,
    StarStar,
    Slash,
    SlashSlash,
    Percent,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    NotEq,
    AndAnd,
    OrOr,
    Bang,
    /// Characters the language does not use; their error is already reported.
    Unknown,
    Eof,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// Splits `src` into tokens (always ending with [`TokenKind::Eof`]) and the errors met on the way.
pub(crate) fn tokenize(src: &str) -> (Vec<Token>, Vec<ExprError>) {
    let mut lx = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        errors: Vec::new(),
    };
    lx.run();
    (lx.tokens, lx.errors)
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    tokens: Vec<Token>,
    errors: Vec<ExprError>,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn span(start: usize, end: usize) -> Span {
    // Expressions longer than 4 GiB are not a use case; saturate rather than wrap.
    Span::new(
        u32::try_from(start).unwrap_or(u32::MAX),
        u32::try_from(end).unwrap_or(u32::MAX),
    )
}

impl Lexer<'_> {
    fn peek_at(&self, i: usize) -> Option<u8> {
        self.bytes.get(i).copied()
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        self.tokens.push(Token {
            kind,
            span: span(start, self.pos),
        });
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let start = self.pos;
            let b = self.bytes[start];
            if b.is_ascii_whitespace() {
                self.pos += 1;
                continue;
            }
            if b.is_ascii_digit()
                || (b == b'.' && self.peek_at(start + 1).is_some_and(|c| c.is_ascii_digit()))
            {
                self.number();
                continue;
            }
            if is_ident_start(b) {
                while self.peek_at(self.pos).is_some_and(is_ident_continue) {
                    self.pos += 1;
                }
                let kind = match &self.src[start..self.pos] {
                    "true" => TokenKind::True,
                    "false" => TokenKind::False,
                    _ => TokenKind::Ident,
                };
                self.push(kind, start);
                continue;
            }
            let next = self.peek_at(start + 1);
            let (kind, len) = match (b, next) {
                (b'*', Some(b'*')) => (TokenKind::StarStar, 2),
                (b'/', Some(b'/')) => (TokenKind::SlashSlash, 2),
                (b'<', Some(b'=')) => (TokenKind::Le, 2),
                (b'>', Some(b'=')) => (TokenKind::Ge, 2),
                (b'=', Some(b'=')) => (TokenKind::EqEq, 2),
                (b'!', Some(b'=')) => (TokenKind::NotEq, 2),
                (b'&', Some(b'&')) => (TokenKind::AndAnd, 2),
                (b'|', Some(b'|')) => (TokenKind::OrOr, 2),
                (b'(', _) => (TokenKind::LParen, 1),
                (b')', _) => (TokenKind::RParen, 1),
                (b',', _) => (TokenKind::Comma, 1),
                (b'=', _) => (TokenKind::Assign, 1),
                (b'+', _) => (TokenKind::Plus, 1),
                (b'-', _) => (TokenKind::Minus, 1),
                (b'*', _) => (TokenKind::Star, 1),
                (b'/', _) => (TokenKind::Slash, 1),
                (b'%', _) => (TokenKind::Percent, 1),
                (b'<', _) => (TokenKind::Lt, 1),
                (b'>', _) => (TokenKind::Gt, 1),
                (b'!', _) => (TokenKind::Bang, 1),
                _ => {
                    self.unknown();
                    continue;
                }
            };
            self.pos += len;
            self.push(kind, start);
        }
        let end = self.bytes.len();
        self.tokens.push(Token {
            kind: TokenKind::Eof,
            span: span(end, end),
        });
    }

    /// Consumes a run of characters that start no token and reports them once.
    fn unknown(&mut self) {
        let start = self.pos;
        let starts_token = |c: char| {
            c.is_ascii_alphanumeric() || c.is_whitespace() || "_.()+-*/%<>=!,".contains(c)
        };
        let mut chars = self.src[start..].chars();
        let first = chars.next().map_or(1, char::len_utf8);
        // `&` and `|` start `&&` and `||`, so a lone one is a run of its own.
        let rest: usize = if matches!(self.bytes[start], b'&' | b'|') {
            0
        } else {
            chars
                .take_while(|&c| !starts_token(c) && c != '&' && c != '|')
                .map(char::len_utf8)
                .sum()
        };
        self.pos = start + first + rest;
        let text = &self.src[start..self.pos];
        let hint = match text.chars().next() {
            Some('&') => "; did you mean `&&`?",
            Some('|') => "; did you mean `||`?",
            Some('^') => "; use `**` for powers",
            Some('[' | ']' | '{' | '}') => "; only parentheses `(` `)` group expressions",
            Some('\'' | '"') => "; expressions have no strings",
            _ => "",
        };
        let what = if text.chars().count() == 1 {
            "character"
        } else {
            "characters"
        };
        self.errors.push(ExprError::new(
            span(start, self.pos),
            format!("unexpected {what} `{text}`{hint}"),
        ));
        self.push(TokenKind::Unknown, start);
    }

    fn digits(&mut self) {
        while self
            .peek_at(self.pos)
            .is_some_and(|c| c.is_ascii_digit() || c == b'_')
        {
            self.pos += 1;
        }
    }

    fn number(&mut self) {
        let start = self.pos;
        self.digits();
        let int_end = self.pos;
        let mut frac = None;
        if self.peek_at(self.pos) == Some(b'.') {
            self.pos += 1;
            let frac_start = self.pos;
            self.digits();
            frac = Some(frac_start..self.pos);
        }
        let mut exp = None;
        if matches!(self.peek_at(self.pos), Some(b'e' | b'E')) {
            let sign = matches!(self.peek_at(self.pos + 1), Some(b'+' | b'-')) as usize;
            if self
                .peek_at(self.pos + 1 + sign)
                .is_some_and(|c| c.is_ascii_digit())
            {
                let exp_start = self.pos + 1;
                self.pos += 1 + sign;
                self.digits();
                exp = Some(exp_start..self.pos);
            }
        }
        let literal_end = self.pos;
        let mut suffix = None;
        if self.peek_at(self.pos).is_some_and(is_ident_start) {
            let suffix_start = self.pos;
            while self.peek_at(self.pos).is_some_and(is_ident_continue) {
                self.pos += 1;
            }
            suffix = Some(&self.src[suffix_start..self.pos]);
        }
        let text = &self.src[start..self.pos];
        let lit = NumberText {
            int: &self.src[start..int_end],
            frac: frac.map_or("", |r| &self.src[r]),
            exp: exp.map(|r| &self.src[r]),
            plain: &self.src[start..literal_end],
        };
        let kind = match decode(&lit, suffix) {
            Ok(kind) => kind,
            Err(msg) => {
                self.errors.push(ExprError::new(
                    span(start, self.pos),
                    msg.replace("{}", text),
                ));
                TokenKind::BadNumber
            }
        };
        self.push(kind, start);
    }
}

/// The pieces of a number literal, as written (underscores included).
struct NumberText<'s> {
    int: &'s str,
    frac: &'s str,
    exp: Option<&'s str>,
    /// The literal without its suffix.
    plain: &'s str,
}

/// The multiplier of a size suffix.
fn suffix_factor(suffix: &str) -> Option<u128> {
    let (base, k): (u128, u32) = match suffix {
        "K" => (1000, 1),
        "M" => (1000, 2),
        "G" => (1000, 3),
        "T" => (1000, 4),
        "Ki" => (1024, 1),
        "Mi" => (1024, 2),
        "Gi" => (1024, 3),
        "Ti" => (1024, 4),
        _ => return None,
    };
    Some(base.pow(k))
}

/// Decodes a literal; error messages use `{}` for the literal's text.
fn decode(lit: &NumberText, suffix: Option<&str>) -> Result<TokenKind, String> {
    let clean = |s: &str| s.replace('_', "");
    if lit.plain.ends_with('_') || lit.frac.starts_with('_') {
        return Err("malformed number `{}`: `_` may only separate digits".into());
    }
    let Some(suffix) = suffix else {
        if lit.frac.is_empty() && lit.exp.is_none() && !lit.plain.contains('.') {
            return clean(lit.int)
                .parse::<i64>()
                .map(TokenKind::Int)
                .map_err(|_| format!("integer `{{}}` is too large (the largest is {})", i64::MAX));
        }
        let v: f64 = clean(lit.plain)
            .parse()
            .map_err(|_| "malformed number `{}`".to_string())?;
        if !v.is_finite() {
            return Err("number `{}` is too large".into());
        }
        return Ok(TokenKind::Float(v));
    };
    if lit.plain == "0" && suffix.starts_with(['x', 'X', 'b', 'B', 'o', 'O']) {
        return Err("`{}`: hexadecimal, binary and octal literals are not supported".into());
    }
    if lit.exp.is_none() && (suffix == "e" || suffix == "E") {
        return Err("malformed number `{}`: expected digits after the exponent".into());
    }
    let factor = suffix_factor(suffix).ok_or_else(|| {
        format!(
            "unknown suffix `{suffix}` on number `{{}}`; size suffixes are K M G T (powers of \
             1000) and Ki Mi Gi Ti (powers of 1024); to multiply, write `{} * {suffix}`",
            lit.plain
        )
    })?;
    // Exact decimal arithmetic: value = mantissa * 10^exp10 * factor.
    let too_large = || "size `{}` is too large".to_string();
    let mut mantissa = format!("{}{}", clean(lit.int), clean(lit.frac));
    let mut exp10: i64 = -(clean(lit.frac).len() as i64);
    if let Some(e) = lit.exp {
        // Saturate absurd exponents; they overflow or vanish below either way.
        exp10 += clean(e).parse::<i64>().unwrap_or_else(|_| {
            if e.starts_with('-') {
                -100_000
            } else {
                100_000
            }
        });
    }
    while mantissa.len() > 1 && mantissa.ends_with('0') {
        mantissa.pop();
        exp10 += 1;
    }
    let mantissa = mantissa.trim_start_matches('0');
    if mantissa.is_empty() {
        return Ok(TokenKind::Int(0));
    }
    let m: u128 = mantissa.parse().map_err(|_| too_large())?;
    let scaled = m.checked_mul(factor).ok_or_else(too_large)?;
    let value = if exp10 >= 0 {
        u32::try_from(exp10)
            .ok()
            .and_then(|e| 10u128.checked_pow(e))
            .and_then(|p| scaled.checked_mul(p))
            .ok_or_else(too_large)?
    } else {
        let divisor = u32::try_from(-exp10)
            .ok()
            .and_then(|e| 10u128.checked_pow(e));
        match divisor {
            Some(d) if scaled % d == 0 => scaled / d,
            _ => {
                let approx = m as f64 * 10f64.powi(exp10 as i32) * factor as f64;
                return Err(format!(
                    "size `{{}}` is not a whole number (it is {approx}); sizes with a suffix \
                     must be integers"
                ));
            }
        }
    };
    i64::try_from(value)
        .map(TokenKind::Int)
        .map_err(|_| too_large())
}
