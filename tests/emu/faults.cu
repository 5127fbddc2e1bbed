// Kernels with one bug each, for the emulator's findings: each must be reported with its kind
// and the line marked FAULT. They compute c = a + b where they work at all.

extern "C" __global__ void past_end(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i + 1] = a[i] + b[i]; // FAULT out-of-bounds: the last thread writes c[n]
    }
}

extern "C" __global__ void before_start(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i - 1] + b[i]; // FAULT out-of-bounds: thread 0 reads a[-1]
    }
}

extern "C" __global__ void misaligned(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 8 < n) {
        // One float past a 16-byte boundary: the vector load is misaligned. All four lanes
        // are used, so the compiler keeps the 128-bit load.
        float4 v = *reinterpret_cast<const float4*>(a + 4 * i + 1); // FAULT misaligned
        c[i] = v.x + v.y + v.z + v.w;
    }
}

extern "C" __global__ void shared_race(const float* a, const float* b, float* c, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? a[i] : 0.0f;
    // Missing __syncthreads(): the neighbour's element may not be written yet.
    float right = s[(t + 1) % 256]; // FAULT shared-race
    if (i < n) c[i] = right + b[i];
}

extern "C" __global__ void uninit_shared(const float* a, const float* b, float* c, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    if (t < 128) s[t] = i < n ? a[i] : 0.0f;
    __syncthreads();
    float v = s[t]; // FAULT uninit-shared: the upper half was never written
    if (i < n) c[i] = v + b[i];
}

extern "C" __global__ void divergent_barrier(const float* a, const float* b, float* c, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? a[i] : 0.0f;
    if (t < 128) {
        __syncthreads(); // FAULT divergent-barrier: only half the block gets here
        s[t] += s[t + 128];
    }
    if (i < n) c[i] = s[t] + b[i];
}

extern "C" __global__ void partial_mask(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = i < n ? a[i] : 0.0f;
    // Every lane executes the shuffle, but the mask names only the low 16.
    float first = __shfl_sync(0x0000ffffu, x, 0); // FAULT shuffle-mask
    if (i < n) c[i] = first + b[i];
}

extern "C" __global__ void unwritten_tail(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 5) c[i] = a[i] + b[i]; // the last five elements are never written
}
