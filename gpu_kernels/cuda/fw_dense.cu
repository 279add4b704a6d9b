// Tiled Floyd-Warshall for directed graphs (Katz & Kider 2008), "gpu" method of
// gpu_kernels/mesh/apsp.py. The distance matrix is dense, row-major, padded to a multiple
// of FW_B with +inf (0 on the diagonal), row stride ld. Per diagonal tile k:
//   stage 1  fw_dense_stage1<<<1, FW_S1_THREADS>>>   closes tile (k, k)
//   stage 2  fw_dense_stage2<<<(T * S, 2), FW_THREADS>>> row tiles (k, j) and column tiles (j, k)
//   stage 3  fw_dense_stage3<<<(T * S, T), FW_THREADS>>> every other tile (i, j)
// where S = FW_SUBS CUDA blocks share one tile (blockIdx.x % S is the sub-block).
// See fw_common.cuh for the register-blocked min-plus tile product.
#include "fw_common.cuh"

__device__ __forceinline__ dist_t* fw_dtile(dist_t* D, long ld, int r, int c) {
    return D + (long)r * FW_B * ld + (long)c * FW_B;
}

extern "C" __global__ void __launch_bounds__(FW_S1_THREADS) fw_dense_stage1(dist_t* D, long ld, int k) {
    fw_close_tile(fw_dtile(D, ld, k, k), ld);
}

// flags[j] (row tile (k, j)) and flags[T + j] (column tile (j, k)) are set to k + 1 when the
// tile holds a finite distance after stage 2 of round k; stage 3 skips all-inf operands.
extern "C" __global__ void FW_BOUNDS fw_dense_stage2(dist_t* D, long ld, int k, int* flags, int T) {
    const int j = blockIdx.x / FW_SUBS, sub = blockIdx.x % FW_SUBS;
    if (j == k) return;
    dist4_t* sm = reinterpret_cast<dist4_t*>(fw_smem);
    bool fin;
    if (blockIdx.y == 0) {  // row tile (k, j) = Dkk (x) Dkj
        dist_t* C = fw_dtile(D, ld, k, j);
        fin = fw_minplus_tile(C, ld, fw_dtile(D, ld, k, k), ld, false, C, ld, false, sm, sub);
    } else {  // column tile (j, k) = Djk (x) Dkk
        dist_t* C = fw_dtile(D, ld, j, k);
        fin = fw_minplus_tile(C, ld, C, ld, false, fw_dtile(D, ld, k, k), ld, false, sm, sub);
    }
    if (__syncthreads_or(fin) && threadIdx.x == 0) flags[blockIdx.y * T + j] = k + 1;
}

extern "C" __global__ void FW_BOUNDS fw_dense_stage3(dist_t* D, long ld, int k, const int* flags, int T) {
    const int r = blockIdx.y, c = blockIdx.x / FW_SUBS, sub = blockIdx.x % FW_SUBS;
    if (r == k || c == k) return;
#if FW_SKIP
    if (flags[T + r] != k + 1 || flags[c] != k + 1) return;   // D[r, k] or D[k, c] all +inf
#endif
    dist4_t* sm = reinterpret_cast<dist4_t*>(fw_smem);
    fw_minplus_tile(fw_dtile(D, ld, r, c), ld, fw_dtile(D, ld, r, k), ld, false, fw_dtile(D, ld, k, c), ld,
                    false, sm, sub);
}
