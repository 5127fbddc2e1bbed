//! The tile-language front end of the pipeline: a `.tile` or `.py` version is specialised the
//! way Triton's JIT does it (its constexprs, `num_warps`, argument dtypes and the facts kwb can
//! prove: an integer argument divisible by 16; every kwb buffer 16-byte aligned), compiled by
//! [`crate::tile`] to CUDA C++, and that goes through NVRTC like any `.cu` version. Sizes whose
//! specialisation differs (a constexpr such as `next_pow2(N)`) get compiles of their own.

use super::pipeline::{CompiledVersion, Compiler};
use crate::diag::Diagnostic;
use crate::expr::Scalar;
use crate::tile::{self, ArgKind, ConstValue, KernelRequest};
use crate::workspace::{Arg, Constexpr, ProblemSize, SizeEnv, Version, Workspace};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// A version's specialisation at one size: constexpr values, warps, and the launch variables.
type Specialization = (Vec<(String, ConstValue)>, u32, Vec<(String, i64)>);

/// The largest power of two, up to 16, that divides `i` (16 for 0): the divisibility fact an
/// integer argument gives the tile compiler.
fn pow2_divisor(i: i64) -> u64 {
    1 << i.trailing_zeros().min(4)
}

/// The constexpr values and warp count of `v` at `size` (no size: a bare file).
fn specialization(v: &Version, size: Option<&ProblemSize>) -> Result<Specialization, String> {
    let empty = ProblemSize {
        name: String::new(),
        vars: Vec::new(),
        emulate: false,
    };
    let size = size.unwrap_or(&empty);
    let vars = v.vars_at(size)?;
    let mut constexprs = Vec::new();
    for (name, c) in &v.constexprs {
        let value = match c {
            Constexpr::Formula(f) => match f.eval(&SizeEnv::vars(&size.vars))? {
                Scalar::Int(i) => ConstValue::Int(i),
                Scalar::Float(x) => ConstValue::Float(x),
                Scalar::Bool(b) => ConstValue::Bool(b),
            },
            Constexpr::Str(s) => ConstValue::Str(s.clone()),
            Constexpr::DType(d) => ConstValue::DType(
                tile::ir::Scalar::from_triton_name(d)
                    .ok_or_else(|| format!("`tl.{d}` is not a dtype kwb knows"))?,
            ),
            Constexpr::None => ConstValue::None,
        };
        constexprs.push((name.clone(), value));
    }
    let num_warps = match &v.num_warps {
        Some(f) => {
            let n = f.eval_int(&SizeEnv::vars(&vars))?;
            if !(1..=32).contains(&n) || n & (n - 1) != 0 {
                return Err(format!(
                    "`num_warps` must be a power of two from 1 to 32, got {n}"
                ));
            }
            n as u32
        }
        None => 4,
    };
    Ok((constexprs, num_warps, vars))
}

/// How `v`'s float sums are formed: as its Triton release does, products contracted unless
/// `enable_fp_fusion` is off.
fn sums_of(v: &Version) -> tile::ir::sums::Sums {
    use tile::ir::sums::{SumOrder, Sums};
    Sums {
        order: v.triton.map_or(SumOrder::default(), |(major, minor)| {
            SumOrder::of_release(major, minor)
        }),
        contract: v.fp_fusion,
    }
}

/// The kernels to compile for `v` at `size`: each launched kernel with its arguments' kinds.
pub fn requests(v: &Version, size: Option<&ProblemSize>) -> Result<Vec<KernelRequest>, String> {
    let (constexprs, num_warps, vars) = specialization(v, size)?;
    let sums = sums_of(v);
    let env = SizeEnv::vars(&vars);
    let mut out: Vec<KernelRequest> = Vec::new();
    for l in &v.launches {
        let mut args = Vec::new();
        for a in &l.args {
            args.push(match a {
                Arg::Buffer(name) => ArgKind::Pointer(
                    v.buffer(name)
                        .map(|b| b.dtype)
                        .ok_or_else(|| format!("no buffer `{name}`"))?,
                ),
                Arg::None => ArgKind::None,
                Arg::Scalar(f) => match f.eval(&env)? {
                    Scalar::Int(i) => ArgKind::Int {
                        fits_i32: i32::try_from(i).is_ok(),
                        divisibility: pow2_divisor(i),
                        non_negative: i >= 0,
                        one: i == 1,
                    },
                    Scalar::Float(_) => ArgKind::Float,
                    Scalar::Bool(_) => ArgKind::Int {
                        fits_i32: true,
                        divisibility: 1,
                        non_negative: true,
                        one: false,
                    },
                },
            });
        }
        let req = KernelRequest {
            name: l.entry.clone(),
            args,
            constexprs: constexprs.clone(),
            num_warps,
            sums,
        };
        match out.iter().find(|r| r.name == req.name) {
            Some(r) if *r != req => {
                return Err(format!(
                    "kernel `{}` is launched twice with different arguments; a tile version \
                     compiles each kernel once (use two versions)",
                    req.name
                ))
            }
            Some(_) => {}
            None => out.push(req),
        }
    }
    Ok(out)
}

impl Compiler {
    /// Compiles a tile version: once per distinct specialisation over the workspace's sizes.
    pub(super) fn compile_tile_version(
        &self,
        ws: Option<&Workspace>,
        v: &Version,
    ) -> CompiledVersion {
        let start = Instant::now();
        let source = match std::fs::read_to_string(&v.file) {
            Ok(s) => s,
            Err(e) => {
                let mut out = CompiledVersion::empty(v, self.arch, self.options_for(v));
                out.diagnostics.push(
                    Diagnostic::error(format!("cannot read the kernel: {e}")).in_file(&v.file),
                );
                return out;
            }
        };
        // Group the sizes by the requests they make, in workspace order.
        let sizes: Vec<Option<&ProblemSize>> = match ws {
            Some(ws) if !ws.sizes.is_empty() && !v.launches.is_empty() => {
                ws.sizes.iter().map(Some).collect()
            }
            _ => vec![None],
        };
        type Requests = Result<Vec<KernelRequest>, String>;
        let mut groups: Vec<(Requests, Vec<String>)> = Vec::new();
        for size in sizes {
            let req = if v.launches.is_empty() {
                bare_requests(v, &source)
            } else {
                requests(v, size)
            };
            let name = size.map(|s| s.name.clone());
            match groups.iter_mut().find(|(r, _)| *r == req) {
                Some((_, names)) => names.extend(name),
                None => groups.push((req, name.into_iter().collect())),
            }
        }
        // Specialisations are independent NVRTC programs: compile them at once (a save of one
        // version then costs its slowest specialisation, not their sum, where cores are free).
        let mut compiled: Vec<CompiledVersion> = groups
            .into_par_iter()
            .map(|(req, names)| {
                let mut out = self.compile_tile_group(ws, v, &source, req);
                // One specialisation for every size needs no size list.
                out.sizes = names;
                out
            })
            .collect();
        let diagnostics = merge_diagnostics(&compiled, ws);
        let mut first = compiled.remove(0);
        if compiled.is_empty() {
            first.sizes.clear();
        }
        first.ok = first.ok && compiled.iter().all(|c| c.ok);
        first.diagnostics = diagnostics;
        first.variants = compiled;
        first.millis = start.elapsed().as_secs_f64() * 1e3;
        first
    }

    fn compile_tile_group(
        &self,
        ws: Option<&Workspace>,
        v: &Version,
        source: &str,
        req: Result<Vec<KernelRequest>, String>,
    ) -> CompiledVersion {
        let mut out = CompiledVersion::empty(v, self.arch, self.options_for(v));
        let req = match req {
            Ok(r) => r,
            Err(e) => {
                let mut d = Diagnostic::error(e).field(v.field.clone());
                if let Some(ws) = ws {
                    d = d.in_file(&ws.path);
                    if let Some(p) = ws.spans.find(&v.field) {
                        d = d.at(p.line, Some(p.column));
                    }
                }
                out.diagnostics.push(d);
                return out;
            }
        };
        let tiled = tile::compile_with(
            &v.file,
            source,
            &req,
            tile::Target::sm(self.arch.sm()).with_persistent(v.persistent),
            &tile::PythonEnv {
                path: v.python_path.clone(),
                globals: v.python_globals.clone(),
            },
        );
        out.diagnostics.extend(tiled.diagnostics);
        // Imported helper files: watched like a CUDA version's headers.
        let imports = tiled.imports;
        if out.diagnostics.iter().any(Diagnostic::is_error) || tiled.cuda.is_empty() {
            out.includes = imports;
            return out;
        }
        out.tile_kernels = tiled.kernels;
        out.tile_dynamic_shared = tiled.dynamic_shared;
        out.tile_tensor_maps = tiled.tensor_maps;
        if tiled.arch_specific && !self.arch.is_specific() {
            // wgmma exists on sm_90a, the architecture-specific form of sm_90, alone.
            let plain = format!("--gpu-architecture={}", self.arch);
            for o in out.options.iter_mut().filter(|o| **o == plain) {
                o.push('a');
            }
        }
        let cuda: Arc<str> = Arc::from(tiled.cuda);
        out.generated = Some(cuda.clone());
        self.compile_cuda(ws, v, &cuda, &[], &mut out);
        out.includes.extend(imports);
        out
    }
}

/// The diagnostics of every specialisation of a version, each once. One that some
/// specialisations have and others do not names the sizes it concerns, and says so when only
/// the CPU runs them (`emulate: true`): a ptxas advice about a CPU-only specialisation is no
/// advice about the GPU runs.
fn merge_diagnostics(compiled: &[CompiledVersion], ws: Option<&Workspace>) -> Vec<Diagnostic> {
    let mut merged: Vec<(Diagnostic, usize, Vec<String>)> = Vec::new();
    for c in compiled {
        for d in &c.diagnostics {
            match merged.iter_mut().find(|(m, _, _)| m == d) {
                Some((_, n, sizes)) => {
                    *n += 1;
                    sizes.extend(c.sizes.iter().cloned());
                }
                None => merged.push((d.clone(), 1, c.sizes.clone())),
            }
        }
    }
    let emulated = |name: &String| {
        ws.and_then(|ws| ws.sizes.iter().find(|s| &s.name == name))
            .is_some_and(|s| s.emulate)
    };
    merged
        .into_iter()
        .map(|(mut d, n, sizes)| {
            if n < compiled.len() && !sizes.is_empty() {
                let plural = if sizes.len() > 1 { "s" } else { "" };
                let cpu = if sizes.iter().all(emulated) {
                    ", which only the CPU runs"
                } else {
                    ""
                };
                d.message = format!(
                    "{} (the specialisation for size{plural} {}{cpu})",
                    d.message,
                    sizes.join(", ")
                );
            }
            d
        })
        .collect()
}

/// A bare `.tile`/`.py` file (no workspace): every kernel that no other calls, with parameters named like
/// pointers (ending in `ptr`) as f32 pointers and the others as 32-bit integers, and of the
/// constexprs given on the command line those it declares (a helper that another kernel calls
/// need not declare them all), with `num_warps` from the command line.
fn bare_requests(v: &Version, source: &str) -> Result<Vec<KernelRequest>, String> {
    let (constexprs, num_warps, _) = specialization(v, None)?;
    let sums = sums_of(v);
    // A file that does not parse has no kernels to request: the compile reports its syntax
    // errors, each as a diagnostic with its own line and column.
    let Ok(sigs) = tile::signatures(&v.file, source) else {
        return Ok(Vec::new());
    };
    Ok(sigs
        .into_iter()
        .filter(|s| !s.called)
        .map(|s| KernelRequest {
            name: s.name,
            args: s
                .params
                .iter()
                .filter(|p| !p.constexpr && !p.has_default)
                .map(|p| {
                    if p.name.ends_with("ptr") {
                        ArgKind::Pointer(crate::workspace::DType::F32)
                    } else {
                        ArgKind::Int {
                            fits_i32: true,
                            divisibility: 1,
                            non_negative: false,
                            one: false,
                        }
                    }
                })
                .collect(),
            constexprs: constexprs
                .iter()
                .filter(|(name, _)| s.params.iter().any(|p| p.constexpr && &p.name == name))
                .cloned()
                .collect(),
            num_warps,
            sums,
        })
        .collect())
}
