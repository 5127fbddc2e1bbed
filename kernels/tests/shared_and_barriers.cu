// Compiler-test fixture: kernels whose ptxas report has something to show.
//   smem_user - 4 KiB of static shared memory and a __syncthreads() barrier
//   spiller   - a 1 KiB local array indexed at run time, so a non-zero stack frame
//   bounded   - __launch_bounds__(128)

// Reverses each 1024-element tile of x in place (launch: block=256, grid=cdiv(n, 1024)).
extern "C" __global__ void smem_user(float* x, int n)
{
    __shared__ float tile[1024];
    const int base = blockIdx.x * 1024;
    for (int j = threadIdx.x; j < 1024; j += blockDim.x) {
        const int g = base + j;
        tile[j] = g < n ? x[g] : 0.0f;
    }
    __syncthreads();
    const int len = min(1024, n - base);  // elements of this tile inside x
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        x[base + j] = tile[len - 1 - j];
    }
}

// Each thread fills a private 256-float table and reads it back at an index
// known only at run time, which forces the table into local memory (stack).
extern "C" __global__ void spiller(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float buf[256];
    const float v = x[i];
    for (int j = 0; j < 256; ++j) {
        buf[j] = __sinf(v * (float)(j + 1));
    }
    const int k = (i * 37 + n) & 255;
    x[i] = buf[k] + buf[(k * 13 + 7) & 255];
}

// Plain scale-by-two with a launch bound: at most 128 threads per block.
extern "C" __global__ __launch_bounds__(128) void bounded(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
