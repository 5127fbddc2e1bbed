//! GPU architectures as kwb names them (`sm_90`): parsing, and whether we know the chip.

use super::gpu_spec as occupancy;
use serde::Serialize;
use std::fmt;

/// A real (not virtual) CUDA architecture, e.g. `sm_90`, or its architecture-specific form
/// (`sm_90a`: the same chip, with the instructions only it has, such as `wgmma`; code built
/// for it runs on that chip alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    sm: u32,
    specific: bool,
}

/// The first chip with an architecture-specific form (`sm_90a`).
const FIRST_SPECIFIC: u32 = 90;

impl Arch {
    pub const DEFAULT: Arch = Arch {
        sm: 90,
        specific: false,
    };

    /// Parses `sm_90` (also `sm90` and `90`) and `sm_90a`; the arch must be one kwb has
    /// occupancy tables for.
    pub fn parse(s: &str) -> Result<Arch, String> {
        let t = s.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("sm"))
            .unwrap_or(t);
        let (digits, specific) = match digits.strip_suffix('a') {
            Some(d) => (d, true),
            None => (digits, false),
        };
        // Each arch kwb knows, and the architecture-specific form where one exists.
        let supported = || {
            occupancy::supported_archs()
                .iter()
                .map(|&a| match a >= FIRST_SPECIFIC {
                    true => format!("sm_{a}, sm_{a}a"),
                    false => format!("sm_{a}"),
                })
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
        if specific && sm < FIRST_SPECIFIC {
            return Err(format!(
                "`{s}`: architecture-specific forms (the `a`) exist from sm_{FIRST_SPECIFIC}; write `sm_{sm}`"
            ));
        }
        Ok(Arch { sm, specific })
    }

    /// Compute capability as major*10+minor, e.g. 90.
    pub fn sm(self) -> u32 {
        self.sm
    }

    /// Whether this is an architecture-specific form (`sm_90a`).
    pub fn is_specific(self) -> bool {
        self.specific
    }

    /// The target for a GPU of arch `gpu` when the workspace asks for `wanted`: the GPU's
    /// own, in the architecture-specific form when `wanted` is that form of the same chip
    /// (a workspace for `sm_90a` runs as `sm_90a` on an sm_90 GPU).
    pub fn for_gpu(gpu: Arch, wanted: Option<Arch>) -> Arch {
        match wanted {
            Some(w) if w.sm == gpu.sm => w,
            _ => gpu,
        }
    }

    pub fn spec(self) -> &'static occupancy::ArchSpec {
        occupancy::arch_spec(self.sm).expect("Arch is only built for known archs")
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.specific { "a" } else { "" })
    }
}

impl Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::Arch;

    #[test]
    fn the_architecture_specific_form_parses_prints_and_runs_on_its_chip() {
        let a = Arch::parse("sm_90a").unwrap();
        assert_eq!(
            (a.sm(), a.is_specific(), a.to_string()),
            (90, true, "sm_90a".into())
        );
        assert_eq!(Arch::parse("90").unwrap(), Arch::DEFAULT);
        let err = Arch::parse("sm_80a").unwrap_err();
        assert!(
            err.contains("exist from sm_90") && err.contains("`sm_80`"),
            "{err}"
        );
        assert!(Arch::parse("sm_90b").is_err());
        // The list of what kwb knows names the architecture-specific forms too.
        let err = Arch::parse("sm_61").unwrap_err();
        assert!(
            err.contains("sm_80, sm_86") && err.contains("sm_90, sm_90a"),
            "{err}"
        );
        let gpu = Arch::parse("sm_90").unwrap();
        assert_eq!(Arch::for_gpu(gpu, Some(a)), a);
        assert_eq!(Arch::for_gpu(gpu, None), gpu);
        let ada = Arch::parse("sm_89").unwrap();
        assert_eq!(
            Arch::for_gpu(ada, Some(a)),
            ada,
            "another chip: the GPU's own"
        );
    }
}
