// v5 - fp16 elementwise add, eight halves per thread as four __half2 accesses.
// More work per thread, but every access is still 32 bits wide: four loads per
// input and four stores per thread. Compare with v6, which moves the same
// eight halves in one 128-bit access each.
// launch: block=32, grid=cdiv(n, 256)
#include <cuda_fp16.h>

extern "C" __global__ void add_f16x8(const __half* a, const __half* b, __half* c, int n)
{
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    size_t nn = (size_t)n;
    if (i + 7 < nn) {
        const __half2* a2 = reinterpret_cast<const __half2*>(a + i);
        const __half2* b2 = reinterpret_cast<const __half2*>(b + i);
        __half2* c2 = reinterpret_cast<__half2*>(c + i);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            c2[k] = __hadd2(a2[k], b2[k]);
        }
    } else {
        // Tail: at most 7 elements, only in the thread that straddles n.
        for (size_t j = i; j < nn; ++j) {
            c[j] = __hadd(a[j], b[j]);
        }
    }
}
