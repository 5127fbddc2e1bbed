//! Source positions for the tile language. A [`Span`] is a pair of byte offsets that travels
//! with every token, AST node and diagnostic; [`LineIndex`] turns an offset into the 1-based
//! line and column that diagnostics, `#line` directives and the interpreter's findings show.

/// A byte range `start..end` in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span that covers both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A resolved position: 1-based line and column (the column counts characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

/// The start offset of every line of a source, for offset → line/column look-ups.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    pub fn new(source: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            source
                .bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i as u32 + 1),
        );
        LineIndex { starts }
    }

    /// The line and column of byte `offset` in `source` (the text this index was built from).
    pub fn loc(&self, source: &str, offset: u32) -> Loc {
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.starts[line] as usize;
        let end = (offset as usize).min(source.len()).max(start);
        let col = source
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(end - start);
        Loc {
            line: line as u32 + 1,
            col: col as u32 + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let src = "ab\ncd\n\nxé y";
        let idx = LineIndex::new(src);
        assert_eq!(idx.loc(src, 0), Loc { line: 1, col: 1 });
        assert_eq!(idx.loc(src, 4), Loc { line: 2, col: 2 });
        assert_eq!(idx.loc(src, 6), Loc { line: 3, col: 1 });
        // 'é' is two bytes but one column.
        assert_eq!(idx.loc(src, 11), Loc { line: 4, col: 4 });
    }
}
