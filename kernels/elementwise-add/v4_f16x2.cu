// v4 - fp16 elementwise add, two halves per thread as one __half2 (add.f16x2).
// The launch keeps v3's grid (cdiv(n, 256) blocks of 256), so half of the
// threads find no work: the bounds check makes them exit at once. The tool is
// meant to show what that over-launch costs.
// launch: block=256, grid=cdiv(n, 256)
#include <cuda_fp16.h>

extern "C" __global__ void add_f16x2(const __half* a, const __half* b, __half* c, int n)
{
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 2;
    size_t nn = (size_t)n;
    if (i + 1 < nn) {
        // i is even, so a + i is 4-byte aligned.
        __half2 va = *reinterpret_cast<const __half2*>(a + i);
        __half2 vb = *reinterpret_cast<const __half2*>(b + i);
        *reinterpret_cast<__half2*>(c + i) = __hadd2(va, vb);
    } else if (i < nn) {
        // Odd n: the last element has no partner.
        c[i] = __hadd(a[i], b[i]);
    }
    // i >= n: the idle half of the over-launched grid does nothing.
}
