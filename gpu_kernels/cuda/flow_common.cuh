// Device helpers shared by the optical-flow kernels (flow_*.cu).
#pragma once
#include "ops_common.cuh"

#define FLOW_GRID_STRIDE(i, total) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
         i += (long long)blockDim.x * gridDim.x)

// Central differences, one-sided at the edges (0 along an axis of length 1).
__device__ __forceinline__ void flow_grad(const float* __restrict__ I, int H, int W, int x, int y, float& gx, float& gy) {
    const long long r = (long long)y * W;
    if (W == 1) gx = 0.0f;
    else if (x == 0) gx = I[r + 1] - I[r];
    else if (x == W - 1) gx = I[r + x] - I[r + x - 1];
    else gx = 0.5f * (I[r + x + 1] - I[r + x - 1]);
    if (H == 1) gy = 0.0f;
    else if (y == 0) gy = I[W + x] - I[x];
    else if (y == H - 1) gy = I[r + x] - I[r - W + x];
    else gy = 0.5f * (I[r + W + x] - I[r - W + x]);
}
