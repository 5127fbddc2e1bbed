//! Compiling a workspace: each version's source goes through the cache or NVRTC (versions in
//! parallel), then its log and CUBIN are read, cross-checked and turned into resources and
//! diagnostics. Nothing here knows about terminals or GPUs.

use super::arch::Arch;
use super::cache::Cache;
use super::crosscheck::cross_check;
use super::cubin::read_cubin;
use super::includes::local_includes;
use super::nvrtc::{nvrtc, Nvrtc, NvrtcError, RawOutput};
use super::nvrtc_log::parse_nvrtc_log;
use super::ptxas_log::parse_ptxas_log;
use crate::diag::Diagnostic;
use crate::workspace::{Version, Workspace};
use rayon::prelude::*;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What the compiler says one kernel uses, from the CUBIN, cross-checked against ptxas' log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelResources {
    pub name: String,
    pub registers: u32,
    pub static_shared_bytes: u32,
    /// Per-thread local memory (the stack frame), where spills and local arrays live.
    pub local_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub barriers: u32,
    /// From `__launch_bounds__`, when given.
    pub max_threads_per_block: Option<u32>,
    pub param_bytes: u32,
}

/// One version after compilation. `ok` is false when NVRTC failed or a check found an error.
#[derive(Debug, Clone)]
pub struct CompiledVersion {
    pub version: String,
    pub file: PathBuf,
    pub arch: Arch,
    pub ok: bool,
    pub diagnostics: Vec<Diagnostic>,
    pub log: String,
    pub ptx: Arc<str>,
    pub cubin: Arc<[u8]>,
    /// Every kernel in the CUBIN, in file order.
    pub kernels: Vec<KernelResources>,
    pub options: Vec<String>,
    /// The local files the source pulls in with `#include "..."` (watched like the source).
    pub includes: Vec<PathBuf>,
    pub cached: bool,
    pub millis: f64,
    /// Tile versions: the CUDA C++ kwb generated from the tile source (what NVRTC compiled).
    pub generated: Option<Arc<str>>,
    /// Tile versions: the checked tile IR of each kernel, for the CPU interpreter.
    pub tile_kernels: Vec<Arc<crate::tile::ir::Kernel>>,
    /// Tile versions: kernel name → bytes of dynamic shared memory its launch needs (its
    /// `cp.async` rings past 48 KiB); empty for `.cu`.
    pub tile_dynamic_shared: Vec<(String, u64)>,
    /// Tile versions: kernel name → the tensor maps its launch passes after its arguments
    /// (TMA copies); empty for `.cu`.
    pub tile_tensor_maps: Vec<(String, Vec<crate::tile::TensorMapParam>)>,
    /// The problem sizes this compile is specialised for; empty means every size.
    pub sizes: Vec<String>,
    /// Tile versions whose constexprs, `num_warps` or argument facts differ between sizes: the
    /// compiles for the other sizes (this one serves the first size).
    pub variants: Vec<CompiledVersion>,
}

impl CompiledVersion {
    pub fn kernel(&self, name: &str) -> Option<&KernelResources> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The dynamic shared memory kernel `name` needs whatever the launch says (tile rings).
    pub fn tile_dynamic_shared(&self, name: &str) -> u64 {
        (self.tile_dynamic_shared.iter())
            .find(|(k, _)| k == name)
            .map_or(0, |(_, b)| *b)
    }

    /// The tensor maps kernel `name` takes after its arguments (TMA copies of a tile kernel).
    pub fn tile_tensor_maps(&self, name: &str) -> &[crate::tile::TensorMapParam] {
        (self.tile_tensor_maps.iter())
            .find(|(k, _)| k == name)
            .map_or(&[], |(_, m)| m.as_slice())
    }

    /// The errors of this compile and of its failed specialisations, each once: what a
    /// command line repeats on stderr for a version that does not compile.
    pub fn errors(&self) -> Vec<&Diagnostic> {
        let mut out: Vec<&Diagnostic> = Vec::new();
        for c in std::iter::once(self).chain(&self.variants) {
            for d in c.diagnostics.iter().filter(|d| d.is_error()) {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        out
    }

    /// The compile that serves problem size `size`.
    pub fn for_size(&self, size: &str) -> &CompiledVersion {
        if self.sizes.is_empty() || self.sizes.iter().any(|s| s == size) {
            return self;
        }
        self.variants
            .iter()
            .find(|v| v.sizes.iter().any(|s| s == size))
            .unwrap_or(self)
    }

    /// Whether this compile (or one of its specialisations) was made for `size`: a tile
    /// version compiled for some sizes only must be compiled again before it runs at another.
    pub fn serves(&self, size: &str) -> bool {
        std::iter::once(self)
            .chain(&self.variants)
            .any(|c| c.sizes.is_empty() || c.sizes.iter().any(|s| s == size))
    }

    /// A result with nothing in it yet, for `v` compiled with `options`.
    pub fn empty(v: &Version, arch: Arch, options: Vec<String>) -> CompiledVersion {
        CompiledVersion {
            version: v.name.clone(),
            file: v.file.clone(),
            arch,
            ok: false,
            diagnostics: Vec::new(),
            log: String::new(),
            ptx: Arc::from(""),
            cubin: Arc::from(Vec::new()),
            kernels: Vec::new(),
            options,
            includes: Vec::new(),
            cached: false,
            millis: 0.0,
            generated: None,
            tile_kernels: Vec::new(),
            tile_dynamic_shared: Vec::new(),
            tile_tensor_maps: Vec::new(),
            sizes: Vec::new(),
            variants: Vec::new(),
        }
    }
}

/// NVRTC plus a cache and a target: everything needed to compile versions.
pub struct Compiler {
    nvrtc: &'static Nvrtc,
    cache: Cache,
    pub arch: Arch,
}

impl Compiler {
    /// Loads NVRTC and checks it can target `arch`.
    pub fn new(arch: Arch, cache: Cache) -> Result<Compiler, NvrtcError> {
        let nvrtc = nvrtc()?;
        nvrtc.check_arch(arch)?;
        Ok(Compiler { nvrtc, cache, arch })
    }

    pub fn nvrtc_version(&self) -> (i32, i32) {
        self.nvrtc.version
    }

    /// Compiles every version in parallel, in workspace order.
    pub fn compile_workspace(&self, ws: &Workspace) -> Vec<CompiledVersion> {
        ws.versions
            .par_iter()
            .map(|v| self.compile_version(Some(ws), v))
            .collect()
    }

    /// The full option list for a version.
    pub fn options_for(&self, v: &Version) -> Vec<String> {
        let mut opts = self.nvrtc.base_options(self.arch);
        if let Some(dir) = v.file.parent() {
            opts.push(format!("-I{}", dir.display()));
        }
        opts.extend(v.defines.iter().map(|(k, val)| format!("-D{k}={val}")));
        opts.extend(v.options.iter().cloned());
        opts
    }

    /// Compiles one version. Never fails: problems become diagnostics on the result.
    pub fn compile_version(&self, ws: Option<&Workspace>, v: &Version) -> CompiledVersion {
        if v.kind.is_tile() {
            return self.compile_tile_version(ws, v);
        }
        let start = Instant::now();
        let mut out = CompiledVersion::empty(v, self.arch, self.options_for(v));
        let source = match std::fs::read_to_string(&v.file) {
            Ok(s) => s,
            Err(e) => {
                out.diagnostics.push(
                    Diagnostic::error(format!("cannot read the kernel: {e}")).in_file(&v.file),
                );
                return out;
            }
        };
        let includes: Vec<(PathBuf, Vec<u8>)> = local_includes(&v.file, &source, &[])
            .into_iter()
            .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
            .collect();
        out.includes = includes.iter().map(|(p, _)| p.clone()).collect();
        self.compile_cuda(ws, v, &source, &includes, &mut out);
        out.millis = start.elapsed().as_secs_f64() * 1e3;
        out
    }

    /// CUDA source to CUBIN through the cache or NVRTC, then resources and diagnostics.
    pub(super) fn compile_cuda(
        &self,
        ws: Option<&Workspace>,
        v: &Version,
        source: &str,
        includes: &[(PathBuf, Vec<u8>)],
        out: &mut CompiledVersion,
    ) {
        let key = Cache::key(source, includes, &out.options, self.nvrtc.version);
        let raw = match self.cache.get(&key) {
            Some(raw) => {
                out.cached = true;
                raw
            }
            None => match self
                .nvrtc
                .compile(&v.file.display().to_string(), source, &out.options)
            {
                Ok(raw) => {
                    self.cache.put(&key, &raw);
                    raw
                }
                Err(e) => {
                    out.diagnostics
                        .push(Diagnostic::error(e.to_string()).in_file(&v.file));
                    return;
                }
            },
        };
        self.digest(ws, v, raw, out);
    }

    /// Turns NVRTC's raw output into resources and diagnostics.
    fn digest(
        &self,
        ws: Option<&Workspace>,
        v: &Version,
        raw: RawOutput,
        out: &mut CompiledVersion,
    ) {
        out.diagnostics.extend(parse_nvrtc_log(&raw.log));
        out.log = raw.log;
        out.ptx = Arc::from(raw.ptx);
        if !raw.ok {
            if !out.diagnostics.iter().any(Diagnostic::is_error) {
                out.diagnostics.push(
                    Diagnostic::error(format!("NVRTC failed:\n{}", out.log.trim()))
                        .in_file(&v.file),
                );
            }
            return;
        }
        let cubin_kernels = match read_cubin(&raw.cubin) {
            Ok(k) => k,
            Err(e) => {
                out.diagnostics.push(
                    Diagnostic::error(format!("cannot read the CUBIN NVRTC produced: {e}"))
                        .in_file(&v.file),
                );
                return;
            }
        };
        let log_kernels = parse_ptxas_log(&out.log);
        for m in cross_check(&log_kernels, &cubin_kernels) {
            out.diagnostics.push(
                Diagnostic::error(format!("ptxas' report and the CUBIN disagree: {m}"))
                    .in_file(&v.file),
            );
        }
        out.kernels = cubin_kernels
            .iter()
            .map(|k| {
                let log = log_kernels.iter().find(|l| l.name == k.name);
                KernelResources {
                    name: k.name.clone(),
                    registers: k.registers,
                    static_shared_bytes: k.static_shared,
                    local_bytes: k.frame_size,
                    spill_store_bytes: log.map_or(0, |l| l.spill_stores),
                    spill_load_bytes: log.map_or(0, |l| l.spill_loads),
                    barriers: k.barriers,
                    max_threads_per_block: k.max_threads,
                    param_bytes: k.param_bytes,
                }
            })
            .collect();
        out.cubin = Arc::from(raw.cubin);
        let names: Vec<&str> = out.kernels.iter().map(|k| k.name.as_str()).collect();
        for l in &v.launches {
            if !names.contains(&l.entry.as_str()) {
                let field = if l.field == v.field {
                    format!("{}.entry", v.field)
                } else {
                    format!("{}.entry", l.field)
                };
                let mut d = Diagnostic::error(format!(
                    "entry `{}` is not a kernel in {}; kernels there: {}",
                    l.entry,
                    v.file.display(),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))
                .field(field.clone());
                if let Some(ws) = ws {
                    d = d.in_file(&ws.path);
                    if let Some(p) = ws.spans.find(&field) {
                        d = d.at(p.line, Some(p.column));
                    }
                }
                out.diagnostics.push(d);
            }
        }
        out.ok = !out.diagnostics.iter().any(Diagnostic::is_error);
    }
}
