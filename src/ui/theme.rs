//! TUI colour themes. A theme is a small YAML file (format documented at the top of
//! `themes/dark.yaml`) mapping each UI role to a style and naming the syntect code theme for
//! source panes. The dark theme is compiled in, so kwb always has one; user themes are
//! checked strictly and every mistake comes back with file, line, column and field, because
//! a silently ignored typo in a colour file is hard to spot. `monochrome` serves NO_COLOR.

use crate::diag::Diagnostic;
use ratatui::style::{Color, Modifier, Style};
use serde::de::{self, value::MapAccessDeserializer, Deserializer, MapAccess, Unexpected, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const BUILTIN_YAML: &str = include_str!("../../themes/dark.yaml");

macro_rules! roles {
    ($($role:ident),* $(,)?) => {
        /// What a piece of the UI is, so panels ask for a role rather than a colour. Theme
        /// files spell roles in snake_case: `text`, `border_focused`, `diff_add` ...
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Role { $($role),* }

        impl Role {
            pub const ALL: [Role; 16] = [$(Role::$role),*];
        }
    };
}

roles! {
    Text, Dim, Accent, Border, BorderFocused, Title, Selected, Ok, Warn, Error, Stale, Bar, Peak,
    Highlight, DiffAdd, DiffRemove,
}

/// A TUI theme: a style per role plus the code theme's name.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    pub code_theme: String,
    styles: [Style; 16],
}

impl Theme {
    pub fn style(&self, role: Role) -> Style {
        self.styles[role as usize]
    }

    /// The dark theme compiled into kwb.
    pub fn builtin() -> Theme {
        static BUILTIN: std::sync::OnceLock<Theme> = std::sync::OnceLock::new();
        let parse = || parse_over(BUILTIN_YAML, Path::new("dark.yaml"), &Theme::monochrome());
        // A unit test guarantees the parse; monochrome only guards against a broken build.
        BUILTIN
            .get_or_init(|| parse().unwrap_or_else(|_| Theme::monochrome()))
            .clone()
    }

    /// For NO_COLOR: modifiers only (reverse for the selection, bold for titles and errors).
    pub fn monochrome() -> Theme {
        let mut styles = [Style::new(); 16];
        use Role::*;
        for role in [Accent, BorderFocused, Title, Error, Peak] {
            styles[role as usize] = Style::new().bold();
        }
        styles[Selected as usize] = Style::new().reversed();
        styles[Stale as usize] = Style::new().italic();
        styles[Highlight as usize] = Style::new().underlined();
        let name = "monochrome".to_string();
        let code_theme = "base16-ocean.dark".to_string(); // NO_COLOR: never used
        Theme {
            name,
            code_theme,
            styles,
        }
    }

    /// Parses theme YAML; `origin` names the file in messages and gives the default name.
    /// Roles the text leaves out take the builtin theme's style.
    pub fn parse(text: &str, origin: &Path) -> Result<Theme, ThemeError> {
        parse_over(text, origin, &Theme::builtin())
    }

    pub fn load(path: &Path) -> Result<Theme, ThemeError> {
        let read = std::fs::read_to_string(path);
        let text = read.map_err(|e| ThemeError::Read(path.into(), e))?;
        Theme::parse(&text, path)
    }
}

/// All `*.yaml` themes in a folder, sorted by name, plus a diagnostic for each broken one
/// (which is skipped); the builtin is first if no "dark" theme is found.
pub fn load_dir(dir: &Path) -> (Vec<Theme>, Vec<Diagnostic>) {
    let (mut themes, mut diags) = (Vec::<Theme>::new(), Vec::new());
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            let msg = format!("cannot read the themes folder: {e}");
            diags.push(Diagnostic::error(msg).in_file(dir));
            Vec::new()
        }
    };
    paths.retain(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    paths.sort();
    for path in paths {
        match Theme::load(&path) {
            Ok(theme) if themes.iter().any(|t| t.name == theme.name) => {
                let msg = format!("`{}` is already loaded; this one is skipped", theme.name);
                diags.push(Diagnostic::warning(msg).in_file(path));
            }
            Ok(theme) => themes.push(theme),
            Err(e) => diags.push(e.to_diagnostic()),
        }
    }
    themes.sort_by(|a, b| a.name.cmp(&b.name));
    if !themes.iter().any(|t| t.name == "dark") {
        themes.insert(0, Theme::builtin());
    }
    (themes, diags)
}

/// Why a theme could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("{}: cannot read theme: {}", .0.display(), .1)]
    Read(PathBuf, #[source] std::io::Error),
    /// Malformed YAML ("invalid YAML: ..."), or YAML that is not a theme: located (1-based
    /// line and column) and, below the top level, naming the field, e.g. `roles.ok.fg`.
    #[error("{0}")]
    Invalid(Diagnostic),
}

impl ThemeError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            ThemeError::Read(path, e) => {
                Diagnostic::error(format!("cannot read theme: {e}")).in_file(path)
            }
            ThemeError::Invalid(diagnostic) => diagnostic.clone(),
        }
    }
}

fn parse_over(text: &str, origin: &Path, base: &Theme) -> Result<Theme, ThemeError> {
    // Check the YAML itself first, so syntax errors and schema errors read differently.
    let yaml = serde_norway::from_str::<serde_norway::Value>(text);
    yaml.map_err(|e| yaml_error(&e, text, origin, true))?;
    let raw = serde_norway::from_str::<RawTheme>(text);
    let raw = raw.map_err(|e| yaml_error(&e, text, origin, false))?;
    let mut theme = base.clone();
    let stem = origin.file_stem().map(|s| s.to_string_lossy().into_owned());
    theme.name = raw.name.or(stem).unwrap_or_default();
    theme.code_theme = raw.code_theme.unwrap_or(theme.code_theme);
    for (role, RawStyle(style)) in raw.roles.unwrap_or_default() {
        theme.styles[role as usize] = style;
    }
    Ok(theme)
}

/// serde_norway says `[field.path: ]message[ at line L column C]`; take that apart.
fn yaml_error(e: &serde_norway::Error, text: &str, origin: &Path, syntax: bool) -> ThemeError {
    let mut message = e.to_string();
    let mut d = Diagnostic::error("").in_file(origin);
    if let Some(at) = e.location() {
        let suffix = format!(" at line {} column {}", at.line(), at.column());
        message = message.replacen(&suffix, "", 1);
        d = d.at(at.line() as u32, Some(at.column() as u32));
    }
    match message.split_once(": ") {
        _ if syntax => message = format!("invalid YAML: {message}"),
        // A field path has no spaces; top-level messages ("invalid type: ...") do.
        Some((field, rest)) if !field.contains(' ') => {
            d = d.field(field);
            message = rest.replace("unknown variant", "unknown role");
        }
        _ => {}
    }
    if syntax && text.contains(": #") {
        message.push_str(" (a bare # starts a YAML comment: write \"#rrggbb\" in quotes)");
    }
    d.message = message;
    ThemeError::Invalid(d)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTheme {
    name: Option<String>,
    code_theme: Option<String>,
    roles: Option<HashMap<Role, RawStyle>>,
}

/// A role's style: a bare colour (the foreground) or a map of style fields.
struct RawStyle(Style);

impl<'de> Deserialize<'de> for RawStyle {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawStyle, D::Error> {
        let visitor = StyleOrColour { map_ok: true };
        d.deserialize_any(visitor).map(RawStyle)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct StyleFields {
    #[serde(deserialize_with = "colour")]
    fg: Option<Color>,
    #[serde(deserialize_with = "colour")]
    bg: Option<Color>,
    bold: bool,
    italic: bool,
    underline: bool,
    dim: bool,
    reversed: bool,
}

/// `fg:` / `bg:`: a colour. Given but empty (often an unquoted `#rrggbb`) is an error.
fn colour<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Color>, D::Error> {
    let visitor = StyleOrColour { map_ok: false };
    d.deserialize_any(visitor).map(|style| style.fg)
}

/// Reads a colour (as a style with that foreground) or, where `map_ok`, a map of fields.
struct StyleOrColour {
    map_ok: bool,
}

impl<'de> Visitor<'de> for StyleOrColour {
    type Value = Style;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a colour: a name (black, red, …), #rrggbb or 0-255")?;
        f.write_str([" (or a map of style fields)", ""][!self.map_ok as usize])
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Style, E> {
        let colour = parse_colour(v).map_err(E::custom)?;
        Ok(Style::new().fg(colour))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Style, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Style, E> {
        let hint = "write \"#rrggbb\" in quotes, as a bare # starts a comment";
        Err(E::custom(format!("no colour given; {hint}")))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Style, A::Error> {
        if !self.map_ok {
            return Err(de::Error::invalid_type(Unexpected::Map, &self));
        }
        let f = StyleFields::deserialize(MapAccessDeserializer::new(map))?;
        let mut style = Style::new();
        (style.fg, style.bg) = (f.fg, f.bg);
        #[rustfmt::skip]
        let modifiers = [(f.bold, Modifier::BOLD), (f.italic, Modifier::ITALIC),
            (f.underline, Modifier::UNDERLINED), (f.dim, Modifier::DIM), (f.reversed, Modifier::REVERSED)];
        for (_, m) in modifiers.into_iter().filter(|(on, _)| *on) {
            style = style.add_modifier(m);
        }
        Ok(style)
    }
}

/// A colour name (any case; `_`, `-`, a space or nothing between words; `grey` too),
/// `#rrggbb`, or a 0-255 palette index.
fn parse_colour(text: &str) -> Result<Color, String> {
    let t = text.trim();
    if let Ok(n) = t.parse::<i64>() {
        if !(0..=255).contains(&n) {
            return Err(format!("colour index {n} is out of range; expected 0-255"));
        }
    }
    let (what, expected) = match t.starts_with('#') {
        true => ("bad", "#rrggbb with six hex digits"),
        false => ("unknown", "a name (black, red, …), #rrggbb or 0-255"),
    };
    t.parse()
        .map_err(|_| format!("{what} colour `{text}`; expected {expected}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    #[test]
    fn builtin_and_shipped_themes_parse_cover_every_role_and_differ() {
        let builtin = parse_over(BUILTIN_YAML, Path::new("dark.yaml"), &Theme::monochrome());
        assert_eq!(builtin.unwrap(), Theme::builtin());
        let mut themes = Vec::new();
        for file in ["dark", "light", "high-contrast"] {
            let path = repo(&format!("themes/{file}.yaml"));
            let text = std::fs::read_to_string(&path).unwrap();
            let raw: RawTheme = serde_norway::from_str(&text).unwrap();
            let roles = raw.roles.unwrap().len();
            assert_eq!(roles, Role::ALL.len(), "{file} leaves roles out");
            themes.push(Theme::load(&path).unwrap());
            assert_eq!(themes.last().unwrap().name, file);
        }
        assert_eq!(themes[0], Theme::builtin());
        assert!(themes[0] != themes[1] && themes[1] != themes[2] && themes[0] != themes[2]);
        let hc_highlight = Style::new().bg(Color::Indexed(236));
        assert_eq!(themes[2].style(Role::Highlight), hc_highlight);
        let mono = Theme::monochrome();
        let colours = Role::ALL.map(|r| mono.style(r).fg.or(mono.style(r).bg));
        assert_eq!(colours, [None; 16], "monochrome has colours");
        assert_eq!(mono.style(Role::Selected), Style::new().reversed());
        let bold = [Role::Title, Role::Error].map(|r| mono.style(r));
        assert_eq!(bold, [Style::new().bold(); 2]);
    }

    #[test]
    fn colours_styles_and_fallback_to_builtin() {
        let text = "roles:\n  ok: Light-Green\n  warn: 214\n  \
            bar: {fg: \"#0a0B0c\", bg: dark_grey, underline: true}\n";
        let theme = Theme::parse(text, Path::new("themes/mine.yaml")).unwrap();
        assert_eq!(theme.name, "mine");
        assert_eq!(theme.code_theme, "base16-ocean.dark");
        assert_eq!(theme.style(Role::Ok), Style::new().fg(Color::LightGreen));
        let warn = Style::new().fg(Color::Indexed(214));
        assert_eq!(theme.style(Role::Warn), warn);
        let bar = Style::new().fg(Color::Rgb(10, 11, 12)).bg(Color::DarkGray);
        assert_eq!(theme.style(Role::Bar), bar.underlined());
        assert_eq!(theme.style(Role::Text), Theme::builtin().style(Role::Text));
    }

    /// Each fixture names its failure mode and, on an `# expect:` line, the exact message.
    #[test]
    fn broken_fixtures_say_where_and_what() {
        let read = std::fs::read_dir(repo("tests/fixtures/themes")).unwrap();
        let mut files: Vec<PathBuf> = read.map(|e| e.unwrap().path()).collect();
        files.sort();
        let stem = |f: &PathBuf| f.file_stem().unwrap().to_string_lossy().into_owned();
        let names: Vec<_> = files.iter().map(stem).collect();
        let modes = "bad-colour malformed unknown-field unknown-role wrong-type";
        let present = modes.split(' ').all(|m| names.iter().any(|n| n == m));
        assert!(present, "{names:?}");
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let mut lines = text.lines();
            let expected = lines.find_map(|l| l.strip_prefix("# expect: ")).unwrap();
            let err = Theme::load(file).unwrap_err();
            assert_eq!(err.to_string(), format!("{}:{expected}", file.display()));
            let d = err.to_diagnostic();
            let at = format!("{}:{}:", d.line.unwrap(), d.column.unwrap());
            let located = expected.starts_with(&at) && d.file.as_ref() == Some(file);
            assert!(located, "{d:?}");
        }
    }

    #[test]
    fn other_mistakes_are_caught_too() {
        let path = Path::new("t.yaml");
        let err = |text: &str| Theme::parse(text, path).unwrap_err().to_string();
        let fields = "expected one of `name`, `code_theme`, `roles`";
        let unknown = format!("t.yaml:1:1: error: unknown field `colours`, {fields}");
        assert_eq!(err("colours: {}"), unknown);
        let range = "roles.ok: colour index 300 is out of range; expected 0-255";
        assert_eq!(
            err("roles:\n  ok: 300"),
            format!("t.yaml:2:7: error: {range}")
        );
        let short = "roles.ok.fg: bad colour `#12345`; expected #rrggbb with six hex digits";
        assert!(err("roles:\n  ok: {fg: \"#12345\"}").ends_with(short));
        assert!(err("roles:\n  ok:\n    fg: #aabbcc\n").contains("a bare # starts a"));
        assert!(err("roles:\n  ok: {fg: #aabbcc}\n").contains("a bare # starts a"));
        assert!(err("roles:\n  ok: {fg: {bold: true}}").contains("expected a colour: a name"));
        let missing = Theme::load(Path::new("/no/such/theme.yaml"));
        assert!(matches!(missing, Err(ThemeError::Read(..))));
    }

    #[test]
    fn load_dir_skips_broken_files_with_a_diagnostic() {
        let dir = tempfile::tempdir().unwrap();
        let copy = |from: &str, to: &str| std::fs::copy(repo(from), dir.path().join(to)).unwrap();
        copy("themes/light.yaml", "light.yaml");
        copy("themes/high-contrast.yaml", "zz.yaml");
        copy("tests/fixtures/themes/bad-colour.yaml", "bad.yaml");
        std::fs::write(dir.path().join("notes.txt"), "not a theme").unwrap();
        let (themes, diags) = load_dir(dir.path());
        let names = |themes: &[Theme]| themes.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&themes), ["dark", "high-contrast", "light"]);
        assert_eq!(themes[0], Theme::builtin());
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].file, Some(dir.path().join("bad.yaml")));
        let (line, field) = (diags[0].line, diags[0].field.as_deref());
        assert_eq!((line, field), (Some(6), Some("roles.ok.fg")));
        let (shipped, diags) = load_dir(&repo("themes"));
        assert!(diags.is_empty(), "{diags:?}");
        assert!(names(&themes).iter().all(|n| names(&shipped).contains(n)));
        assert_eq!(load_dir(Path::new("/no/such/dir")).0, [Theme::builtin()]);
    }
}
