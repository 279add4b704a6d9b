// A tiny kernel the backend self-test compiles and runs: y[i] = a * x[i] + y[i].
// tests/test_backend.py (GPU) loads it with gpu_kernels.backend.load_module("selftest.cu").

extern "C" __global__ void gpulab_saxpy(const float a, const float* __restrict__ x,
                                        float* __restrict__ y, const int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
