//! Key and mouse bindings: terminal events become [`Action`]s here and nowhere else. Vim-like
//! keys and arrows both work; the help overlay (`?`) lists them.

use super::action::Action;
use super::app::Tab;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

/// The bindings, as shown in the help overlay: (keys, what they do).
pub const HELP: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "show or hide this help"),
    (
        "j k, ↓ ↑",
        "next / previous version (or line, in the focused panel)",
    ),
    ("w, ← →", "move focus: versions → main → diagnostics"),
    ("Tab, Shift-Tab, 1-4", "tabs: Source, PTX, SASS, Compare"),
    ("PgUp PgDn, Ctrl-U Ctrl-D, g G", "scroll the main tab"),
    ("m", "mark the version for Compare (two marks compare)"),
    ("s", "next problem size"),
    ("b B", "what-if: halve / double the block size"),
    ("h H", "what-if: 4 KiB less / more dynamic shared memory"),
    ("r R", "what-if: register cap down / up by 8"),
    ("0", "what-if: reset"),
    ("e, Enter", "show the selected diagnostic's source line"),
    ("t", "next theme"),
    ("mouse wheel", "scroll"),
];

/// The action for a terminal event, if it has one.
pub fn action_for(event: &Event) -> Option<Action> {
    match event {
        Event::Key(k) if k.kind != KeyEventKind::Release => key(k),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Action::Scroll(3)),
            MouseEventKind::ScrollUp => Some(Action::Scroll(-3)),
            _ => None,
        },
        _ => None,
    }
}

fn key(k: &KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    Some(match k.code {
        KeyCode::Char('c') if ctrl => Action::Quit,
        KeyCode::Char('d') if ctrl => Action::PageDown,
        KeyCode::Char('u') if ctrl => Action::PageUp,
        KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Char('j') | KeyCode::Down => Action::Down,
        KeyCode::Char('k') | KeyCode::Up => Action::Up,
        KeyCode::Char('w') | KeyCode::Right | KeyCode::Left => Action::FocusNext,
        KeyCode::Tab => Action::NextTab,
        KeyCode::BackTab => Action::PrevTab,
        KeyCode::Char('1') => Action::SelectTab(Tab::Source),
        KeyCode::Char('2') => Action::SelectTab(Tab::Ptx),
        KeyCode::Char('3') => Action::SelectTab(Tab::Sass),
        KeyCode::Char('4') => Action::SelectTab(Tab::Compare),
        KeyCode::PageDown => Action::PageDown,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::Char('g') | KeyCode::Home => Action::Top,
        KeyCode::Char('G') | KeyCode::End => Action::Bottom,
        KeyCode::Char('m') => Action::ToggleMark,
        KeyCode::Char('s') => Action::NextSize,
        KeyCode::Char('t') => Action::CycleTheme,
        KeyCode::Char('b') => Action::WhatIfBlock(-1),
        KeyCode::Char('B') => Action::WhatIfBlock(1),
        KeyCode::Char('h') => Action::WhatIfShared(-1),
        KeyCode::Char('H') => Action::WhatIfShared(1),
        KeyCode::Char('r') => Action::WhatIfRegisters(-1),
        KeyCode::Char('R') => Action::WhatIfRegisters(1),
        KeyCode::Char('0') => Action::WhatIfReset,
        KeyCode::Char('e') | KeyCode::Enter => Action::ToggleDiagnosticSource,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, m: KeyModifiers) -> Option<Action> {
        action_for(&Event::Key(KeyEvent::new(code, m)))
    }

    #[test]
    fn vim_keys_and_arrows_agree_and_unbound_keys_do_nothing() {
        assert!(matches!(
            press(KeyCode::Char('j'), KeyModifiers::NONE),
            Some(Action::Down)
        ));
        assert!(matches!(
            press(KeyCode::Down, KeyModifiers::NONE),
            Some(Action::Down)
        ));
        assert!(matches!(
            press(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Action::Quit)
        ));
        assert!(matches!(
            press(KeyCode::Char('4'), KeyModifiers::NONE),
            Some(Action::SelectTab(Tab::Compare))
        ));
        assert!(matches!(
            press(KeyCode::Char('B'), KeyModifiers::SHIFT),
            Some(Action::WhatIfBlock(1))
        ));
        assert!(press(KeyCode::Char('z'), KeyModifiers::NONE).is_none());
    }
}
