// softmax v4 - online softmax (Milakov & Gimelshein, 2018): one pass over x
// keeps a running max m and a running sum s of exp(x - m), rescaling s when m
// grows; the per-thread (m, s) pairs are combined with __shfl_xor_sync within
// warps and through shared memory across warps. Then one pass writes y: two
// reads of x, not three.
// launch: block=256, grid=M

// -inf without <math.h> (NVRTC has no INFINITY macro).
#define NEG_INF __uint_as_float(0xff800000u)

#define SM_BLOCK 256
#define SM_WARPS (SM_BLOCK / 32)
#define UNROLL 4   // elements per thread per step of the first pass

// Combining partial results: thread i holds (m_i, s_i) with
// s_i = sum over its elements of exp(x - m_i). For the row max M = max_i m_i,
// the row sum is sum_i s_i * exp(m_i - M). A thread that saw only -inf (or
// nothing) holds (-inf, 0) and contributes 0, not 0 * exp(-inf - -inf) = NaN.
static __device__ __forceinline__ float rescaled(float m_i, float s_i, float M)
{
    return m_i == NEG_INF ? 0.0f : s_i * expf(m_i - M);
}

extern "C" __global__ void __launch_bounds__(SM_BLOCK)
softmax_online(const float* x, float* y, int M, int N)
{
    __shared__ float s_m[SM_WARPS];
    __shared__ float s_s[SM_WARPS];
    const int row = blockIdx.x;
    if (row >= M) return;
    const float* xr = x + (size_t)row * N;
    float* yr = y + (size_t)row * N;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;

    // Pass 1: running max and rescaled running sum over this thread's elements.
    // Main loop: UNROLL strided elements are loaded together (independent
    // loads in flight), the running sum is rescaled at most once per group,
    // and the group's exps are independent of each other.
    float m = NEG_INF;
    float s = 0.0f;
    int j = tid;
    for (; j + (UNROLL - 1) * SM_BLOCK < N; j += UNROLL * SM_BLOCK) {
        float v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            v[k] = xr[j + k * SM_BLOCK];
        }
        float gm = v[0];
#pragma unroll
        for (int k = 1; k < UNROLL; ++k) {
            gm = fmaxf(gm, v[k]);
        }
        if (gm > m) {
            s *= expf(m - gm);  // old terms rescaled to the new max (m = -inf: s is 0 and stays 0)
            m = gm;
        }
        if (m != NEG_INF) {     // m = -inf means every value so far is -inf: nothing to add
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                s += expf(v[k] - m);
            }
        }
    }
    // Remainder: fewer than UNROLL elements left for this thread.
    for (; j < N; j += SM_BLOCK) {
        const float v = xr[j];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else if (v != NEG_INF) {
            s += expf(v - m);   // a -inf entry adds exactly 0
        }
    }

    // Combine across the warp with shuffles: first the max, then the rescaled sums.
    float wm = m;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        wm = fmaxf(wm, __shfl_xor_sync(0xffffffffu, wm, off));
    }
    float ws = rescaled(m, s, wm);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        ws += __shfl_xor_sync(0xffffffffu, ws, off);
    }
    if (lane == 0) {
        s_m[warp] = wm;
        s_s[warp] = ws;
    }
    __syncthreads();

    // Combine the per-warp pairs the same way; every thread gets the row result.
    float row_m = s_m[0];
#pragma unroll
    for (int w = 1; w < SM_WARPS; ++w) {
        row_m = fmaxf(row_m, s_m[w]);
    }
    float row_s = 0.0f;
#pragma unroll
    for (int w = 0; w < SM_WARPS; ++w) {
        row_s += rescaled(s_m[w], s_s[w], row_m);
    }
    const float inv = 1.0f / row_s;

    // Pass 2: write the outputs.
    for (j = tid; j < N; j += SM_BLOCK) {
        yr[j] = expf(xr[j] - row_m) * inv;
    }
}
