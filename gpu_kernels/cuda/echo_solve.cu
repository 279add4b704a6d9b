// Relaxation of the CLG + divergence Euler-Lagrange system (gpu_kernels/echo).
//
// echo_finish turns the smoothed tensor into the per-voxel system, in the colour layout
// Tc[9][colour][z][y/2][x/2] so that a pass over one colour reads contiguous memory:
//   mode & 1: channels 0..5, the inverse of K = J + diag(alpha n + beta n_i) (+ the
//             mixed-term self coupling on the volume's edges), from the spatial tensor J
//             alone (once per pyramid level: it depends on neither u0 nor the warp);
//   mode & 2: channels 6..8, the right-hand side R = -(b - J u0) (once per warp).
// J (6 volumes) and B (3 volumes: b) are natural-layout [c][z][y][x] arrays.
// The system is stored as echo_sys_t: float, or with ECHO_HALF IEEE half precision
// (16-bit, converted with cvt.rn; values beyond +-65504 are clamped), which halves the
// bytes a sweep reads for it.
//
// Sweeps (each thread solves its voxel's 3x3 system with the neighbours fixed, then
// new = old + omega (v - old)):
//   echo_jacobi_{cache,smem}  every voxel from src into dst (the paper's Jacobi);
//   echo_sor_{cache,smem}     the voxels of one colour in place (4 passes = one Gauss-Seidel
//                             sweep; the 4-colouring keeps coupled voxels apart).
// Variants, the paper's experiment: *_cache read the neighbours from global memory through
// L1/L2; *_smem stage z-slices of the field with a one-voxel halo in shared memory and march
// through a chunk of z with three slices (z-1, z, z+1) resident.
// With do_stats, sum over the updated voxels of |v - old|^2 is added to stats[0].
// Convergence on the device (no host round trip): echo_check turns stats[0] into the RMS
// residual, logs it, and sets done[0] once it is below tol; every SOR pass returns at once
// while done[0] is set, so the host queues a warp's whole sweep budget without waiting.
#include "echo_common.cuh"

#ifndef ECHO_MINB
#define ECHO_MINB 3
#endif

#ifdef ECHO_HALF
typedef unsigned short echo_sys_t;
__device__ __forceinline__ float echo_half_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ float echo_sys_get(const echo_sys_t* p) { return echo_half_to_float(__ldg(p)); }
// a value read once per sweep: the streaming hint (evict first) keeps it from pushing the field out of L2
__device__ __forceinline__ float echo_sys_stream(const echo_sys_t* p) { return echo_half_to_float(__ldcs(p)); }
__device__ __forceinline__ echo_sys_t echo_sys_put(float v) {
    v = fminf(fmaxf(v, -65504.f), 65504.f);
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}
#else
typedef float echo_sys_t;
__device__ __forceinline__ float echo_sys_get(const echo_sys_t* p) { return __ldg(p); }
__device__ __forceinline__ float echo_sys_stream(const echo_sys_t* p) { return __ldcs(p); }
__device__ __forceinline__ echo_sys_t echo_sys_put(float v) { return v; }
#endif

extern "C" __global__ void echo_finish(const float* __restrict__ J, const float* __restrict__ B,
                                       const float* __restrict__ u, echo_sys_t* __restrict__ Tc, int Z, int Y, int X,
                                       int Yh, int Xh, float alpha, float beta, int mode, int has_u) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z;
    if (x >= X || y >= Y || z >= Z) return;
    const i64 N = (i64)Z * Y * X;
    const i64 Nc = (i64)4 * Z * Yh * Xh;
    const i64 idx = echo_idx(z, y, x, Y, X);
    const i64 ci = echo_cidx(z, y, x, Z, Yh, Xh);
    float J00 = J[idx], J11 = J[N + idx], J22 = J[2 * N + idx];
    float J01 = J[3 * N + idx], J02 = J[4 * N + idx], J12 = J[5 * N + idx];
    if (mode & 2) {
        float b0 = B[idx], b1 = B[N + idx], b2 = B[2 * N + idx];
        float u0 = 0.f, u1 = 0.f, u2 = 0.f;
        if (has_u) {
            u0 = u[idx];
            u1 = u[N + idx];
            u2 = u[2 * N + idx];
        }
        Tc[6 * Nc + ci] = echo_sys_put(-(b0 - (J00 * u0 + J01 * u1 + J02 * u2)));
        Tc[7 * Nc + ci] = echo_sys_put(-(b1 - (J01 * u0 + J11 * u1 + J12 * u2)));
        Tc[8 * Nc + ci] = echo_sys_put(-(b2 - (J02 * u0 + J12 * u1 + J22 * u2)));
    }
    if (!(mode & 1)) return;
    EchoAxisW wz = echo_axis_weights(z, Z), wy = echo_axis_weights(y, Y), wx = echo_axis_weights(x, X);
    float ntot = wz.n + wy.n + wx.n;
    float a = J00 + alpha * ntot + beta * wz.n;
    float b = J11 + alpha * ntot + beta * wy.n;
    float c = J22 + alpha * ntot + beta * wx.n;
    float q = 0.25f * beta;
    float d = J01 + q * wz.g[1] * wy.g[1];
    float e = J02 + q * wz.g[1] * wx.g[1];
    float f = J12 + q * wy.g[1] * wx.g[1];
    float A00 = b * c - f * f, A01 = e * f - d * c, A02 = d * f - b * e;
    float A11 = a * c - e * e, A12 = d * e - a * f, A22 = a * b - d * d;
    float inv = 1.f / (a * A00 + d * A01 + e * A02);
    Tc[ci] = echo_sys_put(A00 * inv);
    Tc[Nc + ci] = echo_sys_put(A11 * inv);
    Tc[2 * Nc + ci] = echo_sys_put(A22 * inv);
    Tc[3 * Nc + ci] = echo_sys_put(A01 * inv);
    Tc[4 * Nc + ci] = echo_sys_put(A02 * inv);
    Tc[5 * Nc + ci] = echo_sys_put(A12 * inv);
}

// The residual check of one SOR sweep (one thread): see the head of this file.
// log[2 slot] = sweeps done, log[2 slot + 1] = the RMS residual, of the last check that ran.
__device__ __forceinline__ void echo_check_one(float* stats, int* done, float* log, int slot, int sweeps,
                                               float inv_nvox, float tol) {
    volatile int* vdone = done;
    if (!vdone[0]) {
        const float res = sqrtf(fmaxf(__ldcg(stats), 0.f) * inv_nvox);   // the atomics' sum, from L2
        log[2 * slot] = (float)sweeps;
        log[2 * slot + 1] = res;
        if (res < tol || !isfinite(res)) vdone[0] = 1;
    }
    atomicExch(stats, 0.f);
}

extern "C" __global__ void echo_check(float* stats, int* done, float* log, int slot, int sweeps, float inv_nvox,
                                      float tol) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    echo_check_one(stats, done, log, slot, sweeps, inv_nvox, tol);
}

__device__ __forceinline__ void echo_load_system(const echo_sys_t* __restrict__ Tc, i64 Nc, i64 ci,
                                                 float (&Kinv)[6], float (&R)[3]) {
#pragma unroll
    for (int k = 0; k < 6; ++k) Kinv[k] = echo_sys_get(Tc + k * Nc + ci);
#pragma unroll
    for (int k = 0; k < 3; ++k) R[k] = echo_sys_get(Tc + (6 + k) * Nc + ci);
}

// --------------------------------------------------------------------------- global loads
// The neighbours of voxel (z, y, x): the clamped offset along each axis (0 where the volume
// ends) is computed once, and a load is a pointer per component plus the sum of three 32-bit
// offsets (the 57 loads of a point solve shared 19 offset sums); the values loaded are those
// of clamped indices, so the result is the same. With ECHO_CLAMP_LOADS each load clamps its
// own three indices (the kernels before issue 24; kept to measure the difference).
template <bool CG>
struct EchoGlobalLoad {
    const float* u;
    i64 N;
    int z, y, x, Z, Y, X;
    __device__ __forceinline__ float operator()(int c, int dz, int dy, int dx) const {
        int zz = echo_clamp(z + dz, Z - 1), yy = echo_clamp(y + dy, Y - 1), xx = echo_clamp(x + dx, X - 1);
        const float* q = u + c * N + echo_idx(zz, yy, xx, Y, X);
        if (CG) return __ldcg(q);
        return *q;
    }
};

template <bool CG>
struct EchoOffsetLoad {
    const float* p[3];   // the component's value at the voxel
    int o[3][3];         // [axis][d + 1]: the offset to the clamped neighbour
    __device__ __forceinline__ EchoOffsetLoad(const float* u, i64 N, int z, int y, int x, int Z, int Y, int X) {
        const i64 idx = echo_idx(z, y, x, Y, X);
        p[0] = u + idx;
        p[1] = u + N + idx;
        p[2] = u + 2 * N + idx;
        const int YX = Y * X;
        o[0][0] = z > 0 ? -YX : 0;
        o[0][1] = 0;
        o[0][2] = z < Z - 1 ? YX : 0;
        o[1][0] = y > 0 ? -X : 0;
        o[1][1] = 0;
        o[1][2] = y < Y - 1 ? X : 0;
        o[2][0] = x > 0 ? -1 : 0;
        o[2][1] = 0;
        o[2][2] = x < X - 1 ? 1 : 0;
#ifdef ECHO_TEST_WRONG_OFFSET
        o[2][0] = 0;   // the voxel itself for its left neighbour: for the test that shows a wrong offset is caught
#endif
    }
    __device__ __forceinline__ float operator()(int c, int dz, int dy, int dx) const {
        const float* q = p[c] + (o[0][dz + 1] + o[1][dy + 1] + o[2][dx + 1]);
        if (CG) return __ldcg(q);
        return *q;
    }
};

#ifdef ECHO_CLAMP_LOADS
#define ECHO_LOAD(U, u) EchoGlobalLoad<false> U{u, N, z, y, x, Z, Y, X}
#else
#define ECHO_LOAD(U, u) EchoOffsetLoad<false> U(u, N, z, y, x, Z, Y, X)
#endif

// One SOR update of voxel (z, y, x) in place, its system at ci of the colour-packed Tc: the point
// solve, then u <- u + omega (v - u) per component, adding |v - u|^2 to d2. Every in-place SOR
// kernel below does exactly this per voxel. CG: the field through L2 only (the persistent
// kernel: never an L1 line another multiprocessor wrote); STREAM: the system loaded with the
// evict-first hint (the wavefront, so that it does not push the field out of L2).
template <bool CG, bool STREAM>
__device__ __forceinline__ void echo_sor_voxel(const echo_sys_t* __restrict__ Tc, i64 Nc, i64 ci, float* u, i64 N,
                                               int z, int y, int x, int Z, int Y, int X, float omega, float alpha,
                                               float beta, float& d2) {
    float Kinv[6], R[3], v[3];
    if (STREAM) {
#pragma unroll
        for (int k = 0; k < 6; ++k) Kinv[k] = echo_sys_stream(Tc + k * Nc + ci);
#pragma unroll
        for (int k = 0; k < 3; ++k) R[k] = echo_sys_stream(Tc + (6 + k) * Nc + ci);
    } else {
        echo_load_system(Tc, Nc, ci, Kinv, R);
    }
    EchoAxisW w[3] = {echo_axis_weights(z, Z), echo_axis_weights(y, Y), echo_axis_weights(x, X)};
#ifdef ECHO_CLAMP_LOADS
    EchoGlobalLoad<CG> U{u, N, z, y, x, Z, Y, X};
#else
    EchoOffsetLoad<CG> U(u, N, z, y, x, Z, Y, X);
#endif
    echo_point(U, w, Kinv, R, alpha, beta, v);
    const i64 idx = echo_idx(z, y, x, Y, X);
#pragma unroll
    for (int c = 0; c < 3; ++c) {
        const float old = CG ? __ldcg(u + c * N + idx) : u[c * N + idx];
        const float dv = v[c] - old;
        d2 += dv * dv;
        u[c * N + idx] = old + omega * dv;
    }
}

extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY, ECHO_MINB)
echo_jacobi_cache(const echo_sys_t* __restrict__ Tc, const float* __restrict__ src,
                                             float* __restrict__ dst, int Z, int Y, int X, int Yh, int Xh,
                                             float omega, float alpha, float beta, float* stats, int do_stats) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z;
    const i64 N = (i64)Z * Y * X;
    float d2 = 0.f;
    if (x < X && y < Y) {
        const i64 Nc = (i64)4 * Z * Yh * Xh;
        float Kinv[6], R[3], v[3];
        echo_load_system(Tc, Nc, echo_cidx(z, y, x, Z, Yh, Xh), Kinv, R);
        EchoAxisW w[3] = {echo_axis_weights(z, Z), echo_axis_weights(y, Y), echo_axis_weights(x, X)};
        ECHO_LOAD(U, src);
        echo_point(U, w, Kinv, R, alpha, beta, v);
        const i64 idx = echo_idx(z, y, x, Y, X);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            float old = src[c * N + idx];
            float dv = v[c] - old;
            d2 += dv * dv;
            dst[c * N + idx] = old + omega * dv;
        }
    }
    if (do_stats) echo_warp_accumulate(d2, stats);
}

// One colour in place: thread (xh, yh, z) updates voxel (z, 2 yh + py, 2 xh + px).
extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY, ECHO_MINB)
echo_sor_cache(const echo_sys_t* __restrict__ Tc, float* u, int Z, int Y, int X, int Yh,
                                          int Xh, int colour, float omega, float alpha, float beta, float* stats,
                                          int do_stats, const int* __restrict__ done) {
    if (*done) return;
    const int xh = blockIdx.x * blockDim.x + threadIdx.x;
    const int yh = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z;
    const int px = (colour & 1) ^ (z & 1), py = ((colour >> 1) & 1) ^ (z & 1);
    const int x = 2 * xh + px, y = 2 * yh + py;
    const i64 N = (i64)Z * Y * X;
    float d2 = 0.f;
    if (x < X && y < Y) {
        const i64 Nc = (i64)4 * Z * Yh * Xh;
        const i64 ci = (((i64)colour * Z + z) * Yh + yh) * Xh + xh;
        echo_sor_voxel<false, false>(Tc, Nc, ci, u, N, z, y, x, Z, Y, X, omega, alpha, beta, d2);
    }
    if (do_stats) echo_warp_accumulate(d2, stats);
}

// echo_sor_march: echo_sor_cache with each thread marching through zchunk consecutive planes
// (its (xh, yh) in each: the colour's voxel moves by one in x and y with the plane's parity).
// A plane's rows are then read by the block's threads at z - 1, z and z + 1 within three steps,
// so the z neighbours come from L1 instead of each being fetched from L2 by another block (the
// passes were bound by L2 bandwidth, not memory). Voxels of one colour do not depend on each
// other, so the order does not matter: the field is echo_sor_cache's to the bit.
extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY, ECHO_MINB)
echo_sor_march(const echo_sys_t* __restrict__ Tc, float* u, int Z, int Y, int X, int Yh, int Xh, int colour,
               float omega, float alpha, float beta, float* stats, int do_stats, const int* __restrict__ done,
               int zchunk) {
    if (*done) return;
    const int xh = blockIdx.x * blockDim.x + threadIdx.x;
    const int yh = blockIdx.y * blockDim.y + threadIdx.y;
    const int z0 = blockIdx.z * zchunk, z1 = min(Z, z0 + zchunk);
    const i64 N = (i64)Z * Y * X;
    const i64 Nc = (i64)4 * Z * Yh * Xh;
    float d2 = 0.f;
    for (int z = z0; z < z1; ++z) {
        const int px = (colour & 1) ^ (z & 1), py = ((colour >> 1) & 1) ^ (z & 1);
        const int x = 2 * xh + px, y = 2 * yh + py;
        if (x < X && y < Y) {
            const i64 ci = (((i64)colour * Z + z) * Yh + yh) * Xh + xh;
            echo_sor_voxel<false, false>(Tc, Nc, ci, u, N, z, y, x, Z, Y, X, omega, alpha, beta, d2);
        }
    }
    if (do_stats) echo_warp_accumulate(d2, stats);
}

// --------------------------------------------------------------------------- wavefront sweeps
// echo_sor_wave: one SOR sweep as a wavefront along z (temporal blocking of the four colour
// passes), for volumes whose field does not stay in L2 between two passes. Stage s (colour
// s & 3 of the sweep) updates, in launch t, the planes [t D - s L, t D - s L + D) with
// L = D + 1: a colour runs L planes behind the one before it, so every voxel reads exactly
// the values it reads in four whole passes (the colour before it done through its plane + 1,
// the colour after it not yet started at its plane - 1), and one launch never reads a plane
// another of its stages writes. The result is the queued passes' to the bit. A plane's field
// is read by the four colours within a few launches, from L2, instead of from memory by each
// pass; the system, read once a sweep, is loaded with the streaming hint (evict first), so it
// does not push the field out. blockIdx.z = (stage - s0) * D + plane of the stage's slab
// (the host launches only the stages with a plane in the volume).
extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY, ECHO_MINB)
echo_sor_wave(const echo_sys_t* __restrict__ Tc, float* u, int Z, int Y, int X, int Yh, int Xh, int t, int D,
              int L, int s0, int M, float omega, float alpha, float beta, float* stats, int do_stats,
              const int* __restrict__ done) {
    if (*done) return;
    const int per = D / M;                      // blocks per stage, each marching M planes (M divides D)
    const int sl = blockIdx.z / per;
    const int stage = s0 + sl;
    const int colour = stage & 3;
    const int zs = t * D - stage * L + (int)(blockIdx.z - sl * per) * M;
    const int zb = max(zs, 0), ze = min(zs + M, Z);
    if (zb >= ze) return;   // the whole block: no warp sum below skipped by half a warp
    const int xh = blockIdx.x * blockDim.x + threadIdx.x;
    const int yh = blockIdx.y * blockDim.y + threadIdx.y;
    const i64 N = (i64)Z * Y * X;
    float d2 = 0.f;
    for (int z = zb; z < ze; ++z) {
        const int px = (colour & 1) ^ (z & 1), py = ((colour >> 1) & 1) ^ (z & 1);
        const int x = 2 * xh + px, y = 2 * yh + py;
        if (x < X && y < Y) {
            const i64 Nc = (i64)4 * Z * Yh * Xh;
            const i64 ci = (((i64)colour * Z + z) * Yh + yh) * Xh + xh;
            echo_sor_voxel<false, true>(Tc, Nc, ci, u, N, z, y, x, Z, Y, X, omega, alpha, beta, d2);
        }
    }
    if (do_stats) echo_warp_accumulate(d2, stats);
}

// --------------------------------------------------------------------------- one launch per warp
// echo_sor_persistent runs a whole warp's SOR sweeps (and residual checks) in one launch: a
// grid of blocks that are all resident at once (the host launches at most 2 per
// multiprocessor, which __launch_bounds__ guarantees room for) walks each colour with a grid
// stride, and a grid-wide barrier stands where the kernel boundary between two colour passes
// was. The arithmetic per voxel is echo_sor_cache's, in the same order, so the result is the
// same; the field is read through L2 only (ld.global.cg), never from an L1 line another
// multiprocessor may have written since. Small volumes, where a pass takes a few
// microseconds, spend their time in launches otherwise.

// bar[0]: blocks arrived, bar[1]: generation (both start at 0; the count returns to 0).
__device__ __forceinline__ void echo_grid_barrier(unsigned int* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int* vb = bar;
        const unsigned int gen = vb[1];
        __threadfence();
        if (atomicAdd(bar, 1u) == gridDim.x - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (vb[1] == gen) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(256, 2)
echo_sor_persistent(const echo_sys_t* __restrict__ Tc, float* u, int Z, int Y, int X, int Yh, int Xh, float omega,
                    float alpha, float beta, int iters, int check_every, float tol, float inv_nvox, float* stats,
                    int* done, float* log, int slot, unsigned int* bar) {
    const i64 per = (i64)Z * Yh * Xh;
    const i64 N = (i64)Z * Y * X;
    const i64 Nc = 4 * per;
    const i64 nthr = (i64)gridDim.x * blockDim.x;
    const i64 tid0 = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    volatile int* vdone = done;
    for (int it = 0; it < iters; ++it) {
        if (vdone[0]) break;   // every block reads it after the same barrier
        const bool check = tol > 0.f && ((it + 1) % check_every == 0 || it + 1 == iters);
        for (int colour = 0; colour < 4; ++colour) {
            float d2 = 0.f;
            for (i64 k = tid0; k < per; k += nthr) {
                const int xh = (int)(k % Xh);
                const i64 r = k / Xh;
                const int yh = (int)(r % Yh);
                const int z = (int)(r / Yh);
                const int px = (colour & 1) ^ (z & 1), py = ((colour >> 1) & 1) ^ (z & 1);
                const int x = 2 * xh + px, y = 2 * yh + py;
                if (x >= X || y >= Y) continue;
                const i64 ci = (((i64)colour * Z + z) * Yh + yh) * Xh + xh;
                echo_sor_voxel<true, false>(Tc, Nc, ci, u, N, z, y, x, Z, Y, X, omega, alpha, beta, d2);
            }
            if (check) echo_warp_accumulate(d2, stats);
            echo_grid_barrier(bar);
        }
        if (check) {
            if (blockIdx.x == 0 && threadIdx.x == 0) echo_check_one(stats, done, log, slot, it + 1, inv_nvox, tol);
            echo_grid_barrier(bar);
        }
    }
}

// --------------------------------------------------------------------------- shared-memory tiles
// A tile of (TH + 2) x (TW + 2) voxels per z-slice and component, three slices resident.
template <int TH, int TW>
struct EchoTile {
    float (*s)[3][TH + 2][TW + 2];  // [slot][component][y][x]
    int slot[3];                    // slot of z-1, z, z+1
    int ly, lx;                     // the voxel's position in the tile (halo included)
    __device__ __forceinline__ float operator()(int c, int dz, int dy, int dx) const {
        return s[slot[dz + 1]][c][ly + dy][lx + dx];
    }
};

template <int TH, int TW>
__device__ __forceinline__ void echo_load_slice(float (*s)[3][TH + 2][TW + 2], int slot, const float* u, i64 N,
                                                int zz, int y0, int x0, int Z, int Y, int X, int tid, int nthr) {
    zz = echo_clamp(zz, Z - 1);
    constexpr int W = TW + 2, H = TH + 2;
    for (int k = tid; k < 3 * W * H; k += nthr) {
        int c = k / (W * H);
        int r = k - c * W * H;
        int j = r / W, i = r - j * W;
        int yy = echo_clamp(y0 - 1 + j, Y - 1), xx = echo_clamp(x0 - 1 + i, X - 1);
        s[slot][c][j][i] = u[c * N + echo_idx(zz, yy, xx, Y, X)];
    }
}

extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY, ECHO_MINB)
echo_jacobi_smem(const echo_sys_t* __restrict__ Tc, const float* __restrict__ src, float* __restrict__ dst, int Z, int Y,
                 int X, int Yh, int Xh, float omega, float alpha, float beta, float* stats, int do_stats,
                 int zchunk) {
    constexpr int TH = ECHO_TY, TW = ECHO_TX;
    __shared__ float s[3][3][TH + 2][TW + 2];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TW + tx;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    const int z0 = blockIdx.z * zchunk, z1 = min(Z, z0 + zchunk);
    const int x = x0 + tx, y = y0 + ty;
    const i64 N = (i64)Z * Y * X;
    const i64 Nc = (i64)4 * Z * Yh * Xh;
    echo_load_slice<TH, TW>(s, 0, src, N, z0 - 1, y0, x0, Z, Y, X, tid, TW * TH);
    echo_load_slice<TH, TW>(s, 1, src, N, z0, y0, x0, Z, Y, X, tid, TW * TH);
    float d2 = 0.f;
    for (int z = z0; z < z1; ++z) {
        const int sm = (z - z0) % 3, sc = (z - z0 + 1) % 3, sp = (z - z0 + 2) % 3;
        __syncthreads();
        echo_load_slice<TH, TW>(s, sp, src, N, z + 1, y0, x0, Z, Y, X, tid, TW * TH);
        __syncthreads();
        if (x < X && y < Y) {
            float Kinv[6], R[3], v[3];
            echo_load_system(Tc, Nc, echo_cidx(z, y, x, Z, Yh, Xh), Kinv, R);
            EchoAxisW w[3] = {echo_axis_weights(z, Z), echo_axis_weights(y, Y), echo_axis_weights(x, X)};
            EchoTile<TH, TW> U{s, {sm, sc, sp}, ty + 1, tx + 1};
            echo_point(U, w, Kinv, R, alpha, beta, v);
            const i64 idx = echo_idx(z, y, x, Y, X);
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                float old = s[sc][c][ty + 1][tx + 1];
                float dv = v[c] - old;
                d2 += dv * dv;
                dst[c * N + idx] = old + omega * dv;
            }
        }
    }
    if (do_stats) echo_warp_accumulate(d2, stats);
}

// SOR with tiles of 2 TH x 2 TW voxels: thread (tx, ty) updates the colour's voxel
// (y0 + 2 ty + py, x0 + 2 tx + px) of each slice.
extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY, ECHO_MINB)
echo_sor_smem(const echo_sys_t* __restrict__ Tc, float* u, int Z, int Y, int X, int Yh, int Xh, int colour, float omega,
              float alpha, float beta, float* stats, int do_stats, const int* __restrict__ done, int zchunk) {
    if (*done) return;
    constexpr int TH = 2 * ECHO_TY, TW = 2 * ECHO_TX;
    __shared__ float s[3][3][TH + 2][TW + 2];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * ECHO_TX + tx;
    const int nthr = ECHO_TX * ECHO_TY;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    const int z0 = blockIdx.z * zchunk, z1 = min(Z, z0 + zchunk);
    const i64 N = (i64)Z * Y * X;
    const i64 Nc = (i64)4 * Z * Yh * Xh;
    echo_load_slice<TH, TW>(s, 0, u, N, z0 - 1, y0, x0, Z, Y, X, tid, nthr);
    echo_load_slice<TH, TW>(s, 1, u, N, z0, y0, x0, Z, Y, X, tid, nthr);
    float d2 = 0.f;
    for (int z = z0; z < z1; ++z) {
        const int sm = (z - z0) % 3, sc = (z - z0 + 1) % 3, sp = (z - z0 + 2) % 3;
        __syncthreads();
        echo_load_slice<TH, TW>(s, sp, u, N, z + 1, y0, x0, Z, Y, X, tid, nthr);
        __syncthreads();
        const int px = (colour & 1) ^ (z & 1), py = ((colour >> 1) & 1) ^ (z & 1);
        const int x = x0 + 2 * tx + px, y = y0 + 2 * ty + py;
        if (x < X && y < Y) {
            const i64 ci = (((i64)colour * Z + z) * Yh + (y >> 1)) * Xh + (x >> 1);
            float Kinv[6], R[3], v[3];
            echo_load_system(Tc, Nc, ci, Kinv, R);
            EchoAxisW w[3] = {echo_axis_weights(z, Z), echo_axis_weights(y, Y), echo_axis_weights(x, X)};
            const int ly = 2 * ty + py + 1, lx = 2 * tx + px + 1;
            EchoTile<TH, TW> U{s, {sm, sc, sp}, ly, lx};
            echo_point(U, w, Kinv, R, alpha, beta, v);
            const i64 idx = echo_idx(z, y, x, Y, X);
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                float old = s[sc][c][ly][lx];
                float dv = v[c] - old;
                d2 += dv * dv;
                u[c * N + idx] = old + omega * dv;
            }
        }
    }
    if (do_stats) echo_warp_accumulate(d2, stats);
}
