// softmax v7 - one pass over DRAM: each block holds its whole row in registers. Every thread
// loads its share of the row as 128-bit float4 vectors (up to V7_ITEMS of them, all issued
// before any is used, so many bytes are in flight), the max and the sum are reduced through
// warp shuffles and one small shared array, and the row is written back from registers: x is
// read once and y written once, as in Triton's fused softmax.
//
// The block size comes from the workspace (enough threads that V7_ITEMS float4 per thread
// cover the row); rows whose length is not a multiple of 4, or whose start is not 16-byte
// aligned, take the scalar path for the elements that do not fit a vector.
// launch: block = 32 * min(32, cdiv(N, 1024)) (V7_ITEMS = 8 float4 per thread), grid = M

#define NEG_INF __uint_as_float(0xff800000u)

#ifndef V7_ITEMS
#define V7_ITEMS 8
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

extern "C" __global__ void __launch_bounds__(1024)
softmax_registers(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float s_max[32];
    __shared__ float s_sum[32];
    const int row = blockIdx.x;
    if (row >= M) return;
    const float* xr = x + (size_t)row * N;
    float* yr = y + (size_t)row * N;
    // Rows start 16-byte aligned when N is a multiple of 4 (buffers are 256-byte aligned).
    // The vectors this block holds: the row's, up to V7_ITEMS per thread; the rest (and every
    // element of a row that is not vector-aligned) goes through the scalar loops.
    const bool vec_ok = (N & 3) == 0;
    const int n4 = vec_ok ? min(N >> 2, V7_ITEMS * (int)blockDim.x) : 0;
    const int tail_start = n4 << 2;
    const float4* x4 = reinterpret_cast<const float4*>(xr);

    float4 v[V7_ITEMS];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        v[k] = i < n4 ? __ldg(x4 + i) : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
    }
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    // Elements past the vectors (and every element when rows are not vector-aligned).
    for (int j = tail_start + threadIdx.x; j < N; j += blockDim.x) {
        m = fmaxf(m, xr[j]);
    }
    m = block_reduce<true>(m, s_max);

    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        v[k].x = __expf(v[k].x - m);
        v[k].y = __expf(v[k].y - m);
        v[k].z = __expf(v[k].z - m);
        v[k].w = __expf(v[k].w - m);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    for (int j = tail_start + threadIdx.x; j < N; j += blockDim.x) {
        s += __expf(xr[j] - m);
    }
    s = block_reduce<false>(s, s_sum);
    const float inv = 1.0f / s;

    float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll
    for (int k = 0; k < V7_ITEMS; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < n4) {
            __stcs(y4 + i, make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv));
        }
    }
    for (int j = tail_start + threadIdx.x; j < N; j += blockDim.x) {
        yr[j] = __expf(xr[j] - m) * inv;
    }
}
