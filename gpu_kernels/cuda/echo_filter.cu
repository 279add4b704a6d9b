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

extern "C" __global__ void echo_gauss_x(float* __restrict__ data, i64 rows, int X, int set, int r) {
    extern __shared__ float sm[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const i64 row = (i64)blockIdx.x * blockDim.y + ty;
    float* line = sm + ty * X;
    const bool ok = row < rows;
    if (ok)
        for (int x = tx; x < X; x += blockDim.x) line[x] = data[row * X + x];
    __syncthreads();
    if (!ok) return;
    const float* w = c_gauss + set * ECHO_MAXW + r;
    for (int x = tx; x < X; x += blockDim.x) {
        float acc = 0.f;
        for (int k = -r; k <= r; ++k) acc += w[k] * line[echo_clamp(x + k, X - 1)];
        data[row * X + x] = acc;
    }
}

extern "C" __global__ void echo_gauss_line(float* __restrict__ data, i64 N, int L, i64 stride, i64 strideB, int X,
                                           int set, int r) {
    extern __shared__ float sm[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * 32 + tx;
    const i64 base = (i64)blockIdx.z * N + (i64)blockIdx.y * strideB + x;
    const bool ok = x < X;
    if (ok)
        for (int l = ty; l < L; l += blockDim.y) sm[l * 32 + tx] = data[base + l * stride];
    __syncthreads();
    if (!ok) return;
    const float* w = c_gauss + set * ECHO_MAXW + r;
    for (int l = ty; l < L; l += blockDim.y) {
        float acc = 0.f;
        for (int k = -r; k <= r; ++k) acc += w[k] * sm[echo_clamp(l + k, L - 1) * 32 + tx];
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
