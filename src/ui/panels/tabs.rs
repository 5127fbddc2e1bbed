//! The centre: the tab bar (Source | PTX | SASS | Compare | CUDA | Sweep | Roofline, with what
//! the panels are showing on its right) and the framed body of the current tab.

use super::text::{frame, sentence, width, Pen};
use super::{code, compare, format::short_path, roofline, sweep};
use crate::ui::app::{App, Focus, Tab, VersionStatus};
use crate::ui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

/// The one-row tab bar, with what the panels show (version · size · arch) on its right. Tabs
/// are numbered with their keys (1-7; the Sweep tab's 6 is missing where nothing is swept)
/// when there is room; the numbers give way first to keep that on its right; where there is
/// less room, every tab still shows, by its full title, then its short one, then the short
/// one without padding.
pub fn render_bar(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let tabs = app.tabs();
    let separators = tabs.len() as u16 - 1;
    let labels =
        |f: &dyn Fn(Tab) -> String| -> Vec<String> { tabs.iter().map(|t| f(*t)).collect() };
    let forms = [
        labels(&|t| format!(" {} {} ", t.number(), t.title())),
        labels(&|t| format!(" {} ", t.title())),
        labels(&|t| format!(" {} ", t.short())),
        labels(&|t| t.short().to_string()),
    ];
    let mut where_ = Vec::new();
    if let Some(v) = app.current() {
        where_.push(v.name.clone());
    }
    if let Some(s) = app.workspace.sizes.get(app.size) {
        where_.push(s.name.clone());
    }
    where_.push(app.arch.to_string());
    let info = format!("{} ", where_.join(" · "));
    let used = |l: &Vec<String>| l.iter().map(|s| width(s)).sum::<u16>() + separators;
    let chosen = forms[..2]
        .iter()
        .find(|l| used(l) + width(&info) < area.width)
        .or_else(|| forms.iter().find(|l| used(l) <= area.width))
        .unwrap_or(&forms[3]);
    let mut pen = Pen::row(buf, area, 0);
    for (i, (tab, label)) in tabs.iter().zip(chosen).enumerate() {
        if i > 0 {
            pen.text(buf, "│", theme.style(Role::Border));
        }
        let role = if *tab == app.tab {
            Role::Selected
        } else {
            Role::Dim
        };
        pen.text(buf, label, theme.style(role));
    }
    if pen.room() > width(&info) {
        pen.right(buf, &info, theme.style(Role::Accent));
    }
}

/// The current tab's body inside its frame (focused when keys scroll it).
pub fn render_body(app: &App, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let v = app.current();
    let mut title = vec![Span::raw(app.tab.title())];
    let detail = match app.tab {
        // The frame's corners, the spaces around the title and `Compare · `.
        Tab::Compare => compare::title(app, area.width.saturating_sub(14)),
        Tab::Sweep => sweep::title(app),
        Tab::Roofline => app.workspace.sizes.get(app.size).map(|s| s.name.clone()),
        Tab::Source => v.map(|v| format!("{} · {}", v.name, short_path(app, &v.file))),
        Tab::Ptx | Tab::Sass | Tab::Cuda => v.map(|v| v.name.clone()),
    };
    if let Some(d) = detail {
        title.push(Span::raw(format!(" · {d}")));
    }
    // The Source tab shows the source of the latest compile, even a failed one: that is
    // current; the compiler's tabs keep the last good compile's output, which is not.
    let stale = v.is_some_and(|v| {
        v.stale() && (app.tab != Tab::Source || v.status != VersionStatus::CompileError)
    });
    if !matches!(app.tab, Tab::Compare | Tab::Sweep | Tab::Roofline) && stale {
        title.push(Span::styled(" (stale)", theme.style(Role::Stale)));
    }
    let inner = frame(buf, theme, area, title, app.focus == Focus::Main);
    if inner.is_empty() {
        return;
    }
    let Some(v) = v else {
        return if app.tab == Tab::Compare {
            compare::render(app, theme, inner, buf)
        } else if app.tab == Tab::Sweep {
            sweep::render(app, theme, inner, buf)
        } else if app.tab == Tab::Roofline {
            roofline::render(app, theme, inner, buf)
        } else {
            sentence(buf, inner, "No version selected.", theme.style(Role::Dim))
        };
    };
    match app.tab {
        Tab::Source => code::source(app, theme, inner, buf, v),
        Tab::Ptx => code::ptx(app, theme, inner, buf, v),
        Tab::Sass => code::sass(app, theme, inner, buf, v),
        Tab::Cuda => code::cuda(app, theme, inner, buf, v),
        Tab::Compare => compare::render(app, theme, inner, buf),
        Tab::Sweep => sweep::render(app, theme, inner, buf),
        Tab::Roofline => roofline::render(app, theme, inner, buf),
    }
}
