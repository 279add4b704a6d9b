// Multi-scale NCC block matching (gpu_kernels/flow/blockmatch.py), after Marras et al. 3.2.
//
// Per pyramid level:
//   bm_blocks    one thread per B x B block of I1: mean, standard deviation, and the block's
//                normalised values a = (x - mean) / sd, stored once;
//   bm_winstats  one thread per window position of I2: 1 / (n sd) of the B x B window there;
//   bm_search    one CUDA block per image block, one thread per candidate shift (the
//                (2R+1)^2 search window plus a ring for the sub-pixel fit): NCC = winv *
//                sum(a * I2 window), a sum of products over shared memory; the best shift is
//                found by a reduction in shared memory (the paper left it to the CPU), then a
//                parabola through the NCC of the neighbours gives the sub-pixel offset;
//   bm_dense     per pixel: bilinear interpolation of the block vectors and quality.
// Blocks cover the image in a grid of ceil(W / B) x ceil(H / B); the last column and row of
// blocks are moved inwards to end at the image border, and the field's sample points are the
// blocks' true centres. Compile-time: BM_B (block side), BM_R (search radius), BM_THREADS.
#include "ops_common.cuh"

#ifndef BM_B
#define BM_B 8
#endif
#ifndef BM_R
#define BM_R 4
#endif
#define BM_K (2 * BM_R + 3)
#define BM_NC (BM_K * BM_K)
#define BM_P (BM_B + BM_K - 1)
#ifndef BM_THREADS
#define BM_THREADS 128
#endif
#define BM_INVALID (-2.0f)

#define GRID_STRIDE(i, total) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
         i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ int bm_origin(int b, int B, int n) { return min(b * B, n - B); }
__device__ __forceinline__ float bm_center(int b, int B, int n) { return (float)bm_origin(b, B, n) + 0.5f * (float)(B - 1); }

// Interpolation interval of coordinate x among the block centres along one axis.
__device__ __forceinline__ void bm_interval(float x, int nb, int B, int n, int& b0, int& b1, float& w) {
    int b = (int)floorf((x - 0.5f * (float)(B - 1)) / (float)B);
    b = ops_clampi(b, 0, nb - 1);
    if (b + 1 < nb && bm_center(b + 1, B, n) <= x) b += 1;
    if (b > 0 && bm_center(b, B, n) > x) b -= 1;
    b0 = b;
    b1 = min(b + 1, nb - 1);
    if (b1 > b0) {
        const float c0 = bm_center(b0, B, n), c1 = bm_center(b1, B, n);
        w = fminf(fmaxf((x - c0) / (c1 - c0), 0.0f), 1.0f);
    } else {
        w = 0.0f;
    }
}

// Bilinear sample of a block field f (nby x nbx) at pixel position (x, y) of a W x H level.
__device__ __forceinline__ float bm_sample(const float* __restrict__ f, int nbx, int nby, int B, int W, int H,
                                           int x0, int x1, float wx, int y0, int y1, float wy) {
    const float f00 = f[y0 * nbx + x0], f01 = f[y0 * nbx + x1];
    const float f10 = f[y1 * nbx + x0], f11 = f[y1 * nbx + x1];
    const float top = f00 + wx * (f01 - f00);
    const float bot = f10 + wx * (f11 - f10);
    return top + wy * (bot - top);
}

// One thread per block: a = (x - mean) / sd (0 where sd is 0), sd, and whether the mask covers
// at least half of the block.
extern "C" __global__ void bm_blocks(const float* __restrict__ I1, const float* __restrict__ mask, int has_mask,
                                     float* __restrict__ A, float* __restrict__ bsig, float* __restrict__ bvalid,
                                     int W, int H, int B, int nbx, int nby) {
    const long long nblk = (long long)nbx * nby;
    GRID_STRIDE(blk, nblk) {
        const int bx = (int)(blk % nbx), by = (int)(blk / nbx);
        const int ox = bm_origin(bx, B, W), oy = bm_origin(by, B, H);
        const float inv_n = 1.0f / (float)(B * B);
        float s = 0.0f, sm = 0.0f;
        for (int r = 0; r < B; ++r)
            for (int c = 0; c < B; ++c) {
                s += I1[(long long)(oy + r) * W + ox + c];
                if (has_mask) sm += mask[(long long)(oy + r) * W + ox + c];
            }
        const float mean = s * inv_n;
        float ss = 0.0f;
        for (int r = 0; r < B; ++r)
            for (int c = 0; c < B; ++c) {
                const float d = I1[(long long)(oy + r) * W + ox + c] - mean;
                ss += d * d;
            }
        const float sd = sqrtf(ss * inv_n);
        const float inv = sd > 0.0f ? 1.0f / sd : 0.0f;
        float* a = A + blk * B * B;
        for (int r = 0; r < B; ++r)
            for (int c = 0; c < B; ++c) a[r * B + c] = (I1[(long long)(oy + r) * W + ox + c] - mean) * inv;
        bsig[blk] = sd;
        bvalid[blk] = (!has_mask || sm * inv_n >= 0.5f) ? 1.0f : 0.0f;
    }
}

// One thread per window position (x, y), 0 <= x <= W - B, 0 <= y <= H - B: 1 / (n sd), or 0 for
// a flat window. Sums in double precision.
extern "C" __global__ void bm_winstats(const float* __restrict__ I2, float* __restrict__ winv, int W, int H, int B) {
    const int ww = W - B + 1, wh = H - B + 1;
    const long long n = (long long)ww * wh;
    GRID_STRIDE(i, n) {
        const int x = (int)(i % ww), y = (int)(i / ww);
        double s1 = 0.0, s2 = 0.0;
        for (int r = 0; r < B; ++r) {
            const float* row = I2 + (long long)(y + r) * W + x;
            for (int c = 0; c < B; ++c) {
                const double v = (double)row[c];
                s1 += v;
                s2 += v * v;
            }
        }
        const double nn = (double)(B * B);
        const double mean = s1 / nn;
        const double var = s2 / nn - mean * mean;
        winv[i] = var > 1e-12 ? (float)(1.0 / (nn * sqrt(var))) : 0.0f;
    }
}

// One CUDA block per image block (grid nbx x nby), BM_THREADS threads (>= BM_NC).
extern "C" __global__ void __launch_bounds__(BM_THREADS)
bm_search(const float* __restrict__ A, const float* __restrict__ bsig, const float* __restrict__ bvalid,
          const float* __restrict__ I2, const float* __restrict__ winv, int W, int H, int nbx, int nby,
          const float* __restrict__ cu, const float* __restrict__ cv, int cnbx, int cnby, int cW, int cH,
          int has_coarse, float* __restrict__ bu, float* __restrict__ bv, float* __restrict__ bq,
          float flat_eps, float tau2) {
    __shared__ float sA[BM_B * BM_B];
    __shared__ float sP[BM_P * BM_P];
    __shared__ float sN[BM_NC];
    __shared__ float rv[BM_THREADS];
    __shared__ int ri[BM_THREADS];
    const int B = BM_B, K = BM_K, P = BM_P;
    const int bx = blockIdx.x, by = blockIdx.y;
    const int blk = by * nbx + bx;
    const int t = threadIdx.x;
    const int ox = bm_origin(bx, B, W), oy = bm_origin(by, B, H);

    // the coarse level's field, sampled at this block's centre, predicts the shift
    float pu = 0.0f, pv = 0.0f;
    if (has_coarse) {
        const float xc = 0.5f * bm_center(bx, B, W), yc = 0.5f * bm_center(by, B, H);
        int x0, x1, y0, y1;
        float wx, wy;
        bm_interval(xc, cnbx, B, cW, x0, x1, wx);
        bm_interval(yc, cnby, B, cH, y0, y1, wy);
        pu = 2.0f * bm_sample(cu, cnbx, cnby, B, cW, cH, x0, x1, wx, y0, y1, wy);
        pv = 2.0f * bm_sample(cv, cnbx, cnby, B, cW, cH, x0, x1, wx, y0, y1, wy);
    }
    const int sx = ops_clampi(ox + (int)rintf(pu), 0, W - B);
    const int sy = ops_clampi(oy + (int)rintf(pv), 0, H - B);
    const float sd = bsig[blk];
    const bool active = sd > flat_eps && bvalid[blk] > 0.5f;
    const int px0 = sx - BM_R - 1, py0 = sy - BM_R - 1;

    for (int i = t; i < B * B; i += BM_THREADS) sA[i] = A[(long long)blk * B * B + i];
    for (int i = t; i < P * P; i += BM_THREADS) {
        const int yy = ops_clampi(py0 + i / P, 0, H - 1), xx = ops_clampi(px0 + i % P, 0, W - 1);
        sP[i] = I2[(long long)yy * W + xx];
    }
    __syncthreads();

    if (t < BM_NC) {
        const int dy = t / K, dx = t % K;
        const int cx = px0 + dx, cy = py0 + dy;
        float val = BM_INVALID;
        if (active && cx >= 0 && cy >= 0 && cx <= W - B && cy <= H - B) {
            float s = 0.0f;
#pragma unroll 4
            for (int r = 0; r < BM_B; ++r) {
                const float* pr = sP + (dy + r) * P + dx;
                const float* ar = sA + r * BM_B;
#pragma unroll
                for (int c = 0; c < BM_B; ++c) s += ar[c] * pr[c];
            }
            val = s * winv[(long long)cy * (W - B + 1) + cx];
        }
        sN[t] = val;
    }
    __syncthreads();

    // arg max over the inner (2R+1)^2 window; ties go to the lower index (raster order)
    float v = -3.0f;
    int idx = 0x7fffffff;
    if (t < BM_NC) {
        const int ty = t / K, tx = t % K;
        if (ty >= 1 && ty <= K - 2 && tx >= 1 && tx <= K - 2) {
            v = sN[t];
            idx = t;
        }
    }
    rv[t] = v;
    ri[t] = idx;
    __syncthreads();
    for (int s = BM_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) {
            const float v2 = rv[t + s];
            const int i2 = ri[t + s];
            if (v2 > rv[t] || (v2 == rv[t] && i2 < ri[t])) {
                rv[t] = v2;
                ri[t] = i2;
            }
        }
        __syncthreads();
    }
    if (t == 0) {
        const int centre = (BM_R + 1) * K + (BM_R + 1);
        const int best = active ? ri[0] : centre;
        const float c0 = active ? rv[0] : 0.0f;
        const int ty = best / K, tx = best % K;
        float offx = 0.0f, offy = 0.0f;
        if (active) {
            const float cl = sN[best - 1], cr = sN[best + 1];
            if (cl > -1.5f && cr > -1.5f) {
                const float den = cl - 2.0f * c0 + cr;
                if (den < 0.0f) offx = fminf(fmaxf(0.5f * (cl - cr) / den, -0.5f), 0.5f);
            }
            const float cd = sN[best - K], cdn = sN[best + K];
            if (cd > -1.5f && cdn > -1.5f) {
                const float den = cd - 2.0f * c0 + cdn;
                if (den < 0.0f) offy = fminf(fmaxf(0.5f * (cd - cdn) / den, -0.5f), 0.5f);
            }
        }
        bu[blk] = (float)(px0 + tx - ox) + offx;
        bv[blk] = (float)(py0 + ty - oy) + offy;
        const float var = sd * sd;
        bq[blk] = active ? fmaxf(c0, 0.0f) * (var / (var + tau2)) : 0.0f;
    }
}

// Per pixel: bilinear interpolation of the block field between block centres; 0 outside the mask.
extern "C" __global__ void bm_dense(const float* __restrict__ bu, const float* __restrict__ bv,
                                    const float* __restrict__ bq, int nbx, int nby, int B,
                                    const float* __restrict__ mask, int has_mask, float* __restrict__ u,
                                    float* __restrict__ v, float* __restrict__ q, int W, int H) {
    const long long n = (long long)W * H;
    GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        int x0, x1, y0, y1;
        float wx, wy;
        bm_interval((float)x, nbx, B, W, x0, x1, wx);
        bm_interval((float)y, nby, B, H, y0, y1, wy);
        const float m = has_mask ? mask[i] : 1.0f;
        if (m > 0.0f) {
            u[i] = bm_sample(bu, nbx, nby, B, W, H, x0, x1, wx, y0, y1, wy);
            v[i] = bm_sample(bv, nbx, nby, B, W, H, x0, x1, wx, y0, y1, wy);
            q[i] = bm_sample(bq, nbx, nby, B, W, H, x0, x1, wx, y0, y1, wy);
        } else {
            u[i] = 0.0f;
            v[i] = 0.0f;
            q[i] = 0.0f;
        }
    }
}

// 3 x 3 median (per component) of a block field, edge-clamped: removes isolated wrong vectors
// before a level's field predicts the next.
__device__ __forceinline__ void bm_sort2(float& a, float& b) {
    const float lo = fminf(a, b), hi = fmaxf(a, b);
    a = lo;
    b = hi;
}
__device__ __forceinline__ float bm_median9(float* p) {
    // Paeth's 19-exchange network for the median of 9
    bm_sort2(p[1], p[2]); bm_sort2(p[4], p[5]); bm_sort2(p[7], p[8]);
    bm_sort2(p[0], p[1]); bm_sort2(p[3], p[4]); bm_sort2(p[6], p[7]);
    bm_sort2(p[1], p[2]); bm_sort2(p[4], p[5]); bm_sort2(p[7], p[8]);
    bm_sort2(p[0], p[3]); bm_sort2(p[5], p[8]); bm_sort2(p[4], p[7]);
    bm_sort2(p[3], p[6]); bm_sort2(p[1], p[4]); bm_sort2(p[2], p[5]);
    bm_sort2(p[4], p[7]); bm_sort2(p[4], p[2]); bm_sort2(p[6], p[4]);
    bm_sort2(p[4], p[2]);
    return p[4];
}

extern "C" __global__ void bm_median3(const float* __restrict__ src, float* __restrict__ dst, int nbx, int nby, int nch) {
    const long long n = (long long)nbx * nby;
    GRID_STRIDE(i, n * nch) {
        const int ch = (int)(i / n);
        const long long j = i % n;
        const int x = (int)(j % nbx), y = (int)(j / nbx);
        const float* f = src + ch * n;
        float p[9];
        int k = 0;
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx)
                p[k++] = f[ops_clampi(y + dy, 0, nby - 1) * nbx + ops_clampi(x + dx, 0, nbx - 1)];
        dst[i] = bm_median9(p);
    }
}
