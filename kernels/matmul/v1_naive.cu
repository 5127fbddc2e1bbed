// C = A * B with A: M x K, B: K x N, C: M x N, all row-major fp16.
// The starting point of the ladder: one thread per element of C, each walking a row of A and a
// column of B straight from global memory and accumulating in fp32. Threads of a warp share the
// row of A (a broadcast) and read consecutive elements of B's row, so every load is coalesced;
// what this version lacks is reuse: each element of A and B is fetched N and M times.
#include <cuda_fp16.h>

extern "C" __global__ void matmul_naive(const __half *__restrict__ A,
                                        const __half *__restrict__ B,
                                        __half *__restrict__ C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const __half *a = A + (size_t)row * K;
    const __half *b = B + col;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += __half2float(a[k]) * __half2float(b[(size_t)k * N]);
    }
    C[(size_t)row * N + col] = __float2half_rn(acc);
}
