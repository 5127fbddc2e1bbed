//! What the run panels (Bandwidth, Timing) say when there is no GPU to run on. Timing keeps the
//! CPU's check and says why there is no GPU, the whole reason wrapped (it is what the user acts
//! on); Bandwidth, which has nothing to show, says so in a line, and is the panel the layout
//! drops first when the column is short.

use crate::report::DeviceInfo;
use crate::ui::app::{App, GpuState};

/// What still works without a GPU, said under the reason when there is room.
pub const STILL_WORKS: &str =
    "Timing and bandwidth need a GPU; compile, PTX, resources, occupancy and CPU checks work.";

/// The device when one is present, else the line that stands in for a run panel's body.
pub fn device(app: &App) -> Result<&DeviceInfo, String> {
    match &app.gpu {
        GpuState::Present(d) => Ok(d),
        GpuState::Probing => Err("Looking for a GPU…".into()),
        GpuState::Absent(_) => Err("No GPU: see Timing.".into()),
    }
}

/// Why there is no GPU, in full (`None` with one, or while looking for one).
pub fn absent(app: &App) -> Option<String> {
    match &app.gpu {
        GpuState::Absent(reason) => {
            Some(format!("No GPU: {}.", reason.trim().trim_end_matches('.')))
        }
        _ => None,
    }
}
