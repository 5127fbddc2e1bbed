//! Reading a workspace file: YAML syntax and shape errors from serde (with the field path from
//! serde_path_to_error and the position from the YAML parser), then semantic checks.

use super::raw::RawWorkspace;
use super::spans::SpanIndex;
use super::validate::validate;
use super::Workspace;
use crate::diag::{render_all, Diagnostic};
use std::path::Path;

/// Everything that stopped a workspace from loading, each problem a located diagnostic.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", render_all(.diagnostics).trim_end())]
pub struct WorkspaceError {
    pub diagnostics: Vec<Diagnostic>,
}

impl WorkspaceError {
    pub fn one(d: Diagnostic) -> Self {
        WorkspaceError {
            diagnostics: vec![d],
        }
    }
}

/// Reads and checks the workspace at `path`. Relative paths inside resolve against its folder.
pub fn load(path: &Path) -> Result<Workspace, WorkspaceError> {
    let source = std::fs::read_to_string(path).map_err(|e| {
        WorkspaceError::one(
            Diagnostic::error(format!("cannot read the workspace: {e}")).in_file(path),
        )
    })?;
    load_str(path, &source)
}

/// Checks workspace text as if it had been read from `path`.
pub fn load_str(path: &Path, source: &str) -> Result<Workspace, WorkspaceError> {
    let de = serde_norway::Deserializer::from_str(source);
    let raw: RawWorkspace = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let field = field
            .trim_end_matches(".?")
            .trim_end_matches('?')
            .to_string();
        let inner = e.into_inner();
        let mut message = clean_serde_message(&inner.to_string(), &field);
        if message.ends_with("expected struct RawWorkspace") {
            message = not_a_workspace(path);
        }
        let mut d = Diagnostic::error(message).in_file(path);
        if let Some(loc) = inner.location() {
            d = d.at(loc.line() as u32, Some(loc.column() as u32));
        }
        if !field.is_empty() && field != "." {
            d = d.field(field);
        }
        WorkspaceError::one(d)
    })?;
    let spans = SpanIndex::build(source);
    validate(path, raw, spans)
}

/// What to say of a file whose top level is not a workspace's mapping (a kernel file given
/// where a workspace goes, say).
fn not_a_workspace(path: &Path) -> String {
    let what = "this is not a workspace: expected a YAML mapping of fields such as `name`, \
                `sizes`, `buffers` and `versions` (docs/workspace.md)";
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    match ext {
        "cu" | "cuh" | "tile" | "py" => format!(
            "{what}; a kernel file goes under a workspace's `versions:`, and `kwb inspect {}` \
             compiles it alone",
            path.display()
        ),
        _ => what.to_string(),
    }
}

/// serde_norway prefixes messages with the field path and puts " at line L column C" in them;
/// we print both ourselves, so they are taken out.
fn clean_serde_message(msg: &str, field: &str) -> String {
    let mut msg = msg.to_string();
    if let Some((prefix, rest)) = msg.split_once(": ") {
        if !prefix.contains(' ') && field.starts_with(prefix) {
            msg = rest.to_string();
        }
    }
    if let Some(i) = msg.find(" at line ") {
        let tail = &msg[i + " at line ".len()..];
        let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let n1 = digits(tail);
        if n1 > 0 && tail[n1..].starts_with(" column ") {
            let after = &tail[n1 + " column ".len()..];
            let n2 = digits(after);
            msg = format!("{}{}", &msg[..i], &after[n2..]);
        }
    }
    msg
}
