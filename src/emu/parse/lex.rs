//! The PTX text below the grammar: comments stripped (line numbers kept), lines split into
//! statements and operand lists at top-level separators, register names split from their
//! index, and integer and float literals read.

use crate::emu::inst::Ty;

pub(super) fn split_digits(name: &str) -> (&str, &str) {
    let cut = name
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map_or(name.len(), |(i, _)| i);
    (&name[..cut], &name[cut..])
}
/// Strips `//` and `/* */` comments, keeping line numbers.
pub(super) fn strip_comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut s = String::new();
        let b = line.as_bytes();
        let mut i = 0;
        let mut in_str = false;
        while i < b.len() {
            if in_block {
                if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    in_block = false;
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            if b[i] == b'"' {
                in_str = !in_str;
            }
            if !in_str && b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
                break;
            }
            if !in_str && b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                in_block = true;
                i += 2;
                continue;
            }
            s.push(b[i] as char);
            i += 1;
        }
        out.push(s);
    }
    out
}

/// Splits a line into statements at `;`, `{` and `}` that are not inside an operand's braces.
/// Scope braces come back as their own statement.
pub(super) fn statements(line: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    let mut depth = 0;
    for (i, c) in line.char_indices() {
        match c {
            '{' if cur.trim().is_empty() => {
                out.push((i, "{".to_string()));
                cur.clear();
                start = i + 1;
            }
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' if depth > 0 => {
                depth -= 1;
                cur.push(c);
            }
            '}' => {
                if !cur.trim().is_empty() {
                    out.push((start, std::mem::take(&mut cur)));
                }
                out.push((i, "}".to_string()));
                cur.clear();
                start = i + 1;
            }
            ';' if depth == 0 => {
                out.push((start, std::mem::take(&mut cur)));
                start = i + 1;
            }
            _ => {
                if cur.is_empty() {
                    start = i;
                }
                cur.push(c)
            }
        }
    }
    if !cur.trim().is_empty() {
        out.push((start, cur));
    }
    out
}

/// Splits operands at top-level commas.
pub(super) fn split_operands(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

pub(super) fn parse_int(s: &str) -> Option<u64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let s = s.trim_end_matches('U');
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = s.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()?
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|c| c.is_ascii_digit()) {
        u64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<u64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// `0f3F800000` (f32 bits), `0d3FF0000000000000` (f64 bits), or a decimal float.
pub(super) fn parse_float_bits(s: &str, ty: Ty) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0f").or_else(|| s.strip_prefix("0F")) {
        let bits = u32::from_str_radix(h, 16).ok()?;
        return Some(if ty == Ty::F64 {
            f64::from(f32::from_bits(bits)).to_bits()
        } else {
            u64::from(bits)
        });
    }
    if let Some(h) = s.strip_prefix("0d").or_else(|| s.strip_prefix("0D")) {
        let bits = u64::from_str_radix(h, 16).ok()?;
        return Some(if ty == Ty::F64 {
            bits
        } else {
            u64::from((f64::from_bits(bits) as f32).to_bits())
        });
    }
    let v: f64 = s.parse().ok()?;
    Some(if ty == Ty::F64 {
        v.to_bits()
    } else {
        u64::from((v as f32).to_bits())
    })
}
