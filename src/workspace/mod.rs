//! Workspaces: the YAML files that say which kernel versions to compare, on which problem sizes,
//! with which buffers and which reference. Reading one goes raw YAML ([`raw`]) → checked model
//! ([`Workspace`]) in [`load`]; every problem found is reported with file, line, column and field.

pub mod dtype;
mod file_problem;
pub mod formula;
mod load;
pub mod raw;
pub mod spans;
pub mod sweep;
mod validate;

pub use dtype::{DType, Init};
pub use file_problem::{file_problem, FileProblem};
pub use formula::{Formula, SizeEnv};
pub use load::{load, load_str, WorkspaceError};
pub use sweep::{AxisKind, Sweep, SweepAxis, SweepPoint};
pub use validate::triton_release;

use crate::common::arch::Arch;
use spans::SpanIndex;
use std::path::PathBuf;

/// A checked workspace: every expression parsed, every file found, every name resolved.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The YAML file this came from (or the bare `.cu` file for an ad-hoc workspace).
    pub path: PathBuf,
    pub name: String,
    pub description: Option<String>,
    /// The arch the workspace asks for, if any.
    pub arch: Option<Arch>,
    pub sizes: Vec<ProblemSize>,
    /// Buffers shared by all versions (before per-version overrides).
    pub buffers: Vec<Buffer>,
    pub reference: Reference,
    pub tolerance: Option<Tolerance>,
    /// Bytes one run must move, for bandwidth; defaults to every non-scratch buffer once.
    pub bytes: Option<Formula>,
    pub flops: Option<Formula>,
    /// Every version to run: a swept version appears as its configurations.
    pub versions: Vec<Version>,
    /// The swept versions, each with its axes and the names of its configurations.
    pub sweeps: Vec<Sweep>,
    /// Field positions in the YAML, for diagnostics found by later stages.
    pub spans: SpanIndex,
}

/// One named problem size: values for the size variables, e.g. `N = 16Mi`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemSize {
    pub name: String,
    pub vars: Vec<(String, i64)>,
    /// A small size meant for the CPU (`emulate: true`): `kwb batch --cpu` runs it by default,
    /// GPU runs leave it out unless `--sizes` names it.
    pub emulate: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Buffer {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<Formula>,
    pub init: Init,
    pub output: bool,
    /// The workspace gave `init` itself. An output with an explicit `init` starts from that
    /// value instead of the NaN poison (for kernels that accumulate), so unwritten-element
    /// detection does not apply to it.
    pub init_given: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// Per output buffer, a whole-array expression over the input buffers.
    Expr(Vec<(String, Formula)>),
    /// Another version's outputs.
    Version(String),
    /// Per output buffer, an expected-output `.npy` file.
    Npy(Vec<(String, PathBuf)>),
    /// No reference: outputs are not checked.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
}

/// What language a version's file is in, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// CUDA C++, compiled by NVRTC as it is.
    Cuda,
    /// A `.tile` file of tile-language (Triton) kernels.
    Tile,
    /// A `.py` module whose `@triton.jit` functions are the kernels.
    Python,
}

impl SourceKind {
    pub fn of(path: &std::path::Path) -> SourceKind {
        match path.extension().and_then(|e| e.to_str()) {
            Some("tile") => SourceKind::Tile,
            Some("py") => SourceKind::Python,
            _ => SourceKind::Cuda,
        }
    }

    /// Tile-language source (`.tile` or `.py`), compiled by kwb before NVRTC.
    pub fn is_tile(self) -> bool {
        self != SourceKind::Cuda
    }
}

/// One version of the kernel: a source file and the launches that run it.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    pub description: Option<String>,
    pub file: PathBuf,
    pub kind: SourceKind,
    /// Tile versions: warps per program (default 4); the block is `32 * num_warps`.
    pub num_warps: Option<Formula>,
    /// Tile versions: persistent programs. The kernel runs the grid's programs on as many CTAs
    /// as the GPU keeps resident at once, each CTA looping over programs, so that the next
    /// program's first loads overlap the last one's epilogue (docs/tile-language.md).
    pub persistent: bool,
    /// Tile versions: `tl.constexpr` values: expressions over the size variables, or a
    /// string, dtype or `None`.
    pub constexprs: Vec<(String, Constexpr)>,
    /// NVRTC options, workspace-wide ones first.
    pub options: Vec<String>,
    /// `#define`s passed as `-D NAME=VALUE`, workspace-wide ones first.
    pub defines: Vec<(String, String)>,
    pub launches: Vec<Launch>,
    /// The buffers this version sees: the workspace's, with this version's overrides applied.
    pub buffers: Vec<Buffer>,
    /// Scratch buffers: neither checked nor counted in bytes moved.
    pub scratch: Vec<Buffer>,
    pub tolerance: Option<Tolerance>,
    /// The field path of this version in the YAML, e.g. `versions.v2` (a configuration of a
    /// sweep has its swept version's).
    pub field: String,
    /// A configuration of a swept version: which one, and its values.
    pub sweep: Option<SweepPoint>,
    /// Another tool's kernel time for the same launch, to show beside kwb's.
    pub baseline: Option<Baseline>,
    /// Tile versions: the Triton release whose numerics kwb follows where releases differ (the
    /// order of a float sum's additions), as `(major, minor)`; None: the newest kwb knows.
    pub triton: Option<(u32, u32)>,
    /// Triton's `enable_fp_fusion` (default true): products may be contracted into sums.
    pub fp_fusion: bool,
    /// Tile-language versions: folders where the kernel's absolute imports are also looked
    /// for, as Python's `sys.path` (`kwb capture` records the program's).
    pub python_path: Vec<PathBuf>,
    /// Tile-language versions: names of the kernel's module bound at run time to Triton
    /// objects (`_isnan: triton.language.extra.cuda.libdevice.isnan`), which replace the
    /// file's own (`kwb capture` records them).
    pub python_globals: Vec<(String, String)>,
}

/// Another tool's time for a version's launch: Triton's own kernel, as `kwb capture` recorded
/// it, say.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Who ran it: `Triton 3.6.0`.
    pub name: String,
    /// Its time in µs, an expression over the size variables.
    pub us: Formula,
    /// How it was measured (the clock, the card).
    pub note: Option<String>,
}

/// A tile version's value for one `tl.constexpr` parameter, as the workspace gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Constexpr {
    /// A number or bool: an expression over the size variables (`BLOCK: next_pow2(N)`).
    Formula(Formula),
    /// A string, written as a Python literal inside the YAML string: `ACT: "'leaky_relu'"`.
    Str(String),
    /// A Triton dtype, by its `tl.` name without the prefix: `X_dtype: tl.bfloat16` holds
    /// `bfloat16`.
    DType(String),
    /// `None`.
    None,
}

/// The dtypes a constexpr may name as `tl.<name>`.
pub const TRITON_DTYPES: &[&str] = &[
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "bfloat16", "float32", "float64",
];

impl Constexpr {
    /// Reads a constexpr's text: `'text'`/`"text"` (a string), `tl.<dtype>`, `None`, else an
    /// expression. Err says what is wrong.
    pub fn parse(text: &str) -> Result<Constexpr, String> {
        match Constexpr::symbolic(text) {
            Some(r) => r,
            None => Formula::parse(text.trim())
                .map(Constexpr::Formula)
                .map_err(|e| e.to_string()),
        }
    }

    /// A string, dtype or `None` (`None` for the text of an expression).
    pub fn symbolic(text: &str) -> Option<Result<Constexpr, String>> {
        let t = text.trim();
        if t == "None" {
            return Some(Ok(Constexpr::None));
        }
        for q in ['\'', '"'] {
            if let Some(rest) = t.strip_prefix(q) {
                return Some(match rest.strip_suffix(q) {
                    Some(inner) if !inner.contains(q) && !inner.contains('\\') => {
                        Ok(Constexpr::Str(inner.to_string()))
                    }
                    _ => Err(format!(
                        "`{t}`: a string constexpr is one Python literal with no escapes, such as 'leaky_relu'"
                    )),
                });
            }
        }
        let dotted = t
            .strip_prefix("tl.")
            .or_else(|| t.strip_prefix("triton.language."));
        if let Some(name) = dotted {
            return Some(match TRITON_DTYPES.iter().find(|d| **d == name) {
                Some(d) => Ok(Constexpr::DType(d.to_string())),
                None => Err(format!(
                    "`{t}` is not a Triton dtype; expected one of tl.{}",
                    TRITON_DTYPES.join(", tl.")
                )),
            });
        }
        None
    }

    /// The expression, for a number or bool.
    pub fn formula(&self) -> Option<&Formula> {
        match self {
            Constexpr::Formula(f) => Some(f),
            _ => None,
        }
    }
}

impl Version {
    /// The distinct kernel entry names this version launches, in first-use order.
    pub fn entries(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for l in &self.launches {
            if !out.contains(&l.entry.as_str()) {
                out.push(&l.entry);
            }
        }
        out
    }

    /// The variables launches see at `size`: the size variables, then (tile versions) each
    /// constexpr with a whole-number value and `num_warps`.
    pub fn vars_at(&self, size: &ProblemSize) -> Result<Vec<(String, i64)>, String> {
        let mut vars = size.vars.clone();
        let env_vars = size.vars.clone();
        for (name, c) in &self.constexprs {
            let Some(f) = c.formula() else { continue };
            if let Ok(crate::expr::Scalar::Int(v)) = f.eval(&SizeEnv::vars(&env_vars)) {
                vars.push((name.clone(), v));
            }
        }
        match &self.num_warps {
            Some(w) => vars.push(("num_warps".into(), w.eval_int(&SizeEnv::vars(&vars))?)),
            // A tile version's default, as Triton's.
            None if self.kind.is_tile() => vars.push(("num_warps".into(), 4)),
            None => {}
        }
        Ok(vars)
    }

    /// The name of the swept version this is a configuration of, else its own name.
    pub fn family(&self) -> &str {
        self.sweep.as_ref().map_or(&self.name, |s| &s.parent)
    }

    /// A buffer or scratch buffer by name.
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers
            .iter()
            .chain(&self.scratch)
            .find(|b| b.name == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub entry: String,
    pub grid: [Formula; 3],
    pub block: [Formula; 3],
    pub shared: Formula,
    pub args: Vec<Arg>,
    /// The field path of this launch, e.g. `versions.v1` or `versions.v1.launches[2]`.
    pub field: String,
}

/// A kernel argument: a buffer's device pointer or a scalar expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Buffer(String),
    Scalar(Formula),
    /// `None` for an optional argument of a tile kernel: Triton specialises it as a constexpr
    /// `None`, so it is not passed at launch.
    None,
}

impl Workspace {
    /// The sizes a CPU run takes by default: those marked `emulate: true`, else the smallest
    /// (by the product of its variables). Indices into `sizes`.
    pub fn cpu_sizes(&self) -> Vec<usize> {
        let marked: Vec<usize> = (0..self.sizes.len())
            .filter(|&i| self.sizes[i].emulate)
            .collect();
        if !marked.is_empty() {
            return marked;
        }
        let volume = |s: &ProblemSize| s.vars.iter().map(|(_, v)| *v as i128).product::<i128>();
        (0..self.sizes.len())
            .min_by_key(|&i| volume(&self.sizes[i]))
            .into_iter()
            .collect()
    }

    /// The sweep named `parent`, if that version is swept.
    pub fn sweep(&self, parent: &str) -> Option<&Sweep> {
        self.sweeps.iter().find(|s| s.parent == parent)
    }

    /// The sizes a GPU run takes by default: all but those meant for emulation.
    pub fn gpu_sizes(&self) -> Vec<usize> {
        (0..self.sizes.len())
            .filter(|&i| !self.sizes[i].emulate)
            .collect()
    }

    /// A workspace for one bare kernel file: a single version with no launches, so that every
    /// kernel in the file is inspected at a default block size.
    pub fn for_kernel_file(path: &std::path::Path) -> Result<Workspace, WorkspaceError> {
        if let Some(problem) = file_problem(path) {
            let message = match problem {
                FileProblem::NotFound => "kernel file not found".to_string(),
                other => format!("kernel file {other}"),
            };
            return Err(WorkspaceError::one(
                crate::diag::Diagnostic::error(message).in_file(path),
            ));
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "kernel".into());
        Ok(Workspace {
            path: path.to_path_buf(),
            name: name.clone(),
            description: None,
            arch: None,
            sizes: Vec::new(),
            buffers: Vec::new(),
            reference: Reference::None,
            tolerance: None,
            bytes: None,
            flops: None,
            versions: vec![Version {
                name,
                description: None,
                file: path.to_path_buf(),
                kind: SourceKind::of(path),
                num_warps: None,
                persistent: false,
                constexprs: Vec::new(),
                options: Vec::new(),
                defines: Vec::new(),
                launches: Vec::new(),
                buffers: Vec::new(),
                scratch: Vec::new(),
                tolerance: None,
                field: String::new(),
                sweep: None,
                baseline: None,
                triton: None,
                fp_fusion: true,
                python_path: Vec::new(),
                python_globals: Vec::new(),
            }],
            sweeps: Vec::new(),
            spans: SpanIndex::default(),
        })
    }
}
