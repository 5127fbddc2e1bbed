// C = A * B (fp16 in and out, fp32 accumulation) on the tensor cores, through inline PTX.
//
// A block of 8 warps owns a 128 x 128 tile of C; the warps form a 2 x 4 grid and each computes
// a 64 x 32 piece as 4 x 4 `mma.sync.m16n8k16` tiles held in 64 fp32 registers per thread.
// K is walked 32 at a time through a 4-stage ring of shared-memory buffers: while the warps
// multiply stage s, the copies of the next three stages are in flight (`cp.async`, which moves
// global memory to shared memory without passing through registers). Fragments come out of
// shared memory with `ldmatrix`: A's 16 x 16 blocks directly, B's with `.trans` (B is stored
// k-major, as it lies in memory, and the mma wants its columns). Rows of both tiles are padded
// by 16 bytes, so the 8 rows one `ldmatrix` phase reads fall in 8 different bank groups.
//
// Odd sizes: rows and columns past M, N or K are zero-filled in shared memory (cp.async with a
// source size of 0) and never stored. cp.async moves 16 aligned bytes, so it needs K and N to
// be multiples of 8; otherwise the same pipeline loads element by element (slower, and correct).
// Blocks are ordered in groups of 8 block-rows so that blocks running together share A and B
// tiles in L2.
#include <cuda_fp16.h>

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define WARPS_M 2
#define WARPS_N 4
#define WM (BM / WARPS_M)  // 64 rows per warp
#define WN (BN / WARPS_N)  // 32 columns per warp
#define MI (WM / 16)       // m16 tiles per warp
#define NI (WN / 8)        // n8 tiles per warp
#define A_LD (BK + 8)      // padded row of an A stage, in halves
#define B_LD (BN + 8)      // padded row of a B stage, in halves
#define A_STAGE (BM * A_LD)
#define B_STAGE (BK * B_LD)
#define THREADS 256
#define GROUP_M 8

__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared; `bytes` of them read (0 or 16), the rest zero-filled.
__device__ __forceinline__ void cp_async16(unsigned dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4],
                                         unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Stages K-slice `kt` of A (BM x BK) and B (BK x BN) into ring slot `slot`: 512 16-byte chunks
// of each, two per thread.
template <bool VEC>
__device__ __forceinline__ void load_stage(__half *As, __half *Bs, const __half *A,
                                           const __half *B, int M, int N, int K, int row0,
                                           int col0, int kt, int slot) {
    const int tid = threadIdx.x;
    __half *as = As + slot * A_STAGE;
    __half *bs = Bs + slot * B_STAGE;
    const int k0 = kt * BK;
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        int c = tid + l * THREADS;
        // A: 4 chunks per row of 32 halves.
        int ar = c / (BK / 8), ak = (c % (BK / 8)) * 8;
        int gr = row0 + ar, gk = k0 + ak;
        __half *adst = as + ar * A_LD + ak;
        // B: 16 chunks per row of 128 halves.
        int br = c / (BN / 8), bn = (c % (BN / 8)) * 8;
        int gbk = k0 + br, gn = col0 + bn;
        __half *bdst = bs + br * B_LD + bn;
        if (VEC) {
            bool aok = gr < M && gk < K;
            cp_async16(smem_addr(adst), aok ? (const void *)(A + (size_t)gr * K + gk) : A,
                       aok ? 16 : 0);
            bool bok = gbk < K && gn < N;
            cp_async16(smem_addr(bdst), bok ? (const void *)(B + (size_t)gbk * N + gn) : B,
                       bok ? 16 : 0);
        } else {
            // One element at a time, straight to shared memory (few registers live).
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                adst[e] = (gr < M && gk + e < K) ? A[(size_t)gr * K + gk + e] : __float2half(0.0f);
                bdst[e] = (gbk < K && gn + e < N) ? B[(size_t)gbk * N + gn + e] : __float2half(0.0f);
            }
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void matmul_body(const __half *__restrict__ A,
                                            const __half *__restrict__ B,
                                            __half *__restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) unsigned char smem[];
    __half *As = (__half *)smem;
    __half *Bs = As + STAGES * A_STAGE;

    // Grouped ordering: consecutive blocks walk GROUP_M block-rows down one block-column.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int group_m = min(tiles_m - first_m, GROUP_M);
    const int pid_m = first_m + (pid % per_group) % group_m;
    const int pid_n = (pid % per_group) / group_m;
    const int row0 = pid_m * BM, col0 = pid_n * BN;

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    const int ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage<VEC>(As, Bs, A, B, M, N, K, row0, col0, s, s);
        cp_async_commit();
    }

    // The row and column each lane addresses for ldmatrix: A's four 8x8 tiles of a 16x16 block
    // are (rows 0-7 | 8-15) x (k 0-7 | 8-15), B's (k 0-7 | 8-15) x (n 0-7 | 8-15).
    const int a_row = wm + (lane % 8) + 8 * ((lane / 8) % 2), a_k = 8 * (lane / 16);
    const int b_k = (lane % 8) + 8 * ((lane / 8) % 2), b_n = wn + 8 * (lane / 16);

    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        // Refill the slot every warp finished reading before the barrier above.
        int next = kt + STAGES - 1;
        if (next < ktiles) load_stage<VEC>(As, Bs, A, B, M, N, K, row0, col0, next, next % STAGES);
        cp_async_commit();

        const __half *as = As + (kt % STAGES) * A_STAGE;
        const __half *bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
                ldmatrix_x4(af[i], smem_addr(as + (a_row + 16 * i) * A_LD + kk + a_k));
#pragma unroll
            for (int j = 0; j < NI; j += 2) {
                unsigned r[4];
                ldmatrix_x4_trans(r, smem_addr(bs + (kk + b_k) * B_LD + b_n + 8 * j));
                bf[j][0] = r[0];
                bf[j][1] = r[1];
                bf[j + 1][0] = r[2];
                bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) mma16816(acc[i][j], af[i], bf[j][0], bf[j][1]);
        }
    }
    cp_async_wait<0>();

    // Lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1 of each 16x8 tile.
    const int g = lane / 4, q = lane % 4;
    const bool pairs = (N % 2) == 0;  // a half2 store needs a 4-byte-aligned address
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int c = col0 + wn + 8 * j + 2 * q;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = row0 + wm + 16 * i + g + 8 * h;
                if (r >= M) continue;
                __half *out = C + (size_t)r * N + c;
                float x = acc[i][j][2 * h], y = acc[i][j][2 * h + 1];
                if (pairs && c + 1 < N) {
                    *(__half2 *)out = __floats2half2_rn(x, y);
                } else {
                    if (c < N) out[0] = __float2half_rn(x);
                    if (c + 1 < N) out[1] = __float2half_rn(y);
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
matmul_mma(const __half *__restrict__ A, const __half *__restrict__ B,
           __half *__restrict__ C, int M, int N, int K) {
    // cudaMalloc'd buffers are 256-byte aligned, so 16-byte chunks stay aligned when every row
    // is a whole number of chunks.
    if ((K % 8) == 0 && (N % 8) == 0) {
        matmul_body<true>(A, B, C, M, N, K);
    } else {
        matmul_body<false>(A, B, C, M, N, K);
    }
}
