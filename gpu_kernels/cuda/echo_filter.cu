// Separable 3-D Gaussian (three 1-D passes, in place) and trilinear resampling for the echo
// motion estimator.
//
// The 1-D kernels are held in constant memory (ECHO_NSETS sets of up to ECHO_MAXW taps,
// filled from the host): every thread of a warp reads the same tap at the same time, which
// constant memory broadcasts. Each pass is in place: a block loads whole lines into shared
// memory, synchronises, convolves (border replicated) and writes the lines back.
//   echo_gauss_x     8 rows along x per block of 32 x 8 threads;
//   echo_gauss_line  32 neighbouring columns along y or z (coalesced: 32 consecutive x).
// Channels: blockIdx.z (gauss_line) or consecutive rows (gauss_x) cover C volumes of N voxels.
#include "echo_common.cuh"

#ifndef ECHO_MAXW
#define ECHO_MAXW 129
#endif
#ifndef ECHO_NSETS
#define ECHO_NSETS 8
#endif

__constant__ float c_gauss[ECHO_NSETS * ECHO_MAXW];

// The lines are staged with the replicated border (r voxels each side), so the inner loop
// needs no clamping, and the symmetric taps are paired: w0 v[l] + sum_k w_k (v[l-k] + v[l+k]).
extern "C" __global__ void echo_gauss_x(float* __restrict__ data, i64 rows, int X, int set, int r) {
    extern __shared__ float sm[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const i64 row = (i64)blockIdx.x * blockDim.y + ty;
    const int W = X + 2 * r;
    float* line = sm + ty * W + r;
    const bool ok = row < rows;
    if (ok)
        for (int x = tx - r; x < X + r; x += blockDim.x) line[x] = data[row * X + echo_clamp(x, X - 1)];
    __syncthreads();
    if (!ok) return;
    const float* w = c_gauss + set * ECHO_MAXW + r;
    for (int x = tx; x < X; x += blockDim.x) {
        float acc = w[0] * line[x];
        for (int k = 1; k <= r; ++k) acc += w[k] * (line[x - k] + line[x + k]);
        data[row * X + x] = acc;
    }
}

extern "C" __global__ void echo_gauss_line(float* __restrict__ data, i64 N, int L, i64 stride, i64 strideB, int X,
                                           int set, int r) {
    extern __shared__ float sm_line[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * 32 + tx;
    const i64 base = (i64)blockIdx.z * N + (i64)blockIdx.y * strideB + x;
    float* sm = sm_line + r * 32;
    const bool ok = x < X;
    if (ok)
        for (int l = ty - r; l < L + r; l += blockDim.y) sm[l * 32 + tx] = data[base + echo_clamp(l, L - 1) * stride];
    __syncthreads();
    if (!ok) return;
    const float* w = c_gauss + set * ECHO_MAXW + r;
    for (int l = ty; l < L; l += blockDim.y) {
        float acc = w[0] * sm[l * 32 + tx];
        for (int k = 1; k <= r; ++k) acc += w[k] * (sm[(l - k) * 32 + tx] + sm[(l + k) * 32 + tx]);
        data[base + l * stride] = acc;
    }
}

// dst[z][y][x] = mult * src(s * (z, y, x) + o [+ u(z, y, x)]), trilinear, clamped.
extern "C" __global__ void echo_resample(const float* __restrict__ src, int Zi, int Yi, int Xi,
                                         float* __restrict__ dst, int Zo, int Yo, int Xo, float sz, float sy,
                                         float sx, float oz, float oy, float ox, const float* __restrict__ u,
                                         int has_u, float mult) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z;
    if (x >= Xo || y >= Yo || z >= Zo) return;
    const i64 idx = echo_idx(z, y, x, Yo, Xo);
    float pz = (float)z * sz + oz, py = (float)y * sy + oy, px = (float)x * sx + ox;
    if (has_u) {
        const i64 N = (i64)Zo * Yo * Xo;
        pz += __ldg(u + idx);
        py += __ldg(u + N + idx);
        px += __ldg(u + 2 * N + idx);
    }
    dst[idx] = mult * echo_trilinear(src, Zi, Yi, Xi, pz, py, px);
}
