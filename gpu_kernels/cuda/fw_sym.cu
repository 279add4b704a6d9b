// Tiled Floyd-Warshall for undirected graphs, "gpu-sym" method of gpu_kernels/mesh/apsp.py
// (Marras et al., after Katz & Kider 2008). Only the T(T+1)/2 tiles on or below the
// diagonal are stored, each B x B tile contiguous (row stride FW_B), the tiles one after
// another in z-order: Morton order of (row tile, column tile), restricted to r >= c.
//   zidx[r * T + c]  storage rank of lower tile (r, c)  (r >= c; -1 above the diagonal)
//   tiles[z]         (r << 16) | c of the tile with rank z
// A tile (r, c) with r < c is never stored: it is the transpose of (c, r), and it is read
// that way straight into shared memory (fw_common.cuh: the fill swaps direct/transposing
// copies). Per diagonal tile k:
//   stage 1  fw_sym_stage1<<<1, FW_S1_THREADS>>>  closes (k, k)
//   stage 2  fw_sym_stage2<<<T * S, FW_THREADS>>>     the stored tiles of row/column k
//   stage 3  fw_sym_stage3<<<T(T+1)/2 * S, FW_THREADS>>> 1-D grid over the lower tiles, in z-order
// where S = FW_SUBS CUDA blocks share one tile (blockIdx.x % S is the sub-block).
#include "fw_common.cuh"

#define FW_BB ((long)FW_B * FW_B)

__device__ __forceinline__ dist_t* fw_ztile(dist_t* P, const int* zidx, int T, int r, int c) {
    return P + (long)zidx[r * T + c] * FW_BB;
}

extern "C" __global__ void __launch_bounds__(FW_S1_THREADS)
    fw_sym_stage1(dist_t* P, const int* zidx, int T, int k) {
    fw_close_tile(fw_ztile(P, zidx, T, k, k), FW_B);
}

// flags[t] is set to k + 1 when D[t, k] (stored (t, k) or (k, t)) holds a finite distance
// after stage 2 of round k; stage 3 skips tiles whose operands are all +inf.
extern "C" __global__ void FW_BOUNDS fw_sym_stage2(dist_t* P, const int* zidx, int T, int k, int* flags) {
    const int t = blockIdx.x / FW_SUBS, sub = blockIdx.x % FW_SUBS;
    if (t == k) return;
    dist4_t* sm = reinterpret_cast<dist4_t*>(fw_smem);
    const dist_t* Dkk = fw_ztile(P, zidx, T, k, k);
    bool fin;
    if (t > k) {  // (t, k) = Dtk (x) Dkk
        dist_t* C = fw_ztile(P, zidx, T, t, k);
        fin = fw_minplus_tile(C, FW_B, C, FW_B, false, Dkk, FW_B, false, sm, sub);
    } else {  // (k, t) = Dkk (x) Dkt
        dist_t* C = fw_ztile(P, zidx, T, k, t);
        fin = fw_minplus_tile(C, FW_B, Dkk, FW_B, false, C, FW_B, false, sm, sub);
    }
    if (__syncthreads_or(fin) && threadIdx.x == 0) flags[t] = k + 1;
}

extern "C" __global__ void FW_BOUNDS fw_sym_stage3(dist_t* P, const int* zidx, const int* tiles, int T, int k,
                                                  const int* flags) {
    const int z = blockIdx.x / FW_SUBS, sub = blockIdx.x % FW_SUBS;
    const int rc = tiles[z];
    const int r = rc >> 16, c = rc & 0xFFFF;
    if (r == k || c == k) return;
#if FW_SKIP
    if (flags[r] != k + 1 || flags[c] != k + 1) return;   // D[r, k] or D[k, c] all +inf
#endif
    dist4_t* sm = reinterpret_cast<dist4_t*>(fw_smem);
    // A = D[r, k]: stored as (r, k) when r > k, else as the transpose (k, r)
    const bool a_t = r < k;
    const dist_t* A = a_t ? fw_ztile(P, zidx, T, k, r) : fw_ztile(P, zidx, T, r, k);
    // B = D[k, c]: stored as (k, c) when k > c, else as the transpose (c, k)
    const bool b_t = k < c;
    const dist_t* Bm = b_t ? fw_ztile(P, zidx, T, c, k) : fw_ztile(P, zidx, T, k, c);
    fw_minplus_tile(P + (long)z * FW_BB, FW_B, A, FW_B, a_t, Bm, FW_B, b_t, sm, sub);
}

__device__ __forceinline__ float fw_to_float(dist_t v, float inv_scale) {
#if FW_INT
    return v >= FW_INF ? __int_as_float(0x7f800000) : (float)v * inv_scale;
#else
    return v;
#endif
}

// Packed lower tiles -> dense symmetric n x n float32 (row stride n), one block per tile.
// Converts int32 fixed point to float (scale inv_scale, >= FW_INF -> +inf) on the way.
// For FW order = caller's order (no reordering).
extern "C" __global__ void __launch_bounds__(256)
    fw_sym_unpack(const dist_t* P, const int* tiles, float* out, long n, float inv_scale) {
    __shared__ float s[32][33];
    const int rc = tiles[blockIdx.x];
    const int r = rc >> 16, c = rc & 0xFFFF;
    const dist_t* src = P + (long)blockIdx.x * FW_BB;
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8
    for (int i0 = 0; i0 < FW_B; i0 += 32)
        for (int j0 = 0; j0 < FW_B; j0 += 32) {
            __syncthreads();
            for (int y = ty; y < 32; y += 8) {
                const float f = fw_to_float(src[(i0 + y) * FW_B + j0 + tx], inv_scale);
                s[y][tx] = f;
                const long gi = (long)r * FW_B + i0 + y, gj = (long)c * FW_B + j0 + tx;
                if (gi < n && gj < n) out[gi * n + gj] = f;
            }
            if (r == c) continue;
            __syncthreads();
            for (int y = ty; y < 32; y += 8) {  // transposed copy into tile (c, r)
                const long gi = (long)c * FW_B + j0 + y, gj = (long)r * FW_B + i0 + tx;
                if (gi < n && gj < n) out[gi * n + gj] = s[tx][y];
            }
        }
}

// The same for a reordered FW: out[i][j] = D(inv[i], inv[j]) where inv[i] is the FW node of
// the caller's node i. Gathers (coalesced writes, reads from the lower tiles).
// Grid (ceil(n / 256), rows), the rows looping by gridDim.y.
extern "C" __global__ void __launch_bounds__(256)
    fw_sym_unpack_perm(const dist_t* P, const int* zidx, int T, const int* inv, float* out, long n,
                       float inv_scale) {
    const long j = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const int b = inv[j];
    for (long i = blockIdx.y; i < n; i += gridDim.y) {
        const int a = inv[i];
        const int r = max(a, b), c = min(a, b);
        const long z = zidx[(r / FW_B) * T + c / FW_B];
        out[i * n + j] = fw_to_float(P[z * FW_BB + (r % FW_B) * FW_B + (c % FW_B)], inv_scale);
    }
}
