//! Which themes `kwb watch` offers: the three shipped ones (compiled in, so they work from any
//! folder), then any in `$KWB_THEMES` or `~/.config/kwb/themes`. With `NO_COLOR`, only the
//! monochrome theme. A broken theme file is reported and skipped; the default stays.

use super::theme::{load_dir, Theme};
use std::path::{Path, PathBuf};

const SHIPPED: [(&str, &str); 3] = [
    ("themes/dark.yaml", include_str!("../../themes/dark.yaml")),
    ("themes/light.yaml", include_str!("../../themes/light.yaml")),
    (
        "themes/high-contrast.yaml",
        include_str!("../../themes/high-contrast.yaml"),
    ),
];

/// The themes to cycle through, and one message per theme that could not be loaded.
pub fn available(color: bool) -> (Vec<Theme>, Vec<String>) {
    if !color {
        return (vec![Theme::monochrome()], Vec::new());
    }
    let mut themes = Vec::new();
    let mut problems = Vec::new();
    for (origin, text) in SHIPPED {
        match Theme::parse(text, Path::new(origin)) {
            Ok(t) => themes.push(t),
            Err(e) => problems.push(e.to_string()),
        }
    }
    for dir in user_dirs() {
        if dir.is_dir() {
            let (found, diags) = load_dir(&dir);
            problems.extend(
                diags
                    .iter()
                    .map(|d| format!("{d}; using the default theme")),
            );
            for t in found {
                themes.retain(|x: &Theme| x.name != t.name);
                themes.push(t);
            }
        }
    }
    if themes.is_empty() {
        themes.push(Theme::builtin());
    }
    (themes, problems)
}

fn user_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("KWB_THEMES").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(c) = config {
        dirs.push(c.join("kwb/themes"));
    }
    dirs
}

/// `--theme`: a theme's name, or a path to a theme file (loaded and added to `themes`).
pub fn pick(themes: &mut Vec<Theme>, name: &str) -> Result<usize, String> {
    if let Some(i) = themes.iter().position(|t| t.name == name) {
        return Ok(i);
    }
    let path = Path::new(name);
    if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
        return match Theme::load(path) {
            Ok(t) => {
                themes.push(t);
                Ok(themes.len() - 1)
            }
            Err(e) => Err(format!("{e}; using the default theme")),
        };
    }
    let names: Vec<&str> = themes.iter().map(|t| t.name.as_str()).collect();
    Err(format!(
        "no theme `{name}`; themes: {}; using the default",
        names.join(", ")
    ))
}
