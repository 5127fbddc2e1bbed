//! A tile-language program run by the tile interpreter, the language's reference semantics:
//! each launch's kernel evaluated program by program on host buffers. An out-of-bounds access
//! (a lane whose mask is true but whose address is outside its buffer) becomes a finding; a
//! kernel the interpreter cannot run at all is an error of the run.

use super::{Ran, Stop};
use crate::report::Finding;
use crate::run::protocol::{ArgSpec, BufferSpec, Program};
use crate::tile::{interp, InterpArg, InterpBuffer};
use std::collections::HashMap;
use std::sync::Arc;

pub(super) fn run(
    kernels: &[Arc<crate::tile::ir::Kernel>],
    program: &Program,
    specs: &[BufferSpec],
    start: &HashMap<String, Vec<u8>>,
    want: &[&BufferSpec],
    watchdog_ms: Option<u64>,
    opts: &super::CpuOptions,
) -> Result<Ran, Stop> {
    let mut buffers: Vec<InterpBuffer> = specs
        .iter()
        .map(|b| InterpBuffer {
            name: b.name.clone(),
            dtype: b.dtype,
            bytes: start.get(&b.name).cloned().unwrap_or_else(|| {
                vec![0; b.shape.iter().product::<usize>() * b.dtype.size() as usize]
            }),
        })
        .collect();
    let names: Vec<String> = buffers.iter().map(|b| b.name.clone()).collect();
    let index = |n: &str| names.iter().position(|b| b == n);
    let mut findings = Vec::new();
    let mut work = 0u64;
    for (i, l) in program.launches.iter().enumerate() {
        let kernel = kernels
            .iter()
            .find(|k| k.name == l.entry)
            .ok_or_else(|| format!("launch {i}: no tile kernel `{}`", l.entry))?;
        let args = l
            .args
            .iter()
            .map(|a| match a {
                ArgSpec::Buffer(n) => index(n)
                    .map(InterpArg::Buffer)
                    .ok_or_else(|| format!("launch {i} ({}): no buffer `{n}`", l.entry)),
                ArgSpec::I32(v) => Ok(InterpArg::Int(i64::from(*v))),
                ArgSpec::U32(v) => Ok(InterpArg::Int(i64::from(*v))),
                ArgSpec::I64(v) => Ok(InterpArg::Int(*v)),
                ArgSpec::U64(v) => Ok(InterpArg::Int(*v as i64)),
                ArgSpec::F32(v) => Ok(InterpArg::Float(f64::from(*v))),
                ArgSpec::F64(v) => Ok(InterpArg::Float(*v)),
                ArgSpec::TensorMap(_) => Err(format!(
                    "launch {i} ({}): a tensor map among the launch's own arguments",
                    l.entry
                )),
            })
            .collect::<Result<Vec<_>, String>>()?;
        match interp::run_watched(
            kernel,
            l.grid,
            &args,
            &mut buffers,
            watchdog_ms,
            opts.cancel.as_ref(),
        ) {
            Ok(stats) => work += stats.ops,
            Err(e) if e.is_finding() => {
                findings.push(Finding {
                    kind: e.kind().to_string(),
                    message: e.message.clone(),
                    cta: Some(e.program),
                    thread: None,
                    ptx_line: None,
                    file: e.file.clone(),
                    line: e.line,
                });
                // The launch stopped at the fault; later launches would read half-made data.
                break;
            }
            // A kernel the interpreter could not run (bad arguments, a loop that never ends):
            // the run could not be carried out, as with the emulator's unsupported instructions.
            Err(e) => {
                let [x, y, z] = e.program;
                let message = format!("launch {i} ({}): {e} (program ({x}, {y}, {z}))", l.entry);
                return Err(if e.is_cancelled() {
                    Stop::Cancelled
                } else if e.is_timeout() {
                    Stop::Timeout(message)
                } else {
                    Stop::Error(message)
                });
            }
        }
    }
    let outputs = want
        .iter()
        .map(|b| {
            index(&b.name)
                .map(|i| buffers[i].bytes.clone())
                .unwrap_or_default()
        })
        .collect();
    Ok(Ran {
        outputs,
        findings,
        notes: Vec::new(),
        work,
    })
}
