//! A kernel's parameter list, read from the PTX that NVRTC produced.
//!
//! The CUBIN records only each parameter's size and offset, so the PTX is where kwb learns what
//! a launch's arguments must be: `.param .u32 n` is a 32-bit integer, `.param .f32 s` a float,
//! `.param .u64 p` a pointer or a 64-bit integer, `.param .align 8 .b8 p[16]` a struct passed
//! by value. Only the module's top level is read: each `.entry name ( .param …, … )`, with any
//! linkage (`.visible`, `.weak`) in front and any performance directives (`.maxntid`) behind.
//! Comments (`//`, `/* */`) and string literals are skipped, and names are taken as written, so
//! mangled C++ names (`_Z5scaleIfEvPT_PKS0_S0_x`) work like `extern "C"` ones.

use std::fmt;

/// The type of one kernel parameter, as PTX declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// `.u8` … `.u64` (`signed: false`) and `.s8` … `.s64` (`signed: true`).
    Int { signed: bool, bits: u32 },
    /// `.f16`, `.f32`, `.f64`.
    Float { bits: u32 },
    /// `.b8` … `.b64`: untyped bits.
    Bits { bits: u32 },
    /// An array: `.align N .b8 name[K]` (a struct or `__half` passed by value) or `.u32 name[K]`.
    Aggregate,
}

impl ParamType {
    /// Parses a type word without its dot: `u32`, `f64`, `b8`.
    fn from_word(word: &str) -> Option<ParamType> {
        let kind = word.get(..1)?;
        let bits: u32 = word[1..].parse().ok()?;
        let ty = match (kind, bits) {
            ("u", 8 | 16 | 32 | 64) => ParamType::Int {
                signed: false,
                bits,
            },
            ("s", 8 | 16 | 32 | 64) => ParamType::Int { signed: true, bits },
            ("f", 16 | 32 | 64) => ParamType::Float { bits },
            ("b", 8 | 16 | 32 | 64) => ParamType::Bits { bits },
            _ => return None,
        };
        Some(ty)
    }

    /// The width of a scalar type; `None` for an aggregate.
    pub fn bits(self) -> Option<u32> {
        match self {
            ParamType::Int { bits, .. } | ParamType::Float { bits } | ParamType::Bits { bits } => {
                Some(bits)
            }
            ParamType::Aggregate => None,
        }
    }

    /// Whether a device pointer can be passed here: `.u64` or `.b64`.
    pub fn holds_pointer(self) -> bool {
        matches!(
            self,
            ParamType::Int {
                signed: false,
                bits: 64
            } | ParamType::Bits { bits: 64 }
        )
    }
}

/// `.u32`, `.f64`, `.b8[]` (an aggregate).
impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParamType::Int { signed, bits } => {
                write!(f, ".{}{bits}", if signed { 's' } else { 'u' })
            }
            ParamType::Float { bits } => write!(f, ".f{bits}"),
            ParamType::Bits { bits } => write!(f, ".b{bits}"),
            ParamType::Aggregate => f.write_str(".b8[]"),
        }
    }
}

/// One kernel parameter. For a pointer declared `.ptr .global .align 16`, that alignment is the
/// pointee's; `align` here is always the parameter's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub ty: ParamType,
    pub bytes: u32,
    pub align: u32,
}

/// PTX-like: `.u32 add_f32_param_3`, `.align 8 .b8 mixed_param_7[16]`.
impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ty {
            ParamType::Aggregate => {
                write!(f, ".align {} .b8 {}[{}]", self.align, self.name, self.bytes)
            }
            ty => write!(f, "{ty} {}", self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("no kernel entry `{entry}` in the PTX; entries there: {}", list(found))]
    NoEntry { entry: String, found: Vec<String> },
    #[error("cannot read the parameters of `{entry}` at PTX line {line}: {message}")]
    Syntax {
        entry: String,
        line: u32,
        message: String,
    },
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The parameters of kernel `entry`, in order.
pub fn entry_params(ptx: &str, entry: &str) -> Result<Vec<Param>, ParamError> {
    let mut toks = Lexer::new(ptx);
    let mut found = Vec::new();
    let mut depth = 0u32;
    while let Some(t) = toks.next() {
        match t.text {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            ".entry" if depth == 0 => {
                let Some(name) = toks.next().filter(|n| is_name(n.text)) else {
                    continue;
                };
                if name.text == entry {
                    return read_params(&mut toks, entry);
                }
                found.push(name.text.to_string());
            }
            _ => {}
        }
    }
    Err(ParamError::NoEntry {
        entry: entry.to_string(),
        found,
    })
}

/// Reads `( .param …, … )` after an entry's name; an entry with no list has no parameters.
fn read_params(toks: &mut Lexer, entry: &str) -> Result<Vec<Param>, ParamError> {
    let mut out = Vec::new();
    if toks.peek().map(|t| t.text) != Some("(") {
        return Ok(out);
    }
    let open = toks.next().map_or(0, |t| t.line);
    let mut decl: Vec<Tok> = Vec::new();
    loop {
        let Some(t) = toks.next() else {
            let message = "the parameter list is not closed with `)`".into();
            return Err(syntax(entry, open, message));
        };
        match t.text {
            "," | ")" => {
                if !(decl.is_empty() && t.text == ")" && out.is_empty()) {
                    out.push(one_param(&decl).map_err(|m| syntax(entry, t.line, m))?);
                }
                if t.text == ")" {
                    return Ok(out);
                }
                decl.clear();
            }
            _ => decl.push(t),
        }
    }
}

fn syntax(entry: &str, line: u32, message: String) -> ParamError {
    ParamError::Syntax {
        entry: entry.to_string(),
        line,
        message,
    }
}

/// One declaration: `.param [.align N] .type [.ptr [.space] [.align N]] name[[K]]`.
fn one_param(decl: &[Tok]) -> Result<Param, String> {
    let text = || decl.iter().map(|t| t.text).collect::<Vec<_>>().join(" ");
    if decl.first().map(|t| t.text) != Some(".param") {
        return Err(format!("expected `.param …`, found `{}`", text()));
    }
    let (mut ty, mut name, mut count) = (None, None, None);
    let (mut align, mut ptr) = (None, false);
    let mut i = 1;
    let number = |i: usize| -> Result<u32, String> {
        let t = decl.get(i).map_or("", |t| t.text);
        parse_u32(t).ok_or_else(|| format!("expected a number, found `{t}` in `{}`", text()))
    };
    while i < decl.len() {
        let w = decl[i].text;
        match w {
            ".ptr" => ptr = true,
            ".global" | ".const" | ".shared" | ".local" if ptr => {}
            ".align" => {
                i += 1;
                let n = number(i)?;
                if !n.is_power_of_two() {
                    return Err(format!("`.align {n}` is not a power of two"));
                }
                // After `.ptr` the alignment is the pointee's, not the parameter's.
                if !ptr {
                    align = Some(n);
                }
            }
            "[" if name.is_some() && count.is_none() => {
                count = Some(number(i + 1)?);
                if decl.get(i + 2).map(|t| t.text) != Some("]") {
                    return Err(format!("expected `]` in `{}`", text()));
                }
                i += 2;
            }
            _ if w.starts_with('.') && ty.is_none() && name.is_none() => {
                ty = Some(ParamType::from_word(&w[1..]).ok_or_else(|| {
                    format!("`{w}` is not a parameter type or attribute kwb knows")
                })?);
            }
            _ if is_name(w) && name.is_none() && ty.is_some() => name = Some(w),
            _ => return Err(format!("unexpected `{w}` in `{}`", text())),
        }
        i += 1;
    }
    let (Some(ty), Some(name)) = (ty, name) else {
        return Err(format!("`{}` needs a type and a name", text()));
    };
    let elem = ty.bits().unwrap_or(8) / 8;
    let (ty, bytes) = match count {
        Some(0) => return Err(format!("`{}` declares an empty array", text())),
        Some(k) => (
            ParamType::Aggregate,
            elem.checked_mul(k).ok_or("array too large")?,
        ),
        None => (ty, elem),
    };
    Ok(Param {
        name: name.to_string(),
        ty,
        bytes,
        align: align.unwrap_or(elem),
    })
}

fn parse_u32(t: &str) -> Option<u32> {
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// A PTX identifier: a letter, or `_ $ %` followed by at least one more character.
fn is_name(t: &str) -> bool {
    let mut c = t.chars();
    match c.next() {
        Some(f) if f.is_ascii_alphabetic() => true,
        Some('_' | '$' | '%') => t.len() > 1,
        _ => false,
    }
}

#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    text: &'a str,
    line: u32,
}

/// Words (`.param`, `add_f32`, `16`) and single punctuation characters, with comments,
/// string literals and white space dropped.
struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    peeked: Option<Option<Tok<'a>>>,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
            peeked: None,
        }
    }

    fn peek(&mut self) -> Option<Tok<'a>> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lex());
        }
        self.peeked.flatten()
    }

    /// Advances past `n` bytes, counting lines.
    fn skip(&mut self, n: usize) {
        let end = (self.pos + n).min(self.src.len());
        self.line += self.src.as_bytes()[self.pos..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u32;
        self.pos = end;
    }

    fn lex(&mut self) -> Option<Tok<'a>> {
        let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'%' | b'.');
        loop {
            let rest = &self.src[self.pos..];
            let b = *rest.as_bytes().first()?;
            if b.is_ascii_whitespace() {
                self.skip(1);
            } else if rest.starts_with("//") {
                self.skip(rest.find('\n').unwrap_or(rest.len()));
            } else if let Some(body) = rest.strip_prefix("/*") {
                self.skip(body.find("*/").map_or(rest.len(), |e| e + 4));
            } else if b == b'"' {
                let close = rest[1..].find(['"', '\n']).map_or(rest.len(), |e| e + 2);
                self.skip(close);
            } else {
                let n = rest.bytes().take_while(|b| word(*b)).count();
                let n = if n == 0 {
                    rest.chars().next()?.len_utf8()
                } else {
                    n
                };
                let tok = Tok {
                    text: &rest[..n],
                    line: self.line,
                };
                self.skip(n);
                return Some(tok);
            }
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Tok<'a>;

    fn next(&mut self) -> Option<Tok<'a>> {
        match self.peeked.take() {
            Some(t) => t,
            None => self.lex(),
        }
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
