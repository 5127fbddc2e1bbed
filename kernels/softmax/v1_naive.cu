// softmax v1 - naive row softmax: three kernels, ONE THREAD PER ROW, with
// scratch buffers row_max[M] and row_sum[M]. Each thread walks its row alone,
// so neighbouring threads read addresses N floats apart (uncoalesced) and a
// small M leaves most of the GPU idle. The baseline for v2..v4.
// launch (each kernel): block=256, grid=cdiv(M, 256); order: row_max, exp_sum, normalize

// -inf without <math.h> (NVRTC has no INFINITY macro).
#define NEG_INF __uint_as_float(0xff800000u)

extern "C" __global__ void row_max(const float* x, float* row_max, int M, int N)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* xr = x + (size_t)row * N;
    float m = NEG_INF;
    for (int j = 0; j < N; ++j) {
        m = fmaxf(m, xr[j]);
    }
    row_max[row] = m;
}

// y = exp(x - row_max) and row_sum = sum over the row of y.
// One thread adds up all N terms in sequence; in fp32 that drifts by about
// sqrt(N) ulps (~3e-5 relative at N = 65536), so the running sum is kept in
// double to stay as accurate as v2..v4's tree sums. It costs nothing visible:
// this kernel is bound by its uncoalesced loads.
extern "C" __global__ void exp_sum(const float* x, const float* row_max, float* y,
                                   float* row_sum, int M, int N)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* xr = x + (size_t)row * N;
    float* yr = y + (size_t)row * N;
    const float m = row_max[row];
    double s = 0.0;
    for (int j = 0; j < N; ++j) {
        float e = expf(xr[j] - m);
        yr[j] = e;
        s += (double)e;
    }
    row_sum[row] = (float)s;
}

// y /= row_sum, in place.
extern "C" __global__ void normalize(float* y, const float* row_sum, int M, int N)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    float* yr = y + (size_t)row * N;
    const float inv = 1.0f / row_sum[row];
    for (int j = 0; j < N; ++j) {
        yr[j] *= inv;
    }
}
