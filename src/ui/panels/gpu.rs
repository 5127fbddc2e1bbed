//! What the run panels (Bandwidth, Timing) say when there is no GPU to run on: they stay on
//! screen and explain why they are empty.

use crate::report::DeviceInfo;
use crate::ui::app::{App, GpuState};

/// The device when one is present, else the sentence that stands in for the panel's body.
pub fn device(app: &App) -> Result<&DeviceInfo, String> {
    match &app.gpu {
        GpuState::Present(d) => Ok(d),
        GpuState::Probing => Err("Looking for a GPU…".into()),
        GpuState::Absent(reason) => Err(format!(
            "No GPU: {}. Compile, PTX, resources and occupancy still work.",
            reason.trim().trim_end_matches('.')
        )),
    }
}
