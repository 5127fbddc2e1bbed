// v6 - fp16 elementwise add, eight halves per thread in ONE 128-bit access.
// Same work split as v5, but each input is fetched with a single 16-byte load
// (uint4) and the result leaves in a single 16-byte store; the math is four
// __half2 adds on the packed lanes. Shows the value of wide accesses.
// launch: block=32, grid=cdiv(n, 256)
#include <cuda_fp16.h>

// Lets the same 16 bytes be seen as one uint4 or as four __half2.
union Pack16 {
    uint4 u;
    __half2 h[4];
};

extern "C" __global__ void add_f16x8_pack(const __half* a, const __half* b, __half* c, int n)
{
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    size_t nn = (size_t)n;
    if (i + 7 < nn) {
        // i is a multiple of 8 halves = 16 bytes, so these accesses are aligned.
        Pack16 pa, pb, pc;
        pa.u = *reinterpret_cast<const uint4*>(a + i);
        pb.u = *reinterpret_cast<const uint4*>(b + i);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            pc.h[k] = __hadd2(pa.h[k], pb.h[k]);
        }
        *reinterpret_cast<uint4*>(c + i) = pc.u;
    } else {
        // Tail: at most 7 elements, only in the thread that straddles n.
        for (size_t j = i; j < nn; ++j) {
            c[j] = __hadd(a[j], b[j]);
        }
    }
}
