// softmax v2 - one block of 256 threads per row; threads stride across the row
// (coalesced), and the row max and row sum are combined with shared-memory tree
// reductions (static __shared__ float[256], a __syncthreads per tree level).
// Three passes over x: max, sum of exp, write exp * (1/sum).
// launch: block=256, grid=M

// -inf without <math.h> (NVRTC has no INFINITY macro).
#define NEG_INF __uint_as_float(0xff800000u)

#define SM_BLOCK 256

// Tree reduction over red[0..SM_BLOCK); every thread gets the result.
// op: 0 = max, 1 = sum.
template <int OP>
static __device__ __forceinline__ float block_reduce(float* red, float v)
{
    const int tid = threadIdx.x;
    red[tid] = v;
    __syncthreads();
#pragma unroll
    for (int s = SM_BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] = OP == 0 ? fmaxf(red[tid], red[tid + s]) : red[tid] + red[tid + s];
        }
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();  // red[] may be reused right after this returns
    return r;
}

extern "C" __global__ void __launch_bounds__(SM_BLOCK)
softmax_block(const float* x, float* y, int M, int N)
{
    __shared__ float red[SM_BLOCK];
    const int row = blockIdx.x;
    if (row >= M) return;  // whole block leaves together, so no barrier is skipped by part of it
    const float* xr = x + (size_t)row * N;
    float* yr = y + (size_t)row * N;
    const int tid = threadIdx.x;

    float m = NEG_INF;
    for (int j = tid; j < N; j += SM_BLOCK) {
        m = fmaxf(m, xr[j]);
    }
    const float row_m = block_reduce<0>(red, m);

    float s = 0.0f;
    for (int j = tid; j < N; j += SM_BLOCK) {
        s += expf(xr[j] - row_m);
    }
    const float inv = 1.0f / block_reduce<1>(red, s);

    for (int j = tid; j < N; j += SM_BLOCK) {
        yr[j] = expf(xr[j] - row_m) * inv;
    }
}
