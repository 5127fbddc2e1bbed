// gelu v2 - fused tanh GELU, one element per thread: x is read once and y
// written once, with every intermediate kept in registers. Compare with v1's
// nine launches and their scratch-buffer traffic.
// launch: block=256, grid=cdiv(n, 256)

static __device__ __forceinline__ float gelu_tanh(float x)
{
    const float k0 = 0.79788456f;  // sqrt(2/pi)
    const float k1 = 0.044715f;
    float inner = k0 * (x + k1 * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

extern "C" __global__ void gelu_f32(const float* x, float* y, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        y[i] = gelu_tanh(x[i]);
    }
}
