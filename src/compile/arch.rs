//! GPU architectures as kwb names them (`sm_90`): parsing, and whether we know the chip.

use super::occupancy;
use serde::Serialize;
use std::fmt;

/// A real (not virtual) CUDA architecture, e.g. `sm_90`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    sm: u32,
}

impl Arch {
    pub const DEFAULT: Arch = Arch { sm: 90 };

    /// Parses `sm_90` (also `sm90` and `90`); the arch must be one kwb has occupancy tables for.
    pub fn parse(s: &str) -> Result<Arch, String> {
        let t = s.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("sm"))
            .unwrap_or(t);
        let supported = || {
            occupancy::supported_archs()
                .iter()
                .map(|a| format!("sm_{a}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let sm: u32 = digits.parse().map_err(|_| {
            format!(
                "`{s}` is not an arch; expected one like `sm_90` ({})",
                supported()
            )
        })?;
        if occupancy::arch_spec(sm).is_none() {
            return Err(format!(
                "unsupported arch `{s}`; kwb knows: {}",
                supported()
            ));
        }
        Ok(Arch { sm })
    }

    /// Compute capability as major*10+minor, e.g. 90.
    pub fn sm(self) -> u32 {
        self.sm
    }

    pub fn spec(self) -> &'static occupancy::ArchSpec {
        occupancy::arch_spec(self.sm).expect("Arch is only built for known archs")
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm)
    }
}

impl Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
