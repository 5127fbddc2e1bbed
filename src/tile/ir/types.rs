//! The IR's element types and value types, and compile-time constants.

/// A scalar element type. `I1` is a boolean (Triton's `int1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl Scalar {
    /// Size in bytes (`I1` is stored as one byte).
    pub fn size(self) -> u32 {
        match self {
            Scalar::I1 | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::BF16 | Scalar::F32 | Scalar::F64)
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64)
    }

    pub fn is_unsigned_int(self) -> bool {
        matches!(self, Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64)
    }

    /// Triton's name, as written after `tl.` (`float16`, `int1`, …).
    pub fn triton_name(self) -> &'static str {
        match self {
            Scalar::I1 => "int1",
            Scalar::I8 => "int8",
            Scalar::I16 => "int16",
            Scalar::I32 => "int32",
            Scalar::I64 => "int64",
            Scalar::U8 => "uint8",
            Scalar::U16 => "uint16",
            Scalar::U32 => "uint32",
            Scalar::U64 => "uint64",
            Scalar::F16 => "float16",
            Scalar::BF16 => "bfloat16",
            Scalar::F32 => "float32",
            Scalar::F64 => "float64",
        }
    }

    /// The dtype Triton names `tl.<name>` (`float16`, `bfloat16`, `int8`, ...).
    pub fn from_triton_name(name: &str) -> Option<Scalar> {
        use Scalar::*;
        [
            I1, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64,
        ]
        .into_iter()
        .find(|s| s.triton_name() == name)
    }

    /// The element type of a kwb buffer of this dtype.
    pub fn from_dtype(d: crate::workspace::DType) -> Scalar {
        use crate::workspace::DType;
        match d {
            DType::F32 => Scalar::F32,
            DType::F16 => Scalar::F16,
            DType::BF16 => Scalar::BF16,
            DType::I32 => Scalar::I32,
            DType::F64 => Scalar::F64,
            DType::I64 => Scalar::I64,
            DType::I16 => Scalar::I16,
            DType::I8 => Scalar::I8,
            DType::U8 => Scalar::U8,
            DType::Bool => Scalar::I1,
        }
    }
}

/// What one element of a value is: a number, or a pointer to numbers in global memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    Scalar(Scalar),
    Ptr(Scalar),
}

/// A value's type: its element and its shape (empty for a scalar).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Type {
    pub elem: Elem,
    pub shape: Vec<u32>,
}

impl Type {
    pub fn scalar(s: Scalar) -> Type {
        Type {
            elem: Elem::Scalar(s),
            shape: Vec::new(),
        }
    }

    pub fn is_tile(&self) -> bool {
        !self.shape.is_empty()
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| u64::from(d)).product()
    }
}

/// A compile-time constant value of a scalar variable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Const {
    Int(i64),
    Float(f64),
    Bool(bool),
}
