// Shared pieces of the tiled (blocked) Floyd-Warshall kernels (Katz & Kider 2008).
//
// Compile-time parameters (passed as -D defines by gpu_kernels/mesh/apsp.py):
//   FW_B    tile size B (B x B distance tiles), 32, 64 or 128
//   FW_TM   rows of the output register block of one thread in stages 2 and 3 (4 or 8)
//   FW_TN   columns of that register block (4 or 8)
//   FW_KC   k-chunk: how many k of the B-long inner loop are staged in shared memory at once
//   FW_INT  0: float32 distances, fminf(c, a + b)
//           1: int32 fixed-point distances, __viaddmin_s32(a, b, c) = min(a + b, c)
//              (one DPX instruction, VIADDMNMX, on sm_90; emulated on other GPUs)
//           2: int32 fixed-point distances, plain min(a + b, c)
//   FW_MINB minimum resident blocks per SM for __launch_bounds__ (0: none)
//
// Stages 2 and 3 are one min-plus product per tile: C = min(C, A (x) B), where the inner
// dimension is the B vertices of the current diagonal tile k. This holds because the
// diagonal tile is closed (stage 1) and its diagonal is 0 (weights are non-negative), so
// no intra-tile ordering is needed outside stage 1.
//
// Shared-memory layout of the dependency tiles: "k-major", As[kk][i] = A[i][kk] and
// Bs[kk][j] = B[kk][j], so that a thread reads its TM (TN) operands of step kk with
// float4 loads. Rows are swizzled in 16-byte units (unit u of row r lives at
// u ^ ((r >> 2) & 7)), which makes both the direct fill and the transposing fill (a 4x4
// register transpose) free of bank conflicts without padding.
//
// A dependency tile can be stored transposed (the symmetric variant keeps only tiles on
// or below the diagonal; an above-diagonal tile is the transpose of its mirror). The fill
// then swaps the direct and the transposing copy: the transpose costs nothing extra.
#pragma once

#ifndef FW_B
#define FW_B 64
#endif
#ifndef FW_TM
#define FW_TM 4
#endif
#ifndef FW_TN
#define FW_TN 4
#endif
#ifndef FW_KC
#define FW_KC FW_B
#endif
#ifndef FW_INT
#define FW_INT 0
#endif
#ifndef FW_MINB
#define FW_MINB 0
#endif
#ifndef FW_PIPE
#define FW_PIPE 1   // 1: software-pipelined product (register-staged, double-buffered chunks)
#endif

#define FW_NTY (FW_B / FW_TM)
#define FW_NTX (FW_B / FW_TN)
#define FW_THREADS (FW_NTY * FW_NTX)
#define FW_U (FW_B / 4)          // 16-byte units per tile row
#define FW_S1_THREADS ((FW_B * FW_B / 16) > 1024 ? 1024 : (FW_B * FW_B / 16))

#if FW_MINB > 0
#define FW_BOUNDS __launch_bounds__(FW_THREADS, FW_MINB)
#else
#define FW_BOUNDS __launch_bounds__(FW_THREADS)
#endif

static_assert(FW_B % 32 == 0, "tile size must be a multiple of 32");
static_assert(FW_TM % 4 == 0 && FW_TN % 4 == 0, "register block must be a multiple of 4");
static_assert(FW_B % FW_KC == 0 && FW_KC % 4 == 0, "k-chunk must divide the tile size");

#if FW_INT
typedef int dist_t;
typedef int4 dist4_t;
#define FW_INF 0x3FFFFFFF
#else
typedef float dist_t;
typedef float4 dist4_t;
#define FW_INF __int_as_float(0x7f800000)
#endif

__device__ __forceinline__ dist_t fw_relax(dist_t c, dist_t a, dist_t b) {
#if FW_INT == 1
    return __viaddmin_s32(a, b, c);
#elif FW_INT == 2
    return min(a + b, c);
#else
    return fminf(c, a + b);
#endif
}

__device__ __forceinline__ dist_t fw_get(const dist4_t& v, int i) {
    return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w));
}

__device__ __forceinline__ int fw_swz(int row, int unit) {
    return row * FW_U + (unit ^ ((row >> 2) & 7));
}

// X[kk][i] = S[kk0 + kk][i] for kk < FW_KC (S row-major with row stride ld)
__device__ __forceinline__ void fw_fill_direct(dist4_t* X, const dist_t* S, long ld, int kk0) {
#pragma unroll 4
    for (int e = threadIdx.x; e < FW_KC * FW_U; e += blockDim.x) {
        int row = e / FW_U, u = e % FW_U;
        X[fw_swz(row, u)] = *reinterpret_cast<const dist4_t*>(S + (long)(kk0 + row) * ld + 4 * u);
    }
}

// X[kk][i] = S[i][kk0 + kk] for kk < FW_KC: 4x4 blocks transposed in registers
__device__ __forceinline__ void fw_fill_transpose(dist4_t* X, const dist_t* S, long ld, int kk0) {
    constexpr int QK = FW_KC / 4;
#pragma unroll 2
    for (int e = threadIdx.x; e < FW_U * QK; e += blockDim.x) {
        int q = e % QK, p = e / QK;
        const dist_t* s = S + (long)(4 * p) * ld + kk0 + 4 * q;
        dist4_t r0 = *reinterpret_cast<const dist4_t*>(s);
        dist4_t r1 = *reinterpret_cast<const dist4_t*>(s + ld);
        dist4_t r2 = *reinterpret_cast<const dist4_t*>(s + 2 * ld);
        dist4_t r3 = *reinterpret_cast<const dist4_t*>(s + 3 * ld);
        X[fw_swz(4 * q + 0, p)] = {r0.x, r1.x, r2.x, r3.x};
        X[fw_swz(4 * q + 1, p)] = {r0.y, r1.y, r2.y, r3.y};
        X[fw_swz(4 * q + 2, p)] = {r0.z, r1.z, r2.z, r3.z};
        X[fw_swz(4 * q + 3, p)] = {r0.w, r1.w, r2.w, r3.w};
    }
}

// C = min(C, A (x) B) on B x B tiles. a_t: the stored tile is A^T; b_t: stored tile is B^T.
// C may alias A or B (stage 2): every read of A and B happens before C is written.
// Needs blockDim.x == FW_THREADS and 2 * FW_KC * FW_B dist_t of shared memory.
__device__ __forceinline__ void fw_minplus_tile_simple(dist_t* C, long ldc, const dist_t* A, long lda, bool a_t,
                                                       const dist_t* Bm, long ldb, bool b_t, dist4_t* As,
                                                       dist4_t* Bs) {
    const int tid = threadIdx.x;
    const int ty = tid / FW_NTX, tx = tid % FW_NTX;
    constexpr int MU = FW_TM / 4, NU = FW_TN / 4;
    dist_t acc[FW_TM][FW_TN];
#pragma unroll
    for (int m = 0; m < MU; ++m)
#pragma unroll
        for (int a = 0; a < 4; ++a) {
            const int row = 4 * (ty + m * FW_NTY) + a;
#pragma unroll
            for (int n = 0; n < NU; ++n) {
                dist4_t v = *reinterpret_cast<const dist4_t*>(C + (long)row * ldc + 4 * (tx + n * FW_NTX));
#pragma unroll
                for (int b = 0; b < 4; ++b) acc[4 * m + a][4 * n + b] = fw_get(v, b);
            }
        }

    for (int kk0 = 0; kk0 < FW_B; kk0 += FW_KC) {
        if (kk0) __syncthreads();
        // As[kk][i] = A[i][kk]
        if (a_t) fw_fill_direct(As, A, lda, kk0);
        else fw_fill_transpose(As, A, lda, kk0);
        // Bs[kk][j] = B[kk][j]
        if (b_t) fw_fill_transpose(Bs, Bm, ldb, kk0);
        else fw_fill_direct(Bs, Bm, ldb, kk0);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < FW_KC; ++kk) {
            dist4_t av[MU], bv[NU];
#pragma unroll
            for (int m = 0; m < MU; ++m) av[m] = As[fw_swz(kk, ty + m * FW_NTY)];
#pragma unroll
            for (int n = 0; n < NU; ++n) bv[n] = Bs[fw_swz(kk, tx + n * FW_NTX)];
#pragma unroll
            for (int i = 0; i < FW_TM; ++i) {
                const dist_t ai = fw_get(av[i / 4], i % 4);
#pragma unroll
                for (int j = 0; j < FW_TN; ++j) acc[i][j] = fw_relax(acc[i][j], ai, fw_get(bv[j / 4], j % 4));
            }
        }
    }

#pragma unroll
    for (int m = 0; m < MU; ++m)
#pragma unroll
        for (int a = 0; a < 4; ++a) {
            const int row = 4 * (ty + m * FW_NTY) + a;
#pragma unroll
            for (int n = 0; n < NU; ++n) {
                const int i = 4 * m + a, j = 4 * n;
                dist4_t v = {acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]};
                *reinterpret_cast<dist4_t*>(C + (long)row * ldc + 4 * (tx + n * FW_NTX)) = v;
            }
        }
}

// ---- software-pipelined variant ------------------------------------------------------
// Chunk c + 1 is loaded from global memory into registers while chunk c is computed from
// shared memory (two shared buffers, one barrier per chunk). The accumulators start at
// +inf and C is read only at the end (C = min(C, acc)), so nothing waits on C up front.
#define FW_NBLK ((FW_B * FW_KC / 16 + FW_THREADS - 1) / FW_THREADS)   // 4x4 blocks per thread

struct fw_stage_regs {
    dist4_t v[4 * FW_NBLK];
};

// direct: X[kk][i] = S[kk0+kk][i]; unit e (of KC*B/4) = row e / U, unit e % U
// transposed: X[kk][i] = S[i][kk0+kk]; 4x4 block e (of B/4 * KC/4) = (p = e / QK, q = e % QK)
__device__ __forceinline__ void fw_stage_load(fw_stage_regs& r, const dist_t* S, long ld, int kk0, bool trans) {
    constexpr int QK = FW_KC / 4;
    if (!trans) {
#pragma unroll
        for (int i = 0; i < 4 * FW_NBLK; ++i) {
            const int e = threadIdx.x + i * FW_THREADS;
            if (e < FW_KC * FW_U) {
                const int row = e / FW_U, u = e % FW_U;
                r.v[i] = *reinterpret_cast<const dist4_t*>(S + (long)(kk0 + row) * ld + 4 * u);
            }
        }
    } else {
#pragma unroll
        for (int i = 0; i < FW_NBLK; ++i) {
            const int e = threadIdx.x + i * FW_THREADS;
            if (e < FW_U * QK) {
                const int q = e % QK, p = e / QK;
                const dist_t* s = S + (long)(4 * p) * ld + kk0 + 4 * q;
#pragma unroll
                for (int a = 0; a < 4; ++a) r.v[4 * i + a] = *reinterpret_cast<const dist4_t*>(s + a * ld);
            }
        }
    }
}

__device__ __forceinline__ void fw_stage_store(const fw_stage_regs& r, dist4_t* X, bool trans) {
    constexpr int QK = FW_KC / 4;
    if (!trans) {
#pragma unroll
        for (int i = 0; i < 4 * FW_NBLK; ++i) {
            const int e = threadIdx.x + i * FW_THREADS;
            if (e < FW_KC * FW_U) X[fw_swz(e / FW_U, e % FW_U)] = r.v[i];
        }
    } else {
#pragma unroll
        for (int i = 0; i < FW_NBLK; ++i) {
            const int e = threadIdx.x + i * FW_THREADS;
            if (e < FW_U * QK) {
                const int q = e % QK, p = e / QK;
                const dist4_t r0 = r.v[4 * i], r1 = r.v[4 * i + 1], r2 = r.v[4 * i + 2], r3 = r.v[4 * i + 3];
                X[fw_swz(4 * q + 0, p)] = {r0.x, r1.x, r2.x, r3.x};
                X[fw_swz(4 * q + 1, p)] = {r0.y, r1.y, r2.y, r3.y};
                X[fw_swz(4 * q + 2, p)] = {r0.z, r1.z, r2.z, r3.z};
                X[fw_swz(4 * q + 3, p)] = {r0.w, r1.w, r2.w, r3.w};
            }
        }
    }
}

// Needs 4 * FW_KC * FW_B dist_t of shared memory (two buffers of As and Bs).
__device__ __forceinline__ void fw_minplus_tile_pipe(dist_t* C, long ldc, const dist_t* A, long lda, bool a_t,
                                                     const dist_t* Bm, long ldb, bool b_t, dist4_t* smem) {
    const int tid = threadIdx.x;
    const int ty = tid / FW_NTX, tx = tid % FW_NTX;
    constexpr int MU = FW_TM / 4, NU = FW_TN / 4;
    constexpr int CH = FW_KC * FW_U;   // dist4 per buffer
    constexpr int NCH = FW_B / FW_KC;
    dist_t acc[FW_TM][FW_TN];
#pragma unroll
    for (int i = 0; i < FW_TM; ++i)
#pragma unroll
        for (int j = 0; j < FW_TN; ++j) acc[i][j] = FW_INF;

    // As[kk][i] = A[i][kk]: transposing copy unless A is stored transposed; Bs direct unless B is
    fw_stage_regs ra, rb;
    fw_stage_load(ra, A, lda, 0, !a_t);
    fw_stage_load(rb, Bm, ldb, 0, b_t);
    fw_stage_store(ra, smem, !a_t);
    fw_stage_store(rb, smem + CH, b_t);
    __syncthreads();
#pragma unroll 1
    for (int c = 0; c < NCH; ++c) {
        dist4_t* As = smem + (c & 1) * 2 * CH;
        dist4_t* Bs = As + CH;
        if (c + 1 < NCH) {
            fw_stage_load(ra, A, lda, (c + 1) * FW_KC, !a_t);
            fw_stage_load(rb, Bm, ldb, (c + 1) * FW_KC, b_t);
        }
#pragma unroll
        for (int kk = 0; kk < FW_KC; ++kk) {
            dist4_t av[MU], bv[NU];
#pragma unroll
            for (int m = 0; m < MU; ++m) av[m] = As[fw_swz(kk, ty + m * FW_NTY)];
#pragma unroll
            for (int n = 0; n < NU; ++n) bv[n] = Bs[fw_swz(kk, tx + n * FW_NTX)];
#pragma unroll
            for (int i = 0; i < FW_TM; ++i) {
                const dist_t ai = fw_get(av[i / 4], i % 4);
#pragma unroll
                for (int j = 0; j < FW_TN; ++j) acc[i][j] = fw_relax(acc[i][j], ai, fw_get(bv[j / 4], j % 4));
            }
        }
        if (c + 1 < NCH) {
            dist4_t* An = smem + ((c + 1) & 1) * 2 * CH;
            fw_stage_store(ra, An, !a_t);
            fw_stage_store(rb, An + CH, b_t);
        }
        __syncthreads();
    }

#pragma unroll
    for (int m = 0; m < MU; ++m)
#pragma unroll
        for (int a = 0; a < 4; ++a) {
            const int row = 4 * (ty + m * FW_NTY) + a;
#pragma unroll
            for (int n = 0; n < NU; ++n) {
                const int i = 4 * m + a, j = 4 * n;
                dist4_t* p = reinterpret_cast<dist4_t*>(C + (long)row * ldc + 4 * (tx + n * FW_NTX));
                const dist4_t o = *p;
                *p = {min(o.x, acc[i][j]), min(o.y, acc[i][j + 1]), min(o.z, acc[i][j + 2]), min(o.w, acc[i][j + 3])};
            }
        }
}

#if FW_PIPE
#define FW_SMEM_DIST (4 * FW_KC * FW_B)
#else
#define FW_SMEM_DIST (2 * FW_KC * FW_B)
#endif

// The stage-2/3 product; smem: FW_SMEM_DIST dist_t of dynamic shared memory.
__device__ __forceinline__ void fw_minplus_tile(dist_t* C, long ldc, const dist_t* A, long lda, bool a_t,
                                                const dist_t* Bm, long ldb, bool b_t, dist4_t* smem) {
#if FW_PIPE
    fw_minplus_tile_pipe(C, ldc, A, lda, a_t, Bm, ldb, b_t, smem);
#else
    fw_minplus_tile_simple(C, ldc, A, lda, a_t, Bm, ldb, b_t, smem, smem + FW_KC * FW_U);
#endif
}

// Stage 1: plain Floyd-Warshall on one B x B tile (row stride ld), in shared memory.
// Row kk and column kk do not change during step kk (the diagonal is 0), so one
// barrier per step is enough.
// Needs FW_B * FW_B dist_t of dynamic shared memory.
extern __shared__ __align__(16) unsigned char fw_smem[];

__device__ __forceinline__ void fw_close_tile(dist_t* T, long ld) {
    dist_t* s = reinterpret_cast<dist_t*>(fw_smem);
    for (int e = threadIdx.x; e < FW_B * FW_B; e += blockDim.x) s[e] = T[(long)(e / FW_B) * ld + e % FW_B];
    __syncthreads();
    for (int kk = 0; kk < FW_B; ++kk) {
#pragma unroll 4
        for (int e = threadIdx.x; e < FW_B * FW_B; e += blockDim.x) {
            const int i = e / FW_B, j = e % FW_B;
            s[e] = fw_relax(s[e], s[i * FW_B + kk], s[kk * FW_B + j]);
        }
        __syncthreads();
    }
    for (int e = threadIdx.x; e < FW_B * FW_B; e += blockDim.x) T[(long)(e / FW_B) * ld + e % FW_B] = s[e];
}

// Fixed-point int32 distances back to float32 in place (>= FW_INF becomes +inf).
extern "C" __global__ void fw_int_to_float(int* p, long long count, float inv_scale) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count;
         e += (long long)gridDim.x * blockDim.x) {
        const int v = p[e];
        reinterpret_cast<float*>(p)[e] = v >= 0x3FFFFFFF ? __int_as_float(0x7f800000) : (float)v * inv_scale;
    }
}
