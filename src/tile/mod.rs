//! The tile language: Triton kernels (`.tile` files, or the `@triton.jit` functions of a `.py`
//! module) compiled by kwb itself, with no Python, to CUDA C++ that NVRTC then compiles.
//!
//! Stages, each knowing nothing of the UI or of NVRTC (STYLE.md §7):
//! [`lex`] → [`parse`] (an [`ast`] with spans) → [`check`] (names, dtypes, shapes, constexprs,
//! specialisation for one [`KernelRequest`]) → [`ir`] (the typed tile IR) → `blocks` (on
//! sm_90: pointer loads proven blocks of a tensor, recorded for TMA copies) → [`cuda`]
//! (layouts, vectorisation, reductions; writes CUDA C++ with `#line` directives). [`interp`]
//! runs the IR on the CPU: the language's reference semantics.
//!
//! This module is the seam the rest of kwb sees: [`compile`], [`signatures`] and the
//! interpreter's argument types.

pub mod ast;
mod blocks;
pub mod check;
pub mod cuda;
pub mod interp;
pub mod ir;
pub mod lex;
pub mod parse;
pub mod span;

use crate::diag::Diagnostic;
pub use crate::workspace::DType;
use std::path::Path;
use std::sync::Arc;

/// What a launch argument bound to a non-constexpr parameter is, as the workspace says.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgKind {
    /// A kwb buffer (16-byte aligned) of this dtype.
    Pointer(DType),
    /// An integer: `int` in the generated code when it fits in 32 bits, else `long long`.
    /// `divisibility`: the largest power of two, up to 16, that divides it. Triton specialises
    /// on 16 alone; kwb also keeps 8 (and 4, 2), so that fp16 rows of a multiple of 8 elements
    /// (K = 1000) still move in 16-byte vectors.
    /// `non_negative`: the value is at least 0 (sizes, as a workspace passes them); kwb uses it
    /// to prove a pointer tile a tensor's block (`blocks/`).
    Int {
        fits_i32: bool,
        divisibility: u64,
        non_negative: bool,
        /// The value is 1: as Triton's JIT does, the parameter is then the constant 1 in the
        /// kernel (a unit stride lets rows be proven contiguous), unless the kernel's
        /// `@triton.jit(do_not_specialize=[...])` names it. Still passed at launch.
        one: bool,
    },
    /// A float: `float` in the generated code, as Triton passes Python floats.
    Float,
    /// `None`: as Triton's JIT does, the parameter is the constant `None` in the kernel
    /// (`if x_ptr is not None:` folds) and is not passed at launch.
    None,
}

/// A constexpr's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A Python string (`ACTIVATION="leaky_relu"`).
    Str(String),
    /// A Triton dtype (`X_dtype=tl.bfloat16`).
    DType(ir::Scalar),
    /// `None` (an optional feature turned off).
    None,
}

impl ConstValue {
    /// The value as Python writes it: `3`, `1.5`, `True`, `'gelu'`, `tl.bfloat16`, `None`.
    pub fn python(&self) -> String {
        match self {
            ConstValue::Int(i) => i.to_string(),
            ConstValue::Float(f) => format!("{f:?}"),
            ConstValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            ConstValue::Str(s) => format!("{s:?}"),
            ConstValue::DType(d) => format!("tl.{}", d.triton_name()),
            ConstValue::None => "None".to_string(),
        }
    }
}

/// One kernel to compile, specialised as Triton's JIT does it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRequest {
    pub name: String,
    /// One per launch argument, bound in order to the non-constexpr parameters.
    pub args: Vec<ArgKind>,
    pub constexprs: Vec<(String, ConstValue)>,
    pub num_warps: u32,
    /// How float sums combine their terms: as the Triton release the results are compared
    /// with does (`ir::sums`).
    pub sums: ir::sums::Sums,
}

/// The result of compiling a file's requested kernels.
pub struct Compiled {
    /// The generated CUDA C++ (empty when there are errors).
    pub cuda: String,
    /// The checked kernels, for the interpreter.
    pub kernels: Vec<Arc<ir::Kernel>>,
    /// Every error and warning, with file, line and column.
    pub diagnostics: Vec<Diagnostic>,
    /// Kernel name → bytes of dynamic shared memory its launch must pass (the kernels whose
    /// `cp.async` rings did not fit beside their static shared memory in 48 KiB).
    pub dynamic_shared: Vec<(String, u64)>,
    /// The code must be compiled for the architecture-specific form of the target (`sm_90a`:
    /// it uses `wgmma`).
    pub arch_specific: bool,
    /// Kernel name → the tensor maps its launch passes after its arguments (TMA copies of
    /// descriptor loads, `cuda/tma.rs`), in parameter order.
    pub tensor_maps: Vec<(String, Vec<TensorMapParam>)>,
    /// The other files the source imports helpers from: a change to one changes the kernels.
    pub imports: Vec<std::path::PathBuf>,
}

/// A kernel's extra `CUtensorMap` parameter (a `__grid_constant__` of 128 bytes): what the
/// launch encodes for it from the launch's own arguments.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TensorMapParam {
    /// The launch argument that is the tensor's base pointer.
    pub base: usize,
    pub elem_bytes: u32,
    /// The tensor's extents in elements, innermost first.
    pub dims: Vec<Extent>,
    /// The strides of the dimensions after the innermost, in elements, innermost first.
    pub strides: Vec<Extent>,
    /// The box one copy moves, innermost first (elements).
    pub box_dims: Vec<u32>,
    /// The shared-memory swizzle span in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
}

/// An extent or stride of a tensor map: a launch argument's value, or a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Extent {
    Arg(usize),
    Const(i64),
}

/// What the generated code may use of the GPU it is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Target {
    /// Compute capability as `major * 10 + minor` (90 for sm_90); 0 for code that runs on any
    /// GPU kwb supports.
    pub sm: u32,
    /// Persistent programs (`persistent: true`): each CTA runs programs `blockIdx.x`,
    /// `blockIdx.x + gridDim.x`, ... up to the kernel's extra last parameter `kwb_programs`,
    /// the grid the workspace asks for (`cuda/persistent.rs`).
    pub persistent: bool,
}

impl Target {
    pub fn sm(sm: u32) -> Target {
        Target {
            sm,
            persistent: false,
        }
    }

    /// The same target, its kernels persistent or not.
    pub fn with_persistent(self, persistent: bool) -> Target {
        Target { persistent, ..self }
    }

    /// Hopper's warpgroup MMA (`wgmma.mma_async`): sm_90 alone (compiled as sm_90a; later
    /// architectures replace it).
    pub fn wgmma(self) -> bool {
        self.sm == 90
    }
}

/// Compiles the requested kernels of a `.tile`/`.py` source to CUDA C++ that runs on any GPU.
pub fn compile(path: &Path, source: &str, requests: &[KernelRequest]) -> Compiled {
    compile_for(path, source, requests, Target::default())
}

/// Compiles the requested kernels to CUDA C++ for `target`: on sm_90 the Triton matmul loop's
/// `tl.dot` becomes `wgmma`, and the code must then be compiled for sm_90a.
pub fn compile_for(
    path: &Path,
    source: &str,
    requests: &[KernelRequest],
    target: Target,
) -> Compiled {
    compile_with(path, source, requests, target, &PythonEnv::default())
}

/// What a kernel's names resolve to beyond its own file's text, as the Python program that
/// ran it had them (`kwb capture` records both).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PythonEnv {
    /// Folders where absolute imports are also looked for, after the file's own folders
    /// (as `sys.path`).
    pub path: Vec<std::path::PathBuf>,
    /// Names of the kernel's module bound at run time to Triton objects, by dotted path
    /// (`_isnan` → `triton.language.extra.cuda.libdevice.isnan`): they replace the file's own
    /// binding of that name (a library that fills a generated module's namespace, or binds
    /// an alias through a call kwb cannot evaluate).
    pub globals: Vec<(String, String)>,
}

/// [`compile_for`], with the names the kernel's Python environment gave it ([`PythonEnv`]).
pub fn compile_with(
    path: &Path,
    source: &str,
    requests: &[KernelRequest],
    target: Target,
    env: &PythonEnv,
) -> Compiled {
    let (kernels, diagnostics, imports) = check::check_with_imports(path, source, requests, env);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Compiled {
            imports,
            cuda: String::new(),
            kernels: Vec::new(),
            diagnostics,
            dynamic_shared: Vec::new(),
            arch_specific: false,
            tensor_maps: Vec::new(),
        };
    }
    let mut kernels = kernels;
    if target.wgmma() {
        // Pointer loads that are a tensor's blocks may be copied with TMA there.
        kernels.iter_mut().for_each(blocks::annotate);
    }
    let written = cuda::write_kernels_for(&kernels, target);
    Compiled {
        cuda: written.cuda,
        dynamic_shared: written.dynamic_shared,
        arch_specific: written.arch_specific,
        tensor_maps: written.tensor_maps,
        imports,
        kernels: kernels.into_iter().map(Arc::new).collect(),
        diagnostics,
    }
}

/// A kernel's signature, for a bare file (no workspace to bind arguments).
pub struct KernelSignature {
    pub name: String,
    pub params: Vec<ParamSig>,
    pub line: u32,
    /// Another `@triton.jit` function of the file calls it: a helper, inlined there, rather
    /// than a kernel launched on its own.
    pub called: bool,
}

pub struct ParamSig {
    pub name: String,
    pub constexpr: bool,
    pub has_default: bool,
}

/// The `@triton.jit` kernels of a source and their parameters, or its syntax errors.
pub fn signatures(path: &Path, source: &str) -> Result<Vec<KernelSignature>, Vec<Diagnostic>> {
    check::signatures(path, source)
}

/// A launch argument for the interpreter.
pub enum InterpArg {
    /// An index into the buffers.
    Buffer(usize),
    Int(i64),
    Float(f64),
}

/// A buffer for the interpreter: its bytes, little-endian, of `dtype`.
pub struct InterpBuffer {
    pub name: String,
    pub dtype: DType,
    pub bytes: Vec<u8>,
}
