// gelu v1 - unfused tanh GELU, the way PyTorch runs it eagerly: small generic
// one-element-per-thread kernels launched in sequence through scratch buffers,
// so x and the intermediates make many round trips through memory.
// Every kernel: launch block=256, grid=cdiv(n, 256).
//
// Launch sequence for y = 0.5*x*(1 + tanh(0.79788456*(x + 0.044715*x^3))),
// with x, y and scratch buffers t1..t4 of n floats each (9 launches):
//   1. mul        (x,  x,  t1)            t1 = x*x
//   2. mul        (t1, x,  t2)            t2 = x^3
//   3. mul_scalar (t2, 0.044715f,   t2)   t2 = 0.044715*x^3          (in place)
//   4. add        (x,  t2, t3)            t3 = x + 0.044715*x^3
//   5. mul_scalar (t3, 0.79788456f, t3)   t3 = 0.79788456*(...)      (in place)
//   6. tanh_k     (t3, t3)                t3 = tanh(t3)              (in place)
//   7. add_scalar (t3, 1.0f, t3)          t3 = 1 + tanh(...)         (in place)
//   8. mul_scalar (x,  0.5f, t4)          t4 = 0.5*x
//   9. mul        (t4, t3, y)             y  = 0.5*x*(1 + tanh(...))
// In-place steps are safe: each thread reads element i of its inputs before it
// writes element i of out, and touches no other element. For the same reason
// these kernels take no __restrict__ (out may alias an input).

extern "C" __global__ void mul(const float* a, const float* b, float* out, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        out[i] = a[i] * b[i];
    }
}

extern "C" __global__ void mul_scalar(const float* a, float s, float* out, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        out[i] = a[i] * s;
    }
}

extern "C" __global__ void add(const float* a, const float* b, float* out, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        out[i] = a[i] + b[i];
    }
}

extern "C" __global__ void add_scalar(const float* a, float s, float* out, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        out[i] = a[i] + s;
    }
}

extern "C" __global__ void tanh_k(const float* a, float* out, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n) {
        out[i] = tanhf(a[i]);
    }
}
