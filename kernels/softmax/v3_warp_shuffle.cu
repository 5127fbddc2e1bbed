// softmax v3 - one block of 256 threads per row, like v2, but each reduction
// runs inside warps with __shfl_xor_sync (registers, no barriers) and only the
// 8 per-warp results meet in a small static shared array: two __syncthreads
// per row instead of one per tree level.
// launch: block=256, grid=M

// -inf without <math.h> (NVRTC has no INFINITY macro).
#define NEG_INF __uint_as_float(0xff800000u)

#define SM_BLOCK 256
#define SM_WARPS (SM_BLOCK / 32)

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

extern "C" __global__ void __launch_bounds__(SM_BLOCK)
softmax_warp(const float* x, float* y, int M, int N)
{
    // Separate slots for max and sum, so the second reduction needs no barrier
    // to protect the first one's values.
    __shared__ float s_max[SM_WARPS];
    __shared__ float s_sum[SM_WARPS];
    const int row = blockIdx.x;
    if (row >= M) return;
    const float* xr = x + (size_t)row * N;
    float* yr = y + (size_t)row * N;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;

    float m = NEG_INF;
    for (int j = tid; j < N; j += SM_BLOCK) {
        m = fmaxf(m, xr[j]);
    }
    m = warp_max(m);
    if (lane == 0) s_max[warp] = m;
    __syncthreads();
    float row_m = s_max[0];
#pragma unroll
    for (int w = 1; w < SM_WARPS; ++w) {
        row_m = fmaxf(row_m, s_max[w]);
    }

    float s = 0.0f;
    for (int j = tid; j < N; j += SM_BLOCK) {
        s += expf(xr[j] - row_m);
    }
    s = warp_sum(s);
    if (lane == 0) s_sum[warp] = s;
    __syncthreads();
    float row_s = 0.0f;
#pragma unroll
    for (int w = 0; w < SM_WARPS; ++w) {
        row_s += s_sum[w];
    }
    const float inv = 1.0f / row_s;

    for (int j = tid; j < N; j += SM_BLOCK) {
        yr[j] = expf(xr[j] - row_m) * inv;
    }
}
