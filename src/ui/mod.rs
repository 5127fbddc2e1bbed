//! The workbench TUI (`kwb watch`): a plain state struct (`app`), one `Action` enum applied by
//! one `update` (`action`, with key bindings in `keys`), pure render functions (`draw`,
//! `panels`), and background workers (compiler, GPU thread, file watcher) that send owned
//! messages to the loop in `runtime`.

pub mod action;
pub mod app;
pub mod bench;
pub mod draw;
pub mod highlight;
pub mod keys;
pub mod linemap;
pub mod panels;
pub mod ptxdiff;
pub mod runtime;
pub mod sass;
pub mod start_error;
pub mod terminal;
pub mod theme;
pub mod themes;
