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

mod ops;
pub mod sums;
mod types;

pub use ops::*;
pub use types::*;

use super::span::Loc;
use std::path::PathBuf;

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
    /// How full float sums combine their terms ([`sums`]).
    pub sums: sums::Sums,
    /// The line of the `def`.
    pub loc: Loc,
    /// `tl.make_tensor_descriptor` results, by index.
    pub descriptors: Vec<Descriptor>,
    /// The loads that are a descriptor's `.load`: the load's destination, with the descriptor
    /// and the offsets. Each is also written out as a masked pointer load (so every backend
    /// runs it as it is); a backend may copy it with the tensor-memory accelerator instead.
    pub desc_loads: Vec<DescLoad>,
    /// Pointer loads of loops that `blocks/` examined and could not prove blocks of a tensor,
    /// with the reason, for the generated code's comments.
    pub block_misses: Vec<BlockMiss>,
}

/// Why a pointer load is not a descriptor's block (so a backend copies it without TMA).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockMiss {
    pub dst: VarId,
    pub reason: &'static str,
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

    /// Why the pointer load that assigns `dst` is not a block, when `blocks/` says so.
    pub fn block_miss(&self, dst: VarId) -> Option<&'static str> {
        self.block_misses
            .iter()
            .find(|m| m.dst == dst)
            .map(|m| m.reason)
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
            sums: Default::default(),
            loc: Loc::default(),
            descriptors: Vec::new(),
            desc_loads: Vec::new(),
            block_misses: Vec::new(),
        }
    }

    /// The same kernel with every source position cleared: two layouts of one source (lines
    /// split or joined, comments) must give equal kernels by this measure.
    pub fn without_locs(&self) -> Kernel {
        fn clear(body: &mut [Stmt]) {
            for s in body {
                s.loc = Loc::default();
                match &mut s.kind {
                    StmtKind::If {
                        then, otherwise, ..
                    } => {
                        clear(then);
                        clear(otherwise);
                    }
                    StmtKind::For { body, .. } => clear(body),
                    StmtKind::While {
                        cond_body, body, ..
                    } => {
                        clear(cond_body);
                        clear(body);
                    }
                    StmtKind::Assign {
                        op: Op::Scan { combine, .. } | Op::ReduceWith { combine, .. },
                        ..
                    } => clear(&mut combine.body),
                    _ => {}
                }
            }
        }
        let mut k = self.clone();
        k.loc = Loc::default();
        k.file = PathBuf::new();
        clear(&mut k.body);
        k
    }

    pub fn ty(&self, v: VarId) -> &Type {
        &self.vars[v.0 as usize].ty
    }

    /// Threads per program.
    pub fn threads(&self) -> u32 {
        self.num_warps * 32
    }
}
