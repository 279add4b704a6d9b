// Structure-tensor products of the 3-D CLG motion estimator (the paper's "gradient" kernel).
//
// For every voxel: the spatial derivatives g of the fixed volume (central or forward
// differences, zero on the border voxels where the stencil would leave the volume), the
// temporal difference It = moving(p + u0(p)) - fixed(p) (trilinear warp fused in), and the
// nine products J00 J11 J22 J01 J02 J12 (g_i g_k) and b0 b1 b2 (g_i It), written as
// volumes T[c][z][y][x]. ``parts`` selects them: 1 the six spatial products J alone (they
// depend on the fixed volume only: the estimator computes them once per pyramid level),
// 2 the three data products b alone (they depend on the linearisation point u0: once per
// warp), 3 all nine (J then b). The channels chosen are written consecutively from T; with
// parts = 1 the moving volume and u0 are not read (any pointer will do).
//
// Two variants, the paper's experiment:
//   echo_tensor_cache  one thread per voxel, every read from global memory (L1/L2 caches);
//   echo_tensor_smem   a (TY x TX) tile of z-slices with a one-voxel halo in shared memory,
//                      three slices (z-1, z, z+1) rotating while the block marches through
//                      a chunk of z: each fixed-volume voxel is loaded once per block.
#include "echo_common.cuh"

__device__ __forceinline__ void echo_write_products(float* __restrict__ T, i64 N, i64 idx, float gz, float gy,
                                                    float gx, float it, int parts) {
    if (parts & 1) {
        T[idx] = gz * gz;
        T[N + idx] = gy * gy;
        T[2 * N + idx] = gx * gx;
        T[3 * N + idx] = gz * gy;
        T[4 * N + idx] = gz * gx;
        T[5 * N + idx] = gy * gx;
        T += 6 * N;
    }
    if (parts & 2) {
        T[idx] = gz * it;
        T[N + idx] = gy * it;
        T[2 * N + idx] = gx * it;
    }
}

__device__ __forceinline__ float echo_it(const float* __restrict__ mov, const float* __restrict__ u, i64 N, i64 idx,
                                         int z, int y, int x, int Z, int Y, int X, float f) {
    float pz = (float)z + __ldg(u + idx);
    float py = (float)y + __ldg(u + N + idx);
    float px = (float)x + __ldg(u + 2 * N + idx);
    return echo_trilinear(mov, Z, Y, X, pz, py, px) - f;
}

extern "C" __global__ void echo_tensor_cache(const float* __restrict__ fix, const float* __restrict__ mov,
                                             const float* __restrict__ u, float* __restrict__ T, int Z, int Y,
                                             int X, int central, int parts) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z;
    if (x >= X || y >= Y || z >= Z) return;
    const i64 N = (i64)Z * Y * X;
    const i64 idx = echo_idx(z, y, x, Y, X);
    const float f = __ldg(fix + idx);
    float gz = 0.f, gy = 0.f, gx = 0.f;
    if (central) {
        if (z > 0 && z < Z - 1) gz = 0.5f * (__ldg(fix + idx + (i64)Y * X) - __ldg(fix + idx - (i64)Y * X));
        if (y > 0 && y < Y - 1) gy = 0.5f * (__ldg(fix + idx + X) - __ldg(fix + idx - X));
        if (x > 0 && x < X - 1) gx = 0.5f * (__ldg(fix + idx + 1) - __ldg(fix + idx - 1));
    } else {
        if (z < Z - 1) gz = __ldg(fix + idx + (i64)Y * X) - f;
        if (y < Y - 1) gy = __ldg(fix + idx + X) - f;
        if (x < X - 1) gx = __ldg(fix + idx + 1) - f;
    }
    const float it = (parts & 2) ? echo_it(mov, u, N, idx, z, y, x, Z, Y, X, f) : 0.f;
    echo_write_products(T, N, idx, gz, gy, gx, it, parts);
}

extern "C" __global__ void __launch_bounds__(ECHO_TX * ECHO_TY)
echo_tensor_smem(const float* __restrict__ fix, const float* __restrict__ mov, const float* __restrict__ u,
                 float* __restrict__ T, int Z, int Y, int X, int central, int parts, int zchunk) {
    __shared__ float s[3][ECHO_TY + 2][ECHO_TX + 2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = blockIdx.x * ECHO_TX, y0 = blockIdx.y * ECHO_TY;
    const int z0 = blockIdx.z * zchunk;
    const int z1 = min(Z, z0 + zchunk);
    const int x = x0 + tx, y = y0 + ty;
    const i64 N = (i64)Z * Y * X;
    const int tid = ty * ECHO_TX + tx;
    constexpr int W = ECHO_TX + 2, H = ECHO_TY + 2;

    auto load = [&](int slot, int zz) {
        zz = echo_clamp(zz, Z - 1);
        for (int k = tid; k < W * H; k += ECHO_TX * ECHO_TY) {
            int j = k / W, i = k - j * W;
            int yy = echo_clamp(y0 - 1 + j, Y - 1), xx = echo_clamp(x0 - 1 + i, X - 1);
            s[slot][j][i] = __ldg(fix + echo_idx(zz, yy, xx, Y, X));
        }
    };
    load(0, z0 - 1);
    load(1, z0);
    for (int z = z0; z < z1; ++z) {
        const int sm = (z - z0) % 3, sc = (z - z0 + 1) % 3, sp = (z - z0 + 2) % 3;
        __syncthreads();
        load(sp, z + 1);
        __syncthreads();
        if (x < X && y < Y) {
            const float f = s[sc][ty + 1][tx + 1];
            float gz = 0.f, gy = 0.f, gx = 0.f;
            if (central) {
                if (z > 0 && z < Z - 1) gz = 0.5f * (s[sp][ty + 1][tx + 1] - s[sm][ty + 1][tx + 1]);
                if (y > 0 && y < Y - 1) gy = 0.5f * (s[sc][ty + 2][tx + 1] - s[sc][ty][tx + 1]);
                if (x > 0 && x < X - 1) gx = 0.5f * (s[sc][ty + 1][tx + 2] - s[sc][ty + 1][tx]);
            } else {
                if (z < Z - 1) gz = s[sp][ty + 1][tx + 1] - f;
                if (y < Y - 1) gy = s[sc][ty + 2][tx + 1] - f;
                if (x < X - 1) gx = s[sc][ty + 1][tx + 2] - f;
            }
            const i64 idx = echo_idx(z, y, x, Y, X);
            const float it = (parts & 2) ? echo_it(mov, u, N, idx, z, y, x, Z, Y, X, f) : 0.f;
            echo_write_products(T, N, idx, gz, gy, gx, it, parts);
        }
    }
}
