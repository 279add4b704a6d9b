// Shared pieces of the 3-D echo motion kernels (gpu_kernels/echo).
//
// Volumes are float32, C-contiguous, indexed [z][y][x]; a field is 3 such volumes
// (component i along array axis i). Reads outside the volume read the nearest voxel.
//
// The relaxation system (see gpu_kernels/echo/_cpu.py, which computes the same function):
// for the total field u at voxel p,
//   K(p) u(p) = alpha S(p) + beta (A_i(p) + M_i(p)) + R(p)
// with S the sum over the in-volume axis neighbours (7-point Laplacian, Neumann), A_i the
// in-volume neighbours along axis i (3-point d_ii), M_i the mixed derivatives on plaquettes
// (weights g/h below; exactly the central mixed difference inside the volume, the energy's
// natural boundary condition on its faces), R = -(b - J u0). K^-1 (6 values) and R (3) are
// stored per voxel in the colour layout written by echo_finish.
#pragma once

#ifndef ECHO_TX
#define ECHO_TX 32
#endif
#ifndef ECHO_TY
#define ECHO_TY 8
#endif

typedef long long i64;

#ifdef GPULAB_EMU
// the test suite's CPU emulator (tests/cuda_emu) has no L2-only load: a plain read is the same there
template <typename T>
inline T __ldcg(const T* p) {
    return *p;
}
template <typename T>
inline T __ldcs(const T* p) {
    return *p;
}
#endif

__device__ __forceinline__ int echo_clamp(int v, int hi) {
    return v < 0 ? 0 : (v > hi ? hi : v);
}

__device__ __forceinline__ i64 echo_idx(int z, int y, int x, int Y, int X) {
    return ((i64)z * Y + y) * X + x;
}

// 4-colouring of the voxels: no two voxels coupled by the stencil share a colour.
__device__ __forceinline__ int echo_colour(int z, int y, int x) {
    return ((x + z) & 1) + 2 * ((y + z) & 1);
}

// Index of voxel (z, y, x) in the colour layout [colour][z][y/2][x/2].
__device__ __forceinline__ i64 echo_cidx(int z, int y, int x, int Z, int Yh, int Xh) {
    return (((i64)echo_colour(z, y, x) * Z + z) * Yh + (y >> 1)) * Xh + (x >> 1);
}

// Trilinear interpolation at (pz, py, px), coordinates clamped to the volume
// (scipy.ndimage.map_coordinates(order=1, mode="nearest") on clamped coordinates).
__device__ __forceinline__ float echo_trilinear(const float* __restrict__ v, int Z, int Y, int X,
                                                float pz, float py, float px) {
    pz = fminf(fmaxf(pz, 0.f), (float)(Z - 1));
    py = fminf(fmaxf(py, 0.f), (float)(Y - 1));
    px = fminf(fmaxf(px, 0.f), (float)(X - 1));
    int z0 = min((int)floorf(pz), max(Z - 2, 0));
    int y0 = min((int)floorf(py), max(Y - 2, 0));
    int x0 = min((int)floorf(px), max(X - 2, 0));
    float tz = pz - (float)z0, ty = py - (float)y0, tx = px - (float)x0;
    int z1 = min(z0 + 1, Z - 1), y1 = min(y0 + 1, Y - 1), x1 = min(x0 + 1, X - 1);
    float v000 = __ldg(v + echo_idx(z0, y0, x0, Y, X));
    float v001 = __ldg(v + echo_idx(z0, y0, x1, Y, X));
    float v010 = __ldg(v + echo_idx(z0, y1, x0, Y, X));
    float v011 = __ldg(v + echo_idx(z0, y1, x1, Y, X));
    float v100 = __ldg(v + echo_idx(z1, y0, x0, Y, X));
    float v101 = __ldg(v + echo_idx(z1, y0, x1, Y, X));
    float v110 = __ldg(v + echo_idx(z1, y1, x0, Y, X));
    float v111 = __ldg(v + echo_idx(z1, y1, x1, Y, X));
    float c00 = v000 + tx * (v001 - v000);
    float c01 = v010 + tx * (v011 - v010);
    float c10 = v100 + tx * (v101 - v100);
    float c11 = v110 + tx * (v111 - v110);
    float c0 = c00 + ty * (c01 - c00);
    float c1 = c10 + ty * (c11 - c10);
    return c0 + tz * (c1 - c0);
}

// Border weights of one axis at coordinate p of n voxels:
//   g = {[p>=1], [p>=1]-[p<=n-2], -[p<=n-2]},  h = {-[p>=1], [p>=1]-[p<=n-2], [p<=n-2]}.
struct EchoAxisW {
    float g[3], h[3], n;
};

__device__ __forceinline__ EchoAxisW echo_axis_weights(int p, int n) {
    EchoAxisW w;
    float lo = p >= 1 ? 1.f : 0.f;
    float hi = p <= n - 2 ? 1.f : 0.f;
    w.g[0] = lo; w.g[1] = lo - hi; w.g[2] = -hi;
    w.h[0] = -lo; w.h[1] = lo - hi; w.h[2] = hi;
    w.n = lo + hi;
    return w;
}

// The relaxation of one voxel. U(c, dz, dy, dx) returns component c at p + (dz, dy, dx)
// (clamped to the volume). Kinv: K00 K11 K22 K01 K02 K12; R: right-hand side.
// Writes the point solution v (the voxel's 3x3 system solved with its neighbours fixed).
template <class Load>
__device__ __forceinline__ void echo_point(const Load& U, const EchoAxisW (&w)[3], const float (&Kinv)[6],
                                           const float (&R)[3], float alpha, float beta, float (&v)[3]) {
    const float ntot = w[0].n + w[1].n + w[2].n;
    float rhs[3];
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const int oi[3] = {i == 0, i == 1, i == 2};
        float ui = U(i, 0, 0, 0);
        float az = U(i, 1, 0, 0) + U(i, -1, 0, 0);
        float ay = U(i, 0, 1, 0) + U(i, 0, -1, 0);
        float ax = U(i, 0, 0, 1) + U(i, 0, 0, -1);
        float S = az + ay + ax - (6.f - ntot) * ui;
        float Ai = (i == 0 ? az : (i == 1 ? ay : ax)) - (2.f - w[i].n) * ui;
        float M = 0.f;
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            if (k == i) continue;
            const int ok[3] = {k == 0, k == 1, k == 2};
#pragma unroll
            for (int a = -1; a <= 1; ++a) {
#pragma unroll
                for (int b = -1; b <= 1; ++b) {
                    if (a == 0 && b == 0) continue;
                    float wgt = w[i].g[a + 1] * w[k].h[b + 1];
                    M -= 0.25f * wgt * U(k, a * oi[0] + b * ok[0], a * oi[1] + b * ok[1], a * oi[2] + b * ok[2]);
                }
            }
        }
        rhs[i] = alpha * S + beta * (Ai + M) + R[i];
    }
    v[0] = Kinv[0] * rhs[0] + Kinv[3] * rhs[1] + Kinv[4] * rhs[2];
    v[1] = Kinv[3] * rhs[0] + Kinv[1] * rhs[1] + Kinv[5] * rhs[2];
    v[2] = Kinv[4] * rhs[0] + Kinv[5] * rhs[1] + Kinv[2] * rhs[2];
}

// Sum of squares over a warp, added to *acc by lane 0 (residual statistics).
__device__ __forceinline__ void echo_warp_accumulate(float val, float* acc) {
    unsigned mask = 0xffffffffu;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) val += __shfl_down_sync(mask, val, o);
    if ((threadIdx.x & 31) == 0 && val != 0.f) atomicAdd(acc, val);
}
