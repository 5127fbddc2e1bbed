//! Re-lays out any Python source without changing its meaning: lines split inside brackets
//! (after `(`, `[`, `,` or before a closing bracket, at any indentation, sometimes after a
//! comment), lines inside brackets joined, and `\` continuations between a statement's `=` and
//! its value. A scan of its own (strings, comments, brackets), so it shares no code with the
//! lexer it tests (its string scan is the parser's safety net's, `parse/coverage.rs`).

use super::rng::Rng;
use kwb::tile::parse::coverage::string_end;

/// `src` laid out anew, seeded by `rng`: about one in `every` eligible places changes.
pub fn reformat(src: &str, rng: &mut Rng, every: usize) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth = 0u32;
    let mut i = 0;
    // Whether the current line has a comment (its newline cannot be joined).
    let mut commented = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' => {
                let end = string_end(b, i);
                out.push_str(&src[i..end]);
                i = end;
                continue;
            }
            b'#' => {
                commented = true;
                let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
                out.push_str(&src[i..end]);
                i = end;
                continue;
            }
            b'\n' => {
                if depth > 0 && !commented && rng.below(every) == 0 {
                    // Join: the newline and the next line's indentation become one space.
                    let mut j = i + 1;
                    while j < b.len() && matches!(b[j], b' ' | b'\t') {
                        j += 1;
                    }
                    out.push(' ');
                    i = j;
                    continue;
                }
                commented = false;
                out.push('\n');
                i += 1;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                if depth > 0 && rng.below(every) == 0 {
                    out.push_str(&brk(rng));
                }
                depth = depth.saturating_sub(1);
            }
            b'=' if depth == 0
                && b.get(i + 1) == Some(&b' ')
                && i > 0
                && b[i - 1] == b' '
                && rng.below(every) == 0 =>
            {
                out.push_str("= \\\n        ");
                i += 2;
                continue;
            }
            _ => {}
        }
        out.push(c as char);
        if c >= 0x80 {
            // Copy the rest of a multi-byte character as it is.
            let len = src[i..].chars().next().map_or(1, char::len_utf8);
            out.pop();
            out.push_str(&src[i..i + len]);
            i += len;
            continue;
        }
        i += 1;
        if matches!(c, b'(' | b'[' | b',') && depth > 0 && rng.below(every) == 0 {
            out.push_str(&brk(rng));
        }
    }
    out
}

/// A line break inside brackets: sometimes after a comment, then any indentation.
fn brk(rng: &mut Rng) -> String {
    let comment = if rng.below(3) == 0 {
        "  # (re-laid out)"
    } else {
        ""
    };
    format!("{comment}\n{}", " ".repeat(rng.below(16)))
}
