//! The diagnostics panel: every problem on screen as `file:line:col: message` (the
//! workspace's first, then each version's), the selected one in full, and on request the
//! offending source line with a caret under the column.

use super::format::short_path;
use super::text::{frame, truncate, wrap, Pen, TAB_WIDTH};
use crate::diag::{Diagnostic, Severity};
use crate::ui::app::{App, Focus, VersionView};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

/// One screen row of the panel.
struct Row {
    spans: Vec<(String, Style)>,
    selected: bool,
}

pub fn render(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let diags = app.all_diagnostics();
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let mut title = vec![Span::raw("Diagnostics")];
    if !diags.is_empty() {
        let warnings = diags.len() - errors;
        let role = if errors > 0 { Role::Error } else { Role::Warn };
        title.push(Span::styled(
            format!(" {errors}✗ {warnings}⚠"),
            theme.style(role),
        ));
    }
    let inner = frame(buf, theme, area, title, app.focus == Focus::Diagnostics);
    if inner.is_empty() {
        return;
    }
    if diags.is_empty() {
        Pen::row(buf, inner, 0).text(buf, "No problems.", theme.style(Role::Dim));
        return;
    }
    let selected = app.diagnostic.min(diags.len() - 1);
    let mut rows = Vec::new();
    let mut shown = (0, 0); // the selected diagnostic's rows: first, end
    for (i, d) in diags.iter().enumerate() {
        if i == selected {
            shown.0 = rows.len();
            rows.extend(full(app, theme, d, inner.width));
            if app.show_diagnostic_source {
                rows.extend(source(app, theme, d, owner(app, i), inner.width));
            }
            shown.1 = rows.len();
        } else {
            let (icon, role) = severity(d.severity);
            let text = located(app, d);
            let first = text.lines().next().unwrap_or_default();
            let text = truncate(first, inner.width.saturating_sub(2));
            rows.push(Row {
                spans: vec![
                    (format!("{icon} "), theme.style(role)),
                    (text, theme.style(Role::Text)),
                ],
                selected: false,
            });
        }
    }
    let height = usize::from(inner.height);
    let first = shown.1.saturating_sub(height).min(shown.0);
    for (row, r) in rows.iter().skip(first).take(height).enumerate() {
        let row = row as u16; // < inner.height
        let mut pen = Pen::row(buf, inner, row);
        for (text, style) in &r.spans {
            pen.text(buf, text, *style);
        }
        if r.selected {
            let line = Rect::new(inner.x, inner.y + row, inner.width, 1);
            buf.set_style(line, theme.style(Role::Selected));
        }
    }
}

/// `file:line:col: [field: ]message`, the file relative to the workspace.
fn located(app: &App, d: &Diagnostic) -> String {
    let mut s = String::new();
    if let Some(file) = &d.file {
        s.push_str(&short_path(app, file));
        if let Some(line) = d.line {
            s.push_str(&format!(":{line}"));
            if let Some(col) = d.column {
                s.push_str(&format!(":{col}"));
            }
        }
        s.push_str(": ");
    }
    if let Some(field) = &d.field {
        s.push_str(field);
        s.push_str(": ");
    }
    s.push_str(&d.message);
    s
}

fn severity(s: Severity) -> (&'static str, Role) {
    match s {
        Severity::Error => ("✗", Role::Error),
        Severity::Warning => ("⚠", Role::Warn),
        Severity::Note => ("·", Role::Dim),
    }
}

/// The selected diagnostic, wrapped in full under its icon.
fn full(app: &App, theme: &Theme, d: &Diagnostic, width: u16) -> Vec<Row> {
    let (icon, role) = severity(d.severity);
    wrap(&located(app, d), width.saturating_sub(2))
        .into_iter()
        .enumerate()
        .map(|(i, line)| Row {
            spans: vec![
                (
                    if i == 0 {
                        format!("{icon} ")
                    } else {
                        "  ".into()
                    },
                    theme.style(role),
                ),
                (line, theme.style(Role::Text)),
            ],
            selected: true,
        })
        .collect()
}

/// The version whose diagnostic is number `index` of `App::all_diagnostics`.
fn owner(app: &App, index: usize) -> Option<&VersionView> {
    let mut i = index.checked_sub(app.workspace_errors.len())?;
    for v in &app.versions {
        if i < v.diagnostics.len() {
            return Some(v);
        }
        i -= v.diagnostics.len();
    }
    None
}

/// The source line a diagnostic points at, with a caret under its column, shifted left when
/// the column would be off the panel.
fn source(
    app: &App,
    theme: &Theme,
    d: &Diagnostic,
    v: Option<&VersionView>,
    width: u16,
) -> Vec<Row> {
    let dim = theme.style(Role::Dim);
    let plain = |text: String| Row {
        spans: vec![(text, dim)],
        selected: false,
    };
    let Some(line_no) = d.line else {
        return vec![plain("  (no line to show)".into())];
    };
    let text = v
        .filter(|v| d.file.as_ref().is_none_or(|f| *f == v.file))
        .and_then(|v| v.source.lines().nth(line_no.saturating_sub(1) as usize));
    let Some(text) = text else {
        let file = d
            .file
            .as_deref()
            .map(|f| short_path(app, f))
            .unwrap_or_default();
        return vec![plain(format!("  (source of {file} is not loaded)"))];
    };
    // Tabs become spaces so the caret lines up; the column counts characters from 1.
    let mut expanded = String::new();
    let mut caret = None;
    let col = d.column.unwrap_or(0) as usize;
    for (i, c) in text.chars().enumerate() {
        if i + 1 == col {
            caret = Some(expanded.chars().count());
        }
        if c == '\t' {
            let stop =
                (expanded.chars().count() / usize::from(TAB_WIDTH) + 1) * usize::from(TAB_WIDTH);
            expanded.extend(std::iter::repeat_n(' ', stop - expanded.chars().count()));
        } else {
            expanded.push(c);
        }
    }
    if col > 0 && caret.is_none() {
        caret = Some(expanded.chars().count());
    }
    let gutter = format!("{line_no} │ ");
    let room = usize::from(width)
        .saturating_sub(gutter.chars().count())
        .max(1);
    let shift = match caret {
        Some(c) if c >= room => (c + 1 - room / 2).min(c),
        _ => 0,
    };
    let shown: String = if shift > 0 {
        std::iter::once('…')
            .chain(expanded.chars().skip(shift + 1))
            .collect()
    } else {
        expanded
    };
    let mut rows = vec![Row {
        spans: vec![(gutter.clone(), dim), (shown, theme.style(Role::Text))],
        selected: false,
    }];
    if let Some(c) = caret {
        let pad = " ".repeat(gutter.chars().count() - 2);
        let spaces = " ".repeat(c - shift);
        rows.push(Row {
            spans: vec![
                (format!("{pad}│ {spaces}"), dim),
                ("^".into(), theme.style(Role::Error)),
            ],
            selected: false,
        });
    }
    rows
}
