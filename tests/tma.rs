//! Tensor descriptors (`tl.make_tensor_descriptor`, `desc.load`) and the TMA copies the CUDA
//! writer makes of them: the interpreter's meaning (the block at the offsets, zeros outside the
//! tensor), the matmul's TMA form on sm_90 and its fallback when rows are not 16-byte aligned,
//! a golden file, and the launch's tensor maps checked end to end on the PTX emulator.

mod support;

use kwb::tile::{
    self, compile_for, ArgKind, ConstValue, DType, Extent, InterpArg, InterpBuffer, KernelRequest,
    Target,
};

/// `name(x_ptr, y_ptr, M, N, BLOCK)`: two f32 buffers, two integers, the block size.
fn two_f32_buffers(name: &str, block: i64) -> KernelRequest {
    let int = ArgKind::Int {
        fits_i32: true,
        divisibility: 1,
        non_negative: true,
        one: false,
    };
    KernelRequest {
        name: name.into(),
        args: vec![
            ArgKind::Pointer(DType::F32),
            ArgKind::Pointer(DType::F32),
            int.clone(),
            int,
        ],
        constexprs: vec![("BLOCK".into(), ConstValue::Int(block))],
        num_warps: 4,
        sums: Default::default(),
    }
}

const SHIFTED: &str = r#"
import triton
import triton.language as tl


@triton.jit
def shifted(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    d = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                  block_shape=[BLOCK, BLOCK])
    blk = d.load([pid * BLOCK - 5, -3])
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + pid * BLOCK * BLOCK + offs[:, None] * BLOCK + offs[None, :], blk)
"#;

/// Each program loads the block at (pid * 16 - 5, -3) of a 37 x 21 tensor: rows and columns
/// outside it read zeros, the rest the tensor's elements.
#[test]
fn a_descriptor_load_reads_zeros_outside_the_tensor() {
    let (m, n, block, programs) = (37i64, 21i64, 16i64, 3u32);
    let req = two_f32_buffers("shifted", block);
    let out = tile::compile(std::path::Path::new("shifted.tile"), SHIFTED, &[req]);
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    let x: Vec<f32> = (0..m * n).map(|i| i as f32 + 0.5).collect();
    let cells = (i64::from(programs) * block * block) as usize;
    let mut bufs = vec![
        InterpBuffer {
            name: "x".into(),
            dtype: DType::F32,
            bytes: x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        },
        InterpBuffer {
            name: "y".into(),
            dtype: DType::F32,
            bytes: vec![0xff; cells * 4],
        },
    ];
    let args = [
        InterpArg::Buffer(0),
        InterpArg::Buffer(1),
        InterpArg::Int(m),
        InterpArg::Int(n),
    ];
    tile::interp::run(&out.kernels[0], [programs, 1, 1], &args, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    let y: Vec<f32> = bufs[1]
        .bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut zeros = 0;
    for p in 0..i64::from(programs) {
        for r in 0..block {
            for c in 0..block {
                let (gr, gc) = (p * block - 5 + r, c - 3);
                let inside = (0..m).contains(&gr) && (0..n).contains(&gc);
                let want = if inside {
                    x[(gr * n + gc) as usize]
                } else {
                    0.0
                };
                zeros += usize::from(!inside);
                let got = y[((p * block + r) * block + c) as usize];
                assert_eq!(got, want, "program {p}, block element ({r}, {c})");
            }
        }
    }
    // Rows -5..-1 and 37..42 fall outside (11 rows of 16), and columns -3..-1 of the other 37.
    assert_eq!(zeros, 11 * 16 + 37 * 3);
}

const COPY: &str = r#"
import triton
import triton.language as tl


@triton.jit
def copy(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK
    c = tl.program_id(1) * BLOCK
    dx = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    dy = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    dy.store([r, c], dx.load([r, c]))
"#;

/// Blocks copied through two descriptors cover a 37 x 21 tensor: every element arrives, and
/// the blocks' parts outside the tensor are neither read nor written (the interpreter checks
/// every access against its buffer).
#[test]
fn a_descriptor_store_writes_the_block_inside_the_tensor_alone() {
    let (m, n) = (37i64, 21i64);
    let req = two_f32_buffers("copy", 16);
    let out = tile::compile(std::path::Path::new("copy.tile"), COPY, &[req]);
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    let x: Vec<f32> = (0..m * n).map(|i| i as f32 * 0.25 - 3.0).collect();
    let f32s = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let mut bufs = vec![
        InterpBuffer {
            name: "x".into(),
            dtype: DType::F32,
            bytes: f32s(&x),
        },
        InterpBuffer {
            name: "y".into(),
            dtype: DType::F32,
            bytes: f32s(&vec![f32::NAN; x.len()]),
        },
    ];
    let args = [
        InterpArg::Buffer(0),
        InterpArg::Buffer(1),
        InterpArg::Int(m),
        InterpArg::Int(n),
    ];
    tile::interp::run(&out.kernels[0], [3, 2, 1], &args, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    assert_eq!(bufs[1].bytes, bufs[0].bytes);
    // The same kernel's CUDA on the PTX emulator (and again in the interpreter), through a
    // workspace: y must equal x, with no out-of-bounds access.
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("copy.tile"), COPY).unwrap();
    let yaml = "name: copy\nsizes:\n  - {name: odd, M: 37, N: 21, emulate: true}\n\
                buffers:\n  x: {dtype: f32, shape: [M, N], init: randn}\n  \
                y: {dtype: f32, shape: [M, N], output: true}\n\
                reference:\n  expr:\n    y: x\n\
                versions:\n  v1:\n    file: copy.tile\n    entry: copy\n    \
                constexprs: {BLOCK: 16}\n    grid: [\"cdiv(M, 16)\", \"cdiv(N, 16)\", 1]\n    args: [x, y, M, N]\n";
    let ws = dir.path().join("ws.yaml");
    std::fs::write(&ws, yaml).unwrap();
    support::assert_cpu_batch_passes(ws.to_str().unwrap(), 1);
}

fn compile_v7(divisibility: [u64; 3], target: Target) -> tile::Compiled {
    let path = support::repo().join("kernels/matmul/v7.tile");
    let source = std::fs::read_to_string(&path).unwrap();
    // The golden's `#line` directives name the file as the test gives it.
    let out = compile_for(
        std::path::Path::new("kernels/matmul/v7.tile"),
        &source,
        &[support::matmul_request(divisibility)],
        target,
    );
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    out
}

#[test]
fn the_matmul_copies_with_tma_on_sm90_when_rows_are_aligned() {
    let out = compile_v7([16, 16, 16], Target::sm(90));
    assert!(out.arch_specific);
    // A: boxes of 64 x 128 (K inner), B: four boxes of 64 x 64 per stage (N inner).
    assert_eq!(out.cuda.matches("kwb_tma2d(kwb_smem(").count(), 2 * 5);
    assert!(out
        .cuda
        .contains("const __grid_constant__ kwb_tensor_map kwb_tmap1)"));
    assert!(out
        .cuda
        .contains("kwb_mbar_wait(kwb_smem(&kwb_bar0[kwb_rd0]), kwb_ph0);"));
    assert!(!out.cuda.contains("kwb_cp16("), "no cp.async left");
    let (kernel, maps) = &out.tensor_maps[0];
    assert_eq!(kernel, "matmul_kernel");
    assert_eq!(maps.len(), 2);
    // Parameters: a, b, c, M, N, K; extents innermost first.
    assert_eq!(maps[0].base, 0);
    assert_eq!(maps[0].dims, vec![Extent::Arg(5), Extent::Arg(3)]);
    assert_eq!(maps[0].strides, vec![Extent::Arg(5)]);
    assert_eq!(maps[0].box_dims, vec![64, 128]);
    assert_eq!(maps[1].base, 1);
    assert_eq!(maps[1].dims, vec![Extent::Arg(4), Extent::Arg(5)]);
    assert_eq!(maps[1].box_dims, vec![64, 64]);
    assert!(maps.iter().all(|m| m.swizzle == 128 && m.elem_bytes == 2));
    support::assert_golden(
        &support::repo().join("tests/tile/ok_matmul_tma.cu"),
        &out.cuda,
    );
}

/// Persistent: the rings' mbarriers are set up once, at the kernel's start, and each program's
/// first copies go on from the stage the ring reads next (its phases stay in step).
#[test]
fn the_persistent_matmul_copies_with_tma_on_rings_that_run_on() {
    let out = compile_v7([16, 16, 16], Target::sm(90).with_persistent(true));
    let cuda = &out.cuda;
    assert!(cuda.contains(
        "int kwb_programs, const __grid_constant__ kwb_tensor_map kwb_tmap0, const __grid_constant__ kwb_tensor_map kwb_tmap1)"
    ));
    assert_eq!(
        cuda.matches("kwb_mbar_init(kwb_smem(").count(),
        1,
        "set up once"
    );
    let start = cuda.find("kwb_mbar_init(kwb_smem(").unwrap();
    let programs = cuda.find("for (;;)").expect("the overlapped form");
    assert!(start < programs);
    // The first program's copies, and each next program's before this one's epilogue.
    assert_eq!(cuda.matches("kwb_wr0 = kwb_rd0;").count(), 2);
    assert!(cuda.matches("kwb_tma2d(kwb_smem(").count() >= 3 * 5);
    assert!(!cuda.contains("kwb_mbar_inval(kwb_smem("));
}

#[test]
fn without_aligned_rows_or_wgmma_the_matmul_copies_with_cp_async() {
    // N odd: B's rows do not start on 16-byte boundaries, so neither load uses TMA.
    let odd = compile_v7([16, 1, 16], Target::sm(90));
    assert!(odd.tensor_maps.is_empty());
    assert!(!odd.cuda.contains("kwb_tma2d("));
    assert!(odd.cuda.contains("cp.async"), "the ring still pipelines");
    // A target without wgmma: masked loads through the rings, no TMA.
    let any = compile_v7([16, 16, 16], Target::default());
    assert!(any.tensor_maps.is_empty() && !any.cuda.contains("kwb_tma2d("));
}

/// A small workspace of v7 (descriptors) and of the tutorial's pointer loads (v4.tile, proven
/// blocks: `src/tile/blocks/`) at sizes where TMA copies (N and K multiples of 8, every tile
/// edge partial, so the tutorial's rows and columns wrap where TMA reads zeros) and where it
/// cannot (N odd): the PTX emulator runs the generated code, mbarriers and bulk copies
/// included, and the interpreter the tile IR; both pass the check.
#[test]
fn v7_and_the_tutorial_pass_on_the_emulator_with_and_without_tma() {
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    let kernels = support::repo().join("kernels");
    let yaml = format!(
        "name: tma\narch: sm_90\n\
         sizes:\n  - {{name: aligned, M: 136, N: 264, K: 72, emulate: true}}\n  - {{name: odd, M: 67, N: 45, K: 40, emulate: true}}\n\
         buffers:\n  a: {{dtype: f16, shape: [M, K], init: randn}}\n  b: {{dtype: f16, shape: [K, N], init: randn}}\n  \
         c: {{dtype: f16, shape: [M, N], output: true}}\n\
         reference:\n  expr:\n    c: matmul(a, b)\n\
         tolerance: {{rtol: 1e-2, atol: 2e-2}}\n\
         versions:\n  v7:\n    file: {}/matmul/v7.tile\n    entry: matmul_kernel\n    \
         constexprs: {{BLOCK_M: 128, BLOCK_N: 256, BLOCK_K: 64, GROUP_M: 8, NUM_STAGES: 3}}\n    \
         num_warps: 8\n    grid: cdiv(M, 128) * cdiv(N, 256)\n    args: [a, b, c, M, N, K]\n    \
         sweep: {{persistent: [false, true]}}\n  \
         tutorial:\n    file: {}/matmul/v4.tile\n    entry: matmul_kernel\n    \
         constexprs: {{BLOCK_M: 128, BLOCK_N: 256, BLOCK_K: 64, GROUP_M: 8, NUM_STAGES: 3}}\n    \
         num_warps: 8\n    grid: cdiv(M, 128) * cdiv(N, 256)\n    args: [a, b, c, M, N, K]\n    \
         sweep: {{persistent: [false, true]}}\n",
        kernels.display(),
        kernels.display()
    );
    let ws = dir.path().join("ws.yaml");
    std::fs::write(&ws, yaml).unwrap();
    let ws = ws.to_str().unwrap();
    // Persistent at `aligned`: 4 programs on the emulator's 2 CTAs.
    support::assert_cpu_batch_passes(ws, 8);
    for version in ["v7[persistent=false]", "tutorial[persistent=false]"] {
        inspected_tma(ws, version);
    }
}

/// `kwb inspect` of `version` in the workspace of the test above: TMA copies at `aligned`,
/// with their tensor maps, and none at `odd`.
fn inspected_tma(ws: &str, version: &str) {
    // What `kwb inspect` prints for the configuration at `size`.
    let inspect = |size: &str, what: &[&str]| {
        let mut args = vec!["inspect", ws, "--version", version, "--sizes", size];
        args.extend(what);
        let (code, out, err) = support::run_kwb(&args);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert!(
        inspect("aligned", &["--cuda"]).contains("kwb_tma2d(kwb_smem("),
        "{version} aligned: TMA"
    );
    assert!(
        !inspect("odd", &["--cuda"]).contains("kwb_tma2d(kwb_smem("),
        "{version} odd: cp.async"
    );
    // `inspect --format json` says which tensor maps the kernel takes (at `odd`, none).
    let maps = |size: &str| {
        let out = inspect(size, &["--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["versions"][0]["kernels"][0]["tensor_maps"].clone()
    };
    let arg = |i: usize| serde_json::json!({ "arg": i });
    let m = maps("aligned");
    // A (M x K, argument 0) in 64 x 128 boxes; B (K x N, argument 1) in 64 x 64 boxes.
    assert_eq!(m.as_array().map(Vec::len), Some(2), "{m}");
    assert_eq!(m[0]["base"], 0);
    assert_eq!(m[0]["dims"], serde_json::json!([arg(5), arg(3)]));
    assert_eq!(m[0]["strides"], serde_json::json!([arg(5)]));
    assert_eq!(m[0]["box_dims"], serde_json::json!([64, 128]));
    assert_eq!(m[1]["base"], 1);
    assert_eq!(m[1]["dims"], serde_json::json!([arg(4), arg(5)]));
    assert_eq!(m[1]["box_dims"], serde_json::json!([64, 64]));
    assert_eq!(m[1]["swizzle"], 128);
    assert!(maps("odd").is_null(), "odd: no tensor maps");
}
