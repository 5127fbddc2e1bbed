//! The launch the run panels talk about: a version's first launch at the selected problem
//! size, with the occupancy panel's what-ifs applied, and what the pure occupancy calculator
//! says about it. Shared by the Occupancy panel and the Compare tab's delta table.

use crate::compile::occupancy::{occupancy, KernelUsage, Occupancy, OccupancyError};
use crate::compile::KernelResources;
use crate::ui::app::{App, VersionStatus, WhatIf};
use crate::workspace::{Formula, SizeEnv};

/// Block size assumed for a version with no launch (a bare kernel file), as `kwb inspect` does.
pub const DEFAULT_BLOCK: u32 = 256;

/// One launch, evaluated.
#[derive(Debug)]
pub struct LaunchAt<'a> {
    pub kernel: &'a KernelResources,
    /// The size the launch was evaluated at (empty when the workspace has none).
    pub size: String,
    /// Threads per block as launched (or [`DEFAULT_BLOCK`] when there is no launch).
    pub launched_block: u32,
    pub launched_dynamic: u32,
    /// No launch names this kernel: the block size is the default.
    pub default_block: bool,
    /// What the calculator was given: launched values with the what-ifs applied.
    pub usage: KernelUsage,
    pub what_if: WhatIf,
    pub occupancy: Result<Occupancy, OccupancyError>,
}

impl LaunchAt<'_> {
    /// The block size differs from the launch because of a what-if.
    pub fn block_overridden(&self) -> bool {
        self.what_if.block.is_some()
    }

    pub fn shared_overridden(&self) -> bool {
        self.what_if.dynamic_shared.is_some()
    }

    /// A register cap is set (it may or may not lower the count).
    pub fn registers_capped(&self) -> bool {
        self.what_if.register_cap.is_some()
    }
}

/// Evaluates version `index`'s first launch at the selected size with `what_if` applied, or
/// says in a sentence why there is nothing to evaluate.
pub fn launch_at(app: &App, index: usize, what_if: WhatIf) -> Result<LaunchAt<'_>, String> {
    let view = app.versions.get(index).ok_or("No version selected.")?;
    let Some(compiled) = view.compiled.as_deref() else {
        return Err(match view.status {
            VersionStatus::CompileError => format!("{} did not compile.", view.name),
            _ => format!("{} has not compiled yet.", view.name),
        });
    };
    let version = app
        .workspace
        .versions
        .iter()
        .find(|v| v.name == view.name)
        .or_else(|| app.workspace.versions.get(index));
    let launch = version.and_then(|v| v.launches.first());
    let size = app.workspace.sizes.get(app.size);
    // The size's variables with the version's constexprs and `num_warps` (tile versions).
    let vars = match (version, size) {
        (Some(v), Some(s)) => v.vars_at(s).unwrap_or_else(|_| s.vars.clone()),
        (None, Some(s)) => s.vars.clone(),
        _ => Vec::new(),
    };
    let env = SizeEnv::vars(&vars);
    // A tile version compiled per specialisation: this size's compile.
    let compiled = match size {
        Some(s) => compiled.for_size(&s.name),
        None => compiled,
    };
    let (kernel, block, dynamic) = match launch {
        Some(l) => {
            let kernel = compiled
                .kernel(&l.entry)
                .ok_or_else(|| format!("Kernel `{}` is not in {}'s CUBIN.", l.entry, view.name))?;
            let threads = product(&l.block, &env)?;
            // A tile kernel's rings in dynamic shared memory, as the launch plan counts them.
            let dynamic = l.shared.eval_u64(&env)?;
            let dynamic = dynamic.max(compiled.tile_dynamic_shared(&l.entry));
            (kernel, Some(threads), dynamic)
        }
        None => {
            let kernel = compiled
                .kernels
                .first()
                .ok_or_else(|| format!("{} has no kernels.", view.name))?;
            (kernel, None, compiled.tile_dynamic_shared(&kernel.name))
        }
    };
    let default = kernel
        .max_threads_per_block
        .unwrap_or(DEFAULT_BLOCK)
        .min(DEFAULT_BLOCK);
    let launched_block = block.map_or(default, clamp_u32);
    let launched_dynamic = clamp_u32(dynamic);
    let registers = match what_if.register_cap {
        Some(cap) => kernel.registers.min(cap),
        None => kernel.registers,
    };
    let usage = KernelUsage {
        threads_per_block: what_if.block.unwrap_or(launched_block),
        registers_per_thread: registers,
        static_shared_bytes: kernel.static_shared_bytes,
        dynamic_shared_bytes: what_if.dynamic_shared.unwrap_or(launched_dynamic),
        barriers: kernel.barriers,
    };
    Ok(LaunchAt {
        kernel,
        size: size.map(|s| s.name.clone()).unwrap_or_default(),
        launched_block,
        launched_dynamic,
        default_block: block.is_none(),
        usage,
        what_if,
        occupancy: occupancy(app.arch.spec(), &usage),
    })
}

/// Threads per block: the product of the three block dimensions.
fn product(dims: &[Formula; 3], env: &SizeEnv) -> Result<u64, String> {
    let mut n: u64 = 1;
    for d in dims {
        n = n.saturating_mul(d.eval_u64(env)?);
    }
    Ok(n)
}

fn clamp_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
