//! Element types and buffer initialisations a workspace can ask for.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// The element type of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F16,
    BF16,
    I32,
    F64,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::F64];

    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::F64 => "f64",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> u64 {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        self != DType::I32
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a buffer's contents are made before a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Init {
    /// Normal draws, `mean + std * z`.
    Randn { mean: f64, std: f64 },
    /// Uniform draws in `[low, high)`.
    Uniform { low: f64, high: f64 },
    /// `0, 1, 2, ...` in row-major order.
    Arange,
    /// Every element the same value.
    Constant { value: f64 },
    /// Read from a NumPy `.npy` file.
    Npy { path: PathBuf },
}

impl Init {
    /// The initialisation used when a workspace names none.
    pub const DEFAULT: Init = Init::Randn {
        mean: 0.0,
        std: 1.0,
    };

    pub const NAMES: &'static str = "randn, uniform, arange, constant or npy";
}
