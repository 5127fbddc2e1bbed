//! On a GPU: the tile interpreter (the language's reference semantics, on the CPU) and the GPU
//! running the CUDA kwb generated agree, for every shipped tile kernel and for randomly
//! generated small tile programs (elementwise chains, masks, reductions, broadcasts).
//!
//! How: the interpreter's outputs for a seeded job are written as `.npy` files and become the
//! reference of a `kwb batch` GPU run with the same seed, so the GPU's output is checked
//! against the interpreter's with kwb's own allclose. The two GPU tests are ignored without
//! `--include-ignored`; the others run anywhere.

mod support;

use support::rng::Rng;

use kwb::compile::{Arch, CompiledVersion};
use kwb::run::cpu::CpuCode;
use std::path::Path;
use support::differential::{cpu_vs_emulator, cpu_vs_gpu, shipped, Case};

fn interpreted(c: &CompiledVersion) -> CpuCode {
    CpuCode::Tile(c.tile_kernels.clone())
}

fn differ(
    dir: &Path,
    arch: Arch,
    yaml: &str,
    version: &str,
    size: &str,
    seed: u64,
) -> Result<(), String> {
    let case = Case {
        yaml,
        version,
        size,
        seed,
        code: interpreted,
        tolerance: None,
    };
    cpu_vs_gpu(dir, arch, &case)
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn interpreter_and_gpu_agree_on_every_shipped_tile_kernel() {
    let Some(gpu) =
        kwb::run::gpu::open::gpu_or_skip("interpreter_and_gpu_agree_on_every_shipped_tile_kernel")
    else {
        return;
    };
    support::provision_nvrtc();
    let arch = gpu.arch().unwrap().expect("a known arch");
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("elementwise-add.yaml", "v8", ["1Mi", "odd"]),
        ("gelu.yaml", "v4", ["1Mi", "odd"]),
        ("softmax.yaml", "v5", ["4096x1024", "odd"]),
        ("softmax.yaml", "v6", ["4096x1024", "odd"]),
        ("softmax.yaml", "triton", ["4096x1024", "odd"]),
        // tl.dot: on sm_90 the wgmma pipeline, with one warpgroup (v4) and two (the v5
        // configuration whose warpgroups share a barrier before each refill).
        ("matmul.yaml", "v4", ["odd", "odd8"]),
        (
            "matmul.yaml",
            "v5[BM=128,BN=256,BK=64,STAGES=3,GROUP=8]",
            ["odd", "odd8"],
        ),
        // Persistent programs, the next program's copies overlapping the epilogue.
        (
            "matmul.yaml",
            "v6[GROUP=8,persistent=true]",
            ["odd", "odd8"],
        ),
        // Tensor descriptors: TMA copies onto mbarriers at odd8 (N and K multiples of 8), the
        // masked loads through cp.async at odd.
        (
            "matmul.yaml",
            "v7[GROUP=8,STAGES=4,persistent=false]",
            ["odd", "odd8"],
        ),
        (
            "matmul.yaml",
            "v7[GROUP=8,STAGES=3,persistent=true]",
            ["odd", "odd8"],
        ),
    ];
    let mut failures = Vec::new();
    let mut n = 0;
    for (ws, v, sizes) in cases {
        for size in sizes {
            n += 1;
            if let Err(e) = differ(dir.path(), arch, &shipped(ws), v, size, 11 + n) {
                failures.push(format!("{ws} {v} @ {size}: {e}"));
            }
        }
    }
    println!(
        "tile-vs-gpu: {n} shipped cases, {} agree",
        n - failures.len() as u64
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A random elementwise expression over tiles `a` and `b`, `depth` deep.
fn expr(r: &mut Rng, depth: u32) -> String {
    if depth == 0 {
        return r.pick(&["a", "b", "0.5", "a", "b", "1.25"]).to_string();
    }
    let (x, y) = (expr(r, depth - 1), expr(r, depth - 1));
    match r.next() % 10 {
        0 => format!("({x} + {y})"),
        1 => format!("({x} - {y})"),
        2 => format!("({x} * {y})"),
        3 => format!("tl.maximum({x}, {y})"),
        4 => format!("tl.minimum({x}, {y})"),
        5 => format!("tl.where({x} > {y}, {x}, {y} * 0.5)"),
        6 => format!("tl.exp(tl.minimum({x}, 4.0))"),
        7 => format!("tl.abs({x})"),
        8 => format!("tl.sigmoid({x})"),
        _ => format!("tl.sqrt(tl.abs({x}) + 1.0)"),
    }
}

/// A random program of one of three shapes: an elementwise chain with a masked tail, a row
/// reduction, and a 2-D broadcast of a column against a row.
fn program(r: &mut Rng, i: u64) -> (String, String) {
    let depth = 1 + (r.next() % 3) as u32;
    let e = expr(r, depth);
    let head = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n";
    match i % 3 {
        0 => (
            format!("{head}def k(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    m = offs < n\n    a = tl.load(x_ptr + offs, mask=m, other=0.0)\n    b = tl.load(w_ptr + offs, mask=m, other=1.0)\n    tl.store(y_ptr + offs, {e}, mask=m)\n"),
            "y: {dtype: f32, shape: [N], output: true}\n  x: {dtype: f32, shape: [N]}\n  w: {dtype: f32, shape: [N]}\nversions:\n  k:\n    file: K\n    entry: k\n    constexprs: {BLOCK: 256}\n    num_warps: 2\n    grid: cdiv(N, BLOCK)\n    args: [x, w, y, N]\n".into(),
        ),
        1 => (
            format!("{head}def k(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    row = tl.program_id(0)\n    offs = tl.arange(0, BLOCK)\n    m = offs < n\n    a = tl.load(x_ptr + row * n + offs, mask=m, other=0.0)\n    b = tl.load(w_ptr + row * n + offs, mask=m, other=0.0)\n    t = tl.where(m, {e}, 0.0)\n    tl.store(y_ptr + row, tl.sum(t, axis=0))\n"),
            "y: {dtype: f32, shape: [N], output: true}\n  x: {dtype: f32, shape: [N, N]}\n  w: {dtype: f32, shape: [N, N]}\nversions:\n  k:\n    file: K\n    entry: k\n    constexprs: {BLOCK: next_pow2(N)}\n    num_warps: 4\n    grid: N\n    args: [x, w, y, N]\n".into(),
        ),
        _ => (
            format!("{head}def k(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    i = tl.arange(0, BLOCK)\n    m = i < n\n    col = tl.load(x_ptr + i, mask=m, other=0.0)\n    rowv = tl.load(w_ptr + i, mask=m, other=0.0)\n    a = col[:, None] + tl.zeros((BLOCK, BLOCK), dtype=tl.float32)\n    b = rowv[None, :] + tl.zeros((BLOCK, BLOCK), dtype=tl.float32)\n    mm = m[:, None] & m[None, :]\n    tl.store(y_ptr + i[:, None] * n + i[None, :], {e}, mask=mm)\n"),
            "y: {dtype: f32, shape: [N, N], output: true}\n  x: {dtype: f32, shape: [N]}\n  w: {dtype: f32, shape: [N]}\nversions:\n  k:\n    file: K\n    entry: k\n    constexprs: {BLOCK: next_pow2(N)}\n    num_warps: 4\n    grid: 1\n    args: [x, w, y, N]\n".into(),
        ),
    }
}

/// Random program `i`: its source, and its workspace (kernel written into `dir`).
fn random_case(rng: &mut Rng, i: u64, dir: &Path) -> (String, String, u64) {
    let (source, rest) = program(rng, i);
    let file = dir.join(format!("k{i}.tile"));
    std::fs::write(&file, &source).unwrap();
    let n = [13, 61, 100][(i / 3 % 3) as usize];
    let yaml = format!(
        "name: random-{i}\nsizes:\n  - {{name: s, N: {n}}}\nbuffers:\n  {}reference:\n  expr:\n    y: x\ntolerance: {{rtol: 1e-5, atol: 1e-5}}\n",
        rest.replace("file: K", &format!("file: {}", file.display()))
    );
    // The reference is only a placeholder the differential replaces (by the CPU's outputs), but
    // it must name inputs to load. `versions:` sits inside `rest` after the buffers; move the
    // reference before it.
    let (bufs, versions) = yaml.split_once("versions:\n").unwrap();
    let (versions, tail) = versions.split_once("reference:").unwrap();
    (
        source,
        format!("{bufs}reference:{tail}versions:\n{versions}"),
        n,
    )
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn interpreter_and_gpu_agree_on_random_tile_programs() {
    let Some(gpu) =
        kwb::run::gpu::open::gpu_or_skip("interpreter_and_gpu_agree_on_random_tile_programs")
    else {
        return;
    };
    support::provision_nvrtc();
    let arch = gpu.arch().unwrap().expect("a known arch");
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(2026);
    let count = 24;
    let mut failures = Vec::new();
    for i in 0..count {
        let (source, yaml, n) = random_case(&mut rng, i, dir.path());
        if let Err(e) = differ(dir.path(), arch, &yaml, "k", "s", 100 + i) {
            failures.push(format!("program {i} (N={n}):\n{source}\n{e}"));
        }
    }
    println!(
        "tile-vs-gpu: {count} random programs, {} agree",
        count - failures.len() as u64
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// With no GPU: the same random programs, the interpreter against the PTX emulator running
/// the CUDA kwb generated for them. A disagreement here is a bug in the front end shared by
/// both, in the interpreter, or in the CUDA writer, found before any GPU time is spent.
#[test]
fn interpreter_and_emulator_agree_on_random_tile_programs() {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(2026);
    let count = 24;
    let mut failures = Vec::new();
    for i in 0..count {
        let (source, yaml, n) = random_case(&mut rng, i, dir.path());
        let case = Case {
            yaml: &yaml,
            version: "k",
            size: "s",
            seed: 100 + i,
            code: interpreted,
            // The emulator computes the GPU's approximate functions (exp, sigmoid) exactly
            // too, so both sides are correctly rounded math: only op order differs.
            tolerance: Some((1e-5, 1e-6)),
        };
        if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
            failures.push(format!("program {i} (N={n}):\n{source}\n{e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// With no GPU: the shipped elementwise tile kernels at their odd size, where `n` is not a
/// multiple of a vector and the CUDA writer splits each kernel (`src/tile/cuda/tail.rs`):
/// threads whose elements are all in bounds take 128-bit vectors, the tail's threads walk
/// their elements one by one. The PTX emulator runs that code against the interpreter.
#[test]
fn the_tail_split_agrees_with_the_interpreter_at_odd_sizes() {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (ws, version) in [("elementwise-add.yaml", "v8"), ("gelu.yaml", "v4")] {
        let yaml = shipped(ws);
        let case = Case {
            yaml: &yaml,
            version,
            size: "odd",
            seed: 7,
            code: interpreted,
            // The emulator computes the GPU's approximate functions (GELU's tanh) exactly.
            tolerance: Some((1e-3, 1e-3)),
        };
        if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
            panic!("{ws} {version} @ odd: {e}");
        }
    }
}

/// The tail split with a mask that is one condition for the whole program (`pid > 1000`,
/// broadcast by the checker): the split tests it with the others, so no thread drops it. Here
/// it is false, so `y` keeps the first store.
#[test]
fn the_tail_split_tests_a_program_wide_mask_too() {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scalar_mask.tile");
    std::fs::write(
        &file,
        "@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    m = offs < n\n    x = tl.load(x_ptr + offs, mask=m, other=0.0)\n    tl.store(y_ptr + offs, x * 2.0, mask=m)\n    tl.store(y_ptr + offs, x + 1.0, mask=pid > 1000)\n",
    )
    .unwrap();
    let yaml = format!(
        "name: scalar-mask\nsizes:\n  - {{name: s, N: 1001}}\nbuffers:\n  x: {{dtype: f32, shape: [N]}}\n  y: {{dtype: f32, shape: [N], output: true}}\nreference:\n  expr:\n    y: x * 2\nversions:\n  k:\n    file: {}\n    entry: k\n    constexprs: {{BLOCK: 256}}\n    num_warps: 2\n    grid: cdiv(N, BLOCK)\n    args: [x, y, N]\n",
        file.display()
    );
    let case = Case {
        yaml: &yaml,
        version: "k",
        size: "s",
        seed: 3,
        code: interpreted,
        tolerance: None,
    };
    if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
        panic!("{e}");
    }
}
