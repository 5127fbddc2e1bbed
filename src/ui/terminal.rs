//! Entering and leaving the full-screen terminal, and a panic hook that always leaves it: a
//! crash must never strand the user in raw mode on the alternate screen.

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::Stdout;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode, the alternate screen and mouse reporting, with a panic hook that undoes them.
pub fn enter() -> std::io::Result<Term> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        hook(info);
    }));
    enable_raw_mode()?;
    let mut out = std::io::stdout();
    if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture) {
        leave();
        return Err(e);
    }
    Terminal::new(CrosstermBackend::new(out))
}

/// Restores the terminal; safe to call more than once.
pub fn leave() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}
