// Pyramidal Lucas-Kanade (gpu_kernels/flow/lucas_kanade.py): gradients and structure tensor,
// the warped temporal difference, the per-pixel 2 x 2 solve. Window sums between these
// kernels are separable box filters (ops_correlate_axis). Arrays are row-major (H, W)
// float32; stacked channels are (C, H, W).
#include "flow_common.cuh"

#define GRID_STRIDE FLOW_GRID_STRIDE
#define lk_grad flow_grad

// grad = (Ix, Iy) of I1; prod = mask * (Ix^2, Ix Iy, Iy^2)
extern "C" __global__ void lk_tensor(const float* __restrict__ I1, const float* __restrict__ mask, int has_mask,
                                     float* __restrict__ grad, float* __restrict__ prod, int H, int W) {
    const long long n = (long long)H * W;
    GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        float gx, gy;
        lk_grad(I1, H, W, x, y, gx, gy);
        const float m = has_mask ? mask[i] : 1.0f;
        grad[i] = gx;
        grad[n + i] = gy;
        prod[i] = m * gx * gx;
        prod[n + i] = m * gx * gy;
        prod[2 * n + i] = m * gy * gy;
    }
}

// b = mask * (Ix, Iy) * (Ix u + Iy v - It), It = I2(x + u, y + v) - I1(x, y): the right-hand side
// of G f = b, linearised about every window pixel's own flow (scikit-image's iLK form, which
// smooths f at each iteration and stays stable where an increment form drifts).
extern "C" __global__ void lk_residual(const float* __restrict__ I1, const float* __restrict__ I2,
                                       const float* __restrict__ u, const float* __restrict__ v,
                                       const float* __restrict__ grad, const float* __restrict__ mask, int has_mask,
                                       float* __restrict__ b, int H, int W) {
    const long long n = (long long)H * W;
    GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        const float xs = (float)x + u[i], ys = (float)y + v[i];
        const float it = ops_bilinear(I2, H, W, xs, ys) - I1[i];
        // sample points outside the image carry no information
        const float m = (has_mask ? mask[i] : 1.0f) * (ops_inside(xs, ys, H, W) ? 1.0f : 0.0f);
        const float gx = grad[i], gy = grad[n + i];
        const float e = m * (gx * u[i] + gy * v[i] - it);
        b[i] = gx * e;
        b[n + i] = gy * e;
    }
}

// Smaller eigenvalue of [[a, c], [c, d]]
__device__ __forceinline__ float lk_min_eig(float a, float c, float d) {
    const float h = 0.5f * (a - d);
    return 0.5f * (a + d) - sqrtf(h * h + c * c);
}

// (u, v) = G^-1 b where the smaller eigenvalue of G (window means) exceeds eig_min (else kept).
extern "C" __global__ void lk_update(const float* __restrict__ G, const float* __restrict__ b,
                                     float* __restrict__ u, float* __restrict__ v, float eig_min, int H, int W) {
    const long long n = (long long)H * W;
    GRID_STRIDE(i, n) {
        const float a = G[i], c = G[n + i], d = G[2 * n + i];
        if (lk_min_eig(a, c, d) > eig_min) {
            const float det = a * d - c * c;
            const float b0 = b[i], b1 = b[n + i];
            u[i] = (d * b0 - c * b1) / det;
            v[i] = (a * b1 - c * b0) / det;
        }
    }
}

// Reliability q = lmin / (lmin + tau) from the smaller eigenvalue of G (window means);
// outside the mask u = v = q = 0.
extern "C" __global__ void lk_finish(const float* __restrict__ G, const float* __restrict__ mask, int has_mask,
                                     float* __restrict__ u, float* __restrict__ v, float* __restrict__ q,
                                     float* __restrict__ lmin, float tau, int H, int W) {
    const long long n = (long long)H * W;
    GRID_STRIDE(i, n) {
        const float l = fmaxf(lk_min_eig(G[i], G[n + i], G[2 * n + i]), 0.0f);
        lmin[i] = l;
        const float m = has_mask ? mask[i] : 1.0f;
        if (m > 0.0f) {
            q[i] = l / (l + tau);
        } else {
            q[i] = 0.0f;
            u[i] = 0.0f;
            v[i] = 0.0f;
        }
    }
}
