// kwb's own bandwidth-peak kernels (see src/run/gpu/stream_peak.rs). The worker ships no compiler,
// so these are compiled once to PTX (src/run/gpu/stream_peak.ptx, which the binary embeds) and the
// driver JIT-compiles that PTX for whatever GPU the worker runs on. To regenerate after an edit:
//   cargo test --lib run::stream_peak -- --ignored regenerate_ptx
// Every thread keeps UNROLL 128-bit loads in flight before it stores anything, and walks the
// buffers with a grid stride, so one launch with a grid sized to the SMs covers any size.
// `copy` moves one read per write (like cudaMemcpy); `triad` moves two reads per write (like an
// elementwise add). `_cs` variants use the evict-first streaming cache hint. The `1` variants
// are the shape of a one-shot elementwise kernel instead: one 16-byte vector per thread, an
// exact grid, no loop (on an H200 that shape beat the grid-stride ones by a few percent).

#define UNROLL 4

typedef unsigned long long u64;

template <bool STREAMING>
__device__ __forceinline__ uint4 load(const uint4* p) {
    if (STREAMING) return __ldcs(p);
    return __ldg(p);
}

template <bool STREAMING>
__device__ __forceinline__ void store(uint4* p, uint4 v) {
    if (STREAMING) __stcs(p, v);
    else *p = v;
}

__device__ __forceinline__ uint4 mix(uint4 a, uint4 b) {
    return make_uint4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

template <bool STREAMING>
__device__ __forceinline__ void copy(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 n) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++) v[k] = load<STREAMING>(src + i + k * stride);
#pragma unroll
        for (int k = 0; k < UNROLL; k++) store<STREAMING>(dst + i + k * stride, v[k]);
    }
    for (; i < n; i += stride) store<STREAMING>(dst + i, load<STREAMING>(src + i));
}

template <bool STREAMING>
__device__ __forceinline__ void triad(const uint4* __restrict__ a, const uint4* __restrict__ b,
                                      uint4* __restrict__ c, u64 n) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        uint4 x[UNROLL], y[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            x[k] = load<STREAMING>(a + i + k * stride);
            y[k] = load<STREAMING>(b + i + k * stride);
        }
#pragma unroll
        for (int k = 0; k < UNROLL; k++) store<STREAMING>(c + i + k * stride, mix(x[k], y[k]));
    }
    for (; i < n; i += stride) store<STREAMING>(c + i, mix(load<STREAMING>(a + i), load<STREAMING>(b + i)));
}

// n counts 16-byte vectors.
extern "C" __global__ void kwb_peak_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 n) {
    copy<false>(src, dst, n);
}
extern "C" __global__ void kwb_peak_copy_cs(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 n) {
    copy<true>(src, dst, n);
}
extern "C" __global__ void kwb_peak_triad(const uint4* __restrict__ a, const uint4* __restrict__ b,
                                          uint4* __restrict__ c, u64 n) {
    triad<false>(a, b, c, n);
}
extern "C" __global__ void kwb_peak_triad_cs(const uint4* __restrict__ a, const uint4* __restrict__ b,
                                             uint4* __restrict__ c, u64 n) {
    triad<true>(a, b, c, n);
}

__device__ __forceinline__ u64 one_index() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }

extern "C" __global__ void kwb_peak_copy1(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 n) {
    const u64 i = one_index();
    if (i < n) dst[i] = __ldg(src + i);
}
extern "C" __global__ void kwb_peak_triad1(const uint4* __restrict__ a, const uint4* __restrict__ b,
                                           uint4* __restrict__ c, u64 n) {
    const u64 i = one_index();
    if (i < n) c[i] = mix(__ldg(a + i), __ldg(b + i));
}

// Cold-L2 flush for timing (src/run/gpu/flush.rs): every thread reads its share of a buffer twice
// the L2 size through L2 (`.cg`), so L2 ends up holding clean lines of other data. (A memset
// would leave dirty lines, whose write-back the next timed kernel would pay.) The xor keeps
// the loads alive; the buffer is filled so that it is never zero, and nothing is written.
extern "C" __global__ void kwb_flush_read(const uint4* __restrict__ src, u64 n, uint4* sink) {
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (u64 i = one_index(); i < n; i += (u64)gridDim.x * blockDim.x) {
        const uint4 v = __ldcg(src + i);
        acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
    }
    if ((acc.x & acc.y & acc.z & acc.w) == 0xdeadbeefu) *sink = acc;
}
