//! kwb's PTX emulator: runs the PTX that NVRTC emitted for a kernel on the CPU, and checks
//! what compute-sanitizer checks (memory, races, initialisation, synchronisation), reporting
//! each finding with the CTA, the thread, the PTX line and the source line from `.loc`.
//!
//! Stages: [`parse`] reads PTX text and decodes every instruction once into the compact form
//! of [`inst`]; [`exec`] runs a grid, CTAs in parallel across cores, each CTA's warps lane by
//! lane in lockstep ([`alu`] holds the per-lane semantics), TMA loads and mbarriers included
//! (a [`TensorMap`] is kwb's encoding of the map they name); [`memory`] is the emulated global
//! address space with red zones; [`checks`] collects findings. Nothing here knows about
//! workspaces, the UI or the GPU.

mod alu;
mod checks;
mod decode;
mod decode_sync;
mod decode_tma;
mod exec;
pub mod inst;
mod memory;
mod parse;
mod tensor_map;

pub use checks::{Finding, FindingKind};
pub use memory::{InitState, Memory};
pub use tensor_map::TensorMap;

use std::collections::HashMap;
use std::fmt;

/// A PTX problem the front end found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PTX line {}:{}: {}",
            self.line, self.column, self.message
        )
    }
}

/// One kernel parameter: its PTX type and byte size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamType {
    pub ty: inst::Ty,
    pub size: u32,
    pub align: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SymbolKind {
    Shared,
    Local,
    Global,
    Const,
}

/// A variable declared in the PTX.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    pub size: u32,
    pub align: u32,
    /// `.extern .shared … name[]`: dynamic shared memory.
    pub dynamic: bool,
    pub init: Vec<u8>,
    /// Offset in its CTA's shared or thread's local space, once laid out.
    pub offset: u32,
}

/// One `.entry`, decoded.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub name: String,
    pub params: Vec<ParamType>,
    pub(crate) param_offsets: Vec<u32>,
    pub(crate) nregs: u32,
    pub(crate) insts: Vec<inst::Inst>,
    pub(crate) symbols: Vec<Symbol>,
    /// Static shared memory, bytes (dynamic shared memory starts here).
    pub static_shared: u32,
    pub local_bytes: u32,
}

/// A PTX module, parsed and decoded once.
#[derive(Debug, Clone, Default)]
pub struct Module {
    pub(crate) entries: Vec<Entry>,
    pub(crate) files: HashMap<u32, String>,
    pub(crate) globals: Vec<Symbol>,
}

impl Module {
    /// Reads PTX text; every problem found is returned, each with its line and column.
    pub fn parse(ptx: &str) -> Result<Module, Vec<PtxError>> {
        parse::parse(ptx)
    }

    pub fn entries(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    pub fn params(&self, entry: &str) -> Option<Vec<ParamType>> {
        self.entry(entry).map(|e| e.params.clone())
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// One kernel launch.
pub struct Launch<'a> {
    pub entry: &'a str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared: u32,
    /// One value per PTX parameter, in order.
    pub params: &'a [ParamValue],
}

/// The value of one kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamValue {
    /// A scalar of up to 8 bytes: pointers are addresses from [`Memory::alloc`], 32-bit values
    /// sit in the low bits, floats as their bits.
    Word(u64),
    /// The bytes of an aggregate parameter (`.param .align 64 .b8 p[128]`, such as a
    /// [`TensorMap`]'s), exactly as many as the PTX declares.
    Bytes(Vec<u8>),
}

impl ParamValue {
    /// One [`ParamValue::Word`] per raw value.
    pub fn words(values: &[u64]) -> Vec<ParamValue> {
        values.iter().map(|&v| ParamValue::Word(v)).collect()
    }
}

impl From<u64> for ParamValue {
    fn from(v: u64) -> ParamValue {
        ParamValue::Word(v)
    }
}

/// The kernel's parameter space: each value at its offset, checked against its PTX size.
pub(crate) fn param_space(e: &Entry, values: &[ParamValue]) -> Result<Vec<u8>, EmuError> {
    let end = (e.params.iter().zip(&e.param_offsets))
        .map(|(p, &o)| (o + p.size) as usize)
        .max()
        .unwrap_or(0);
    let mut space = vec![0u8; end + 16];
    for (k, ((p, &off), v)) in e
        .params
        .iter()
        .zip(&e.param_offsets)
        .zip(values)
        .enumerate()
    {
        let off = off as usize;
        let size = p.size as usize;
        match v {
            ParamValue::Word(w) if size <= 8 => {
                space[off..off + size].copy_from_slice(&w.to_le_bytes()[..size]);
            }
            ParamValue::Bytes(b) if b.len() == size => space[off..off + size].copy_from_slice(b),
            _ => {
                let given = match v {
                    ParamValue::Word(_) => "a scalar".to_string(),
                    ParamValue::Bytes(b) => format!("{} bytes", b.len()),
                };
                return Err(EmuError::BadLaunch(format!(
                    "parameter {k} of `{}` is {size} bytes, the launch gives {given}",
                    e.name
                )));
            }
        }
    }
    Ok(space)
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Threads for CTAs (0: every core).
    pub threads: usize,
    /// Findings kept; the rest are counted in the last one's message.
    pub max_findings: usize,
    /// Wall-clock limit of one launch, in milliseconds: past it, [`EmuError::Timeout`].
    pub watchdog_ms: Option<u64>,
    /// Set to stop the launch ([`EmuError::Cancelled`]): its work is no longer wanted.
    pub cancel: Option<crate::watchdog::CancelFlag>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 0,
            max_findings: 32,
            watchdog_ms: None,
            cancel: None,
        }
    }
}

/// What a launch did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Lane-instructions executed.
    pub instructions: u64,
    /// Approximate instructions that ran (computed exactly here), each with its documented
    /// error on the GPU.
    pub approx: Vec<String>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum EmuError {
    #[error("PTX line {ptx_line}: the emulator does not support `{instruction}`")]
    Unsupported { instruction: String, ptx_line: u32 },
    #[error("{0}")]
    BadLaunch(String),
    #[error("the kernel ran past its budget of {0} lane-instructions (an endless loop?)")]
    Budget(u64),
    #[error("the launch ran past its watchdog of {0} ms (an endless loop?)")]
    Timeout(u64),
    #[error("the launch was cancelled")]
    Cancelled,
    #[error("PTX line {ptx_line}: {message}")]
    TensorMap { message: String, ptx_line: u32 },
}

/// Runs one launch of `module` on `mem`.
pub fn run(
    module: &Module,
    launch: &Launch,
    mem: &mut Memory,
    opts: &Options,
) -> Result<Report, EmuError> {
    exec::run(module, launch, mem, opts)
}

impl From<crate::watchdog::Stopped> for EmuError {
    fn from(s: crate::watchdog::Stopped) -> EmuError {
        match s {
            crate::watchdog::Stopped::Timeout(ms) => EmuError::Timeout(ms),
            crate::watchdog::Stopped::Cancelled => EmuError::Cancelled,
        }
    }
}
