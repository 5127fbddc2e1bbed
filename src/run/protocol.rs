//! The supervisor ↔ worker protocol. All CUDA work runs in a `kwb worker` child process, so a
//! faulting kernel kills only the worker. The two sides exchange length-delimited frames over
//! any byte stream (stdin/stdout today; `ssh gpu-host kwb worker` tomorrow): a little-endian
//! `u32` length, then that many bytes of JSON. The first exchange is a `hello` carrying
//! [`PROTOCOL`]; a mismatch ends the session with a clear error. See docs/worker-protocol.md.

use crate::run::stats::{Stats, StopReason, StopRule};
use crate::workspace::{DType, Init};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{ErrorKind, Read, Write};

/// Bumped on any incompatible change to the messages below.
pub const PROTOCOL: u32 = 1;
/// Frames larger than this are refused (a corrupt length must not allocate gigabytes).
pub const MAX_FRAME: usize = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("the worker's stream closed")]
    Closed,
    #[error("a frame was cut short: expected {expected} bytes, got {got}")]
    Truncated { expected: usize, got: usize },
    #[error("a frame of {0} bytes is larger than the {MAX_FRAME}-byte limit")]
    TooLarge(usize),
    #[error("cannot decode a frame: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("the worker speaks protocol {theirs}, this kwb speaks {ours}; use the same kwb on both sides")]
    VersionMismatch { ours: u32, theirs: u32 },
    #[error("expected {expected}, got {got}")]
    Unexpected { expected: &'static str, got: String },
    #[error("i/o error on the worker's stream: {0}")]
    Io(#[from] std::io::Error),
}

/// Supervisor → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Hello {
        protocol: u32,
    },
    /// Open a device and report its facts (measuring the copy peak if not cached).
    Device {
        ordinal: u32,
    },
    Run(Box<RunJob>),
    /// Stop job `id` at the next sample, keeping the worker (and its resident inputs): the
    /// job's source was superseded. Answered by [`Reply::Cancelled`], or by the job's own
    /// reply if it ended first.
    Cancel {
        id: u64,
    },
    Shutdown,
}

/// Worker → supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Hello {
        protocol: u32,
        kwb_version: String,
    },
    Device(crate::report::DeviceInfo),
    /// A job moved to a new phase.
    Phase {
        id: u64,
        phase: Phase,
    },
    /// Still alive: sent at least every quarter second while a job runs on the GPU or the CPU,
    /// so the supervisor's watchdog can tell a long benchmark from a hung kernel.
    Heartbeat {
        id: u64,
    },
    /// The GPU faulted (e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`); the context is lost and the worker
    /// exits right after sending this.
    Fault {
        id: u64,
        error: String,
    },
    Done(Box<JobOutcome>),
    /// Job `id` stopped early, as asked by [`Request::Cancel`]; the worker is ready.
    Cancelled {
        id: u64,
    },
    /// The request could not be carried out (no GPU, a bad job); the worker is still usable.
    Error {
        id: Option<u64>,
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Preparing,
    Checking,
    Benchmarking,
}

/// Bytes that travel as base64 inside JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Blob(pub Vec<u8>);

impl Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::Engine;
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map(Blob)
            .map_err(serde::de::Error::custom)
    }
}

/// Everything the worker needs to check and time one version at one size. The supervisor has
/// already evaluated every expression and resolved every argument against the kernel's
/// parameter list, so the worker does no interpretation of the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJob {
    pub id: u64,
    pub version: String,
    pub size: String,
    pub program: Program,
    pub buffers: Vec<BufferSpec>,
    pub reference: ReferenceSpec,
    pub seed: u64,
    pub bench: BenchSpec,
}

/// A compiled module and the launches that make one run of a version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub cubin: Blob,
    pub launches: Vec<LaunchSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    pub entry: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
    pub args: Vec<ArgSpec>,
    /// A persistent tile kernel's program count (`persistent: true`): `grid` is the grid of
    /// programs the kernel emulates; the launch runs at most as many CTAs as the GPU holds at
    /// once and passes this count as the kernel's extra last argument (`run/program.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs: Option<u32>,
    /// A tile kernel's tensor maps (TMA copies), passed after everything else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<TensorMapSpec>,
}

/// A `CUtensorMap` kernel parameter to encode at launch: a 2-D (or higher) tiled view of a
/// buffer, innermost dimension first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorMapSpec {
    pub buffer: String,
    pub elem_bytes: u32,
    /// Extents in elements.
    pub dims: Vec<u64>,
    /// Byte strides of the dimensions after the innermost.
    pub strides: Vec<u64>,
    /// The box one copy moves, in elements.
    pub box_dims: Vec<u32>,
    /// Shared-memory swizzle span in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
}

impl LaunchSpec {
    /// The arguments the kernel takes: the launch's, then a persistent kernel's program count,
    /// then its tensor maps.
    pub fn kernel_args(&self) -> Vec<ArgSpec> {
        let programs = self.programs.map(|n| ArgSpec::I32(n as i32));
        let maps = self.tensor_maps.iter().cloned().map(ArgSpec::TensorMap);
        self.args
            .iter()
            .cloned()
            .chain(programs)
            .chain(maps)
            .collect()
    }

    /// The CTAs a persistent launch runs, given how many the GPU holds at once; else the grid.
    pub fn physical_grid(&self, resident: u32) -> [u32; 3] {
        match self.programs {
            Some(n) => [n.min(resident.max(1)), 1, 1],
            None => self.grid,
        }
    }
}

impl ArgSpec {
    /// The 8-byte little-endian slot of a scalar or buffer argument, as the GPU and the
    /// emulator take it: a 4-byte value in the low half, floats as their bits, a buffer as the
    /// address `buffer` gives for its name. `None` for a tensor map (128 bytes of its own).
    pub fn word<E>(&self, buffer: impl FnOnce(&str) -> Result<u64, E>) -> Result<Option<u64>, E> {
        Ok(Some(match self {
            ArgSpec::Buffer(name) => buffer(name)?,
            ArgSpec::I32(v) => u64::from(*v as u32),
            ArgSpec::U32(v) => u64::from(*v),
            ArgSpec::I64(v) => *v as u64,
            ArgSpec::U64(v) => *v,
            ArgSpec::F32(v) => u64::from(v.to_bits()),
            ArgSpec::F64(v) => v.to_bits(),
            ArgSpec::TensorMap(_) => return Ok(None),
        }))
    }
}

/// A kernel argument, typed after the kernel's PTX parameter list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ArgSpec {
    Buffer(String),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    /// A 128-byte `CUtensorMap` (by value, `__grid_constant__`).
    TensorMap(TensorMapSpec),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Input,
    Output,
    Scratch,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferSpec {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub init: Init,
    pub role: Role,
    /// An output that starts from its `init` values instead of the NaN poison (the workspace
    /// gave it an explicit `init`); unwritten-element detection does not apply to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initialized: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReferenceSpec {
    None,
    /// Per output, an array expression over the inputs (and size variables).
    Expr {
        outputs: Vec<(String, String)>,
        vars: Vec<(String, i64)>,
    },
    /// Another version's outputs, from its own program run on the same inputs.
    Version {
        name: String,
        program: Program,
    },
    /// Per output, an expected-output `.npy` file (a path on the worker's machine).
    Npy {
        outputs: Vec<(String, String)>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchMode {
    Cold,
    Hot,
    Graph,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSpec {
    pub check: bool,
    pub benchmark: bool,
    pub mode: BenchMode,
    pub warmup_ms: f64,
    pub stop: StopRule,
    /// Per-launch watchdog: a run that takes longer is a hang.
    pub watchdog_ms: u64,
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
    /// Bytes of red zone before and after every buffer (rounded up to 256); `None` means
    /// [`DEFAULT_GUARD_BYTES`], 0 turns red zones off. Absent from older
    /// supervisors' jobs, so the protocol number is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard_bytes: Option<u64>,
}

/// What happened to one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    pub id: u64,
    pub check: Option<crate::report::CheckSummary>,
    pub timing: Option<Stats>,
    pub stop: Option<StopReason>,
    /// The benchmark's samples in µs (the last 256 at most), for sparklines.
    #[serde(default)]
    pub samples_us: Vec<f64>,
    /// Set when the job could not run (too little memory, a launch error that left the context
    /// usable); faults that kill the context kill the worker instead.
    pub error: Option<String>,
}

/// Writes one frame.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), ProtocolError> {
    let body = serde_json::to_vec(msg)?;
    if body.len() > MAX_FRAME {
        return Err(ProtocolError::TooLarge(body.len()));
    }
    w.write_all(&(body.len() as u32).to_le_bytes())?;
    w.write_all(&body)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame; `Err(Closed)` when the stream ends cleanly between frames.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, ProtocolError> {
    let mut len = [0u8; 4];
    let got = read_full(r, &mut len)?;
    if got == 0 {
        return Err(ProtocolError::Closed);
    }
    if got < 4 {
        return Err(ProtocolError::Truncated { expected: 4, got });
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_FRAME {
        return Err(ProtocolError::TooLarge(n));
    }
    let mut body = vec![0u8; n];
    let got = read_full(r, &mut body)?;
    if got < n {
        return Err(ProtocolError::Truncated { expected: n, got });
    }
    Ok(serde_json::from_slice(&body)?)
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, ProtocolError> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(done)
}

/// The supervisor's side of the handshake: say hello, check the worker's answer.
pub fn handshake<R: Read, W: Write>(r: &mut R, w: &mut W) -> Result<String, ProtocolError> {
    write_frame(w, &Request::Hello { protocol: PROTOCOL })?;
    match read_frame::<_, Reply>(r)? {
        Reply::Hello {
            protocol,
            kwb_version,
        } if protocol == PROTOCOL => Ok(kwb_version),
        Reply::Hello { protocol, .. } => Err(ProtocolError::VersionMismatch {
            ours: PROTOCOL,
            theirs: protocol,
        }),
        other => Err(ProtocolError::Unexpected {
            expected: "hello",
            got: format!("{other:?}"),
        }),
    }
}

/// The size of each red zone (guard region) around a buffer when a job leaves it to the worker.
pub const DEFAULT_GUARD_BYTES: usize = 64 << 10;

#[cfg(test)]
#[path = "protocol_tests.rs"]
pub(crate) mod tests;
