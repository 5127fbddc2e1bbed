//! Source ↔ PTX correlation for the TUI's linked cursors and gutter marks.
//!
//! kwb compiles with `-lineinfo`, so NVRTC's PTX carries a `.file N "path"` table and
//! `.loc FILE LINE COL` directives. A `.loc` applies to the instructions after it until the next
//! `.loc` or the end of the function, so one forward pass over the PTX tells, for every PTX
//! line, which source line produced it. Only instruction lines get a source: labels, braces,
//! directives, blank lines and comments map to nothing. The pass never panics, whatever the
//! input, because the PTX shown may come from a half-failed compile.

use std::borrow::Cow;

/// Which source line produced each PTX line, plus the `.file` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineMap {
    /// `.file` index → path as written, in the order the PTX lists them.
    files: Vec<(u32, String)>,
    /// For each PTX line (0-based), the (file index, 1-based source line) it came from.
    by_ptx: Vec<Option<(u32, u32)>>,
    /// Every mapped line as (file, source line, PTX line), sorted, for reverse look-ups.
    by_source: Vec<(u32, u32, usize)>,
}

impl LineMap {
    /// Builds the map in one pass over the PTX (lines as `str::lines` splits them).
    pub fn from_ptx(ptx: &str) -> LineMap {
        let mut map = LineMap::default();
        let mut loc: Option<(u32, u32)> = None;
        let mut depth: usize = 0;
        let mut in_block_comment = false;
        for (index, raw) in ptx.lines().enumerate() {
            let code = strip_comments(raw, &mut in_block_comment);
            let code = code.trim();
            let mut source = None;
            if let Some(rest) = directive_args(code, ".loc") {
                loc = parse_loc(rest);
            } else if let Some(rest) = directive_args(code, ".file") {
                if let Some(entry) = parse_file(rest) {
                    if !map.files.iter().any(|(i, _)| *i == entry.0) {
                        map.files.push(entry);
                    }
                }
            } else if depth == 0 && starts_function(code) {
                loc = None;
            } else if depth > 0 && is_instruction(code) {
                source = loc;
            }
            if let Some((file, line)) = source {
                map.by_source.push((file, line, index));
            }
            map.by_ptx.push(source);
            depth = update_depth(code, depth);
            if depth == 0 && code.contains('}') {
                // The end of a function (or section) body: nothing carries over to the next one.
                loc = None;
            }
        }
        map.by_source.sort_unstable();
        map
    }

    /// The `.file` table: index → path as NVRTC wrote it.
    pub fn files(&self) -> &[(u32, String)] {
        &self.files
    }

    /// The PTX lines (0-based) produced by `source_line` (1-based) of the file whose path ends
    /// with `file_name`; sorted, deduplicated.
    pub fn ptx_lines_for(&self, file_name: &str, source_line: u32) -> Vec<usize> {
        let mut out = Vec::new();
        for file in self.file_indices(file_name) {
            let start = self
                .by_source
                .partition_point(|&(f, l, _)| (f, l) < (file, source_line));
            out.extend(
                self.by_source[start..]
                    .iter()
                    .take_while(|&&(f, l, _)| (f, l) == (file, source_line))
                    .map(|&(_, _, p)| p),
            );
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The (file index, 1-based source line) a PTX line came from, if any.
    pub fn source_of(&self, ptx_line: usize) -> Option<(u32, u32)> {
        self.by_ptx.get(ptx_line).copied().flatten()
    }

    /// The distinct source lines of `file_name` that produced any PTX, sorted (gutter marks).
    pub fn source_lines(&self, file_name: &str) -> Vec<u32> {
        let files = self.file_indices(file_name);
        let mut out: Vec<u32> = self
            .by_source
            .iter()
            .filter(|(f, _, _)| files.contains(f))
            .map(|&(_, l, _)| l)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The `.file` indices whose path names `file_name`. A whole-component suffix match wins
    /// (`elementwise-add/v1.cu` against `/x/elementwise-add/v1.cu`); failing that, the bare file
    /// names are compared, since the caller may hold a different spelling of the same path.
    fn file_indices(&self, file_name: &str) -> Vec<u32> {
        let want = file_name.replace('\\', "/");
        let suffix: Vec<u32> = self
            .files
            .iter()
            .filter(|(_, p)| {
                let p = p.replace('\\', "/");
                p == want || p.ends_with(&format!("/{want}"))
            })
            .map(|(i, _)| *i)
            .collect();
        if !suffix.is_empty() {
            return suffix;
        }
        let base = base_name(&want);
        self.files
            .iter()
            .filter(|(_, p)| !base.is_empty() && base_name(&p.replace('\\', "/")) == base)
            .map(|(i, _)| *i)
            .collect()
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The text after a directive name, if `code` is that directive (`.loc` but not `.local`).
fn directive_args<'a>(code: &'a str, name: &str) -> Option<&'a str> {
    let rest = code.strip_prefix(name)?;
    match rest.chars().next() {
        None => Some(rest),
        Some(c) if c.is_whitespace() => Some(rest),
        _ => None,
    }
}

/// `.loc FILE LINE COL[, function_name …, inlined_at …]`: the first three numbers. Line 0, or
/// a malformed `.loc`, means "no source".
fn parse_loc(args: &str) -> Option<(u32, u32)> {
    let mut nums = args
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .take(3)
        .map(|t| t.parse::<u32>().ok());
    let file = nums.next()??;
    let line = nums.next()??;
    (line != 0).then_some((file, line))
}

/// `.file N "path"[, timestamp, size]`.
fn parse_file(args: &str) -> Option<(u32, String)> {
    let args = args.trim_start();
    let digits = args
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(args.len());
    let index = args[..digits].parse().ok()?;
    let quoted = args[digits..].trim_start().strip_prefix('"')?;
    let mut path = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some((index, path)),
            '\\' => path.push(chars.next()?),
            c => path.push(c),
        }
    }
    None
}

/// `.entry`/`.func` headers (with any linkage prefix) start a new function.
fn starts_function(code: &str) -> bool {
    code.split_whitespace()
        .take_while(|t| t.starts_with('.'))
        .any(|t| t == ".entry" || t == ".func")
}

/// Whether a comment-free, trimmed line holds an instruction (possibly after a label, possibly
/// predicated): not blank, a directive, a brace or a label alone.
fn is_instruction(code: &str) -> bool {
    let mut code = code;
    if let Some(colon) = code.find(':') {
        let label = &code[..colon];
        if !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%'))
            && !code[colon + 1..].starts_with(':')
        {
            code = code[colon + 1..].trim_start();
        }
    }
    code.starts_with(|c: char| c.is_ascii_alphabetic() || c == '@')
}

/// Removes `//` and `/* */` comments (not inside string literals, so a `.file` path with `//`
/// survives), carrying an open block comment over to the next line. Borrows when there is
/// nothing to remove, which is most PTX lines.
pub(super) fn strip_comments<'a>(line: &'a str, in_block: &mut bool) -> Cow<'a, str> {
    if !*in_block && !line.contains('/') {
        return Cow::Borrowed(line);
    }
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut in_string = false;
    let mut kept_from = 0;
    let mut i = 0;
    while i < bytes.len() {
        if *in_block {
            if bytes[i..].starts_with(b"*/") {
                *in_block = false;
                i += 2;
                kept_from = i;
            } else {
                i += 1;
            }
            continue;
        }
        let next = bytes.get(i + 1).copied();
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && next == Some(b'/') => {
                out.push_str(&line[kept_from..i]);
                return Cow::Owned(out);
            }
            b'/' if !in_string && next == Some(b'*') => {
                out.push_str(&line[kept_from..i]);
                out.push(' ');
                *in_block = true;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    if !*in_block {
        out.push_str(&line[kept_from..]);
    }
    Cow::Owned(out)
}

/// Brace depth after a line, ignoring braces inside string literals.
pub(super) fn update_depth(code: &str, mut depth: usize) -> usize {
    let mut in_string = false;
    for c in code.chars() {
        match c {
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: &str = include_str!("../../tests/fixtures/ptx/add_v2_f32x4.ptx");
    const GELU: &str = include_str!("../../tests/fixtures/ptx/gelu_v2_fused.ptx");

    fn line_of(ptx: &str, needle: &str) -> usize {
        ptx.lines().position(|l| l.contains(needle)).unwrap()
    }

    #[test]
    fn real_ptx_maps_instructions_to_their_source_lines() {
        let map = LineMap::from_ptx(V2);
        assert_eq!(map.files().len(), 1);
        assert!(map.files()[0].1.ends_with("elementwise-add/v2_f32x4.cu"));
        // Lines 13 and 14 of v2_f32x4.cu are the two float4 loads.
        let loads = map.ptx_lines_for("v2_f32x4.cu", 13);
        assert_eq!(loads.len(), 3);
        let v4 = line_of(V2, "{%f16,");
        assert!(loads.contains(&v4));
        assert_eq!(map.source_of(v4), Some((1, 13)));
        assert_eq!(
            map.source_of(line_of(V2, "st.global.v4.f32")),
            Some((1, 20))
        );
        // The `.loc` itself, labels, braces and `.reg` lines map to nothing.
        assert_eq!(map.source_of(line_of(V2, ".loc\t1 13 9")), None);
        assert_eq!(map.source_of(line_of(V2, "$L__BB0_8:")), None);
        assert_eq!(map.source_of(line_of(V2, ".reg .f32")), None);
        assert_eq!(map.source_of(line_of(V2, ".visible .entry")), None);
        // Instructions before any `.loc` in the function have no source.
        assert_eq!(map.source_of(line_of(V2, "//")), None);
        let lines = map.source_lines("v2_f32x4.cu");
        assert_eq!(
            lines,
            vec![7, 9, 11, 13, 14, 16, 17, 18, 19, 20, 23, 24, 27]
        );
        assert!(map.ptx_lines_for("v2_f32x4.cu", 1).is_empty());
        assert!(map.ptx_lines_for("other.cu", 13).is_empty());
        assert_eq!(map.source_of(usize::MAX), None);
    }

    #[test]
    fn inlined_locs_take_the_first_three_numbers() {
        let map = LineMap::from_ptx(GELU);
        let mul = line_of(GELU, "%f2, %f1, 0f3D372713");
        assert_eq!(map.source_of(mul), Some((1, 10)));
        // The debug section after the function (labels and `.b8` data) maps to nothing.
        assert_eq!(map.source_of(line_of(GELU, ".b8 95,90")), None);
        assert!(map.source_lines("gelu/v2_fused.cu").contains(&11));
        assert!(
            map.source_lines("nope/v2_fused.cu").contains(&11),
            "falls back to file name"
        );
    }

    #[test]
    fn resets_at_functions_and_honours_line_zero() {
        let ptx = ".file 2 \"a\\\\b/k.cu\", 0, 0\n.func f()\n{\n.loc 2 5 1\nadd.s32 %r1, %r1, 1;\n.loc 2 0 0\nret;\n}\n.entry g()\n{\nmov.u32 %r1, 0; // no loc yet\nL1: ret; /* label + instr */\n.loc 2 9 0\n@%p1 bra L1;\nld.global.L1::evict_last.f32 %f1, [%rd1];\n}\n";
        let map = LineMap::from_ptx(ptx);
        assert_eq!(map.files(), &[(2, "a\\b/k.cu".to_string())]);
        assert_eq!(map.source_of(4), Some((2, 5)));
        assert_eq!(map.source_of(6), None, "line 0 means no source");
        assert_eq!(map.source_of(10), None, "reset at .entry");
        assert_eq!(map.source_of(11), None);
        assert_eq!(map.source_of(13), Some((2, 9)));
        assert_eq!(map.source_of(14), Some((2, 9)), "`::` is not a label");
        assert_eq!(map.ptx_lines_for("k.cu", 9), vec![13, 14]);
        assert_eq!(map.source_lines("k.cu"), vec![5, 9]);
    }

    #[test]
    fn never_panics_on_garbage() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let alphabet: Vec<char> = ".loc file\"\\{}/*:,0123456789 \n\tαé@".chars().collect();
        for _ in 0..300 {
            let s: String = (0..200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            let map = LineMap::from_ptx(&s);
            let _ = map.source_lines("file");
            let _ = map.ptx_lines_for("", 0);
        }
        let _ = LineMap::from_ptx(".loc 99999999999 1 1\n.file 1 \"open\n.loc\n.file\n}}}}\n");
        let map = LineMap::from_ptx(".file 3 \"/tmp//a.cu\" // c /* d\n");
        assert_eq!(map.files(), &[(3, "/tmp//a.cu".to_string())]);
    }

    #[test]
    fn five_thousand_lines_are_fast() {
        let big: String = std::iter::repeat_n(V2, 5000 / V2.lines().count() + 1).collect();
        assert!(big.lines().count() >= 5000);
        let start = std::time::Instant::now();
        let map = LineMap::from_ptx(&big);
        let elapsed = start.elapsed();
        assert!(!map.ptx_lines_for("v2_f32x4.cu", 13).is_empty());
        // Well under 5 ms in release; debug builds get headroom.
        assert!(elapsed.as_millis() < 50, "took {elapsed:?}");
    }
}
