//! Key and mouse bindings: terminal events become [`Action`]s here and nowhere else. The
//! bindings are data: a default table, which `~/.config/kwb/keys.yaml` (or `$KWB_KEYS`) can
//! override per action, e.g. `quit: [q, ctrl-c]` or `next_tab: [tab, l]`. Vim-like keys and
//! arrows both work by default; the help overlay (`?`) lists whatever is bound.

use super::action::Action;
use super::app::Tab;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use std::collections::BTreeMap;
use std::path::Path;

/// Every bindable action: its name in keys.yaml, its default keys, and the help line.
/// (`help_keys` is how the defaults are shown; custom bindings are shown as written.)
const ACTIONS: &[(&str, &[&str], &str, &str)] = &[
    ("quit", &["q", "esc", "ctrl-c"], "q, Ctrl-C", "quit"),
    ("help", &["?"], "?", "show or hide this help"),
    (
        "down",
        &["j", "down"],
        "j k, ↓ ↑",
        "next / previous version (or line, in the focused panel or this help)",
    ),
    ("up", &["k", "up"], "", ""),
    (
        "focus_next",
        &["w", "right", "left"],
        "w, ← →",
        "move focus: versions → main → diagnostics",
    ),
    (
        "next_tab",
        &["tab"],
        "Tab, Shift-Tab, 1-7",
        "tabs: Source, PTX, SASS, Compare, CUDA (tile versions), Sweep (sweeps), Roofline",
    ),
    ("prev_tab", &["shift-tab"], "", ""),
    ("tab_source", &["1"], "", ""),
    ("tab_ptx", &["2"], "", ""),
    ("tab_sass", &["3"], "", ""),
    ("tab_compare", &["4"], "", ""),
    ("tab_cuda", &["5"], "", ""),
    ("tab_sweep", &["6"], "", ""),
    ("tab_roofline", &["7"], "", ""),
    (
        "page_down",
        &["pagedown", "ctrl-d"],
        "PgUp PgDn, Ctrl-U Ctrl-D, g G",
        "scroll the main tab (or this help)",
    ),
    ("page_up", &["pageup", "ctrl-u"], "", ""),
    ("top", &["g", "home"], "", ""),
    ("bottom", &["G", "end"], "", ""),
    (
        "mark",
        &["m"],
        "m",
        "mark the version for Compare (two marks compare)",
    ),
    (
        "next_size",
        &["s"],
        "s",
        "next problem size (run panels, Roofline)",
    ),
    (
        "block_down",
        &["b"],
        "b B",
        "what-if: halve / double the block size",
    ),
    ("block_up", &["B"], "", ""),
    (
        "shared_down",
        &["h"],
        "h H",
        "what-if: 4 KiB less / more dynamic shared memory",
    ),
    ("shared_up", &["H"], "", ""),
    (
        "regs_down",
        &["r"],
        "r R",
        "what-if: register cap down / up by 8",
    ),
    ("regs_up", &["R"], "", ""),
    ("what_if_reset", &["0"], "0", "what-if: reset"),
    (
        "diagnostic_source",
        &["e", "enter"],
        "e, Enter",
        "show the selected diagnostic's source line",
    ),
    ("theme", &["t"], "t", "next theme"),
    ("reconnect", &["c"], "c", "reconnect a lost GPU worker"),
    (
        "reseed",
        &["n"],
        "n",
        "new inputs: a fresh seed, and every version runs again",
    ),
];

fn action_named(name: &str) -> Option<Action> {
    Some(match name {
        "quit" => Action::Quit,
        "help" => Action::ToggleHelp,
        "down" => Action::Down,
        "up" => Action::Up,
        "focus_next" => Action::FocusNext,
        "next_tab" => Action::NextTab,
        "prev_tab" => Action::PrevTab,
        "tab_source" => Action::SelectTab(Tab::Source),
        "tab_ptx" => Action::SelectTab(Tab::Ptx),
        "tab_sass" => Action::SelectTab(Tab::Sass),
        "tab_compare" => Action::SelectTab(Tab::Compare),
        "tab_cuda" => Action::SelectTab(Tab::Cuda),
        "tab_sweep" => Action::SelectTab(Tab::Sweep),
        "tab_roofline" => Action::SelectTab(Tab::Roofline),
        "page_down" => Action::PageDown,
        "page_up" => Action::PageUp,
        "top" => Action::Top,
        "bottom" => Action::Bottom,
        "mark" => Action::ToggleMark,
        "next_size" => Action::NextSize,
        "block_down" => Action::WhatIfBlock(-1),
        "block_up" => Action::WhatIfBlock(1),
        "shared_down" => Action::WhatIfShared(-1),
        "shared_up" => Action::WhatIfShared(1),
        "regs_down" => Action::WhatIfRegisters(-1),
        "regs_up" => Action::WhatIfRegisters(1),
        "what_if_reset" => Action::WhatIfReset,
        "diagnostic_source" => Action::ToggleDiagnosticSource,
        "theme" => Action::CycleTheme,
        "reconnect" => Action::Reconnect,
        "reseed" => Action::Reseed,
        _ => return None,
    })
}

/// A key with its modifiers, as bindings name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chord {
    code: KeyCode,
    ctrl: bool,
}

/// `q`, `G`, `?`, `ctrl-c`, `shift-tab`, `down`, `pagedown`, `enter`, `esc`, `f5` ...
fn parse_chord(s: &str) -> Option<Chord> {
    let (ctrl, key) = match s.strip_prefix("ctrl-") {
        Some(k) => (true, k),
        None => (false, s),
    };
    let code = match key.to_ascii_lowercase().as_str() {
        _ if key.chars().count() == 1 => KeyCode::Char(key.chars().next()?),
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "tab" => KeyCode::Tab,
        "shift-tab" | "backtab" => KeyCode::BackTab,
        "enter" => KeyCode::Enter,
        "esc" => KeyCode::Esc,
        "space" => KeyCode::Char(' '),
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" | "pgup" => KeyCode::PageUp,
        "pagedown" | "pgdn" => KeyCode::PageDown,
        f if f.starts_with('f') => {
            KeyCode::F(f[1..].parse().ok().filter(|n| (1..=24).contains(n))?)
        }
        _ => return None,
    };
    Some(Chord { code, ctrl })
}

/// The bindings in force, and the help lines that describe them.
#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Chord, &'static str)>,
    help: Vec<(String, String)>,
}

impl Default for Keymap {
    fn default() -> Keymap {
        Keymap::with(&BTreeMap::new())
    }
}

impl Keymap {
    /// The defaults with `custom` (action name → keys, already checked) in their place.
    fn with(custom: &BTreeMap<String, Vec<String>>) -> Keymap {
        let mut bindings = Vec::new();
        let mut help = Vec::new();
        for (name, defaults, shown, what) in ACTIONS {
            match custom.get(*name) {
                Some(keys) => {
                    bindings.extend(
                        keys.iter()
                            .filter_map(|k| parse_chord(k))
                            .map(|c| (c, *name)),
                    );
                    help.push((keys.join(", "), name.replace('_', " ")));
                }
                None => {
                    bindings.extend(
                        defaults
                            .iter()
                            .filter_map(|k| parse_chord(k))
                            .map(|c| (c, *name)),
                    );
                    if !shown.is_empty() {
                        help.push((shown.to_string(), what.to_string()));
                    }
                }
            }
        }
        help.push(("mouse wheel".into(), "scroll".into()));
        Keymap { bindings, help }
    }

    /// Parses a keys.yaml: a map from action name to a list of keys. Errors say which action
    /// or key is wrong and list what is allowed.
    pub fn parse(text: &str, origin: &Path) -> Result<Keymap, String> {
        let custom: BTreeMap<String, Vec<String>> = serde_norway::from_str(text)
            .map_err(|e| format!("{}: {e}; expected `action: [key, ...]`", origin.display()))?;
        for (name, keys) in &custom {
            if action_named(name).is_none() {
                let known: Vec<&str> = ACTIONS.iter().map(|a| a.0).collect();
                return Err(format!(
                    "{}: unknown action `{name}`; actions: {}",
                    origin.display(),
                    known.join(", ")
                ));
            }
            if let Some(bad) = keys.iter().find(|k| parse_chord(k).is_none()) {
                return Err(format!(
                    "{}: {name}: unknown key `{bad}`; expected a character, ctrl-X, up, down, left, right, tab, shift-tab, enter, esc, space, home, end, pageup, pagedown or f1-f24",
                    origin.display()
                ));
            }
        }
        Ok(Keymap::with(&custom))
    }

    /// The user's keymap (`$KWB_KEYS`, else `~/.config/kwb/keys.yaml`) if there is one, with a
    /// message when it could not be used (the defaults are used instead).
    pub fn load() -> (Keymap, Option<String>) {
        let path = std::env::var_os("KWB_KEYS")
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| {
                let config = std::env::var_os("XDG_CONFIG_HOME")
                    .filter(|v| !v.is_empty())
                    .map(std::path::PathBuf::from)
                    .or_else(|| {
                        std::env::var_os("HOME")
                            .map(|h| std::path::PathBuf::from(h).join(".config"))
                    })?;
                Some(config.join("kwb/keys.yaml")).filter(|p| p.is_file())
            });
        let Some(path) = path else {
            return (Keymap::default(), None);
        };
        match std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|t| Keymap::parse(&t, &path))
        {
            Ok(k) => (k, None),
            Err(e) => (
                Keymap::default(),
                Some(format!("{e}; using the default keys")),
            ),
        }
    }

    /// The help overlay's lines: (keys, what they do).
    pub fn help(&self) -> &[(String, String)] {
        &self.help
    }

    /// The action for a terminal event, if it has one.
    pub fn action_for(&self, event: &Event) -> Option<Action> {
        match event {
            Event::Key(k) if k.kind != KeyEventKind::Release => self.key(k),
            Event::Mouse(m) => match m.kind {
                MouseEventKind::ScrollDown => Some(Action::Scroll(3)),
                MouseEventKind::ScrollUp => Some(Action::Scroll(-3)),
                _ => None,
            },
            Event::Resize(w, h) => Some(Action::Resize(ratatui::layout::Rect::new(0, 0, *w, *h))),
            _ => None,
        }
    }

    fn key(&self, k: &KeyEvent) -> Option<Action> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        self.bindings
            .iter()
            .find(|(c, _)| c.code == k.code && c.ctrl == ctrl)
            .and_then(|(_, name)| action_named(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(map: &Keymap, code: KeyCode, m: KeyModifiers) -> Option<Action> {
        map.action_for(&Event::Key(KeyEvent::new(code, m)))
    }

    #[test]
    fn vim_keys_and_arrows_agree_and_unbound_keys_do_nothing() {
        let map = Keymap::default();
        assert!(matches!(
            press(&map, KeyCode::Char('j'), KeyModifiers::NONE),
            Some(Action::Down)
        ));
        assert!(matches!(
            press(&map, KeyCode::Down, KeyModifiers::NONE),
            Some(Action::Down)
        ));
        assert!(matches!(
            press(&map, KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Action::Quit)
        ));
        assert!(matches!(
            press(&map, KeyCode::Char('4'), KeyModifiers::NONE),
            Some(Action::SelectTab(Tab::Compare))
        ));
        assert!(matches!(
            press(&map, KeyCode::Char('B'), KeyModifiers::SHIFT),
            Some(Action::WhatIfBlock(1))
        ));
        assert!(matches!(
            press(&map, KeyCode::Char('c'), KeyModifiers::NONE),
            Some(Action::Reconnect)
        ));
        assert!(press(&map, KeyCode::Char('z'), KeyModifiers::NONE).is_none());
        assert!(map
            .help()
            .iter()
            .any(|(k, w)| k == "?" && w.contains("help")));
    }

    #[test]
    fn a_keys_file_rebinds_actions_and_the_help_follows() {
        let map = Keymap::parse("quit: [x]\nnext_tab: [l, f2]\n", Path::new("keys.yaml")).unwrap();
        assert!(matches!(
            press(&map, KeyCode::Char('x'), KeyModifiers::NONE),
            Some(Action::Quit)
        ));
        assert!(
            press(&map, KeyCode::Char('q'), KeyModifiers::NONE).is_none(),
            "q is no longer quit"
        );
        assert!(matches!(
            press(&map, KeyCode::F(2), KeyModifiers::NONE),
            Some(Action::NextTab)
        ));
        assert!(map
            .help()
            .iter()
            .any(|(k, w)| k == "l, f2" && w == "next tab"));
        // Untouched actions keep their defaults.
        assert!(matches!(
            press(&map, KeyCode::Char('j'), KeyModifiers::NONE),
            Some(Action::Down)
        ));
    }

    #[test]
    fn a_bad_keys_file_says_what_is_wrong() {
        let e = Keymap::parse("quitt: [x]\n", Path::new("keys.yaml")).unwrap_err();
        assert!(
            e.starts_with("keys.yaml: unknown action `quitt`; actions: quit, help"),
            "{e}"
        );
        let e = Keymap::parse("quit: [ctrl-]\n", Path::new("keys.yaml")).unwrap_err();
        assert!(e.contains("quit: unknown key `ctrl-`"), "{e}");
        let e = Keymap::parse("quit: x\n", Path::new("keys.yaml")).unwrap_err();
        assert!(e.contains("expected `action: [key, ...]`"), "{e}");
    }
}
