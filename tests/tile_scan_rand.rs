//! Triton parity for scans, reductions with a combine function, sorts, random numbers, the
//! other `triton.language` functions added for issue 26, and block pointers. As in
//! `tile_parity.rs`, each feature is checked twice: the tile interpreter gives Triton's values
//! (the expected numbers come from Triton 3.9.0's own interpreter, `TRITON_INTERPRET=1`, where a
//! comment says so (3.5.1's for block pointers, which 3.9.0 has removed), else worked out by
//! hand), and the CUDA kwb generates compiles with NVRTC and agrees with the interpreter when
//! the PTX emulator runs it.

mod support;

use kwb::tile::{ArgKind, ConstValue, DType, InterpArg, InterpBuffer, KernelRequest};
use support::differential::{cpu_vs_emulator, cpu_vs_emulator_exact, Case};

/// A kernel argument for the interpreter: a buffer (its dtype and values) or an integer.
pub enum A {
    Buf(DType, Vec<f64>),
    Int(i64),
}

pub fn buf(d: DType, v: &[f64]) -> A {
    A::Buf(d, v.to_vec())
}

fn to_bytes(d: DType, v: &[f64]) -> Vec<u8> {
    let ints = |size: usize| -> Vec<u8> {
        (v.iter())
            .flat_map(|x| (*x as i64).to_le_bytes()[..size].to_vec())
            .collect()
    };
    match d {
        DType::F32 => v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect(),
        DType::F64 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::F16 => v
            .iter()
            .flat_map(|x| half::f16::from_f64(*x).to_le_bytes())
            .collect(),
        DType::BF16 => v
            .iter()
            .flat_map(|x| half::bf16::from_f64(*x).to_le_bytes())
            .collect(),
        DType::I64 => ints(8),
        DType::I32 => ints(4),
        DType::I16 => ints(2),
        DType::I8 | DType::U8 | DType::Bool => ints(1),
    }
}

fn from_bytes(d: DType, b: &[u8]) -> Vec<f64> {
    match d {
        DType::F32 => b
            .chunks(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        DType::F64 => b
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        DType::F16 => b
            .chunks(2)
            .map(|c| half::f16::from_le_bytes(c.try_into().unwrap()).to_f64())
            .collect(),
        DType::BF16 => b
            .chunks(2)
            .map(|c| half::bf16::from_le_bytes(c.try_into().unwrap()).to_f64())
            .collect(),
        DType::I64 => b
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DType::I32 => b
            .chunks(4)
            .map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        DType::I16 => b
            .chunks(2)
            .map(|c| f64::from(i16::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        DType::I8 => b.iter().map(|&c| f64::from(c as i8)).collect(),
        DType::U8 | DType::Bool => b.iter().map(|&c| f64::from(c)).collect(),
    }
}

/// Runs kernel `k` of `src` (a `.py` module) as one program of `num_warps` warps in the
/// interpreter; the buffers afterwards, in order, or the rendered diagnostics.
pub fn interp(
    src: &str,
    constexprs: &[(&str, ConstValue)],
    num_warps: u32,
    args: &[A],
) -> Result<Vec<Vec<f64>>, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.py");
    std::fs::write(&path, src).unwrap();
    let kinds = args.iter().map(|a| match a {
        A::Buf(d, _) => ArgKind::Pointer(*d),
        A::Int(v) => ArgKind::Int {
            fits_i32: true,
            divisibility: 1,
            non_negative: *v >= 0,
            one: *v == 1,
        },
    });
    let request = KernelRequest {
        name: "k".into(),
        args: kinds.collect(),
        constexprs: constexprs
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect(),
        num_warps,
        sums: Default::default(),
    };
    let c = kwb::tile::compile(&path, src, &[request]);
    if c.kernels.len() != 1 {
        return Err(kwb::diag::render_all(&c.diagnostics));
    }
    let mut buffers = Vec::new();
    let mut dtypes = Vec::new();
    let mut run_args = Vec::new();
    for a in args {
        match a {
            A::Buf(d, v) => {
                run_args.push(InterpArg::Buffer(buffers.len()));
                dtypes.push(*d);
                buffers.push(InterpBuffer {
                    name: format!("b{}", buffers.len()),
                    dtype: *d,
                    bytes: to_bytes(*d, v),
                });
            }
            A::Int(v) => run_args.push(InterpArg::Int(*v)),
        }
    }
    kwb::tile::interp::run(&c.kernels[0], [1, 1, 1], &run_args, &mut buffers)
        .map_err(|e| e.to_string())?;
    Ok(buffers
        .iter()
        .zip(dtypes)
        .map(|(b, d)| from_bytes(d, &b.bytes))
        .collect())
}

/// The diagnostics of compiling `src` for `k(x_ptr, y_ptr)` (f32 buffers), or "" when it
/// compiles.
pub fn errors(src: &str, constexprs: &[(&str, ConstValue)]) -> String {
    let args = [buf(DType::F32, &[0.0; 4]), buf(DType::F32, &[0.0; 4])];
    match interp(src, constexprs, 1, &args) {
        Ok(_) => String::new(),
        Err(e) => e,
    }
}

/// One buffer of an emulator run: name, kwb dtype (`f32`, `i32`), elements, whether it is an
/// output, and its `init` (YAML).
pub struct EmuBuf<'a>(pub &'a str, pub &'a str, pub usize, pub bool, pub &'a str);

/// The interpreter and the PTX emulator (running the CUDA kwb generated for sm_90) agree on
/// kernel `k` of `src`, launched as one program of `num_warps` warps with the buffers as its
/// arguments, in order, and `constexprs` (YAML flow-mapping entries).
pub fn emulator_agrees(
    src: &str,
    constexprs: &str,
    num_warps: u32,
    bufs: &[EmuBuf],
    tol: (f64, f64),
) {
    let args: Vec<&str> = bufs.iter().map(|b| b.0).collect();
    emulator_case(src, constexprs, num_warps, bufs, &args.join(", "), tol);
}

/// [`emulator_agrees`] with the launch arguments written out (`1234, x, y`).
pub fn emulator_case(
    src: &str,
    constexprs: &str,
    num_warps: u32,
    bufs: &[EmuBuf],
    args: &str,
    tol: (f64, f64),
) {
    emulator_check(src, constexprs, num_warps, bufs, args, Some(tol));
}

/// [`emulator_case`] within `tol`, or, with `None`, bit for bit (`-0.0` is not `0.0`).
pub fn emulator_check(
    src: &str,
    constexprs: &str,
    num_warps: u32,
    bufs: &[EmuBuf],
    args: &str,
    tol: Option<(f64, f64)>,
) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = one_program_workspace(dir.path(), src, constexprs, num_warps, bufs, args);
    let case = interpreted(&yaml, tol);
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let compared = match tol {
        Some(_) => cpu_vs_emulator(dir.path(), arch, &case),
        None => cpu_vs_emulator_exact(dir.path(), arch, &case),
    };
    if let Err(e) = compared {
        panic!("{constexprs} with {num_warps} warps: {e}");
    }
}

/// As [`emulator_check`], with the generated CUDA run on the GPU by `kwb batch` and checked
/// against the interpreter's outputs with zero tolerance. The kernel's output must be `y` and
/// have the shape of an input `x` (the placeholder reference, which the interpreter's replaces).
pub fn gpu_check(src: &str, constexprs: &str, num_warps: u32, bufs: &[EmuBuf], args: &str) {
    gpu_check_within(src, constexprs, num_warps, bufs, args, (0.0, 0.0));
}

/// [`gpu_check`] within `tol` (rtol, atol): for sums the GPU adds in another order.
pub fn gpu_check_within(
    src: &str,
    constexprs: &str,
    num_warps: u32,
    bufs: &[EmuBuf],
    args: &str,
    tol: (f64, f64),
) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = one_program_workspace(dir.path(), src, constexprs, num_warps, bufs, args)
        + "reference:\n  expr:\n    y: x\n";
    let case = interpreted(&yaml, Some(tol));
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    if let Err(e) = support::differential::cpu_vs_gpu(dir.path(), arch, &case) {
        panic!("{constexprs} with {num_warps} warps: {e}");
    }
}

/// Version `k` of `yaml` at size `s`, seed 7, with the interpreter as the CPU engine.
fn interpreted(yaml: &str, tolerance: Option<(f64, f64)>) -> Case<'_> {
    Case {
        yaml,
        version: "k",
        size: "s",
        seed: 7,
        code: |c| kwb::run::cpu::CpuCode::Tile(c.tile_kernels.clone()),
        tolerance,
    }
}

/// A workspace of one single-program launch of kernel `k` in `src`, written into `dir`.
fn one_program_workspace(
    dir: &std::path::Path,
    src: &str,
    constexprs: &str,
    num_warps: u32,
    bufs: &[EmuBuf],
    args: &str,
) -> String {
    support::provision_nvrtc();
    let file = dir.join("k.py");
    std::fs::write(&file, src).unwrap();
    let mut buffers = String::new();
    for EmuBuf(name, dtype, n, output, init) in bufs {
        let out = if *output { ", output: true" } else { "" };
        let init = if init.is_empty() {
            String::new()
        } else {
            format!(", init: {init}")
        };
        buffers.push_str(&format!(
            "  {name}: {{dtype: {dtype}, shape: [{n}]{out}{init}}}\n"
        ));
    }
    format!(
        "name: scan\nsizes:\n  - {{name: s, N: 1}}\nbuffers:\n{buffers}versions:\n  k:\n    file: {}\n    entry: k\n    constexprs: {{{constexprs}}}\n    num_warps: {num_warps}\n    grid: 1\n    args: [{}]\n",
        file.display(),
        args
    )
}

pub fn int(v: i64) -> ConstValue {
    ConstValue::Int(v)
}

pub fn flag(b: bool) -> ConstValue {
    ConstValue::Bool(b)
}

#[path = "tile_scan_rand/atomic.rs"]
mod atomic;
#[path = "tile_scan_rand/block_ptr.rs"]
mod block_ptr;
#[path = "tile_scan_rand/calls.rs"]
mod calls;
#[path = "tile_scan_rand/dependent_launch.rs"]
mod dependent_launch;
#[path = "tile_scan_rand/dot_nan.rs"]
mod dot_nan;
#[path = "tile_scan_rand/int_dot.rs"]
mod int_dot;
#[path = "tile_scan_rand/library_forms.rs"]
mod library_forms;
#[path = "tile_scan_rand/misc.rs"]
mod misc;
#[path = "tile_scan_rand/random.rs"]
mod random;
#[path = "tile_scan_rand/scan.rs"]
mod scan;
#[path = "tile_scan_rand/sort.rs"]
mod sort;
#[path = "tile_scan_rand/sort_triton.rs"]
mod sort_triton;
