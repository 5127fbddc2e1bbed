//! The IR's operations and statements, and the variables each reads.

use super::{Const, VarId};
use crate::tile::span::Loc;

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
    /// `tl.umulhi`: the high half of the full product of the operands taken as unsigned
    /// integers of their width (32 or 64 bits), read back as the operands' dtype.
    MulHi,
    /// libdevice's two-argument functions, on float32 and float64 only.
    Pow,
    Atan2,
    Copysign,
    Hypot,
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
    /// libdevice's functions (`libdevice.asin`, ...), on float32 and float64 only.
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Erfc,
    /// The inverse of `erf`: NaN outside [-1, 1], ±inf at ±1.
    Erfinv,
    Log1p,
    Expm1,
    Log10,
    Cbrt,
    /// Round to the nearest integer, ties to even (`rint`, `nearbyint`).
    Rint,
    /// Round to the nearest integer, ties away from zero (`round`).
    Round,
    Trunc,
    /// `1 / x`, rounded to nearest (`rcp_rn`).
    Rcp,
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
    /// `tl.atomic_xchg`: the value replaces the old one.
    Xchg,
    /// `tl.atomic_cas`: the value replaces the old one where the old one equals the atomic's
    /// `cmp` (bit for bit, for floats, as the hardware compares).
    Cas,
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
    /// `tl.associative_scan` (`tl.cumsum`, `tl.cumprod`): the inclusive scan of the tiles
    /// `srcs` (one shape) along `axis` with `combine`, from the end when `reverse`; the result
    /// is component `part`. Element `k` is `f(...f(f(x0, x1), x2)..., xk)` under some grouping
    /// (`combine` is taken to be associative, as Triton does).
    Scan {
        srcs: Vec<VarId>,
        part: u32,
        axis: u32,
        reverse: bool,
        combine: Box<Combine>,
    },
    /// `tl.reduce` with a combine function: [`Op::Reduce`]'s shapes, `srcs` folded in order
    /// along the axis with `combine` under some grouping; the result is component `part`.
    ReduceWith {
        srcs: Vec<VarId>,
        part: u32,
        axis: Option<u32>,
        combine: Box<Combine>,
    },
    /// `tl.sort` along the last axis (of a power-of-two length): each line, ascending or
    /// `descending`. Defined as Triton's bitonic network on the line's positions `0..n`: for
    /// each stage `s` in `1..=log2(n)` and each `j` from `s - 1` down to 0, every pair
    /// `(k, k | 1 << j)` with bit `j` of `k` clear, of values `(a, b)`, runs in direction
    /// `d` (bit `s` of `k` while `s < log2(n)`, else `descending`) and becomes
    /// `((a > b) != d ? b : a, (b > a) == d ? a : b)`. Where neither value is greater (equal
    /// values, `+0.0` and `-0.0`, a NaN) both positions take the same one, so a line with NaNs
    /// is not a permutation of its input; that is what Triton computes as well.
    Sort {
        src: VarId,
        descending: bool,
    },
    /// `tl.atomic_*`: returns the old values. Masked-off lanes do nothing and yield 0.
    Atomic {
        op: AtomicOp,
        ptr: VarId,
        value: VarId,
        mask: Option<VarId>,
        /// What [`AtomicOp::Cas`] compares the old value with (of the value's type); `None`
        /// for the other ops.
        cmp: Option<VarId>,
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
            | Op::Sort { src: a, .. }
            | Op::Hint { src: a, .. } => vec![*a],
            Op::Scan { srcs, .. } | Op::ReduceWith { srcs, .. } => srcs.clone(),
            Op::Binary { lhs, rhs, .. } => vec![*lhs, *rhs],
            Op::PtrAdd { ptr, offset } => vec![*ptr, *offset],
            Op::Fma { a, b, c } => vec![*a, *b, *c],
            Op::Where { cond, a, b } => vec![*cond, *a, *b],
            Op::Dot { a, b, acc, .. } => [*a, *b].into_iter().chain(*acc).collect(),
            Op::Load { ptr, mask, other } => {
                [*ptr].into_iter().chain(*mask).chain(*other).collect()
            }
            Op::Atomic {
                ptr,
                value,
                mask,
                cmp,
                ..
            } => [*ptr, *value]
                .into_iter()
                .chain(*mask)
                .chain(*cmp)
                .collect(),
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
            StmtKind::Barrier | StmtKind::GridDependency(_) | StmtKind::Return => Vec::new(),
        }
    }
}

/// A combine function (`combine_fn` of `tl.associative_scan`/`tl.reduce`, the `+` of
/// `tl.cumsum`), inlined on scalars: with `lhs` set to the earlier (accumulated) tuple and
/// `rhs` to the later one, `body` computes `results`, each one scalar per scanned tile of its
/// dtype. `body` assigns scalars only, with pure ops (a scalar `if` at most), never `lhs` or
/// `rhs`; nothing outside reads its variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Combine {
    pub lhs: Vec<VarId>,
    pub rhs: Vec<VarId>,
    pub body: Vec<Stmt>,
    pub results: Vec<VarId>,
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
    /// `tl.extra.cuda.gdc_wait()` / `gdc_launch_dependents()`: programmatic dependent launch
    /// (sm_90). Without a launch that asks for it, both do nothing.
    GridDependency(GridDependency),
    /// `tl.assume(cond)`: the kernel promises that the I1 scalar `cond` is true here (Triton:
    /// undefined behaviour when it is not). Backends may rely on it; the interpreter checks it.
    Assume { cond: VarId },
    /// `return` (from anywhere: the program ends).
    Return,
}

/// Calls `f` on each statement of `body` and of the blocks nested in it, in order, each
/// statement before its blocks.
pub fn visit<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in body {
        f(s);
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                visit(then, f);
                visit(otherwise, f);
            }
            StmtKind::For { body, .. } => visit(body, f),
            StmtKind::While {
                cond_body, body, ..
            } => {
                visit(cond_body, f);
                visit(body, f);
            }
            _ => {}
        }
    }
}

/// Whether `v` is absent or a zero (`0`, or `+0.0`), through splats, casts and copies, where
/// `def` gives a variable's one defining operation: what a copy engine fills outside a tensor.
pub fn is_zero<'a>(v: Option<VarId>, def: impl Fn(VarId) -> Option<&'a Op>) -> bool {
    let Some(mut v) = v else { return true };
    for _ in 0..8 {
        match def(v) {
            Some(Op::Const(Const::Float(f))) => return *f == 0.0 && f.is_sign_positive(),
            Some(Op::Const(Const::Int(0))) => return true,
            Some(Op::Splat(x) | Op::Cast(x) | Op::Copy(x)) => v = *x,
            _ => return false,
        }
    }
    false
}

/// The two halves of programmatic dependent launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridDependency {
    /// Wait until the grids this one depends on have finished (or released it) and their
    /// memory is visible.
    Wait,
    /// Let the grid that depends on this one start launching.
    LaunchDependents,
}
