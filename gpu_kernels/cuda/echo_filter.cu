// Separable 3-D Gaussian (three 1-D passes, in place) and trilinear resampling for the echo
// motion estimator.
//
// The 1-D kernels are held in constant memory (ECHO_NSETS sets of up to ECHO_MAXW taps,
// filled from the host): every thread of a warp reads the same tap at the same time, which
// constant memory broadcasts. Each pass is in place: a block loads whole lines into shared
// memory, synchronises, convolves (border replicated) and writes the lines back.
//   echo_gauss_x     8 rows along x per block of 32 x 8 threads (ECHO_LB outputs a thread);
//   echo_gauss_line  32 neighbouring columns along y or z (coalesced: 32 consecutive x).
// Channels: blockIdx.z (gauss_line) or consecutive rows (gauss_x) cover C volumes of N voxels.
#include "echo_common.cuh"

#ifndef ECHO_MAXW
#define ECHO_MAXW 129
#endif
#ifndef ECHO_NSETS
#define ECHO_NSETS 8
#endif

#ifndef ECHO_LB
#define ECHO_LB 4
#endif

__constant__ float c_gauss[ECHO_NSETS * ECHO_MAXW];

// The lines are staged with the replicated border (r voxels each side), so the inner loop
// needs no clamping, and the symmetric taps are paired: w0 v[l] + sum_k w_k (v[l-k] + v[l+k]).
// echo_gauss_x: 8 rows a block; each thread computes ECHO_LB consecutive outputs of its row
// with the taps' windows in registers (as echo_gauss_line below). Its lanes then read shared
// memory with a stride of ECHO_LB words: the staged row has one padding word after every 32
// (index i is stored at i + i / 32), which puts those reads in different banks.
__device__ __forceinline__ int echo_pad32(int i) { return i + (i >> 5); }

extern "C" __global__ void echo_gauss_x(float* __restrict__ data, i64 rows, int X, int set, int r) {
    extern __shared__ float sm[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const i64 row = (i64)blockIdx.x * blockDim.y + ty;
    const int W = X + 2 * r + ECHO_LB - 1;            // the row, its replicated borders, the windows' reach
    const int S = echo_pad32(W) + 1;                  // the padded row's stride in shared memory
    float* line = sm + ty * S;
    const bool ok = row < rows;
    if (ok)
        for (int i = tx; i < W; i += blockDim.x) line[echo_pad32(i)] = data[row * X + echo_clamp(i - r, X - 1)];
    __syncthreads();
    if (!ok) return;
    const float* w = c_gauss + set * ECHO_MAXW + r;
    const float w0 = w[0];
    for (int x0 = tx * ECHO_LB; x0 < X; x0 += blockDim.x * ECHO_LB) {
        float acc[ECHO_LB], lw[ECHO_LB], rw[ECHO_LB];
#pragma unroll
        for (int j = 0; j < ECHO_LB; ++j) {
            const float c = line[echo_pad32(x0 + j + r)];
            acc[j] = w0 * c;
            lw[j] = c;
            rw[j] = c;
        }
        for (int k = 1; k <= r; ++k) {
#pragma unroll
            for (int j = ECHO_LB - 1; j > 0; --j) lw[j] = lw[j - 1];
            lw[0] = line[echo_pad32(x0 + r - k)];
#pragma unroll
            for (int j = 0; j < ECHO_LB - 1; ++j) rw[j] = rw[j + 1];
            rw[ECHO_LB - 1] = line[echo_pad32(x0 + ECHO_LB - 1 + r + k)];
            const float wk = w[k];
#pragma unroll
            for (int j = 0; j < ECHO_LB; ++j) acc[j] += wk * (lw[j] + rw[j]);
        }
#pragma unroll
        for (int j = 0; j < ECHO_LB; ++j)
            if (x0 + j < X) data[row * X + x0 + j] = acc[j];
    }
}

// echo_gauss_line: each thread computes ECHO_LB consecutive outputs of its column, keeping
// the two windows of taps (left: v[l - k], right: v[l + k], for its ECHO_LB outputs) in
// registers and shifting them by one voxel per tap: two shared-memory loads per tap for
// ECHO_LB outputs instead of two per output (the passes were bound by shared-memory loads).
// Each output is summed in the same order as before (w0 v[l], then k = 1..r), so the result
// is the same to the bit. The staged line holds r + ECHO_LB - 1 replicated voxels after the
// end (the windows of the last outputs reach past L + r - 1; those outputs are not written).
extern "C" __global__ void echo_gauss_line(float* __restrict__ data, i64 N, int L, i64 stride, i64 strideB, int X,
                                           int set, int r) {
    extern __shared__ float sm_line[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * 32 + tx;
    const i64 base = (i64)blockIdx.z * N + (i64)blockIdx.y * strideB + x;
    float* sm = sm_line + r * 32;
    const bool ok = x < X;
    const int hi = L + r + ECHO_LB - 1;
    if (ok)
        for (int l = ty - r; l < hi; l += blockDim.y) sm[l * 32 + tx] = data[base + echo_clamp(l, L - 1) * stride];
    __syncthreads();
    if (!ok) return;
    const float* w = c_gauss + set * ECHO_MAXW + r;
    const float w0 = w[0];
    for (int l0 = ty * ECHO_LB; l0 < L; l0 += blockDim.y * ECHO_LB) {
        float acc[ECHO_LB], lw[ECHO_LB], rw[ECHO_LB];
#pragma unroll
        for (int j = 0; j < ECHO_LB; ++j) {
            const float c = sm[(l0 + j) * 32 + tx];
            acc[j] = w0 * c;
            lw[j] = c;   // v[l0 + j - k] at k = 0
            rw[j] = c;   // v[l0 + j + k] at k = 0
        }
        for (int k = 1; k <= r; ++k) {
            // shift the windows one voxel outwards: one new load at each end
#pragma unroll
            for (int j = ECHO_LB - 1; j > 0; --j) lw[j] = lw[j - 1];
            lw[0] = sm[(l0 - k) * 32 + tx];
#pragma unroll
            for (int j = 0; j < ECHO_LB - 1; ++j) rw[j] = rw[j + 1];
            rw[ECHO_LB - 1] = sm[(l0 + ECHO_LB - 1 + k) * 32 + tx];
            const float wk = w[k];
#pragma unroll
            for (int j = 0; j < ECHO_LB; ++j) acc[j] += wk * (lw[j] + rw[j]);
        }
#pragma unroll
        for (int j = 0; j < ECHO_LB; ++j)
            if (l0 + j < L) data[base + (i64)(l0 + j) * stride] = acc[j];
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
