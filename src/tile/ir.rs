//! The typed tile IR: what the checker produces from one kernel specialised for one
//! [`KernelRequest`](super::KernelRequest), and what the CUDA writer and the CPU interpreter
//! consume. It is the contract between the stages, so it is deliberately small and explicit:
//!
//! - every value lives in a **variable** ([`VarId`]) of one fixed [`Type`]; a variable may be
//!   assigned more than once (loop-carried values), always with its own type;
//! - operands of an [`Op`] are variables, never nested expressions (three-address form);
//! - shapes are already broadcast and dtypes already promoted: the checker inserts explicit
//!   [`Op::Broadcast`] and [`Op::Cast`], so every elementwise op sees operands of the result's
//!   shape and of the dtype the op is computed in;
//! - constexprs are folded: a constexpr `if` has been decided and only its taken branch is here;
//!   `tl.static_range` loops are unrolled;
//! - control flow is structured ([`Stmt::If`], [`Stmt::For`], [`Stmt::While`]) and its
//!   conditions are scalars (uniform over a program), never tiles;
//! - every statement carries the [`Loc`] of the tile source it came from, for `#line`
//!   directives and the interpreter's findings.
//!
//! A *scalar* has an empty shape and is the same for every thread of a program; a *tile* has
//! one or more dimensions, each a power of two.

use super::span::Loc;
use std::path::PathBuf;

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

    /// The element type of a kwb buffer of this dtype.
    pub fn from_dtype(d: crate::workspace::DType) -> Scalar {
        use crate::workspace::DType;
        match d {
            DType::F32 => Scalar::F32,
            DType::F16 => Scalar::F16,
            DType::BF16 => Scalar::BF16,
            DType::I32 => Scalar::I32,
            DType::F64 => Scalar::F64,
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

/// A variable: an index into [`Kernel::vars`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// A variable's declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    pub ty: Type,
    /// The tile-source name it was bound to, if any (for readable generated code); temporaries
    /// have none.
    pub name: Option<String>,
}

/// A kernel parameter that is passed at launch (constexprs are folded and are not here).
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    /// The variable that holds it; it is never assigned in the body.
    pub var: VarId,
    /// Facts proven from the workspace, used for vectorisation: the largest power of two, up to
    /// 16, that divides an integer's value (1 for an odd one), or a pointer's alignment in bytes
    /// (16: every kwb buffer is 16-byte aligned).
    pub divisibility: u64,
    /// An integer known to be at least 0 (a pointer: always true).
    pub non_negative: bool,
}

/// A compile-time constant value of a scalar variable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Const {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Float division, or integer division truncating toward zero (C, as Triton's `//`).
    Div,
    /// Float `fmod`, or integer remainder with the sign of the dividend (C, as Triton's `%`).
    Rem,
    /// `tl.minimum` / `tl.maximum`: a NaN operand gives the other operand (as `fminf`).
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    /// Arithmetic for signed, logical for unsigned.
    Shr,
    /// Comparisons give `I1`; both operands have the same (promoted) dtype.
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    /// Bitwise not (`~`); on `I1`, logical not.
    Not,
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Rsqrt,
    Abs,
    Sigmoid,
    Erf,
    Sin,
    Cos,
    Tanh,
    Floor,
    Ceil,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// Index (I32) of the first maximum / minimum along the axis.
    ArgMax,
    ArgMin,
}

/// How a [`Op::Dot`] of fp32 inputs multiplies (fp16/bf16 inputs are always exact products).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotPrecision {
    /// Full fp32 products (`input_precision="ieee"`, kwb's default).
    Ieee,
    /// The kernel allows tf32 products (`allow_tf32=True`, `input_precision="tf32"` or
    /// `"tf32x3"`); a backend may still compute them in full fp32.
    Tf32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Max,
    Min,
}

/// The right-hand side of an assignment. Operands are variables; the destination's type is the
/// result type (so `Broadcast`, `Cast`, `Full`, `Reshape` read their target from it).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A scalar constant, of the destination's dtype.
    Const(Const),
    /// A copy of another variable of the same type.
    Copy(VarId),
    /// `tl.program_id(axis)` / `tl.num_programs(axis)`, I32 scalars.
    ProgramId(u8),
    NumPrograms(u8),
    /// `tl.arange(start, end)`: an I32 tile of `end - start` (a power of two) elements.
    Arange {
        start: i64,
        end: i64,
    },
    /// A scalar splatted to the destination's shape (`tl.full`, `tl.zeros`, and the scalar side
    /// of a mixed scalar/tile operation).
    Splat(VarId),
    /// A tile broadcast to the destination's shape: the source has the same rank, and each of
    /// its dimensions equals the destination's or is 1.
    Broadcast(VarId),
    /// A new dimension of size 1 at `axis` (`x[:, None]` is `axis: 1`, `x[None, :]` is 0).
    ExpandDims {
        src: VarId,
        axis: u32,
    },
    /// The same elements in row-major order, in the destination's shape.
    Reshape(VarId),
    /// Dimension `i` of the result is dimension `perm[i]` of the source.
    Permute {
        src: VarId,
        perm: Vec<u32>,
    },
    /// A value converted to the destination's dtype (C conversion rules; float → int truncates;
    /// to `I1` means `!= 0`).
    Cast(VarId),
    Binary {
        op: BinOp,
        lhs: VarId,
        rhs: VarId,
    },
    Unary {
        op: UnOp,
        src: VarId,
    },
    /// `a * b + c`, rounded once.
    Fma {
        a: VarId,
        b: VarId,
        c: VarId,
    },
    /// `cond ? a : b` elementwise; `cond` is I1 of the same shape (or a scalar).
    Where {
        cond: VarId,
        a: VarId,
        b: VarId,
    },
    /// Pointer arithmetic: `ptr + offset` elements (offset is an integer of the same shape).
    PtrAdd {
        ptr: VarId,
        offset: VarId,
    },
    /// A load through a pointer (scalar or tile). A lane whose `mask` is false does not access
    /// memory and yields `other` (a scalar or a value of the destination's shape), or 0.
    Load {
        ptr: VarId,
        mask: Option<VarId>,
        other: Option<VarId>,
    },
    /// A reduction over `axis` (the result drops that dimension), or over every dimension
    /// when `axis` is `None` (the result is a scalar).
    Reduce {
        op: ReduceOp,
        src: VarId,
        axis: Option<u32>,
    },
    /// `tl.atomic_*`: returns the old values. Masked-off lanes do nothing and yield 0.
    Atomic {
        op: AtomicOp,
        ptr: VarId,
        value: VarId,
        mask: Option<VarId>,
    },
    /// `tl.dot`: the matrix product of `a` (`[M, K]`) and `b` (`[K, N]`), both fp16, bf16 or
    /// fp32 of one dtype, plus `acc` (`[M, N]`, of the destination's type) when given. The
    /// products are summed in at least fp32 and the result is rounded to the destination's
    /// dtype (fp32, or fp16 for fp16 inputs). M, N and K are powers of two, at least 16.
    Dot {
        a: VarId,
        b: VarId,
        acc: Option<VarId>,
        precision: DotPrecision,
    },
    /// `tl.multiple_of` / `tl.max_contiguous`: the same value, with facts for vectorisation.
    /// `multiple_of` / `max_contiguous` hold one entry per dimension (one for a scalar); 1 means
    /// nothing is claimed.
    Hint {
        src: VarId,
        multiple_of: Vec<u32>,
        max_contiguous: Vec<u32>,
    },
}

impl Op {
    /// The variables the operation reads, in operand order.
    pub fn operands(&self) -> Vec<VarId> {
        match self {
            Op::Const(_) | Op::ProgramId(_) | Op::NumPrograms(_) | Op::Arange { .. } => Vec::new(),
            Op::Copy(a)
            | Op::Splat(a)
            | Op::Broadcast(a)
            | Op::Reshape(a)
            | Op::Cast(a)
            | Op::ExpandDims { src: a, .. }
            | Op::Permute { src: a, .. }
            | Op::Unary { src: a, .. }
            | Op::Reduce { src: a, .. }
            | Op::Hint { src: a, .. } => vec![*a],
            Op::Binary { lhs, rhs, .. } => vec![*lhs, *rhs],
            Op::PtrAdd { ptr, offset } => vec![*ptr, *offset],
            Op::Fma { a, b, c } => vec![*a, *b, *c],
            Op::Where { cond, a, b } => vec![*cond, *a, *b],
            Op::Dot { a, b, acc, .. } => [*a, *b].into_iter().chain(*acc).collect(),
            Op::Load { ptr, mask, other } => {
                [*ptr].into_iter().chain(*mask).chain(*other).collect()
            }
            Op::Atomic {
                ptr, value, mask, ..
            } => [*ptr, *value].into_iter().chain(*mask).collect(),
        }
    }
}

impl StmtKind {
    /// The variables the statement reads itself (not its nested statements'); a loop reads
    /// its bounds and step.
    pub fn reads(&self) -> Vec<VarId> {
        match self {
            StmtKind::Assign { op, .. } => op.operands(),
            StmtKind::Store { ptr, value, mask } => {
                [*ptr, *value].into_iter().chain(*mask).collect()
            }
            StmtKind::If { cond, .. }
            | StmtKind::While { cond, .. }
            | StmtKind::Assume { cond } => vec![*cond],
            StmtKind::For {
                start, end, step, ..
            } => vec![*start, *end, *step],
            StmtKind::Barrier | StmtKind::Return => Vec::new(),
        }
    }
}

/// A statement, with the tile-source position it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub loc: Loc,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `dst = op`.
    Assign { dst: VarId, op: Op },
    /// `tl.store(ptr, value, mask)`: value has the pointer's shape and element dtype.
    Store {
        ptr: VarId,
        value: VarId,
        mask: Option<VarId>,
    },
    /// A scalar `if`; `cond` is an I1 scalar.
    If {
        cond: VarId,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// `for var in range(start, end, step)` with Python semantics (`step` may be negative, never
    /// zero); `var`, `start`, `end` and `step` are integer scalars of one dtype. `var` is
    /// assigned by the loop only.
    For {
        var: VarId,
        start: VarId,
        end: VarId,
        step: VarId,
        body: Vec<Stmt>,
        /// `tl.range(..., num_stages=S)`: how many shared-memory buffers the loads feeding a
        /// `tl.dot` in this loop may be pipelined through (None: the writer's default).
        num_stages: Option<u32>,
    },
    /// `while cond: body`: `cond_body` is run before each test of `cond` (an I1 scalar).
    While {
        cond_body: Vec<Stmt>,
        cond: VarId,
        body: Vec<Stmt>,
    },
    /// `tl.debug_barrier()`: every thread of the program waits here.
    Barrier,
    /// `tl.assume(cond)`: the kernel promises that the I1 scalar `cond` is true here (Triton:
    /// undefined behaviour when it is not). Backends may rely on it; the interpreter checks it.
    Assume { cond: VarId },
    /// `return` (from anywhere: the program ends).
    Return,
}

/// One kernel, specialised: what the writer turns into one `extern "C" __global__` function.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// The tile source file, for `#line` directives and findings.
    pub file: PathBuf,
    /// The launched parameters, in launch-argument order.
    pub params: Vec<Param>,
    pub vars: Vec<Var>,
    pub body: Vec<Stmt>,
    pub num_warps: u32,
    /// The line of the `def`.
    pub loc: Loc,
    /// `tl.make_tensor_descriptor` results, by index.
    pub descriptors: Vec<Descriptor>,
    /// The loads that are a descriptor's `.load`: the load's destination, with the descriptor
    /// and the offsets. Each is also written out as a masked pointer load (so every backend
    /// runs it as it is); a backend may copy it with the tensor-memory accelerator instead.
    pub desc_loads: Vec<DescLoad>,
}

/// A 2-D tensor descriptor (`tl.make_tensor_descriptor`): row-major `shape` with `strides`
/// (elements; the last is 1) from `base`, read in blocks of `block` elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    pub base: VarId,
    /// Integer scalars, outermost first.
    pub shape: Vec<VarId>,
    pub strides: Vec<VarId>,
    pub block: Vec<u32>,
}

/// One `desc.load([o0, o1])`.
#[derive(Debug, Clone, PartialEq)]
pub struct DescLoad {
    /// The variable the load assigns.
    pub dst: VarId,
    pub desc: usize,
    /// Integer scalars: the block's first element along each dimension, outermost first.
    pub offsets: Vec<VarId>,
}

impl Kernel {
    /// The descriptor `dst` is loaded from, with its offsets, when it is a descriptor's load.
    pub fn desc_load(&self, dst: VarId) -> Option<&DescLoad> {
        self.desc_loads.iter().find(|d| d.dst == dst)
    }

    /// For tests: kernel `k` of `k.tile`, 4 warps, with no parameters, variables or statements.
    #[cfg(test)]
    pub(crate) fn empty() -> Kernel {
        Kernel {
            name: "k".into(),
            file: "k.tile".into(),
            params: Vec::new(),
            vars: Vec::new(),
            body: Vec::new(),
            num_warps: 4,
            loc: Loc::default(),
            descriptors: Vec::new(),
            desc_loads: Vec::new(),
        }
    }

    pub fn ty(&self, v: VarId) -> &Type {
        &self.vars[v.0 as usize].ty
    }

    /// Threads per program.
    pub fn threads(&self) -> u32 {
        self.num_warps * 32
    }
}
