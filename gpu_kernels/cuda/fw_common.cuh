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
//   FW_PIPE 1: software-pipelined product (next k-chunk loaded into registers while the
//           current one is computed; two shared buffers); 0: load, sync, compute
//   FW_SKIP 1: stage 3 skips a tile when one of its two dependency tiles is all +inf
//   FW_BM, FW_BN  output sub-block of one CUDA block in stages 2 and 3 (default B x B).
//           A B x B tile is then (B/BM)(B/BN) blocks; a large B (fewer rounds, so fewer
//           passes over the matrix) keeps a small, fast per-block footprint.
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
#define FW_PIPE 0
#endif
#ifndef FW_BM
#define FW_BM FW_B
#endif
#ifndef FW_SKIP
#define FW_SKIP 1   // stage 3 skips tiles whose dependency tiles are all +inf (exact no-ops)
#endif
#ifndef FW_BN
#define FW_BN FW_B
#endif

#define FW_NTY (FW_BM / FW_TM)
#define FW_NTX (FW_BN / FW_TN)
#define FW_THREADS (FW_NTY * FW_NTX)
#define FW_UA (FW_BM / 4)        // 16-byte units per row of As
#define FW_UB (FW_BN / 4)        // 16-byte units per row of Bs
#define FW_SUBN (FW_B / FW_BN)
#define FW_SUBS ((FW_B / FW_BM) * FW_SUBN)   // CUDA blocks per tile in stages 2 and 3
#define FW_S1_THREADS ((FW_B * FW_B / 16) > 1024 ? 1024 : (FW_B * FW_B / 16))

#if FW_MINB > 0
#define FW_BOUNDS __launch_bounds__(FW_THREADS, FW_MINB)
#else
#define FW_BOUNDS __launch_bounds__(FW_THREADS)
#endif

static_assert(FW_B % 32 == 0, "tile size must be a multiple of 32");
static_assert(FW_TM % 4 == 0 && FW_TN % 4 == 0, "register block must be a multiple of 4");
static_assert(FW_B % FW_KC == 0 && FW_KC % 4 == 0, "k-chunk must divide the tile size");
static_assert(FW_B % FW_BM == 0 && FW_B % FW_BN == 0 && FW_BM % 32 == 0 && FW_BN % 32 == 0,
              "sub-blocks must divide the tile and be multiples of 32");

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

__device__ __forceinline__ dist4_t fw_make4(dist_t a, dist_t b, dist_t c, dist_t d) {
    dist4_t v;
    v.x = a; v.y = b; v.z = c; v.w = d;
    return v;
}

__device__ __forceinline__ dist_t fw_get(const dist4_t& v, int i) {
    return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w));
}

// shared-memory index (in 16-byte units) of unit u of row r, U units per row
template <int U>
__device__ __forceinline__ int fw_swz(int row, int unit) {
    static_assert(U % 8 == 0, "rows must hold a multiple of 8 units");
    return row * U + (unit ^ ((row >> 2) & 7));
}

// Staging of one k-chunk of a dependency operand into shared memory X[kk][0..4U):
//   direct:     X[kk][i] = S[kk0 + kk][i]    unit e of KC*U:     row e / U, unit e % U
//   transposed: X[kk][i] = S[i][kk0 + kk]    4x4 block e of U*KC/4: p = e / QK, q = e % QK
// Global loads are 16-byte and coalesced either way; the transposed copy transposes 4x4
// blocks in registers, and the swizzle keeps the shared stores conflict-free.
template <int U>
struct fw_stage {
    static constexpr int QK = FW_KC / 4;
    static constexpr int NBLK = (U * QK + FW_THREADS - 1) / FW_THREADS;   // 4x4 blocks per thread
    dist4_t v[4 * NBLK];

    __device__ __forceinline__ void load(const dist_t* S, long ld, int kk0, bool trans) {
        if (!trans) {
#pragma unroll
            for (int i = 0; i < 4 * NBLK; ++i) {
                const int e = threadIdx.x + i * FW_THREADS;
                if (e < FW_KC * U)
                    v[i] = *reinterpret_cast<const dist4_t*>(S + (long)(kk0 + e / U) * ld + 4 * (e % U));
            }
        } else {
#pragma unroll
            for (int i = 0; i < NBLK; ++i) {
                const int e = threadIdx.x + i * FW_THREADS;
                if (e < U * QK) {
                    const dist_t* s = S + (long)(4 * (e / QK)) * ld + kk0 + 4 * (e % QK);
#pragma unroll
                    for (int a = 0; a < 4; ++a) v[4 * i + a] = *reinterpret_cast<const dist4_t*>(s + a * ld);
                }
            }
        }
    }

    __device__ __forceinline__ void store(dist4_t* X, bool trans) const {
        if (!trans) {
#pragma unroll
            for (int i = 0; i < 4 * NBLK; ++i) {
                const int e = threadIdx.x + i * FW_THREADS;
                if (e < FW_KC * U) X[fw_swz<U>(e / U, e % U)] = v[i];
            }
        } else {
#pragma unroll
            for (int i = 0; i < NBLK; ++i) {
                const int e = threadIdx.x + i * FW_THREADS;
                if (e < U * QK) {
                    const int q = e % QK, p = e / QK;
                    const dist4_t r0 = v[4 * i], r1 = v[4 * i + 1], r2 = v[4 * i + 2], r3 = v[4 * i + 3];
                    X[fw_swz<U>(4 * q + 0, p)] = fw_make4(r0.x, r1.x, r2.x, r3.x);
                    X[fw_swz<U>(4 * q + 1, p)] = fw_make4(r0.y, r1.y, r2.y, r3.y);
                    X[fw_swz<U>(4 * q + 2, p)] = fw_make4(r0.z, r1.z, r2.z, r3.z);
                    X[fw_swz<U>(4 * q + 3, p)] = fw_make4(r0.w, r1.w, r2.w, r3.w);
                }
            }
        }
    }
};

// Streaming versions of the same copies (few live registers), for FW_PIPE == 0.
template <int U>
__device__ __forceinline__ void fw_fill(dist4_t* X, const dist_t* S, long ld, int kk0, bool trans) {
    if (!trans) {
#pragma unroll 4
        for (int e = threadIdx.x; e < FW_KC * U; e += FW_THREADS)
            X[fw_swz<U>(e / U, e % U)] = *reinterpret_cast<const dist4_t*>(S + (long)(kk0 + e / U) * ld + 4 * (e % U));
    } else {
        constexpr int QK = FW_KC / 4;
#pragma unroll 2
        for (int e = threadIdx.x; e < U * QK; e += FW_THREADS) {
            const int q = e % QK, p = e / QK;
            const dist_t* s = S + (long)(4 * p) * ld + kk0 + 4 * q;
            const dist4_t r0 = *reinterpret_cast<const dist4_t*>(s);
            const dist4_t r1 = *reinterpret_cast<const dist4_t*>(s + ld);
            const dist4_t r2 = *reinterpret_cast<const dist4_t*>(s + 2 * ld);
            const dist4_t r3 = *reinterpret_cast<const dist4_t*>(s + 3 * ld);
            X[fw_swz<U>(4 * q + 0, p)] = fw_make4(r0.x, r1.x, r2.x, r3.x);
            X[fw_swz<U>(4 * q + 1, p)] = fw_make4(r0.y, r1.y, r2.y, r3.y);
            X[fw_swz<U>(4 * q + 2, p)] = fw_make4(r0.z, r1.z, r2.z, r3.z);
            X[fw_swz<U>(4 * q + 3, p)] = fw_make4(r0.w, r1.w, r2.w, r3.w);
        }
    }
}

#define FW_CHA (FW_KC * FW_UA)   // dist4 units of one As chunk
#define FW_CHB (FW_KC * FW_UB)
#if FW_PIPE
#define FW_SMEM_DIST (8 * (FW_CHA + FW_CHB))   // two buffers
#else
#define FW_SMEM_DIST (4 * (FW_CHA + FW_CHB))
#endif

// C = min(C, A (x) B) on the sub-block `sub` (BM x BN) of a B x B tile, inner dimension B.
// Returns whether this thread's share of the new C holds a finite value (stage 2 uses it to
// flag dependency tiles that are all +inf: stage 3 skips the products with them, which are
// exact no-ops since min(c, inf + b) = c).
// a_t: the stored tile is A^T; b_t: the stored tile is B^T (row strides lda, ldb).
// Needs blockDim.x == FW_THREADS and FW_SMEM_DIST dist_t of shared memory.
// C may alias A or B (stage 2). Within a block every read of A and B precedes the write
// of C; across the sub-blocks of one tile a block may read values another has already
// lowered. That is harmless in Floyd-Warshall: every value is always the length of some
// path and never above what the exact schedule would hold, so the result is the same.
__device__ __forceinline__ bool fw_minplus_tile(dist_t* C, long ldc, const dist_t* A, long lda, bool a_t,
                                                const dist_t* Bm, long ldb, bool b_t, dist4_t* smem, int sub) {
    const int tid = threadIdx.x;
    const int ty = tid / FW_NTX, tx = tid % FW_NTX;
    constexpr int MU = FW_TM / 4, NU = FW_TN / 4;
    constexpr int NCH = FW_B / FW_KC;
    const int i0 = (sub / FW_SUBN) * FW_BM, j0 = (sub % FW_SUBN) * FW_BN;
    C += (long)i0 * ldc + j0;
    // As[kk][i] = A[i0 + i][kk]: a transposing copy of stored rows i0.., unless A is stored
    // transposed (then a direct copy of stored columns i0..). Bs[kk][j] = B[kk][j0 + j] alike.
    const bool a_tr = !a_t, b_tr = b_t;
    A += a_t ? (long)i0 : (long)i0 * lda;
    Bm += b_t ? (long)j0 * ldb : (long)j0;

    dist_t acc[FW_TM][FW_TN];
#if FW_PIPE
#pragma unroll
    for (int i = 0; i < FW_TM; ++i)
#pragma unroll
        for (int j = 0; j < FW_TN; ++j) acc[i][j] = FW_INF;
#else
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
#endif

#if FW_PIPE
    fw_stage<FW_UA> ra;
    fw_stage<FW_UB> rb;
    ra.load(A, lda, 0, a_tr);
    rb.load(Bm, ldb, 0, b_tr);
    ra.store(smem, a_tr);
    rb.store(smem + FW_CHA, b_tr);
#endif
#pragma unroll 1
    for (int c = 0; c < NCH; ++c) {
#if FW_PIPE
        __syncthreads();
        const dist4_t* As = smem + (c & 1) * (FW_CHA + FW_CHB);
        if (c + 1 < NCH) {
            ra.load(A, lda, (c + 1) * FW_KC, a_tr);
            rb.load(Bm, ldb, (c + 1) * FW_KC, b_tr);
        }
#else
        if (c) __syncthreads();
        fw_fill<FW_UA>(smem, A, lda, c * FW_KC, a_tr);
        fw_fill<FW_UB>(smem + FW_CHA, Bm, ldb, c * FW_KC, b_tr);
        __syncthreads();
        const dist4_t* As = smem;
#endif
        const dist4_t* Bs = As + FW_CHA;
#pragma unroll
        for (int kk = 0; kk < FW_KC; ++kk) {
            dist4_t av[MU], bv[NU];
#pragma unroll
            for (int m = 0; m < MU; ++m) av[m] = As[fw_swz<FW_UA>(kk, ty + m * FW_NTY)];
#pragma unroll
            for (int n = 0; n < NU; ++n) bv[n] = Bs[fw_swz<FW_UB>(kk, tx + n * FW_NTX)];
#pragma unroll
            for (int i = 0; i < FW_TM; ++i) {
                const dist_t ai = fw_get(av[i / 4], i % 4);
#pragma unroll
                for (int j = 0; j < FW_TN; ++j) acc[i][j] = fw_relax(acc[i][j], ai, fw_get(bv[j / 4], j % 4));
            }
        }
#if FW_PIPE
        if (c + 1 < NCH) {
            dist4_t* An = smem + ((c + 1) & 1) * (FW_CHA + FW_CHB);
            ra.store(An, a_tr);
            rb.store(An + FW_CHA, b_tr);
        }
#endif
    }

    bool finite = false;   // does this thread's part of the result hold a finite distance?
#pragma unroll
    for (int m = 0; m < MU; ++m)
#pragma unroll
        for (int a = 0; a < 4; ++a) {
            const int row = 4 * (ty + m * FW_NTY) + a;
#pragma unroll
            for (int n = 0; n < NU; ++n) {
                const int i = 4 * m + a, j = 4 * n;
                dist4_t* p = reinterpret_cast<dist4_t*>(C + (long)row * ldc + 4 * (tx + n * FW_NTX));
#if FW_PIPE
                const dist4_t o = *p;
                const dist4_t v = fw_make4(min(o.x, acc[i][j]), min(o.y, acc[i][j + 1]), min(o.z, acc[i][j + 2]),
                                           min(o.w, acc[i][j + 3]));
#else
                const dist4_t v = fw_make4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
#endif
                *p = v;
                finite |= (v.x < FW_INF) | (v.y < FW_INF) | (v.z < FW_INF) | (v.w < FW_INF);
            }
        }
    return finite;
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
