// C = A * B (fp16 in and out, fp32 accumulation), tiled through shared memory.
// A block of 256 threads owns a 64 x 64 tile of C and walks K in steps of 32: it stages a
// 64 x 32 slice of A and a 32 x 64 slice of B in shared memory (converted to fp32 once), then
// every thread computes a 4 x 4 register tile from them. Each element fetched from global memory
// is now reused 64 times instead of once. A thread's rows and columns are strided by 16, so a
// warp reads A's values as broadcasts and B's as 16 consecutive words (no bank conflicts).
// Every load and store is bounds-checked: M, N and K need not be multiples of anything.
#include <cuda_fp16.h>

#define BM 64
#define BN 64
#define BK 32
#define TM 4
#define TN 4

extern "C" __global__ void __launch_bounds__(256)
matmul_tiled(const __half *__restrict__ A, const __half *__restrict__ B,
             __half *__restrict__ C, int M, int N, int K) {
    // A's slice is stored k-major ([k][m]) so the inner loop reads it like B's.
    __shared__ float As[BK][BM + 1];
    __shared__ float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % 16;  // column group
    const int ty = tid / 16;  // row group
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 64 x 32 elements of A and 32 x 64 of B: eight of each per thread.
#pragma unroll
        for (int l = 0; l < (BM * BK) / 256; ++l) {
            int e = tid + l * 256;
            int r = e / BK, c = e % BK;  // A: consecutive threads along k
            int gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? __half2float(A[(size_t)gr * K + gc]) : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < (BK * BN) / 256; ++l) {
            int e = tid + l * 256;
            int r = e / BN, c = e % BN;  // B: consecutive threads along n
            int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? __half2float(B[(size_t)gr * N + gc]) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + ty + 16 * i;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int c = col0 + tx + 16 * j;
            if (c < N) C[(size_t)r * N + c] = __float2half_rn(acc[i][j]);
        }
    }
}
