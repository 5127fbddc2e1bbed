//! Where each field of a YAML file sits. serde tells us *what* is wrong with a field; this index,
//! built from yaml-rust2's marked events, tells us *where*, so a validation error found after
//! deserialization can still name the file, line and column.

use std::collections::HashMap;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// Maps a field path such as `versions.v1.grid` or `sizes[2].N` to the position of its value.
#[derive(Debug, Clone, Default)]
pub struct SpanIndex {
    values: HashMap<String, Pos>,
}

impl SpanIndex {
    /// Indexes `source`. A file that does not parse yields whatever was indexed before the error;
    /// serde reports the syntax error itself.
    pub fn build(source: &str) -> SpanIndex {
        let mut builder = Builder::default();
        let mut parser = Parser::new_from_str(source);
        let _ = parser.load(&mut builder, false);
        SpanIndex {
            values: builder.values,
        }
    }

    /// The position of the value at `path`, or of its nearest indexed ancestor.
    pub fn find(&self, path: &str) -> Option<Pos> {
        let mut p = path;
        loop {
            if let Some(pos) = self.values.get(p) {
                return Some(*pos);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }
}

enum Frame {
    Map { path: String, key: Option<String> },
    Seq { path: String, index: usize },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    values: HashMap<String, Pos>,
}

impl Builder {
    /// The path of the value about to be read, or `None` when the next scalar is a mapping key.
    fn next_value_path(&mut self) -> Option<String> {
        match self.stack.last_mut() {
            None => Some(String::new()),
            Some(Frame::Map { key: None, .. }) => None,
            Some(Frame::Map { path, key }) => {
                let k = key.take().unwrap_or_default();
                Some(if path.is_empty() {
                    k
                } else {
                    format!("{path}.{k}")
                })
            }
            Some(Frame::Seq { path, index }) => {
                let p = format!("{path}[{index}]");
                *index += 1;
                Some(p)
            }
        }
    }

    fn record(&mut self, path: &str, mark: Marker) {
        let pos = Pos {
            line: mark.line() as u32,
            column: mark.col() as u32 + 1,
        };
        self.values.entry(path.to_string()).or_insert(pos);
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(text, ..) => match self.next_value_path() {
                Some(path) => self.record(&path, mark),
                None => {
                    if let Some(Frame::Map { path, key }) = self.stack.last_mut() {
                        let full = if path.is_empty() {
                            text.clone()
                        } else {
                            format!("{path}.{text}")
                        };
                        *key = Some(text);
                        // A key's own position stands in until its value is seen.
                        self.record(&format!("{full}#key"), mark);
                    }
                }
            },
            Event::Alias(_) => {
                self.next_value_path();
            }
            Event::MappingStart(..) => {
                let path = self.next_value_path().unwrap_or_default();
                self.record(&path, mark);
                self.stack.push(Frame::Map { path, key: None });
            }
            Event::SequenceStart(..) => {
                let path = self.next_value_path().unwrap_or_default();
                self.record(&path, mark);
                self.stack.push(Frame::Seq { path, index: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_nested_fields_with_one_based_positions() {
        let src = "name: x\nversions:\n  v1:\n    grid: cdiv(N, 256)\n    args: [a, b]\nsizes:\n  - {N: 1Mi}\n";
        let idx = SpanIndex::build(src);
        assert_eq!(idx.find("name"), Some(Pos { line: 1, column: 7 }));
        assert_eq!(
            idx.find("versions.v1.grid"),
            Some(Pos {
                line: 4,
                column: 11
            })
        );
        assert_eq!(
            idx.find("versions.v1.args[1]"),
            Some(Pos {
                line: 5,
                column: 15
            })
        );
        assert_eq!(idx.find("sizes[0].N"), Some(Pos { line: 7, column: 9 }));
        // Unknown leaves fall back to their parent.
        assert_eq!(idx.find("versions.v1.entry"), idx.find("versions.v1"));
    }
}
