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

extern "C" __global__ void FW_BOUNDS fw_dense_stage2(dist_t* D, long ld, int k) {
    const int j = blockIdx.x / FW_SUBS, sub = blockIdx.x % FW_SUBS;
    if (j == k) return;
    dist4_t* sm = reinterpret_cast<dist4_t*>(fw_smem);
    if (blockIdx.y == 0) {  // row tile (k, j) = Dkk (x) Dkj
        dist_t* C = fw_dtile(D, ld, k, j);
        fw_minplus_tile(C, ld, fw_dtile(D, ld, k, k), ld, false, C, ld, false, sm, sub);
    } else {  // column tile (j, k) = Djk (x) Dkk
        dist_t* C = fw_dtile(D, ld, j, k);
        fw_minplus_tile(C, ld, C, ld, false, fw_dtile(D, ld, k, k), ld, false, sm, sub);
    }
}

extern "C" __global__ void FW_BOUNDS fw_dense_stage3(dist_t* D, long ld, int k) {
    const int r = blockIdx.y, c = blockIdx.x / FW_SUBS, sub = blockIdx.x % FW_SUBS;
    if (r == k || c == k) return;
    dist4_t* sm = reinterpret_cast<dist4_t*>(fw_smem);
    fw_minplus_tile(fw_dtile(D, ld, r, c), ld, fw_dtile(D, ld, r, k), ld, false, fw_dtile(D, ld, k, c), ld,
                    false, sm, sub);
}
