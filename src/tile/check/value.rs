//! What an expression evaluates to while a kernel is checked, and Triton's dtype promotion.
//!
//! A [`Val`] is either known at compile time (Python numbers, constexprs, dtypes, tuples,
//! modules and functions) or a runtime value held in an IR variable. Compile-time numbers are
//! *weak* in promotion: they take the other operand's dtype where they can, as Triton's
//! literals and constexprs do; runtime values are *strong*.

use crate::tile::ir::{Elem, Scalar, Type, VarId};

/// A value during checking.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    Str(String),
    /// A dtype such as `tl.float16`.
    DType(Scalar),
    /// An 8-bit float dtype (`tl.float8e5`), known by name only ([`super::names::FP8`]).
    Fp8(&'static str),
    /// A pointer type: `tl.pointer_type(tl.float16)`, or a pointer's `.dtype`.
    PtrType(Scalar),
    /// A tile's `.type`, Triton's block type: its element type (`.scalar`, `.element_ty`)
    /// and shape. It is not a dtype: `x.type.is_floating()` is false, as in Triton.
    BlockType(Elem, Vec<u32>),
    /// A runtime value (scalar or tile) in an IR variable.
    Var(VarId),
    Tuple(Vec<Val>),
    /// A module: `triton`, `tl` (= `triton.language`), `tl.math`, `tl.extra`, `tl.extra.cuda`,
    /// `libdevice`, or the dotted path of a module kernels cannot use.
    Module(String),
    /// A built-in function by its canonical name (`load`, `exp`, `py.range`, …).
    Builtin(&'static str),
    /// A method bound to a runtime value (`x.to`, `x.sum`).
    Method(VarId, &'static str),
    /// Another file imported as a module (`from . import utils`), by unit (`units.rs`).
    Unit(usize),
    /// A tensor descriptor (`tl.make_tensor_descriptor`), by index (`descriptor.rs`).
    Desc(usize),
    /// A descriptor's method (`desc.load`).
    DescMethod(usize, &'static str),
    /// A block pointer (`tl.make_block_ptr`), with its runtime parts (`block_ptr.rs`).
    BlockPtr(Box<BlockPtr>),
    /// A method bound to a compile-time value (`block_ptr.advance`): called with the value
    /// as its first argument.
    Bound(Box<Val>, &'static str),
    /// A `@triton.jit` function, called inline: its file (`units.rs`) and its index among
    /// that file's functions.
    Jit(usize, usize),
    /// `tl.constexpr` itself.
    ConstexprMarker,
    /// The result of an expression that already failed: it stops cascades of errors.
    Poison,
}

/// A block pointer: the `block`-shaped window at `offsets` into the tensor of `shape` with
/// `strides` (in elements) at `base`. `base` is a pointer variable; `shape`, `strides` and
/// `offsets` hold one integer per dimension, each a scalar variable or a compile-time int
/// (offsets int32 unless given 64-bit, as in Triton; shapes and strides as given, which loads
/// widen to int64 as Triton's are). `block` and `order` are fixed at compile time.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BlockPtr {
    pub base: Val,
    pub shape: Vec<Val>,
    pub strides: Vec<Val>,
    pub offsets: Vec<Val>,
    pub block: Vec<u32>,
    pub order: Vec<u32>,
}

impl Val {
    /// A compile-time number (or bool).
    pub(super) fn is_number(&self) -> bool {
        matches!(self, Val::Int(_) | Val::Float(_) | Val::Bool(_))
    }

    /// How the value is named in an error message, when it is not a runtime value.
    pub(super) fn describe(&self) -> String {
        match self {
            Val::Int(v) => format!("the int `{v}`"),
            Val::Float(v) => format!("the float `{v}`"),
            Val::Bool(v) => format!("the bool `{}`", if *v { "True" } else { "False" }),
            Val::None => "`None`".to_string(),
            Val::Str(s) => format!("the string {s:?}"),
            Val::DType(s) => format!("the dtype `tl.{}`", s.triton_name()),
            Val::Fp8(n) => format!("the dtype `tl.{n}` (kwb does not compute in 8-bit floats)"),
            Val::PtrType(s) => format!("the dtype `tl.pointer_type(tl.{})`", s.triton_name()),
            Val::BlockType(_, shape) => format!("a block type of shape {}", show_shape(shape)),
            Val::Var(_) => "a runtime value".to_string(),
            Val::Tuple(_) => "a tuple".to_string(),
            Val::Module(m) => format!("the module `{m}`"),
            Val::Unit(_) => "a module of another file".to_string(),
            Val::Builtin(b) => format!("the function `{}`", display_builtin(b)),
            Val::Method(_, m) | Val::DescMethod(_, m) | Val::Bound(_, m) => {
                format!("the method `.{m}`")
            }
            Val::Desc(_) => "a tensor descriptor".to_string(),
            Val::BlockPtr(b) => format!(
                "a block pointer (`tl.make_block_ptr`) of block {}",
                show_shape(&b.block)
            ),
            Val::Jit(..) => "a `@triton.jit` function".to_string(),
            Val::ConstexprMarker => "`tl.constexpr`".to_string(),
            Val::Poison => "an erroneous value".to_string(),
        }
    }

    /// Python truthiness of a compile-time value (`None` for runtime values).
    pub(super) fn truthy(&self) -> Option<bool> {
        match self {
            Val::Int(v) => Some(*v != 0),
            Val::Float(v) => Some(*v != 0.0),
            Val::Bool(b) => Some(*b),
            Val::None => Some(false),
            Val::Str(s) => Some(!s.is_empty()),
            Val::Tuple(t) => Some(!t.is_empty()),
            _ => None,
        }
    }
}

/// How a built-in is written in messages: `tl.load`, or `range` for Python's.
pub(super) fn display_builtin(name: &str) -> String {
    match (name.strip_prefix("py."), name.strip_prefix("ld.")) {
        (Some(py), _) => py.to_string(),
        (_, Some(ld)) => format!("libdevice.{ld}"),
        _ if name.starts_with("gdc_") => format!("tl.extra.cuda.{name}"),
        _ => format!("tl.{name}"),
    }
}

/// A type as messages show it: `float32`, `float16[128, 64]`, `pointer<float32>[128]`.
pub(super) fn show_type(t: &Type) -> String {
    let elem = match t.elem {
        Elem::Scalar(s) => s.triton_name().to_string(),
        Elem::Ptr(s) => format!("pointer<{}>", s.triton_name()),
    };
    if t.shape.is_empty() {
        elem
    } else {
        format!("{elem}{}", show_shape(&t.shape))
    }
}

pub(super) fn show_shape(shape: &[u32]) -> String {
    let dims: Vec<String> = shape.iter().map(u32::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// The dtype a compile-time number takes on its own: int32 (int64 when it does not fit),
/// float32, int1.
pub(super) fn default_dtype(v: &Val) -> Option<Scalar> {
    match v {
        Val::Int(i) if i32::try_from(*i).is_ok() => Some(Scalar::I32),
        Val::Int(_) => Some(Scalar::I64),
        Val::Float(_) => Some(Scalar::F32),
        Val::Bool(_) => Some(Scalar::I1),
        _ => None,
    }
}

/// One operand's dtype and whether it is weak (a compile-time number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Operand {
    pub dtype: Scalar,
    pub weak: bool,
    /// For a weak int: whether its value fits in 32 bits.
    pub fits_i32: bool,
}

fn rank_float(s: Scalar) -> u8 {
    match s {
        Scalar::F16 | Scalar::BF16 => 1,
        Scalar::F32 => 2,
        _ => 3,
    }
}

/// Triton's promotion of two operands to the dtype an arithmetic op computes in.
pub(super) fn promote(a: Operand, b: Operand) -> Scalar {
    match (a.weak, b.weak) {
        (true, false) => promote_weak(a, b.dtype),
        (false, true) => promote_weak(b, a.dtype),
        _ => promote_strong(a.dtype, b.dtype),
    }
}

/// A compile-time number `w` against a runtime dtype `s`.
fn promote_weak(w: Operand, s: Scalar) -> Scalar {
    if w.dtype.is_float() {
        // A float literal keeps a float tile's dtype; with an int tile it gives float32.
        return if s.is_float() { s } else { Scalar::F32 };
    }
    if s.is_float() {
        return s;
    }
    if w.dtype == Scalar::I1 {
        return s;
    }
    // An int literal keeps an int tile's type (bool tiles become int32; a literal that does
    // not fit in 32 bits widens to int64).
    match s {
        Scalar::I1 => w.dtype,
        _ if !w.fits_i32 && s.size() < 8 => Scalar::I64,
        _ => s,
    }
}

/// Two runtime dtypes: float beats int, the wider float wins, fp16 with bf16 gives fp32; for
/// ints the wider wins, and a mix of signedness goes unsigned when the unsigned one is at
/// least as wide.
pub(super) fn promote_strong(a: Scalar, b: Scalar) -> Scalar {
    if a == b {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (true, false) => a,
        (false, true) => b,
        (true, true) => {
            if rank_float(a) == 1 && rank_float(b) == 1 {
                Scalar::F32
            } else if rank_float(a) >= rank_float(b) {
                a
            } else {
                b
            }
        }
        (false, false) => {
            if a == Scalar::I1 {
                return b;
            }
            if b == Scalar::I1 {
                return a;
            }
            let (au, bu) = (a.is_unsigned_int(), b.is_unsigned_int());
            if au == bu {
                return if a.size() >= b.size() { a } else { b };
            }
            let (u, s) = if au { (a, b) } else { (b, a) };
            if u.size() >= s.size() {
                u
            } else {
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strong(s: Scalar) -> Operand {
        Operand {
            dtype: s,
            weak: false,
            fits_i32: true,
        }
    }

    fn weak(v: Val) -> Operand {
        let fits = !matches!(v, Val::Int(i) if i32::try_from(i).is_err());
        Operand {
            dtype: default_dtype(&v).unwrap_or(Scalar::I32),
            weak: true,
            fits_i32: fits,
        }
    }

    #[test]
    fn runtime_dtypes_promote_as_triton_does() {
        use Scalar::*;
        assert_eq!(promote(strong(F16), strong(I32)), F16);
        assert_eq!(promote(strong(F16), strong(F32)), F32);
        assert_eq!(promote(strong(F16), strong(BF16)), F32);
        assert_eq!(promote(strong(BF16), strong(BF16)), BF16);
        assert_eq!(promote(strong(F64), strong(F16)), F64);
        assert_eq!(promote(strong(I32), strong(I64)), I64);
        assert_eq!(promote(strong(I1), strong(I32)), I32);
        assert_eq!(promote(strong(U32), strong(I32)), U32);
        assert_eq!(promote(strong(U8), strong(I32)), I32);
    }

    #[test]
    fn literals_are_weak() {
        use Scalar::*;
        assert_eq!(promote(weak(Val::Float(0.5)), strong(F16)), F16);
        assert_eq!(promote(strong(BF16), weak(Val::Float(0.5))), BF16);
        assert_eq!(promote(weak(Val::Float(0.5)), strong(I32)), F32);
        assert_eq!(promote(weak(Val::Int(2)), strong(I64)), I64);
        assert_eq!(promote(weak(Val::Int(2)), strong(I16)), I16);
        assert_eq!(promote(weak(Val::Int(2)), strong(F16)), F16);
        assert_eq!(promote(weak(Val::Int(1 << 40)), strong(I32)), I64);
        assert_eq!(promote(weak(Val::Int(2)), strong(I1)), I32);
    }
}
