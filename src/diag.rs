//! Diagnostics: the one shape every user-facing problem takes, whether it came from a workspace
//! file, NVRTC's log or the GPU worker. A diagnostic renders to plain text, so the TUI panel,
//! batch output and tests all show the same words.

use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One problem, located as precisely as its source allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file the problem is in, when known.
    pub file: Option<PathBuf>,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column, when known.
    pub column: Option<u32>,
    /// Where inside a structured file, e.g. `versions.v3.entry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            file: None,
            line: None,
            column: None,
            field: None,
            message: message.into(),
        }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn at(mut self, line: u32, column: Option<u32>) -> Self {
        self.line = Some(line);
        self.column = column;
        self
    }

    pub fn field(mut self, path: impl Into<String>) -> Self {
        self.field = Some(path.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// `file:line:col: severity: [field] message`, the form editors and terminals link.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(col) = self.column {
                    write!(f, ":{col}")?;
                }
            }
            f.write_str(": ")?;
        }
        write!(f, "{}: ", self.severity)?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A diagnostic followed by its source line and a caret under the column, when the file can be
/// read and the diagnostic has a line and column: the form compilers print at the edge.
///
/// ```text
/// kernels/x.tile:4:18: error: unknown name `offz`; did you mean `offs`?
///     4 |     x = tl.load(offz)
///       |                 ^
/// ```
pub fn with_snippet(d: &Diagnostic) -> String {
    let head = d.to_string();
    let (Some(file), Some(line), Some(col)) = (&d.file, d.line, d.column) else {
        return head;
    };
    let Some(text) = std::fs::read_to_string(file).ok().and_then(|t| {
        t.lines()
            .nth(line.saturating_sub(1) as usize)
            .map(str::to_string)
    }) else {
        return head;
    };
    let gutter = line.to_string().len();
    // The caret sits under the column's character, tabs kept so it lines up in a terminal.
    let pad: String = text
        .chars()
        .take(col.saturating_sub(1) as usize)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    format!(
        "{head}\n{:>gutter$} | {text}\n{:>gutter$} | {pad}^",
        line, ""
    )
}

/// Renders a list of diagnostics, one per line.
pub fn render_all(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&d.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_shows_the_line_and_a_caret_under_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("k.tile");
        std::fs::write(&f, "def k():\n    x = tl.load(offz)\n").unwrap();
        let d = Diagnostic::error("unknown name `offz`")
            .in_file(&f)
            .at(2, Some(17));
        let s = with_snippet(&d);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "2 |     x = tl.load(offz)");
        assert_eq!(lines[2], "  |                 ^");
        // No column, or no readable file: the one-line form.
        let plain = Diagnostic::error("x").in_file(&f).at(2, None);
        assert_eq!(with_snippet(&plain), plain.to_string());
    }
}
