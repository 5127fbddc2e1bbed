// DELIBERATE ERROR: line 7 uses an identifier that is never declared.
// Compiler-test fixture: the build must fail with exactly one error, on line 7.

extern "C" __global__ void broken(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.0f + undeclared_thing;
}
