//! `tl.dot` end to end: one Triton-style tiled matmul source, specialised for fp16, bf16 and
//! fp32 inputs, fp32 and fp16 accumulators, `acc=` and `acc +=` forms, elementwise work on the
//! result, several tile shapes and warp counts, and sizes with partial tiles on every axis
//! (masked K tails). Each is run by the interpreter, which must match a plain f64 reference,
//! and its generated CUDA is compiled by NVRTC and run in kwb's PTX emulator (tensor-core
//! `mma.sync` and `ldmatrix` included), which must match the interpreter. The inputs are small
//! multiples of 1/4, so every product and partial sum is exact in every accumulator here, and
//! all three must agree exactly. The fp16 case also has a golden file of its CUDA.

mod support;

use kwb::tile::{ArgKind, ConstValue, InterpArg, InterpBuffer, KernelRequest};
use kwb::workspace::DType;

const SOURCE: &str = r#"import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
       MODE: tl.constexpr, STAGES: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    if MODE == 1:
        acc = tl.zeros((BM, BN), dtype=tl.float16)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        if MODE == 0:
            acc = tl.dot(a, b, acc)
        elif MODE == 1:
            acc = tl.dot(a, b, acc=acc, out_dtype=tl.float16)
        elif MODE == 2:
            acc += tl.dot(a, b)
        else:
            acc = tl.dot(a, b, acc, allow_tf32=True)
        a_ptrs += BK
        b_ptrs += BK * N
    if MODE == 2:
        acc = tl.maximum(acc * 0.5 + 1.0, 0.0)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, acc.to(tl.float32), mask=(rm[:, None] < M) & (rn[None, :] < N))
"#;

/// One specialisation and problem.
#[derive(Debug, Clone, Copy)]
struct Case {
    dtype: DType,
    mode: i64,
    tile: [i64; 3],
    warps: u32,
    size: [usize; 3],
    /// `num_stages` of the loop (1: no pipelining, the dot stages its operands itself).
    stages: i64,
    /// M, N and K are passed as multiples of 16, so the copies are proven 16-byte vectors.
    div16: bool,
    /// The target's compute capability (0: code for any GPU; 90: Hopper, with wgmma).
    sm: u32,
}

fn request(c: &Case) -> KernelRequest {
    let int = ArgKind::Int {
        fits_i32: true,
        divisibility: if c.div16 { 16 } else { 1 },
        non_negative: true,
        one: false,
    };
    let [bm, bn, bk] = c.tile;
    KernelRequest {
        name: "mm".into(),
        args: vec![
            ArgKind::Pointer(c.dtype),
            ArgKind::Pointer(c.dtype),
            ArgKind::Pointer(DType::F32),
            int.clone(),
            int.clone(),
            int,
        ],
        constexprs: [
            ("BM", bm),
            ("BN", bn),
            ("BK", bk),
            ("MODE", c.mode),
            ("STAGES", c.stages),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
        .collect(),
        num_warps: c.warps,
        sums: Default::default(),
    }
}

/// Small multiples of 1/4 in [-1, 1]: exact in fp16, bf16 and fp32.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7 + seed * 3) % 9) as f32 - 4.0) / 4.0)
        .collect()
}

fn bytes(d: DType, v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|&x| match d {
            DType::F16 => half::f16::from_f32(x).to_le_bytes().to_vec(),
            DType::BF16 => half::bf16::from_f32(x).to_le_bytes().to_vec(),
            _ => x.to_le_bytes().to_vec(),
        })
        .collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4)
        .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// C as the kernel defines it, in f64.
fn reference(c: &Case, a: &[f32], b: &[f32]) -> Vec<f32> {
    let [m, n, k] = c.size;
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|t| f64::from(a[i * k + t]) * f64::from(b[t * n + j]))
                .sum();
            let s = if c.mode == 2 {
                (s * 0.5 + 1.0).max(0.0)
            } else {
                s
            };
            out[i * n + j] = s as f32;
        }
    }
    out
}

fn grid(c: &Case) -> [u32; 3] {
    let [m, n, _] = c.size;
    let [bm, bn, _] = c.tile;
    [
        m.div_ceil(bm as usize) as u32,
        n.div_ceil(bn as usize) as u32,
        1,
    ]
}

/// The generated code of a case: the CUDA, the dynamic shared memory (bytes) and the tensor
/// maps (TMA copies) its launch passes.
struct Generated {
    cuda: String,
    dynamic: u32,
    maps: Vec<kwb::tile::TensorMapParam>,
}

/// What `interpret` hands on: the generated code, A, B and the interpreter's C.
type Interpreted = (Generated, Vec<f32>, Vec<f32>, Vec<f32>);

/// Compiles `c`, checks the interpreter against the reference, and returns the CUDA, the
/// dynamic shared memory its launch needs, and the interpreter's C.
fn interpret(c: &Case) -> Interpreted {
    let path = std::path::Path::new("tests/tile/dot_cases.tile");
    let target = kwb::tile::Target::sm(c.sm);
    let compiled = kwb::tile::compile_for(path, SOURCE, &[request(c)], target);
    assert!(
        !compiled.cuda.is_empty(),
        "{c:?}: {}",
        kwb::diag::render_all(&compiled.diagnostics)
    );
    let [m, n, k] = c.size;
    let (a, b) = (values(m * k, 1), values(k * n, 2));
    let mut bufs = vec![
        InterpBuffer {
            name: "a".into(),
            dtype: c.dtype,
            bytes: bytes(c.dtype, &a),
        },
        InterpBuffer {
            name: "b".into(),
            dtype: c.dtype,
            bytes: bytes(c.dtype, &b),
        },
        InterpBuffer {
            name: "c".into(),
            dtype: DType::F32,
            bytes: vec![0; m * n * 4],
        },
    ];
    let args = [
        InterpArg::Buffer(0),
        InterpArg::Buffer(1),
        InterpArg::Buffer(2),
        InterpArg::Int(m as i64),
        InterpArg::Int(n as i64),
        InterpArg::Int(k as i64),
    ];
    kwb::tile::interp::run(&compiled.kernels[0], grid(c), &args, &mut bufs)
        .unwrap_or_else(|e| panic!("{c:?}: the interpreter failed: {}", e.message));
    let got = f32s(&bufs[2].bytes);
    assert_eq!(got, reference(c, &a, &b), "{c:?}: interpreter vs reference");
    let dynamic = compiled
        .dynamic_shared
        .iter()
        .find(|(k, _)| k == "mm")
        .map_or(0, |(_, b)| *b as u32);
    let maps = (compiled.tensor_maps.iter())
        .find(|(k, _)| k == "mm")
        .map_or(Vec::new(), |(_, m)| m.clone());
    let g = Generated {
        cuda: compiled.cuda,
        dynamic,
        maps,
    };
    (g, a, b, got)
}

/// Runs the generated CUDA in the PTX emulator; C, or None without NVRTC.
fn emulate(c: &Case, g: &Generated, a: &[f32], b: &[f32]) -> Option<(Vec<f32>, String)> {
    let cuda = g.cuda.as_str();
    let nvrtc = match kwb::compile::nvrtc::nvrtc() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("skipping the emulator half: NVRTC not found ({e})");
            return None;
        }
    };
    let arch = kwb::compile::Arch::parse("sm_90").expect("sm_90");
    let mut options = nvrtc.base_options(arch);
    if cuda.contains("wgmma.mma_async") {
        // As kwb's compile pipeline does: wgmma needs sm_90a.
        options[0].push('a');
    }
    let out = nvrtc.compile("dot.cu", cuda, &options).expect("NVRTC runs");
    assert!(
        out.ok,
        "{c:?}: NVRTC rejected the code:\n{}\n{cuda}",
        out.log
    );
    let module = kwb::emu::Module::parse(&out.ptx).expect("the emulator reads the PTX");
    let [m, n, _] = c.size;
    let mut mem = kwb::emu::Memory::new();
    let init = kwb::emu::InitState::Initialized;
    let aa = mem.alloc("a", &bytes(c.dtype, a), init);
    let ba = mem.alloc("b", &bytes(c.dtype, b), init);
    let ca = mem.alloc("c", &vec![0u8; m * n * 4], init);
    let [sm, sn, sk] = c.size.map(|x| x as u64);
    let args = [aa, ba, ca, sm, sn, sk];
    let mut params = kwb::emu::ParamValue::words(&args);
    // TMA copies (loads proven blocks of A and B): the emulator's encoding of their maps.
    let arg = |e: &kwb::tile::Extent| match *e {
        kwb::tile::Extent::Arg(i) => args[i],
        kwb::tile::Extent::Const(v) => v as u64,
    };
    for m in &g.maps {
        let map = kwb::emu::TensorMap {
            address: args[m.base],
            elem_bytes: m.elem_bytes,
            dims: m.dims.iter().map(arg).collect(),
            strides: m
                .strides
                .iter()
                .map(|s| arg(s) * u64::from(m.elem_bytes))
                .collect(),
            box_dims: m.box_dims.clone(),
            swizzle: m.swizzle,
        };
        params.push(kwb::emu::ParamValue::Bytes(map.to_bytes().to_vec()));
    }
    let launch = kwb::emu::Launch {
        entry: "mm",
        grid: grid(c),
        block: [c.warps * 32, 1, 1],
        dynamic_shared: g.dynamic,
        params: &params,
    };
    let report = kwb::emu::run(&module, &launch, &mut mem, &Default::default())
        .unwrap_or_else(|e| panic!("{c:?}: the emulator failed: {e:?}"));
    assert!(report.findings.is_empty(), "{c:?}: {:?}", report.findings);
    Some((f32s(&mem.read(ca, m * n * 4)), out.ptx))
}

fn case(dtype: DType, mode: i64, tile: [i64; 3], warps: u32, size: [usize; 3]) -> Case {
    Case {
        dtype,
        mode,
        tile,
        warps,
        size,
        stages: 3,
        div16: false,
        sm: 0,
    }
}

/// `case` with `num_stages` and whether M, N and K are known multiples of 16.
fn staged(c: Case, stages: i64, div16: bool) -> Case {
    Case { stages, div16, ..c }
}

#[test]
fn dots_agree_in_the_interpreter_and_the_emulator() {
    use DType::{BF16, F16, F32};
    let cases = [
        // fp16 -> fp32, partial tiles on every axis, 3 K steps (the last masked).
        case(F16, 0, [32, 32, 16], 4, [40, 24, 40]),
        // fp16 accumulators.
        case(F16, 1, [32, 32, 16], 4, [40, 24, 40]),
        // `acc += tl.dot(a, b)` and elementwise work on the result.
        case(F16, 2, [32, 32, 32], 4, [33, 40, 50]),
        case(BF16, 0, [32, 32, 16], 4, [40, 24, 40]),
        // fp32 (tf32 allowed, computed in full fp32).
        case(F32, 3, [32, 32, 16], 4, [40, 24, 40]),
        // 8 warps as 2 x 4, 32 x 16 each.
        case(F16, 0, [64, 64, 32], 8, [70, 50, 72]),
        // A 16 x 16 tile: one warp owns it, the other three hold copies.
        case(F16, 0, [16, 16, 16], 4, [20, 18, 20]),
        // Tall and wide tiles.
        case(F16, 0, [16, 64, 16], 2, [20, 70, 16]),
        case(BF16, 2, [64, 16, 16], 2, [70, 20, 33]),
        // No pipelining: the dot stages its register operands itself.
        staged(case(F16, 0, [32, 32, 16], 4, [40, 24, 40]), 1, false),
        // Pipelined through 2, 3 and 4 buffers with 16-byte cp.async (sizes multiples of 16,
        // partial tiles on every axis, a masked K tail), more K steps than buffers.
        staged(case(F16, 0, [32, 32, 32], 4, [48, 80, 208]), 2, true),
        staged(case(F16, 2, [64, 32, 32], 4, [80, 48, 112]), 3, true),
        staged(case(BF16, 0, [64, 64, 64], 8, [96, 64, 336]), 4, true),
        staged(case(F16, 1, [32, 64, 16], 4, [48, 80, 80]), 4, true),
        // Element-by-element copies into the ring (K not a multiple of 8), 2 buffers.
        staged(case(F16, 0, [32, 32, 32], 4, [33, 41, 71]), 2, false),
        // A ring past 48 KiB (4 x 24 KiB) in dynamic shared memory.
        staged(case(F16, 0, [64, 128, 64], 4, [80, 144, 208]), 4, true),
    ];
    for c in &cases {
        let (g, a, b, want) = interpret(c);
        let Some((got, ptx)) = emulate(c, &g, &a, &b) else {
            continue;
        };
        assert_eq!(got, want, "{c:?}: emulator vs interpreter");
        let tensor = c.dtype != F32;
        assert_eq!(
            ptx.contains("mma.sync.aligned.m16n8k16"),
            tensor,
            "{c:?}: tensor cores used iff fp16/bf16"
        );
        if tensor {
            assert!(ptx.contains("ldmatrix.sync.aligned.m8n8.x4.trans"), "{c:?}");
        }
        if c.dtype == BF16 {
            assert!(ptx.contains(".bf16.bf16"), "{c:?}");
        }
        if c.mode == 1 {
            assert!(ptx.contains(".f16.f16.f16.f16"), "{c:?}");
        }
        let pipelined = tensor && c.stages > 1;
        assert_eq!(ptx.contains("cp.async.wait_group"), pipelined, "{c:?}");
        if pipelined && c.div16 {
            // 16-byte copies, or 8-byte ones where an fp32 tile of the same size sets the
            // layout's runs at 4 elements.
            assert!(ptx.contains(".shared.global ["), "{c:?}: vector cp.async");
        }
    }
}

#[test]
fn the_fp16_dot_kernel_matches_its_golden() {
    let c = case(DType::F16, 0, [32, 32, 16], 4, [40, 24, 40]);
    let (Generated { cuda, dynamic, .. }, ..) = interpret(&c);
    assert_eq!(dynamic, 0, "a small ring stays in static shared memory");
    support::assert_golden(&support::repo().join("tests/tile/ok_dot_f16.cu"), &cuda);
    // The accumulator never leaves registers: no staging of it through shared memory.
    assert!(cuda.contains("kwb_mma_f16_f32("), "{cuda}");
    assert!(!cuda.contains("kwb_scratch"), "{cuda}");
}

#[test]
fn rings_past_48_kib_go_to_dynamic_shared_memory() {
    // 4 stages of a 64 x 64 A tile and a 64 x 128 B tile: 4 x 24 KiB, all in `kwb_dyn`.
    let c = staged(
        case(DType::F16, 0, [64, 128, 64], 4, [80, 144, 208]),
        4,
        true,
    );
    let (Generated { cuda, dynamic, .. }, ..) = interpret(&c);
    assert_eq!(dynamic, 4 * (64 * 64 + 64 * 128) * 2);
    assert!(cuda.contains("extern __shared__ __align__(128) unsigned char kwb_dyn[];"));
    assert!(!cuda.contains("__shared__ __align__(128) unsigned char kwb_ring["));
    // 3 stages of 128 x 64 and 64 x 256 tiles (144 KiB): past 48 KiB, within sm_90's 227 KiB.
    let big = staged(
        case(DType::F16, 0, [128, 256, 64], 8, [128, 256, 192]),
        3,
        true,
    );
    let dynamic = interpret(&big).0.dynamic;
    assert_eq!(dynamic, 3 * (128 * 64 + 64 * 256) * 2);
    // 8 stages would take 384 KiB: the writer drops stages until the ring fits 227 KiB.
    let capped = staged(big, 8, true);
    let dynamic = interpret(&capped).0.dynamic;
    assert_eq!(dynamic, 4 * (128 * 64 + 64 * 256) * 2);
}

#[test]
fn matmul_loops_prefetch_fragments_where_registers_allow() {
    use DType::{BF16, F16};
    // (case, whether the writer takes the prefetching schedule)
    let cases = [
        // 128 x 128 at 4 warps (64 x 64 each): two slices of K per stage, a masked K tail.
        (
            staged(case(F16, 0, [128, 128, 32], 4, [136, 144, 112]), 3, true),
            true,
        ),
        // bf16, 4 buffers, partial tiles on every axis.
        (
            staged(case(BF16, 0, [128, 128, 32], 4, [144, 136, 208]), 4, true),
            true,
        ),
        // Four slices per stage: the second buffer made kwb's kernels spill, so the plain loop.
        (
            staged(case(F16, 0, [128, 128, 64], 4, [144, 136, 208]), 3, true),
            false,
        ),
        // fp16 accumulators.
        (
            staged(case(F16, 1, [128, 128, 32], 4, [144, 160, 96]), 3, true),
            true,
        ),
        // At 8 warps the second buffer would cost the second CTA: the plain loop.
        (
            staged(case(F16, 0, [128, 128, 32], 8, [136, 144, 112]), 3, true),
            false,
        ),
        // Work besides the dot in the loop (`acc += tl.dot(a, b)`): the plain loop.
        (
            staged(case(F16, 2, [128, 128, 32], 4, [136, 144, 112]), 3, true),
            false,
        ),
    ];
    for (c, prefetched) in &cases {
        let (g, a, b, want) = interpret(c);
        let cuda = &g.cuda;
        assert_eq!(
            cuda.contains("unsigned kwb_fa[2]"),
            *prefetched,
            "{c:?}\n{cuda}"
        );
        let Some((got, _)) = emulate(c, &g, &a, &b) else {
            continue;
        };
        assert_eq!(got, want, "{c:?}: emulator vs interpreter");
    }
}

#[test]
fn hopper_dots_take_wgmma_and_agree_with_the_interpreter() {
    use DType::{BF16, F16};
    let hopper = |c: Case| Case { sm: 90, ..c };
    // (case, whether its dot goes to wgmma)
    let cases = [
        // One warpgroup, one 64-row step: A rows of 64 bytes (64-byte swizzle), B of 128.
        (
            hopper(staged(
                case(F16, 0, [64, 64, 32], 4, [80, 72, 112]),
                3,
                true,
            )),
            true,
        ),
        // Two 64-row steps per warpgroup (A's rows permuted), bf16, 4 buffers.
        (
            hopper(staged(
                case(BF16, 0, [128, 128, 32], 4, [144, 136, 208]),
                4,
                true,
            )),
            true,
        ),
        // Two warpgroups; A rows of 128 bytes; B rows of 512 bytes in four 128-byte blocks.
        (
            hopper(staged(
                case(F16, 0, [128, 256, 64], 8, [136, 264, 192]),
                3,
                true,
            )),
            true,
        ),
        // 16-deep stages and 16 columns (32-byte swizzles), element-by-element copies, 2 buffers.
        (
            hopper(staged(
                case(F16, 0, [64, 16, 16], 4, [70, 20, 48]),
                2,
                false,
            )),
            true,
        ),
        // `acc += tl.dot(a, b)` and elementwise work: the dot waits for its own wgmmas.
        (
            hopper(staged(
                case(F16, 2, [64, 64, 64], 4, [80, 72, 200]),
                3,
                true,
            )),
            true,
        ),
        // Not for wgmma: fp16 accumulators, 2 warps, 32-row tiles, 8 warps on 64 rows.
        (
            hopper(staged(
                case(F16, 1, [64, 64, 32], 4, [80, 72, 112]),
                3,
                true,
            )),
            false,
        ),
        (
            hopper(staged(
                case(F16, 0, [64, 64, 32], 2, [80, 72, 112]),
                3,
                true,
            )),
            false,
        ),
        (
            hopper(staged(case(F16, 0, [32, 32, 16], 4, [40, 24, 40]), 3, true)),
            false,
        ),
        (
            hopper(staged(
                case(F16, 0, [64, 64, 32], 8, [80, 72, 112]),
                3,
                true,
            )),
            false,
        ),
        // The wgmma tiling with no ring to read from: mma.sync on that tiling.
        (
            hopper(staged(
                case(F16, 0, [64, 64, 32], 4, [80, 72, 112]),
                1,
                true,
            )),
            false,
        ),
    ];
    for (c, wgmma) in &cases {
        let (g, a, b, want) = interpret(c);
        let cuda = &g.cuda;
        assert_eq!(cuda.contains("wgmma.mma_async"), *wgmma, "{c:?}\n{cuda}");
        // The loads are blocks of A and B (rows and K masked, `src/tile/blocks/`): copied with
        // TMA wherever the dot goes to wgmma, the rows are 16-byte aligned and each warpgroup
        // takes one 64-row step (two permute A's rows in the ring, which a box cannot), in
        // the loop whose wgmmas overlap (`acc += tl.dot(a, b)` waits for its own).
        let one_step = c.tile[0] <= 64 * i64::from(c.warps / 4);
        let tma = *wgmma && c.div16 && one_step && c.mode == 0;
        assert_eq!(!g.maps.is_empty(), tma, "{c:?}");
        assert_eq!(cuda.contains("kwb_tma2d(kwb_smem("), tma, "{c:?}");
        let Some((got, ptx)) = emulate(c, &g, &a, &b) else {
            continue;
        };
        assert_eq!(got, want, "{c:?}: emulator vs interpreter");
        assert_eq!(ptx.contains("wgmma.mma_async"), *wgmma, "{c:?}");
        assert_eq!(ptx.contains("mma.sync.aligned"), !*wgmma, "{c:?}");
    }
}
