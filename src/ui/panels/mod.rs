//! The panels of `kwb watch`, one file each. Every panel is a pure function
//! `render(app, theme, area, buf)` that reads the [`App`](crate::ui::app::App) state and
//! writes only inside `area`; sizes and placement are decided by `ui::draw`. Each one also
//! renders alone, which is how the snapshot tests take them one by one.

pub mod bandwidth;
pub mod code;
pub mod compare;
pub mod diagnostics;
pub mod format;
pub mod gpu;
pub mod help;
pub mod launch;
pub mod occupancy;
pub mod resources;
pub mod roofline;
pub mod status;
pub mod sweep;
pub mod tabs;
pub mod text;
pub mod timing;
pub mod versions;
