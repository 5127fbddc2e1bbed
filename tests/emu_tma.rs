//! Hopper's TMA loads in the emulator: CUDA kernels compiled by NVRTC that take a
//! `__grid_constant__ CUtensorMap` (kwb's own encoding, `kwb::emu::TensorMap`), load boxes
//! with `cp.async.bulk.tensor` completing on mbarriers, and wait in `try_wait.parity` spin
//! loops. Checked against direct computation: a swizzled box with zero fill past the tensor's
//! edges, a ring of stages whose parities flip (with the producer in the first warp and in the
//! last), a tile read back by `wgmma`; then the failures: a deadlock, a map that is not one.

mod support;

use half::f16;
use kwb::emu::{EmuError, ParamValue, Report, TensorMap};
use support::emu_block::{eighths, run_block_with};

/// The helpers every kernel here uses.
const PRELUDE: &str = r#"
struct __align__(64) CUtensorMap { unsigned long long opaque[16]; };
static __device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void bar_init(void* b, unsigned n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(b)), "r"(n) : "memory");
}
static __device__ __forceinline__ void expect(void* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(b)), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void load2d(void* dst, const CUtensorMap* m, int x, int y, void* b) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        :: "r"(smem(dst)), "l"(m), "r"(x), "r"(y), "r"(smem(b)) : "memory");
}
static __device__ __forceinline__ void wait(void* b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n"
        :: "r"(smem(b)), "r"(parity) : "memory");
}
"#;

/// The PTX of `src` (after the prelude) for `arch`.
fn ptx(src: &str, arch: &str) -> String {
    support::provision_nvrtc();
    let nvrtc = kwb::compile::nvrtc::nvrtc().expect("NVRTC loads");
    let arch = kwb::compile::Arch::parse(arch).expect("arch");
    let source = format!("{PRELUDE}{src}");
    let out = (nvrtc.compile("tma.cu", &source, &nvrtc.base_options(arch))).expect("NVRTC runs");
    assert!(out.ok, "{}", out.log);
    out.ptx
}

fn map_param(m: &TensorMap) -> ParamValue {
    ParamValue::Bytes(m.to_bytes().to_vec())
}

fn word(v: i32) -> ParamValue {
    ParamValue::Word(u64::from(v as u32))
}

/// 128B-swizzled byte offset, written out: the 16-byte chunk index XOR the 128-byte row's
/// index within its group of 8.
fn sw128(o: usize) -> usize {
    let (row, chunk) = (o / 128, (o / 16) % 8);
    row * 128 + ((chunk ^ (row % 8)) * 16) + o % 16
}

const LOAD: &str = r#"
extern "C" __global__ void load(const __grid_constant__ CUtensorMap map, unsigned* out, int x0, int y0, int x1, int y1) {
    __shared__ __align__(1024) unsigned char buf[2][16384];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) {
        bar_init(&bar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&map) : "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        expect(&bar, 2 * 16384);
        load2d(buf[0], &map, x0, y0, &bar);
        load2d(buf[1], &map, x1, y1, &bar);
    }
    wait(&bar, 0);
    const unsigned* w = (const unsigned*)buf;
    for (int i = threadIdx.x; i < 8192; i += blockDim.x) out[i] = w[i];
}
"#;

/// A 150-row tensor of 100 fp16 columns, rows 208 bytes apart: element (row, col) is
/// row * 100 + col + 1 (exact in fp16 below 2048, so taken modulo 2039).
const COLS: usize = 100;
const ROWS: usize = 150;
const PITCH: usize = 104;

fn tensor_value(row: usize, col: usize) -> f16 {
    f16::from_f32(((row * COLS + col) % 2039 + 1) as f32)
}

fn load_map(address: u64) -> TensorMap {
    TensorMap {
        address,
        elem_bytes: 2,
        dims: vec![COLS as u64, ROWS as u64],
        strides: vec![(PITCH * 2) as u64],
        box_dims: vec![64, 128],
        swizzle: 128,
    }
}

fn run_load(map: impl FnOnce(u64) -> ParamValue) -> Result<(Vec<u8>, Report), EmuError> {
    let mut tensor = vec![0u8; ROWS * PITCH * 2];
    for r in 0..ROWS {
        for c in 0..COLS {
            let at = (r * PITCH + c) * 2;
            tensor[at..at + 2].copy_from_slice(&tensor_value(r, c).to_le_bytes());
        }
    }
    let bufs = [tensor, vec![0u8; 2 * 16384]];
    let (x0, y0, x1, y1) = (64, 64, -16, -3);
    let (out, report) = run_block_with(&ptx(LOAD, "sm_90"), "load", 128, &bufs, |a| {
        vec![
            map(a[0]),
            ParamValue::Word(a[1]),
            word(x0),
            word(y0),
            word(x1),
            word(y1),
        ]
    })?;
    Ok((out[1].clone(), report))
}

#[test]
fn a_swizzled_box_lands_in_shared_memory_with_zeros_past_the_edges() {
    let (out, report) = run_load(|a| map_param(&load_map(a))).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let mut zeros = 0;
    for (k, (x0, y0)) in [(64i64, 64i64), (-16, -3)].into_iter().enumerate() {
        for n in 0..64 * 128 {
            let (row, col) = (y0 + (n / 64) as i64, x0 + (n % 64) as i64);
            let inside = (0..ROWS as i64).contains(&row) && (0..COLS as i64).contains(&col);
            let want = if inside {
                tensor_value(row as usize, col as usize)
            } else {
                zeros += 1;
                f16::ZERO
            };
            let at = k * 16384 + sw128(n * 2);
            let got = f16::from_le_bytes([out[at], out[at + 1]]);
            assert_eq!(got, want, "box {k}, element {n} (row {row}, col {col})");
        }
    }
    // Box 0: columns 100..127 of every row, and rows 150..191; box 1: 16 columns, 3 rows.
    assert_eq!(zeros, (28 * 128 + 42 * 36) + (16 * 128 + 3 * 48));
}

#[test]
fn a_map_that_is_not_one_is_an_error_naming_the_ptx_line() {
    match run_load(|_| ParamValue::Bytes(vec![0; 128])) {
        Err(EmuError::TensorMap { message, ptx_line }) => {
            assert!(message.contains("not one kwb encoded"), "{message}");
            assert!(ptx_line > 0);
        }
        other => panic!("expected a tensor-map error, got {other:?}"),
    }
    let wide = |a| {
        let mut m = load_map(a);
        m.box_dims[0] = 128;
        map_param(&m)
    };
    match run_load(wide) {
        Err(EmuError::TensorMap { message, .. }) => {
            assert!(
                message.contains("wider than the 128-byte swizzle"),
                "{message}"
            )
        }
        other => panic!("expected a tensor-map error, got {other:?}"),
    }
    for bad in [ParamValue::Word(0), ParamValue::Bytes(vec![0; 64])] {
        match run_load(|_| bad) {
            Err(EmuError::BadLaunch(m)) => assert!(m.contains("128 bytes"), "{m}"),
            other => panic!("expected a bad launch, got {other:?}"),
        }
    }
}

const RING: &str = r#"
#define STAGES 3
extern "C" __global__ void ring(const __grid_constant__ CUtensorMap map, float* out, int iters, int producer) {
    __shared__ __align__(1024) float buf[STAGES][8][32];
    __shared__ __align__(8) unsigned long long bars[STAGES];
    const int t = threadIdx.x;
    if (t == producer) {
        for (int s = 0; s < STAGES; ++s) bar_init(&bars[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t == producer) {
        for (int s = 0; s < STAGES && s < iters; ++s) {
            expect(&bars[s], sizeof(buf[s]));
            load2d(buf[s], &map, 0, 8 * s, &bars[s]);
        }
    }
    float acc = 0.0f;
    for (int k = 0; k < iters; ++k) {
        const int s = k % STAGES;
        wait(&bars[s], (k / STAGES) & 1);
        acc += buf[s][t / 32][t % 32] * (float)(k + 1) + buf[s][4 + t / 32][t % 32];
        __syncthreads();
        if (t == producer && k + STAGES < iters) {
            expect(&bars[s], sizeof(buf[s]));
            load2d(buf[s], &map, 0, 8 * (k + STAGES), &bars[s]);
        }
    }
    out[t] = acc;
}
"#;

#[test]
fn a_ring_of_stages_flips_parities_whichever_warp_produces() {
    const ITERS: usize = 7;
    let rows = 8 * ITERS;
    let vals = eighths(rows * 32, 7);
    let tensor: Vec<u8> = vals
        .iter()
        .flat_map(|v| (*v as f32).to_le_bytes())
        .collect();
    let src = ptx(RING, "sm_90");
    // Thread 0 produces before anyone waits; thread 96 only after warps 0-2 have parked.
    for producer in [0, 96] {
        let bufs = [tensor.clone(), vec![0u8; 128 * 4]];
        let (out, report) = run_block_with(&src, "ring", 128, &bufs, |a| {
            let map = TensorMap {
                address: a[0],
                elem_bytes: 4,
                dims: vec![32, rows as u64],
                strides: vec![128],
                box_dims: vec![32, 8],
                swizzle: 0,
            };
            vec![
                map_param(&map),
                ParamValue::Word(a[1]),
                word(ITERS as i32),
                word(producer),
            ]
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            report.findings.is_empty(),
            "producer {producer}: {:?}",
            report.findings
        );
        for t in 0..128 {
            let mut want = 0.0f32;
            for k in 0..ITERS {
                let at = |r: usize| vals[(8 * k + r) * 32 + t % 32] as f32;
                want += at(t / 32) * (k + 1) as f32 + at(4 + t / 32);
            }
            let got = f32::from_le_bytes(out[1][4 * t..4 * t + 4].try_into().unwrap());
            assert_eq!(got, want, "producer {producer}, thread {t}");
        }
    }
}

const STUCK: &str = r#"
extern "C" __global__ void stuck(const __grid_constant__ CUtensorMap map, float* out) {
    __shared__ __align__(1024) float buf[8][32];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) bar_init(&bar, 1);
    __syncthreads();
    // Bytes are expected, but no copy ever completes them.
    if (threadIdx.x == 0) expect(&bar, sizeof(buf));
    wait(&bar, 0);
    out[threadIdx.x] = buf[threadIdx.x / 32][threadIdx.x % 32];
}
"#;

/// The parameters of the kernels below: a map of one 32 x 8 f32 box (no swizzle) over the first
/// buffer, and the second buffer.
fn one_box_of_32x8_f32(a: &[u64]) -> Vec<ParamValue> {
    let map = TensorMap {
        address: a[0],
        elem_bytes: 4,
        dims: vec![32, 8],
        strides: vec![128],
        box_dims: vec![32, 8],
        swizzle: 0,
    };
    vec![map_param(&map), ParamValue::Word(a[1])]
}

#[test]
fn waiting_on_a_phase_nothing_completes_is_a_deadlock_finding_not_a_hang() {
    let src = ptx(STUCK, "sm_90");
    let bufs = [vec![0u8; 1024], vec![0u8; 64 * 4]];
    let (out, report) = run_block_with(&src, "stuck", 64, &bufs, one_box_of_32x8_f32)
        .unwrap_or_else(|e| panic!("{e}"));
    let f = (report.findings.iter())
        .find(|f| f.kind.as_str() == "deadlock")
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(
        f.message.contains("64 threads") && f.message.contains("1024 transaction bytes pending"),
        "{}",
        f.message
    );
    let line = src.lines().nth(f.ptx_line as usize - 1).unwrap_or_default();
    assert!(
        line.contains("mbarrier.try_wait.parity"),
        "line {}: {line}",
        f.ptx_line
    );
    assert!(out[1].iter().all(|&b| b == 0), "nothing ran past the wait");
}

const WGMMA: &str = r#"
static __device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned mode) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
        | ((unsigned long long)(sbo >> 4) << 32) | ((unsigned long long)mode << 62);
}
#define D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
extern "C" __global__ void mm(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb, float* out, int ax, int ay) {
    __shared__ __align__(1024) unsigned char a[8192];
    __shared__ __align__(1024) unsigned char b[8192];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) bar_init(&bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        expect(&bar, 16384);
        load2d(a, &ma, ax, ay, &bar);
        load2d(b, &mb, 0, 0, &bar);
    }
    wait(&bar, 0);
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    // A K-major and B MN-major, 128-byte swizzle, as kwb's compiler builds them.
    const unsigned long long da = desc(smem(a), 16, 1024, 1);
    const unsigned long long db = desc(smem(b), 64 * 128, 1024, 1);
#pragma unroll
    for (int kk = 0; kk < 64; kk += 16) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "%32, %33, 1, 1, 1, 0, 1;"
            : D8(0), D8(8), D8(16), D8(24)
            : "l"(da + (kk * 2) / 16), "l"(db + kk * 128 / 16) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    for (int i = 0; i < 32; ++i) {
        const int row = 16 * w + l / 4 + 8 * (i % 4 / 2), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
        out[row * 64 + col] = d[i];
    }
}
"#;

#[test]
fn a_swizzled_tma_tile_is_what_wgmma_reads() {
    // A: a 70x80 row-major tensor (K inner), the tile at K 8.., M 3..; B: 64x64 (N inner).
    let (am, ak) = (70usize, 80usize);
    let (ax, ay) = (8usize, 3usize);
    let av = eighths(am * ak, 3);
    let bv = eighths(64 * 64, 4);
    let half = |v: &[f64]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| f16::from_f64(*x).to_le_bytes())
            .collect()
    };
    let bufs = [half(&av), half(&bv), vec![0u8; 64 * 64 * 4]];
    let src = ptx(WGMMA, "sm_90a");
    let (out, report) = run_block_with(&src, "mm", 128, &bufs, |a| {
        let map = |address, dims: Vec<u64>| TensorMap {
            address,
            elem_bytes: 2,
            strides: vec![dims[0] * 2],
            dims,
            box_dims: vec![64, 64],
            swizzle: 128,
        };
        vec![
            map_param(&map(a[0], vec![ak as u64, am as u64])),
            map_param(&map(a[1], vec![64, 64])),
            ParamValue::Word(a[2]),
            word(ax as i32),
            word(ay as i32),
        ]
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    for m in 0..64 {
        for n in 0..64 {
            let want: f64 = (0..64)
                .map(|k| av[(ay + m) * ak + ax + k] * bv[k * 64 + n])
                .sum();
            let at = 4 * (m * 64 + n);
            let got = f32::from_le_bytes(out[2][at..at + 4].try_into().unwrap());
            assert_eq!(got as f64, want, "D[{m}][{n}]");
        }
    }
}

const UNWAITED: &str = r#"
extern "C" __global__ void unwaited(const __grid_constant__ CUtensorMap map, float* out) {
    __shared__ __align__(1024) float buf[8][32];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) bar_init(&bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        expect(&bar, sizeof(buf));
        load2d(buf, &map, 0, 0, &bar);
    }
    // Read before waiting for the copy: a race on the GPU, though the emulator copied at once.
    out[threadIdx.x] = buf[threadIdx.x / 32][threadIdx.x % 32];
    wait(&bar, 0);
}
"#;

#[test]
fn reading_a_box_before_waiting_for_its_barrier_is_a_race() {
    let src = ptx(UNWAITED, "sm_90");
    let vals: Vec<u8> = (0..256u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let bufs = [vals, vec![0u8; 64 * 4]];
    let (out, report) = run_block_with(&src, "unwaited", 64, &bufs, one_box_of_32x8_f32)
        .unwrap_or_else(|e| panic!("{e}"));
    let f = (report.findings.iter())
        .find(|f| f.kind.as_str() == "shared-race")
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(f.message.contains("bulk tensor copy"), "{}", f.message);
    // The copy's writes are not the issuing thread's own: thread 0 must wait too.
    assert_eq!(f.thread, [0, 0, 0], "{f:?}");
    assert_eq!(&out[1][4..8], &1.0f32.to_le_bytes());
}

/// Two inline-asm scopes that each declare the label `W` (as every inlined wait does), a branch
/// from inside one to a label outside, and the parameter read through its generic address.
const SCOPES: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  mov.u32 %r1, 0;
  {
  .reg .pred p;
  W: add.u32 %r1, %r1, 1;
  setp.lt.u32 p, %r1, 3;
  @p bra W;
  }
  {
  .reg .pred p;
  W: add.u32 %r1, %r1, 10;
  setp.lt.u32 p, %r1, 40;
  @p bra W;
  @!p bra DONE;
  }
  mov.u32 %r1, 999;
DONE:
  mov.b64 %rd1, k_param_0;
  cvta.param.u64 %rd2, %rd1;
  ld.u64 %rd3, [%rd2];
  cvta.to.global.u64 %rd4, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
"#;

#[test]
fn labels_are_scoped_and_parameters_have_generic_addresses() {
    let (out, report) = support::emu_block::run_block(SCOPES, "k", 1, &[vec![0u8; 4]])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(out[0], 43u32.to_le_bytes());
}
