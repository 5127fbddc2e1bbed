// v1 - fp32 elementwise add, one element per thread.
// The first rung of the seed ladder: 32-bit scalar loads and stores, the
// plainest correct kernel. Every later version is measured against this one.
// launch: block=256, grid=cdiv(n, 256)

extern "C" __global__ void add_f32(const float* a, const float* b, float* c, int n)
{
    // 64-bit index so that blockIdx.x * blockDim.x cannot overflow for large n.
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        c[i] = a[i] + b[i];
    }
}
