//! One launch of a plan: grid, block and dynamic shared memory evaluated and held to the
//! architecture's limits and the kernel's own `__launch_bounds__`, and each argument bound to
//! the kernel's PTX parameter ([`Param`]) and converted to its type:
//!
//! | parameter        | a buffer    | a number (integer parameters: whole values only)  |
//! |------------------|-------------|---------------------------------------------------|
//! | `.u64`, `.b64`   | its pointer | ≥ 0 → `U64`, < 0 → `I64` (C `long` becomes `.u64`) |
//! | `.s64`           | error       | `I64`                                             |
//! | `.u32`, `.b32`   | error       | −2³¹ … 2³²−1: ≥ 0 → `U32`, < 0 → `I32`             |
//! | `.s32`           | error       | −2³¹ … 2³¹−1 → `I32`                               |
//! | `.f32`, `.f64`   | error       | any number within range → `F32`, `F64`            |
//! | 8/16-bit, struct | error: not supported yet (no such argument kinds in the protocol) |
//!
//! "Whole" means an int, or a float without a fraction (`N / 4` is one); `true`/`false` count
//! as 1/0. PTX does not say whether a `.u32` was a C `int` or `unsigned` (NVRTC makes both
//! `.u32`), so both signs pass, with the bits a C caller would pass.

use super::params::{Param, ParamError, ParamType};
use crate::compile::occupancy::ArchSpec;
use crate::compile::CompiledVersion;
use crate::expr::Scalar;
use crate::run::protocol::{ArgSpec, LaunchSpec, TensorMapSpec};
use crate::tile::{Extent, TensorMapParam};
use crate::workspace::{Arg, Formula, Launch, SizeEnv, Version};

/// Largest block dimensions (x, y, z) on every architecture kwb knows.
pub const MAX_BLOCK_DIM: [u64; 3] = [1024, 1024, 64];
/// Largest grid dimensions (x, y, z).
pub const MAX_GRID_DIM: [u64; 3] = [(1 << 31) - 1, 65535, 65535];

/// What is wrong with one launch.
#[derive(Debug, thiserror::Error)]
pub enum LaunchProblem {
    #[error("the CUBIN has no kernel of that name; kernels there: {}", kernels.join(", "))]
    NoKernel { kernels: Vec<String> },
    #[error(transparent)]
    Params(#[from] ParamError),
    #[error("cannot evaluate {what}: {message}")]
    Eval { what: String, message: String },
    #[error("{what} is 0; every grid and block dimension must be at least 1")]
    ZeroDim { what: String },
    #[error("{what} is {value}, above the limit of {limit}")]
    DimTooLarge {
        what: String,
        value: u64,
        limit: u64,
    },
    #[error(
        "the block is {}x{}x{} = {threads} threads; {by} allows 1 to {limit} per block",
        block[0], block[1], block[2]
    )]
    TooManyThreads {
        block: [u64; 3],
        threads: u64,
        limit: u32,
        by: String,
    },
    #[error(
        "{dynamic} bytes of dynamic plus {static_bytes} of static shared memory is {}, \
         above {arch}'s limit of {limit} bytes per block",
        dynamic.saturating_add(u64::from(*static_bytes))
    )]
    SharedMemory {
        dynamic: u64,
        static_bytes: u32,
        limit: u32,
        arch: String,
    },
    #[error(
        "a persistent version's grid must be one-dimensional (its programs are counted along \
         x), but it is {}x{}x{}",
        grid[0], grid[1], grid[2]
    )]
    PersistentGrid { grid: [u64; 3] },
    #[error("the tensor descriptor on `{buffer}` (a TMA copy): {message}")]
    TensorMap { buffer: String, message: String },
    #[error("{given} arguments given, but the kernel takes {}: ({})", params.len(), list(params))]
    ArgCount { given: usize, params: Vec<Param> },
    #[error("argument `{arg}` for parameter {index} (`{param}`): {problem}")]
    Arg {
        index: usize,
        arg: String,
        param: Param,
        problem: ArgProblem,
    },
}

/// Why one argument cannot be bound to its parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgProblem {
    #[error("this version has no buffer of that name")]
    NoSuchBuffer,
    #[error("a buffer is passed as a device pointer, which needs a `.u64` or `.b64` parameter")]
    BufferNeedsPointer,
    #[error("cannot evaluate it: {0}")]
    Eval(String),
    #[error("{0} is not a whole number, and an integer parameter needs one")]
    NotIntegral(f64),
    #[error("{value} is out of the parameter's range, {range}")]
    OutOfRange { value: String, range: &'static str },
    #[error("{0} parameters are not supported yet")]
    Unsupported(&'static str),
}

impl LaunchProblem {
    /// Where under the launch's YAML field the problem sits: `.grid`, `.args[2]`, `.entry`.
    pub(super) fn field_suffix(&self) -> String {
        match self {
            LaunchProblem::NoKernel { .. } | LaunchProblem::Params(_) => ".entry".into(),
            LaunchProblem::Eval { what, .. }
            | LaunchProblem::ZeroDim { what }
            | LaunchProblem::DimTooLarge { what, .. } => {
                format!(".{}", what.split('.').next().unwrap_or(what))
            }
            LaunchProblem::TooManyThreads { .. } => ".block".into(),
            LaunchProblem::PersistentGrid { .. } => ".grid".into(),
            LaunchProblem::SharedMemory { .. } => ".shared".into(),
            LaunchProblem::ArgCount { .. } | LaunchProblem::TensorMap { .. } => ".args".into(),
            LaunchProblem::Arg { index, .. } => format!(".args[{index}]"),
        }
    }
}

fn list(params: &[Param]) -> String {
    params
        .iter()
        .map(Param::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn plan_launch(
    version: &Version,
    compiled: &CompiledVersion,
    launch: &Launch,
    env: &SizeEnv,
    arch: &ArchSpec,
    params: &[Param],
) -> Result<LaunchSpec, LaunchProblem> {
    let kernel = compiled
        .kernel(&launch.entry)
        .ok_or_else(|| LaunchProblem::NoKernel {
            kernels: compiled.kernels.iter().map(|k| k.name.clone()).collect(),
        })?;
    let eval = |what: String, f: &Formula| {
        f.eval_u64(env)
            .map_err(|message| LaunchProblem::Eval { what, message })
    };
    let mut dims = [[0u64; 3]; 2];
    for (d, (name, formulas)) in [("grid", &launch.grid), ("block", &launch.block)]
        .iter()
        .enumerate()
    {
        for (i, f) in formulas.iter().enumerate() {
            let what = format!("{name}.{}", ["x", "y", "z"][i]);
            dims[d][i] = eval(what.clone(), f)?;
            if dims[d][i] == 0 {
                return Err(LaunchProblem::ZeroDim { what });
            }
        }
    }
    let [grid, block] = dims;
    let threads = block.iter().fold(1, |n: u64, d| n.saturating_mul(*d));
    let (limit, by) = match kernel.max_threads_per_block {
        Some(b) if b < arch.max_threads_per_block => (b, "the kernel's `__launch_bounds__`".into()),
        _ => (arch.max_threads_per_block, format!("sm_{}", arch.sm)),
    };
    if threads > u64::from(limit) {
        return Err(LaunchProblem::TooManyThreads {
            block,
            threads,
            limit,
            by,
        });
    }
    for (name, dims, limits) in [
        ("grid", grid, MAX_GRID_DIM),
        ("block", block, MAX_BLOCK_DIM),
    ] {
        for i in 0..3 {
            if dims[i] > limits[i] {
                let what = format!("{name}.{}", ["x", "y", "z"][i]);
                return Err(LaunchProblem::DimTooLarge {
                    what,
                    value: dims[i],
                    limit: limits[i],
                });
            }
        }
    }
    // A tile kernel's rings in dynamic shared memory need their bytes whatever `shared:` says.
    let dynamic =
        eval("shared".into(), &launch.shared)?.max(compiled.tile_dynamic_shared(&launch.entry));
    if dynamic.saturating_add(u64::from(kernel.static_shared_bytes))
        > u64::from(arch.max_shared_per_block_optin)
    {
        return Err(LaunchProblem::SharedMemory {
            dynamic,
            static_bytes: kernel.static_shared_bytes,
            limit: arch.max_shared_per_block_optin,
            arch: format!("sm_{}", arch.sm),
        });
    }
    // A persistent tile kernel takes the grid's program count as an extra last parameter,
    // which the launch passes itself (`LaunchSpec::programs`).
    let programs = match version.persistent && version.kind.is_tile() {
        true if grid[1] != 1 || grid[2] != 1 => return Err(LaunchProblem::PersistentGrid { grid }),
        true => Some(grid[0] as u32),
        false => None,
    };
    // A tile kernel that copies with TMA takes its tensor maps after everything else.
    let maps = compiled.tile_tensor_maps(&launch.entry);
    let extra = usize::from(programs.is_some()) + maps.len();
    let params = &params[..params.len().saturating_sub(extra)];
    // A `None` argument of a tile kernel is specialised away: the kernel has no parameter
    // for it (the workspace refuses `None` for CUDA versions).
    let given: Vec<&Arg> = (launch.args.iter())
        .filter(|a| !matches!(a, Arg::None))
        .collect();
    if given.len() != params.len() {
        return Err(LaunchProblem::ArgCount {
            given: given.len(),
            params: params.to_vec(),
        });
    }
    let args = (given.into_iter().zip(params).enumerate())
        .map(|(index, (arg, param))| {
            bind_arg(version, arg, param, env).map_err(|problem| LaunchProblem::Arg {
                index,
                arg: match arg {
                    Arg::Buffer(b) => b.clone(),
                    Arg::Scalar(f) => f.text.clone(),
                    Arg::None => "None".into(),
                },
                param: param.clone(),
                problem,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tensor_maps = (maps.iter())
        .map(|m| tensor_map(m, &args))
        .collect::<Result<Vec<_>, _>>()?;
    let u32s = |d: [u64; 3]| d.map(|v| v as u32);
    Ok(LaunchSpec {
        entry: launch.entry.clone(),
        grid: u32s(grid),
        block: u32s(block),
        dynamic_shared_bytes: dynamic as u32,
        args,
        programs,
        tensor_maps,
    })
}

/// The tensor map `m` describes, from the launch's bound arguments; within what TMA encodes.
fn tensor_map(m: &TensorMapParam, args: &[ArgSpec]) -> Result<TensorMapSpec, LaunchProblem> {
    let buffer = match args.get(m.base) {
        Some(ArgSpec::Buffer(b)) => b.clone(),
        _ => {
            return Err(LaunchProblem::TensorMap {
                buffer: format!("argument {}", m.base),
                message: "its base is not a buffer".into(),
            })
        }
    };
    let fail = |message: String| LaunchProblem::TensorMap {
        buffer: buffer.clone(),
        message,
    };
    let value = |e: &Extent| -> Result<i64, LaunchProblem> {
        match e {
            Extent::Const(c) => Ok(*c),
            Extent::Arg(i) => match args.get(*i) {
                Some(ArgSpec::I32(v)) => Ok(i64::from(*v)),
                Some(ArgSpec::U32(v)) => Ok(i64::from(*v)),
                Some(ArgSpec::I64(v)) => Ok(*v),
                Some(ArgSpec::U64(v)) => {
                    i64::try_from(*v).map_err(|_| fail(format!("{v} is too large")))
                }
                _ => Err(fail(format!("argument {i} is not an integer"))),
            },
        }
    };
    let mut dims = Vec::new();
    for e in &m.dims {
        let d = value(e)?;
        if !(1..=1 << 32).contains(&d) {
            return Err(fail(format!("an extent of {d}; TMA takes 1 to 2^32")));
        }
        dims.push(d as u64);
    }
    let mut strides = Vec::new();
    for e in &m.strides {
        let s = value(e)?.saturating_mul(i64::from(m.elem_bytes));
        if s <= 0 || s % 16 != 0 || s >= 1 << 40 {
            return Err(fail(format!(
                "a row stride of {s} bytes; TMA needs a positive multiple of 16 below 2^40"
            )));
        }
        strides.push(s as u64);
    }
    Ok(TensorMapSpec {
        buffer,
        elem_bytes: m.elem_bytes,
        dims,
        strides,
        box_dims: m.box_dims.clone(),
        swizzle: m.swizzle,
    })
}

/// One argument, converted to its parameter's type (the table above).
fn bind_arg(
    version: &Version,
    arg: &Arg,
    param: &Param,
    env: &SizeEnv,
) -> Result<ArgSpec, ArgProblem> {
    let f = match arg {
        Arg::Buffer(name) if version.buffer(name).is_none() => {
            return Err(ArgProblem::NoSuchBuffer)
        }
        Arg::Buffer(_) if !param.ty.holds_pointer() => return Err(ArgProblem::BufferNeedsPointer),
        Arg::Buffer(name) => return Ok(ArgSpec::Buffer(name.clone())),
        Arg::Scalar(f) => f,
        Arg::None => return Err(ArgProblem::Unsupported("`None`")),
    };
    let v = f.eval(env).map_err(ArgProblem::Eval)?;
    let range = |range| ArgProblem::OutOfRange {
        value: v.to_string(),
        range,
    };
    let float = match v {
        Scalar::Bool(b) => f64::from(u8::from(b)),
        _ => v.as_f64().unwrap_or(f64::NAN),
    };
    let ty = param.ty;
    if ty == ParamType::Aggregate {
        return Err(ArgProblem::Unsupported("struct (by-value aggregate)"));
    }
    if ty.bits().is_some_and(|b| b < 32) {
        return Err(ArgProblem::Unsupported("8- and 16-bit"));
    }
    if let ParamType::Float { bits } = ty {
        return match bits {
            32 if float.abs() <= f64::from(f32::MAX) => Ok(ArgSpec::F32(float as f32)),
            32 => Err(range("-3.4028235e38 to 3.4028235e38")),
            _ => Ok(ArgSpec::F64(float)),
        };
    }
    let whole = match v {
        Scalar::Bool(b) => i64::from(b),
        _ if float.fract() != 0.0 => return Err(ArgProblem::NotIntegral(float)),
        _ => v
            .as_i64()
            .ok_or_else(|| range("-9223372036854775808 to 9223372036854775807"))?,
    };
    let signed = matches!(ty, ParamType::Int { signed: true, .. });
    Ok(match (ty.bits(), signed) {
        (Some(32), true) => {
            ArgSpec::I32(i32::try_from(whole).map_err(|_| range("-2147483648 to 2147483647"))?)
        }
        (Some(32), false) if whole >= 0 => {
            ArgSpec::U32(u32::try_from(whole).map_err(|_| range("-2147483648 to 4294967295"))?)
        }
        (Some(32), false) => {
            ArgSpec::I32(i32::try_from(whole).map_err(|_| range("-2147483648 to 4294967295"))?)
        }
        (_, false) if whole >= 0 => ArgSpec::U64(whole as u64),
        _ => ArgSpec::I64(whole),
    })
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
