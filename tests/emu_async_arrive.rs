//! Barrier reductions and mbarrier arrivals in the emulator: CUDA kernels compiled by NVRTC
//! for sm_90 that use `__syncthreads_and`, `_or` and `_count` (`bar.red`), a ring of stages
//! filled by `cp.async` copies that `cp.async.mbarrier.arrive[.noinc]` hands to an mbarrier,
//! and `mbarrier.arrive` with a count. Checked against direct computation, then the mistakes
//! the emulator must catch: a missing arrival (a deadlock), a read that does not wait (a race),
//! too many arrivals.

mod support;

use kwb::emu::{Finding, ParamValue, Report};
use support::emu_block::run_block_with;

/// The helpers the kernels use.
const PRELUDE: &str = r#"
static __device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void bar_init(void* b, unsigned n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(b)), "r"(n) : "memory");
}
static __device__ __forceinline__ void wait(void* b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n"
        :: "r"(smem(b)), "r"(parity) : "memory");
}
static __device__ __forceinline__ void copy16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem(dst)), "l"(src) : "memory");
}
static __device__ __forceinline__ void copies_arrive_noinc(void* b) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(smem(b)) : "memory");
}
static __device__ __forceinline__ void copies_arrive(void* b) {
    asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];" :: "r"(smem(b)) : "memory");
}
static __device__ __forceinline__ void arrive(void* b) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(smem(b)) : "memory");
}
static __device__ __forceinline__ void arrive_count(void* b, unsigned n) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" :: "r"(smem(b)), "r"(n) : "memory");
}
static __device__ __forceinline__ unsigned long long arrive_count_state(void* b, unsigned n) {
    unsigned long long state;
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 %0, [%1], %2;"
        : "=l"(state) : "r"(smem(b)), "r"(n) : "memory");
    return state;
}
"#;

/// The PTX of `src` (after the prelude) for sm_90.
fn ptx(src: &str) -> String {
    support::provision_nvrtc();
    let nvrtc = kwb::compile::nvrtc::nvrtc().expect("NVRTC loads");
    let arch = kwb::compile::Arch::parse("sm_90").expect("arch");
    let source = format!("{PRELUDE}{src}");
    let out = (nvrtc.compile("arrive.cu", &source, &nvrtc.base_options(arch))).expect("NVRTC runs");
    assert!(out.ok, "{}", out.log);
    out.ptx
}

fn word(v: i32) -> ParamValue {
    ParamValue::Word(u64::from(v as u32))
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    (bytes.chunks_exact(4))
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The finding of `kind`, else a panic listing them all.
fn finding<'r>(report: &'r Report, kind: &str) -> &'r Finding {
    (report.findings.iter())
        .find(|f| f.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind} finding in {:?}", report.findings))
}

/// The text of PTX line `n` of `src`.
fn line(src: &str, n: u32) -> &str {
    src.lines().nth(n as usize - 1).unwrap_or_default()
}

const VOTES: &str = r#"
extern "C" __global__ void votes(const int* in, unsigned* out, int quit) {
    __shared__ int seen[256];
    const int t = threadIdx.x;
    if (t >= quit) return;
    const int v = in[t];
    unsigned* o = out + t;
    o[0 * 256] = __syncthreads_and(v > 3);
    o[1 * 256] = __syncthreads_or(v == 7);
    o[2 * 256] = __syncthreads_count(v & 1);
    o[3 * 256] = __syncthreads_count(v > t % 9);
    o[4 * 256] = __syncthreads_and(v >= 0);
    o[5 * 256] = __syncthreads_or(v > 1000);
    unsigned n, q;
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n bar.red.popc.u32 %0, 0, !p;\n}"
        : "=r"(n) : "r"(v & 2) : "memory");
    o[6 * 256] = n;
    asm volatile("{\n .reg .pred p, r;\n setp.gt.s32 p, %1, 5;\n barrier.red.and.pred r, 0, !p;\n selp.u32 %0, 1, 0, r;\n}"
        : "=r"(q) : "r"(v) : "memory");
    o[7 * 256] = q;
    // The reduction orders shared memory as `__syncthreads` does.
    seen[t] = v;
    const int c = __syncthreads_count(v > 2);
    o[8 * 256] = c + seen[(t + 1) % quit];
}
"#;

/// What thread `t` of `live` threads writes to row `row` of `votes`'s output.
fn vote_want(vals: &[i32], live: usize, row: usize, t: usize) -> u32 {
    let vals = &vals[..live];
    let count = |f: &dyn Fn(usize, i32) -> bool| {
        vals.iter().enumerate().filter(|&(t, &v)| f(t, v)).count() as u32
    };
    let n = live as u32;
    match row {
        0 => u32::from(count(&|_, v| v > 3) == n),
        1 => u32::from(count(&|_, v| v == 7) > 0),
        2 => count(&|_, v| v & 1 != 0),
        3 => count(&|t, v| v > (t % 9) as i32),
        4 => u32::from(count(&|_, v| v >= 0) == n),
        5 => u32::from(count(&|_, v| v > 1000) > 0),
        6 => count(&|_, v| v & 2 == 0),
        7 => u32::from(count(&|_, v| v <= 5) == n),
        _ => count(&|_, v| v > 2) + vals[(t + 1) % live] as u32,
    }
}

#[test]
fn barrier_reductions_give_every_thread_the_and_or_and_count() {
    let src = ptx(VOTES);
    for token in ["bar.red.and.pred", "bar.red.or.pred", "bar.red.popc.u32"] {
        assert!(
            src.contains(token),
            "NVRTC no longer emits `{token}`:\n{src}"
        );
    }
    let mixed: Vec<i32> = (0..256).map(|t| (t * 37 + 11) % 13).collect();
    let high: Vec<i32> = (0..256).map(|t| 4 + t % 3).collect();
    for (name, vals) in [("mixed", mixed), ("high", high)] {
        let ins: Vec<u32> = vals.iter().map(|&v| v as u32).collect();
        let bufs = [bytes(&ins), vec![0u8; 9 * 256 * 4]];
        let (out, report) = run_block_with(&src, "votes", 256, &bufs, |a| {
            vec![ParamValue::Word(a[0]), ParamValue::Word(a[1]), word(256)]
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(report.findings.is_empty(), "{name}: {:?}", report.findings);
        let got = u32s(&out[1]);
        for row in 0..9 {
            for t in 0..256 {
                let want = vote_want(&vals, 256, row, t);
                assert_eq!(got[row * 256 + t], want, "{name}: row {row}, thread {t}");
            }
        }
    }
}

#[test]
fn threads_that_exited_take_no_part_in_a_reduction() {
    let src = ptx(VOTES);
    let vals: Vec<i32> = (0..256).map(|t| (t * 37 + 11) % 13).collect();
    let ins: Vec<u32> = vals.iter().map(|&v| v as u32).collect();
    let live = 250;
    let bufs = [bytes(&ins), vec![0u8; 9 * 256 * 4]];
    let (out, report) = run_block_with(&src, "votes", 256, &bufs, |a| {
        vec![ParamValue::Word(a[0]), ParamValue::Word(a[1]), word(live)]
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // As for `__syncthreads`: the barrier that the exited threads miss is reported.
    let f = finding(&report, "divergent-barrier");
    assert!(f.message.contains("250 of 256 threads"), "{}", f.message);
    let got = u32s(&out[1]);
    for row in 0..9 {
        for t in 0..256 {
            let want = if t < live as usize {
                vote_want(&vals, live as usize, row, t)
            } else {
                0
            };
            assert_eq!(got[row * 256 + t], want, "row {row}, thread {t}");
        }
    }
}

/// A ring of 3 stages of 1024 words, each filled by the block's 256 threads, 16 bytes each.
/// `mode` 0: `cp.async` copies handed over by `cp.async.mbarrier.arrive.noinc`; 1: by
/// `cp.async.mbarrier.arrive` (no arrival of its own) followed by `mbarrier.arrive`; 2: as 0 on
/// even iterations, and on odd ones plain stores, `__syncthreads`, then two threads arrive
/// with counts 200 + `extra` and 56. `skip_arrive`: the thread whose noinc arrival is left
/// out; `skip_wait`: the iteration at which warp 1 reads without waiting.
const RING: &str = r#"
#define STAGES 3
#define TILE 1024
static __device__ void fill(unsigned (*buf)[TILE], unsigned long long* bars, const unsigned* src,
                            int k, int mode, int skip_arrive, int extra) {
    const int t = threadIdx.x, s = k % STAGES;
    if (mode == 2 && k % 2 == 1) {
        for (int j = 0; j < 4; ++j) buf[s][4 * t + j] = src[k * TILE + 4 * t + j];
        __syncthreads();
        if (t == 0) arrive_count(&bars[s], 200 + extra);
        if (t == 32) arrive_count_state(&bars[s], 56);
        return;
    }
    copy16(&buf[s][4 * t], &src[k * TILE + 4 * t]);
    if (mode == 1) {
        copies_arrive(&bars[s]);
        arrive(&bars[s]);
    } else if (t != skip_arrive) {
        copies_arrive_noinc(&bars[s]);
    }
}
extern "C" __global__ void ring(const unsigned* src, unsigned* out, int iters, int mode,
                                int skip_arrive, int skip_wait, int extra) {
    __shared__ __align__(16) unsigned buf[STAGES][TILE];
    __shared__ __align__(8) unsigned long long bars[STAGES];
    const int t = threadIdx.x;
    if (t == 0) {
        for (int s = 0; s < STAGES; ++s) bar_init(&bars[s], 256);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    for (int k = 0; k < STAGES && k < iters; ++k) fill(buf, bars, src, k, mode, skip_arrive, extra);
    unsigned acc = 0;
    for (int k = 0; k < iters; ++k) {
        const int s = k % STAGES;
        if (k != skip_wait || t / 32 != 1) wait(&bars[s], (k / STAGES) & 1);
        acc += buf[s][t] * (unsigned)(k + 1) + buf[s][(t * 5 + 3 * k + 1) % TILE];
        __syncthreads();
        if (k + STAGES < iters) fill(buf, bars, src, k + STAGES, mode, skip_arrive, extra);
    }
    out[t] = acc;
}
"#;

const ITERS: usize = 7;
const TILE: usize = 1024;

/// How the ring runs: mode, the thread that skips its arrival, the iteration at which warp 1
/// skips its wait, the extra count (-1 for none).
struct Ring {
    mode: i32,
    skip_arrive: i32,
    skip_wait: i32,
    extra: i32,
}

const PLAIN: Ring = Ring {
    mode: 0,
    skip_arrive: -1,
    skip_wait: -1,
    extra: 0,
};

fn tiles() -> Vec<u32> {
    (0..ITERS * TILE)
        .map(|i| (i as u32).wrapping_mul(2654435761) >> 7)
        .collect()
}

fn run_ring(src: &str, r: &Ring) -> (Vec<u32>, Report) {
    let bufs = [bytes(&tiles()), vec![0u8; 256 * 4]];
    let (out, report) = run_block_with(src, "ring", 256, &bufs, |a| {
        vec![
            ParamValue::Word(a[0]),
            ParamValue::Word(a[1]),
            word(ITERS as i32),
            word(r.mode),
            word(r.skip_arrive),
            word(r.skip_wait),
            word(r.extra),
        ]
    })
    .unwrap_or_else(|e| panic!("{e}"));
    (u32s(&out[1]), report)
}

fn ring_sums() -> Vec<u32> {
    let v = tiles();
    (0..256)
        .map(|t| {
            (0..ITERS).fold(0u32, |acc, k| {
                let tile = &v[k * TILE..(k + 1) * TILE];
                let other = tile[(t * 5 + 3 * k + 1) % TILE];
                acc.wrapping_add(tile[t].wrapping_mul(k as u32 + 1))
                    .wrapping_add(other)
            })
        })
        .collect()
}

#[test]
fn a_ring_filled_by_cp_async_completes_on_its_mbarriers() {
    let src = ptx(RING);
    for token in [
        "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
        "cp.async.mbarrier.arrive.shared.b64",
        "mbarrier.arrive.shared::cta.b64 _,",
    ] {
        assert!(src.contains(token), "no `{token}` in the PTX");
    }
    let want = ring_sums();
    for mode in [0, 1, 2] {
        let (got, report) = run_ring(&src, &Ring { mode, ..PLAIN });
        assert!(
            report.findings.is_empty(),
            "mode {mode}: {:?}",
            report.findings
        );
        assert_eq!(got, want, "mode {mode}");
    }
}

#[test]
fn a_missing_noinc_arrival_is_a_deadlock_at_the_wait() {
    let src = ptx(RING);
    let (got, report) = run_ring(
        &src,
        &Ring {
            skip_arrive: 77,
            ..PLAIN
        },
    );
    let f = finding(&report, "deadlock");
    assert!(
        f.message.contains("256 threads") && f.message.contains("1 of 256 arrivals"),
        "{}",
        f.message
    );
    let at = line(&src, f.ptx_line);
    assert!(
        at.contains("mbarrier.try_wait.parity"),
        "line {}: {at}",
        f.ptx_line
    );
    assert!(got.iter().all(|&v| v == 0), "nothing ran past the wait");
}

#[test]
fn reading_copies_without_waiting_for_their_phase_is_a_race() {
    let src = ptx(RING);
    // Iteration 4 reads stage 1's second fill: copied after the barrier that ends iteration 1,
    // so only the wait orders it, not any `__syncthreads`.
    let (got, report) = run_ring(
        &src,
        &Ring {
            skip_wait: 4,
            ..PLAIN
        },
    );
    let f = finding(&report, "shared-race");
    assert!(
        f.message.contains("reads")
            && f.message
                .contains("cp.async copies tracked by the mbarrier"),
        "{}",
        f.message
    );
    // Both of its reads, and nothing else.
    assert!(
        (report.findings.iter()).all(|f| f.kind.as_str() == "shared-race" && f.thread[0] / 32 == 1),
        "{:?}",
        report.findings
    );
    // The emulator copied at once, so the values are right all the same.
    assert_eq!(got, ring_sums());
}

#[test]
fn an_arrive_count_past_the_expected_one_is_reported() {
    let src = ptx(RING);
    let (_, report) = run_ring(
        &src,
        &Ring {
            mode: 2,
            extra: 1,
            ..PLAIN
        },
    );
    let f = finding(&report, "mbarrier");
    assert!(f.message.contains("more arrivals"), "{}", f.message);
    let at = line(&src, f.ptx_line);
    assert!(at.contains("mbarrier.arrive"), "line {}: {at}", f.ptx_line);
}
