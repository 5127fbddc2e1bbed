//! `kwb inspect`: what the compiler made of each version (registers, shared memory, spills,
//! barriers) and the occupancy that gives at the workspace's launch configurations. The report
//! is a plain serializable struct; [`text`] renders it for people, serde_json for programs
//! (schema in docs/inspect-json.md).

pub mod cubins;
pub mod text;
pub mod timings;

use crate::compile::occupancy::{self, KernelUsage, Occupancy};
use crate::compile::{Arch, CompiledVersion, KernelResources};
use crate::diag::Diagnostic;
use crate::workspace::{SizeEnv, Workspace};
use serde::Serialize;

/// Version of the JSON layout; bumped only on incompatible changes.
pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    pub schema: u32,
    pub kwb_version: &'static str,
    pub workspace: String,
    pub arch: Arch,
    pub nvrtc_version: String,
    pub versions: Vec<VersionReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VersionReport {
    pub name: String,
    pub file: String,
    pub ok: bool,
    pub cached: bool,
    pub compile_ms: f64,
    pub options: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
    pub kernels: Vec<KernelReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptx: Option<String>,
    /// Tile versions with `--cuda`: the CUDA C++ kwb generated, one entry per specialisation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cuda: Vec<GeneratedCuda>,
}

/// The CUDA C++ generated for one specialisation of a tile version.
#[derive(Debug, Clone, Serialize)]
pub struct GeneratedCuda {
    /// The sizes this specialisation serves (empty: every size).
    pub sizes: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    #[serde(flatten)]
    pub resources: KernelResources,
    /// One entry per launch of this kernel and problem size.
    pub launches: Vec<LaunchReport>,
    /// The tensor maps a tile kernel takes after its arguments (TMA copies), as the launch
    /// encodes them from its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<crate::tile::TensorMapParam>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LaunchReport {
    /// The problem size this launch was evaluated at (empty for a bare kernel file).
    pub size: String,
    pub grid: [u64; 3],
    pub block: [u64; 3],
    pub dynamic_shared_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occupancy: Option<Occupancy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Builds the report for compiled versions of `ws`. `block_default` sets the block size used
/// for kernels that no launch names (ad-hoc `.cu` inspection).
pub fn report(
    ws: &Workspace,
    compiled: &[CompiledVersion],
    arch: Arch,
    nvrtc: (i32, i32),
    with_ptx: bool,
    with_cuda: bool,
    block_default: u32,
) -> InspectReport {
    let versions = compiled
        .iter()
        .map(|c| {
            let version = ws.versions.iter().find(|v| v.name == c.version);
            // A tile version compiled once per specialisation (its `variants`): each one's
            // kernels, with their own resources, at the sizes it serves.
            let parts = std::iter::once(c).chain(&c.variants);
            let kernels = parts
                .flat_map(|part| {
                    // The version's own entries first, in launch order, then any other kernels.
                    let mut ordered: Vec<&KernelResources> = Vec::new();
                    for e in version.map(|v| v.entries()).unwrap_or_default() {
                        ordered.extend(part.kernel(e));
                    }
                    let rest = (part.kernels.iter())
                        .filter(|k| !ordered.iter().any(|o| o.name == k.name))
                        .collect::<Vec<_>>();
                    ordered.extend(rest);
                    ordered.into_iter().map(move |k| KernelReport {
                        resources: k.clone(),
                        tensor_maps: part.tile_tensor_maps(&k.name).to_vec(),
                        launches: match version {
                            Some(v) if v.launches.iter().any(|l| l.entry == k.name) => {
                                let need = part.tile_dynamic_shared(&k.name);
                                launches_of(ws, v, k, arch, &part.sizes, need)
                            }
                            _ => vec![default_launch(
                                k,
                                arch,
                                block_default,
                                part.tile_dynamic_shared(&k.name),
                            )],
                        },
                    })
                })
                .collect();
            let mut diagnostics = c.diagnostics.clone();
            diagnostics.extend(no_kernels(c));
            VersionReport {
                name: c.version.clone(),
                file: c.file.display().to_string(),
                ok: c.ok,
                cached: c.cached,
                compile_ms: c.millis,
                options: c.options.clone(),
                diagnostics,
                kernels,
                ptx: with_ptx.then(|| c.ptx.to_string()),
                cuda: std::iter::once(c)
                    .chain(&c.variants)
                    .filter(|_| with_cuda)
                    .filter_map(|part| {
                        Some(GeneratedCuda {
                            sizes: part.sizes.clone(),
                            source: part.generated.as_deref()?.to_string(),
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    InspectReport {
        schema: SCHEMA,
        kwb_version: env!("CARGO_PKG_VERSION"),
        workspace: ws.path.display().to_string(),
        arch,
        nvrtc_version: format!("{}.{}", nvrtc.0, nvrtc.1),
        versions,
    }
}

/// For a file that compiles but defines no kernel (in any specialisation), the warning that
/// says so: there is nothing to inspect, which the report says rather than a bare "ok".
pub fn no_kernels(c: &CompiledVersion) -> Option<Diagnostic> {
    let parts = std::iter::once(c).chain(&c.variants);
    if !c.ok || parts.clone().any(|p| !p.kernels.is_empty()) {
        return None;
    }
    let what = match c.file.extension().and_then(|e| e.to_str()) {
        Some("cu" | "cuh") => "no kernel (no `__global__` function)",
        _ => "no kernel",
    };
    let message = format!("the file defines {what}; there is nothing to inspect");
    Some(Diagnostic::warning(message).in_file(&c.file))
}

fn usage(k: &KernelResources, block: u64, dynamic: u64) -> KernelUsage {
    KernelUsage {
        threads_per_block: u32::try_from(block).unwrap_or(u32::MAX),
        registers_per_thread: k.registers,
        static_shared_bytes: k.static_shared_bytes,
        dynamic_shared_bytes: u32::try_from(dynamic).unwrap_or(u32::MAX),
        barriers: k.barriers,
    }
}

fn occupancy_of(
    k: &KernelResources,
    arch: Arch,
    block: u64,
    dynamic: u64,
) -> (Option<Occupancy>, Option<String>) {
    match occupancy::occupancy(arch.spec(), &usage(k, block, dynamic)) {
        Ok(o) => (Some(o), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

fn default_launch(
    k: &KernelResources,
    arch: Arch,
    block_default: u32,
    tile_dynamic: u64,
) -> LaunchReport {
    let block = u64::from(
        k.max_threads_per_block
            .unwrap_or(block_default)
            .min(block_default),
    );
    let (occupancy, error) = occupancy_of(k, arch, block, tile_dynamic);
    LaunchReport {
        size: String::new(),
        grid: [0, 0, 0],
        block: [block, 1, 1],
        dynamic_shared_bytes: tile_dynamic,
        occupancy,
        error,
    }
}

/// Kernel `k`'s launches by `v` at each of `sizes` (every size when empty), with the version's
/// constexprs and `num_warps` in scope.
fn launches_of(
    ws: &Workspace,
    v: &crate::workspace::Version,
    k: &KernelResources,
    arch: Arch,
    sizes: &[String],
    tile_dynamic: u64,
) -> Vec<LaunchReport> {
    let mut out = Vec::new();
    let at = |s: &&crate::workspace::ProblemSize| sizes.is_empty() || sizes.contains(&s.name);
    for l in v.launches.iter().filter(|l| l.entry == k.name) {
        for size in ws.sizes.iter().filter(at) {
            let vars = v.vars_at(size).unwrap_or_else(|_| size.vars.clone());
            let env = SizeEnv::vars(&vars);
            let eval3 = |dims: &[crate::workspace::Formula; 3]| -> Result<[u64; 3], String> {
                Ok([
                    dims[0].eval_u64(&env)?,
                    dims[1].eval_u64(&env)?,
                    dims[2].eval_u64(&env)?,
                ])
            };
            let evaluated =
                eval3(&l.grid).and_then(|g| Ok((g, eval3(&l.block)?, l.shared.eval_u64(&env)?)));
            let report = match evaluated {
                Ok((grid, block, shared)) => {
                    // A tile kernel's rings in dynamic shared memory (as the launch plan does).
                    let shared = shared.max(tile_dynamic);
                    let threads = block[0].saturating_mul(block[1]).saturating_mul(block[2]);
                    let (occupancy, error) = occupancy_of(k, arch, threads, shared);
                    LaunchReport {
                        size: size.name.clone(),
                        grid,
                        block,
                        dynamic_shared_bytes: shared,
                        occupancy,
                        error,
                    }
                }
                Err(e) => LaunchReport {
                    size: size.name.clone(),
                    grid: [0; 3],
                    block: [0; 3],
                    dynamic_shared_bytes: 0,
                    occupancy: None,
                    error: Some(e),
                },
            };
            out.push(report);
        }
    }
    out
}
