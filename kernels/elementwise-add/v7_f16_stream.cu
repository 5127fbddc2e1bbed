// launch: block=256, grid=cdiv(n, 256*ELEMS_PER_THREAD)   (ELEMS_PER_THREAD = 8*KWB_V7_VEC = 32 by default)
// v7 - fp16 add aimed at the copy bandwidth of an H100/H200 (sm_90): each thread
// issues KWB_V7_VEC independent 128-bit loads per input before any store, so many
// bytes are in flight per SM. The 16-byte-aligned bulk goes through uint4; a
// scalar tail handles the last n % 8 elements. Cache hints: see KWB_V7_STREAMING.
#include <cuda_fp16.h>

// 128-bit chunks (8 halves each) per input per thread. Override with -DKWB_V7_VEC=N.
#ifndef KWB_V7_VEC
#define KWB_V7_VEC 4
#endif

// Cache hints (override with -DKWB_V7_STREAMING=N):
//   0 = none (default), 1 = .cs (streaming, evict-first) on stores only,
//   2 = .cs on loads and stores.
// Measured on an H200 at n = 256Mi with a cold L2: 0 and 1 tie (~4.3 TB/s,
// about the device-to-device copy rate); .cs on the loads cost 6-11%. So the
// hints stay off unless asked for.
#ifndef KWB_V7_STREAMING
#define KWB_V7_STREAMING 0
#endif

#define V7_BLOCK 256
#define ELEMS_PER_THREAD (8 * KWB_V7_VEC)

union Pack16 {
    uint4 u;
    __half2 h[4];
};

static __device__ __forceinline__ uint4 v7_load(const uint4* p)
{
#if KWB_V7_STREAMING >= 2
    return __ldcs(p);
#else
    return *p;
#endif
}

static __device__ __forceinline__ void v7_store(uint4* p, uint4 v)
{
#if KWB_V7_STREAMING >= 1
    __stcs(p, v);
#else
    *p = v;
#endif
}

// No __restrict__ on purpose: with it the compiler may sink loads below
// earlier stores (it did at KWB_V7_VEC=8), which empties the pipeline this
// kernel is built to fill. Without it, program order (all loads, then all
// stores) is kept.
extern "C" __global__ void __launch_bounds__(V7_BLOCK)
add_f16_stream(const __half* a, const __half* b, __half* c, int n)
{
    const size_t nn = (size_t)n;
    const size_t nvec = nn / 8;  // whole 16-byte chunks; cudaMalloc'd buffers are 256-byte aligned
    const uint4* a4 = reinterpret_cast<const uint4*>(a);
    const uint4* b4 = reinterpret_cast<const uint4*>(b);
    uint4* c4 = reinterpret_cast<uint4*>(c);

    // Block b owns chunks [b*256*VEC, (b+1)*256*VEC). Chunk k of a thread sits
    // k*256 chunks after its first, so each warp-wide access covers 512
    // contiguous bytes (fully coalesced).
    const size_t first = (size_t)blockIdx.x * (V7_BLOCK * KWB_V7_VEC) + threadIdx.x;

    Pack16 ra[KWB_V7_VEC], rb[KWB_V7_VEC];

    // Phase 1: every load of this thread is issued before any store.
#pragma unroll
    for (int k = 0; k < KWB_V7_VEC; ++k) {
        const size_t v = first + (size_t)k * V7_BLOCK;
        if (v < nvec) {
            ra[k].u = v7_load(a4 + v);
            rb[k].u = v7_load(b4 + v);
        } else {
            ra[k].u = make_uint4(0u, 0u, 0u, 0u);
            rb[k].u = make_uint4(0u, 0u, 0u, 0u);
        }
    }

    // Phase 2: packed half2 math and 128-bit stores.
#pragma unroll
    for (int k = 0; k < KWB_V7_VEC; ++k) {
        const size_t v = first + (size_t)k * V7_BLOCK;
        if (v < nvec) {
            Pack16 rc;
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                rc.h[h] = __hadd2(ra[k].h[h], rb[k].h[h]);
            }
            v7_store(c4 + v, rc.u);
        }
    }

    // Scalar tail: the last n % 8 (< 8) elements, taken by block 0.
    if (blockIdx.x == 0) {
        const size_t t = nvec * 8 + threadIdx.x;
        if (t < nn) {
            c[t] = __hadd(a[t], b[t]);
        }
    }
}
