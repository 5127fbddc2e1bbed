// v3 - fp16 elementwise add, one half per thread.
// Half the bytes of v1 per element, but each access is only 16 bits wide, so
// the kernel issues as many memory instructions as v1 for half the data.
// launch: block=256, grid=cdiv(n, 256)
#include <cuda_fp16.h>

extern "C" __global__ void add_f16(const __half* a, const __half* b, __half* c, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        c[i] = __hadd(a[i], b[i]);
    }
}
