// Kernels that check the CUDA emulator itself (tests/cuda_emu/test_cuda_emu.py): warp
// collectives with full and partial masks, block reductions, deadlock detection, dynamic
// shared memory, constant memory, launch bounds, block order. Written as CUDA kernels; only the
// emulator builds them.

__constant__ float c_scale[4];

extern "C" __global__ void emu_warp_ops(const int* __restrict__ in, int* __restrict__ out) {
    const int t = threadIdx.x;
    const int v = in[t];
    const unsigned full = 0xffffffffu;
    out[0 * 64 + t] = __shfl_xor_sync(full, v, 1);
    out[1 * 64 + t] = __shfl_down_sync(full, v, 3);
    out[2 * 64 + t] = __shfl_up_sync(full, v, 2);
    out[3 * 64 + t] = __shfl_sync(full, v, 5);
    out[4 * 64 + t] = (int)__ballot_sync(full, v % 3 == 0);
    out[5 * 64 + t] = __shfl_xor_sync(full, v, 4, 8);      // within groups of 8 lanes
    // groups of 8 lanes loop a different number of times, each with its own mask
    const int g = (t & 31) >> 3;
    const unsigned gmask = 0xffu << (8 * g);
    int s = 0;
    for (int r = 0; r <= g; ++r) {
        int x = v + r;
        for (int o = 4; o > 0; o >>= 1) x += __shfl_xor_sync(gmask, x, o, 8);
        s += x;
    }
    out[6 * 64 + t] = s;
}

extern "C" __global__ void emu_block_ops(const int* __restrict__ in, int* __restrict__ out) {
    const int t = threadIdx.x;
    __shared__ int tile[128];
    tile[t] = in[t];
    __syncthreads();
    out[0 * 128 + t] = tile[(t + 1) % blockDim.x];          // a neighbour's write, after the barrier
    out[1 * 128 + t] = __syncthreads_or(in[t] == 7);
    out[2 * 128 + t] = __syncthreads_count(in[t] > 50);
    out[3 * 128 + t] = __syncthreads_and(in[t] >= 0);
    if (t >= 100) return;                                    // exited threads leave the barrier
    __syncthreads();
    out[4 * 128 + t] = 1;
}

extern "C" __global__ void emu_deadlock(int* __restrict__ out) {
    const int t = threadIdx.x;
    if (t < 16) {
        __syncthreads();
    } else {
        out[t] = __shfl_sync(0xffffffffu, t, 0);            // needs lanes 0..15, which wait above
    }
}

extern "C" __global__ void emu_dynamic_smem(int* __restrict__ out, int n, int write) {
    extern __shared__ int dyn[];
    const int t = threadIdx.x;
    for (int i = t; i < n; i += blockDim.x)
        if (write) dyn[i] = i + blockIdx.x;
    __syncthreads();
    for (int i = t; i < n; i += blockDim.x) out[blockIdx.x * n + i] = dyn[i];
}

extern "C" __global__ void emu_constant(const float* __restrict__ in, float* __restrict__ out, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * c_scale[i % 4];
}

extern "C" __global__ void __launch_bounds__(64) emu_bounded(float* __restrict__ out) {
    out[threadIdx.x] = (float)threadIdx.x;
}

extern "C" __global__ void emu_order(int* __restrict__ counter, int* __restrict__ order) {
    if (threadIdx.x == 0) order[atomicAdd(counter, 1)] = blockIdx.x;
}
