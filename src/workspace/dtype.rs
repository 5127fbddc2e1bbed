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
    I64,
    I16,
    I8,
    U8,
    /// Stored as one byte, 0 or 1 (torch's `bool`; Triton's `int1` pointers).
    Bool,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::F64,
        DType::I64,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::Bool,
    ];

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
            DType::I64 => "i64",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> u64 {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    }

    /// For integer types (and bool): the smallest and largest value an element holds. An i64
    /// element beyond ±2^53 is refused where values pass through `f64` (see `run::inputs`).
    pub fn int_range(self) -> Option<(f64, f64)> {
        Some(match self {
            DType::I32 => (i32::MIN as f64, i32::MAX as f64),
            DType::I64 => (i64::MIN as f64, i64::MAX as f64),
            DType::I16 => (i16::MIN as f64, i16::MAX as f64),
            DType::I8 => (i8::MIN as f64, i8::MAX as f64),
            DType::U8 => (0.0, u8::MAX as f64),
            DType::Bool => (0.0, 1.0),
            _ => return None,
        })
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
