// softmax v7 - one pass over DRAM: each row is held in registers. Every thread loads its share
// of the row as 128-bit float4 vectors (up to V7_ITEMS of them, all issued before any is used,
// so many bytes are in flight), the max and the sum are reduced through warp shuffles (and,
// when a row spans several warps, one small shared array), and the row is written back from
// registers: x is read once and y written once, as in Triton's fused softmax. Rows longer than
// a warp's reduce (max, sum) pairs, each thread's sum taken against its own max and rescaled,
// so the block meets at one barrier instead of two.
//
// Rows of up to 32 * 4 * V7_ITEMS = 1024 elements take one warp each (a block of several warps
// takes as many rows): their reductions are shuffles alone, with no barrier and no shared
// memory. Longer rows take the whole block (enough threads that V7_ITEMS float4 per thread
// cover the row). Rows whose length is not a multiple of 4 take the scalar path for the
// elements that do not fit a vector.
// launch: block = 32 * min(32, cdiv(N, 1024)) (V7_ITEMS = 8 float4 per thread), grid = M;
//         with N <= 1024, a block of W warps takes W rows: block = 128, grid = cdiv(M, 4)
//         (on an H100 2.6-3% faster than one-warp blocks at 4096x1024; on an H200 1% slower)

#define NEG_INF __uint_as_float(0xff800000u)

#ifndef V7_ITEMS
#define V7_ITEMS 8
#endif
// Cache hints: x is read through the read-only path (ld.global.nc; -D V7_LOAD_NC=0 for plain
// loads), y written with plain stores (-D V7_STORE_CS=1 for streaming st.global.cs, which on an
// H200 read 1.1-1.6% slower at 8192x4096 and 1024x32768 and 1% faster at 4096x1024).
#ifndef V7_LOAD_NC
#define V7_LOAD_NC 1
#endif
#ifndef V7_STORE_CS
#define V7_STORE_CS 0
#endif
// Rows longer than a warp's: reduce (max, sum) pairs with one barrier (1: on an H100, 1.0%
// faster at 1024x32768 and 0.3% at 8192x4096), or the max and then the sum with two (0).
#ifndef V7_ONE_BARRIER
#define V7_ONE_BARRIER 1
#endif
// The most threads a block may have (the register budget follows from it).
#ifndef V7_MAX_THREADS
#define V7_MAX_THREADS 1024
#endif

static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    }
    return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, off);
    }
    return v;
}

// The block's reduction of one value per thread: warps first, then the warp results.
template <bool IS_MAX>
static __device__ __forceinline__ float block_reduce(float v, float* scratch)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < warps ? scratch[lane] : (IS_MAX ? NEG_INF : 0.0f);
    r = IS_MAX ? warp_max(r) : warp_sum(r);
    return r;
}

// (max, sum of exp(x - max)) pairs: `a` absorbs `b`, each sum rescaled to the larger max.
static __device__ __forceinline__ void absorb(float& m, float& s, float m2, float s2)
{
    const float top = fmaxf(m, m2);
    // A side with no elements (max -inf, sum 0) adds nothing: never exp(-inf - -inf).
    const float a = m == top ? s : s * __expf(m - top);
    const float b = m2 == top ? s2 : s2 * __expf(m2 - top);
    m = top;
    s = a + b;
}

// The block's (max, sum) of every thread's pair, with one barrier.
static __device__ __forceinline__ void block_pair(float& m, float& s, float* sm, float* ss)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        absorb(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    }
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    m = lane < warps ? sm[lane] : NEG_INF;
    s = lane < warps ? ss[lane] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        absorb(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    }
}

extern "C" __global__ void __launch_bounds__(V7_MAX_THREADS)
softmax_registers(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float s_max[32];
    __shared__ float s_sum[32];
    // A warp per row when the row fits one warp's vectors, else the whole block.
    const bool warp_rows = N <= 32 * 4 * V7_ITEMS;
    const int team = warp_rows ? 32 : (int)blockDim.x;
    const int t = warp_rows ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
    const int row = warp_rows ? (int)(blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5))
                              : (int)blockIdx.x;
    if (row >= M) return;  // a whole warp (warp rows) or the whole block: no barrier is left
    const float* xr = x + (size_t)row * N;
    float* yr = y + (size_t)row * N;
    // Rows start 16-byte aligned when N is a multiple of 4 (buffers are 256-byte aligned).
    // The vectors this team holds: the row's, up to V7_ITEMS per thread; the rest (and every
    // element of a row that is not vector-aligned) goes through the scalar loops.
    const bool vec_ok = (N & 3) == 0;
    const int n4 = vec_ok ? min(N >> 2, V7_ITEMS * team) : 0;
    const int tail_start = n4 << 2;
    const float4* x4 = reinterpret_cast<const float4*>(xr);

    float4 v[V7_ITEMS];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        const int i = t + k * team;
        v[k] = i < n4 ? (V7_LOAD_NC ? __ldg(x4 + i) : x4[i])
                      : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
    }
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    // Elements past the vectors (and every element when rows are not vector-aligned).
    for (int j = tail_start + t; j < N; j += team) {
        m = fmaxf(m, xr[j]);
    }
    // Long rows with V7_ONE_BARRIER: each thread's exponentials against its own max, then one
    // block reduction of (max, sum) pairs, and each thread rescales by exp(own max - max).
    const bool pairs = V7_ONE_BARRIER && !warp_rows;
    if (!pairs) m = warp_rows ? warp_max(m) : block_reduce<true>(m, s_max);
    const float own = m;

    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        v[k].x = __expf(v[k].x - m);
        v[k].y = __expf(v[k].y - m);
        v[k].z = __expf(v[k].z - m);
        v[k].w = __expf(v[k].w - m);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    for (int j = tail_start + t; j < N; j += team) {
        s += __expf(xr[j] - m);
    }
    float inv;
    if (pairs) {
        if (own == NEG_INF) s = 0.0f;  // a thread past the row's end: nothing to add
        block_pair(m, s, s_max, s_sum);
        inv = own == NEG_INF ? 0.0f : __expf(own - m) / s;
    } else {
        s = warp_rows ? warp_sum(s) : block_reduce<false>(s, s_sum);
        inv = 1.0f / s;
    }

    float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        const int i = t + k * team;
        if (i < n4) {
            const float4 out = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
            if (V7_STORE_CS) {
                __stcs(y4 + i, out);
            } else {
                y4[i] = out;
            }
        }
    }
    for (int j = tail_start + t; j < N; j += team) {
        yr[j] = __expf(xr[j] - m) / s;
    }
}
