//! A program run by the PTX emulator: every buffer placed in the emulated global memory (with
//! red zones around it), each launch run in order, the findings turned into report findings.

use super::{CpuOptions, Ran, Stop};
use crate::emu::{self, InitState, Memory, Module};
use crate::report::Finding;
use crate::run::protocol::{ArgSpec, BufferSpec, Program, Role};
use std::collections::{BTreeSet, HashMap};

/// How many CTAs the emulator runs a persistent kernel on (`LaunchSpec::programs`): few, so
/// that at the small sizes it emulates every CTA still runs several programs, as on a GPU.
pub const EMULATED_RESIDENT_CTAS: u32 = 2;

pub(super) fn run(
    module: &Module,
    program: &Program,
    specs: &[BufferSpec],
    start: &HashMap<String, Vec<u8>>,
    want: &[&BufferSpec],
    opts: &CpuOptions,
    watchdog_ms: Option<u64>,
) -> Result<Ran, Stop> {
    let mut mem = Memory::new();
    let mut addr: HashMap<&str, (u64, usize)> = HashMap::new();
    for b in specs {
        let len = b.shape.iter().product::<usize>() * b.dtype.size() as usize;
        let bytes = start.get(&b.name).cloned().unwrap_or_else(|| vec![0; len]);
        // Inputs and outputs that start from their `init` are written before the launch; the
        // poison in other outputs and scratch space counts as never written.
        let init = match b.role {
            Role::Input => InitState::Initialized,
            Role::Output if b.initialized => InitState::Initialized,
            _ => InitState::Uninitialized,
        };
        let a = mem.alloc(&b.name, &bytes, init);
        addr.insert(b.name.as_str(), (a, bytes.len()));
    }
    let mut findings = Vec::new();
    let mut approx = BTreeSet::new();
    let mut work = 0u64;
    for (i, l) in program.launches.iter().enumerate() {
        let buffer = |n: &str| {
            addr.get(n)
                .map(|(a, _)| *a)
                .ok_or_else(|| format!("launch {i} ({}): no buffer `{n}`", l.entry))
        };
        let params = (l.kernel_args().iter())
            .map(|a| match (a.word(buffer)?, a) {
                (Some(w), _) => Ok(emu::ParamValue::Word(w)),
                // The emulator's own encoding of a tensor map (the GPU's is opaque).
                (None, ArgSpec::TensorMap(m)) => {
                    let map = emu::TensorMap {
                        address: buffer(&m.buffer)?,
                        elem_bytes: m.elem_bytes,
                        dims: m.dims.clone(),
                        strides: m.strides.clone(),
                        box_dims: m.box_dims.clone(),
                        swizzle: m.swizzle,
                    };
                    Ok(emu::ParamValue::Bytes(map.to_bytes().to_vec()))
                }
                (None, _) => Err(format!(
                    "launch {i} ({}): an argument with no value",
                    l.entry
                )),
            })
            .collect::<Result<Vec<_>, String>>()?;
        let launch = emu::Launch {
            entry: &l.entry,
            grid: l.physical_grid(EMULATED_RESIDENT_CTAS),
            block: l.block,
            dynamic_shared: l.dynamic_shared_bytes,
            params: &params,
        };
        let eopts = emu::Options {
            threads: opts.threads,
            max_findings: opts.max_findings,
            watchdog_ms,
            cancel: opts.cancel.clone(),
        };
        let report = emu::run(module, &launch, &mut mem, &eopts).map_err(|e| match e {
            emu::EmuError::Timeout(_) => Stop::Timeout(format!("launch {i} ({}): {e}", l.entry)),
            emu::EmuError::Cancelled => Stop::Cancelled,
            e => Stop::Error(format!("launch {i} ({}): {e}", l.entry)),
        })?;
        work += report.instructions;
        approx.extend(report.approx);
        findings.extend(report.findings.into_iter().map(|f| Finding {
            kind: f.kind.to_string(),
            message: f.message,
            cta: Some(f.cta),
            thread: Some(f.thread),
            ptx_line: Some(f.ptx_line),
            line: f.source.as_ref().map(|(_, l)| *l),
            file: f.source.map(|(f, _)| f),
        }));
    }
    let outputs = want
        .iter()
        .map(|b| {
            let (a, len) = addr[b.name.as_str()];
            mem.read(a, len)
        })
        .collect();
    let notes = approx
        .into_iter()
        .map(|a| {
            format!(
                "{a}: computed exactly here; the GPU's result may differ by its documented error"
            )
        })
        .collect();
    Ok(Ran {
        outputs,
        findings,
        notes,
        work,
    })
}
