// TV-L1 variational refinement (gpu_kernels/flow/refine.py): Zach, Pock & Bischof's duality-based
// TV-L1 with Wedel et al.'s median filtering, warped coarse to fine. Per warp:
//   tv_warp     I2 and its gradient sampled at x + f0; the linearised residual's constant part;
//               the gradient is the mean of I1's and the warped I2's (symmetric), and a data
//               weight w (0 outside the image or the mask, else the seed's quality term);
// then per iteration:
//   tv_primal   thresholding step v = f + TH(rho), then f = v + theta div p;
//   tv_dual     p = (p + tau/theta grad f) / (1 + tau/theta |grad f|), one p per flow component;
// and after the iterations tv_median5: 5 x 5 median of u and v.
// Arrays are row-major (H, W) float32; p is (4, H, W): (p_ux, p_uy, p_vx, p_vy).
#include "flow_common.cuh"

// warp: I2s = (I2, I2x, I2y) stacked (3, H, W); out gxy (2, H, W) = symmetric gradient * sqrt(w),
// rc = (I2w - I1 - g . f0) * sqrt(w); with occ > 0 the weight is also multiplied by
// 1 / (1 + ((I2w - I1) / occ)^2): pixels the current flow cannot match (occluded, or not yet
// found) pull less on the flow, and the smoothness term fills them in from their neighbours.
extern "C" __global__ void tv_warp(const float* __restrict__ I1, const float* __restrict__ I2s,
                                   const float* __restrict__ u, const float* __restrict__ v,
                                   const float* __restrict__ weight, int has_weight, float occ,
                                   float* __restrict__ gxy, float* __restrict__ rc, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        const float xs = (float)x + u[i], ys = (float)y + v[i];
        float gx = 0.0f, gy = 0.0f, r = 0.0f;
        if (ops_inside(xs, ys, H, W)) {
            const float i2 = ops_bilinear(I2s, H, W, xs, ys);
            const float i2x = ops_bilinear(I2s + n, H, W, xs, ys);
            const float i2y = ops_bilinear(I2s + 2 * n, H, W, xs, ys);
            float i1x, i1y;
            flow_grad(I1, H, W, x, y, i1x, i1y);
            gx = 0.5f * (i2x + i1x);
            gy = 0.5f * (i2y + i1y);
            const float r0 = i2 - I1[i];
            r = r0 - gx * u[i] - gy * v[i];
            float wt = has_weight ? weight[i] : 1.0f;
            if (occ > 0.0f) {
                const float z = r0 / occ;
                wt = wt / (1.0f + z * z);
            }
            if (has_weight || occ > 0.0f) {
                const float s = sqrtf(wt);
                gx *= s;
                gy *= s;
                r *= s;
            }
        }
        gxy[i] = gx;
        gxy[n + i] = gy;
        rc[i] = r;
    }
}

// gradient of I (2 channels after the image itself): I2s = (I, Ix, Iy)
extern "C" __global__ void tv_grad(float* __restrict__ I2s, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        float gx, gy;
        flow_grad(I2s, H, W, x, y, gx, gy);
        I2s[n + i] = gx;
        I2s[2 * n + i] = gy;
    }
}

// divergence of a dual field (px, py) with the discretisation adjoint to forward differences
__device__ __forceinline__ float tv_div(const float* __restrict__ px, const float* __restrict__ py, int H, int W,
                                        int x, int y, long long i) {
    float d = px[i] + py[i];
    if (x > 0) d -= px[i - 1];
    if (y > 0) d -= py[i - W];
    return d;
}

extern "C" __global__ void tv_primal(float* __restrict__ u, float* __restrict__ v, const float* __restrict__ p,
                                     const float* __restrict__ gxy, const float* __restrict__ rc, float lt,
                                     float theta, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        const float gx = gxy[i], gy = gxy[n + i];
        const float uu = u[i], vv = v[i];
        const float g2 = gx * gx + gy * gy;
        const float rho = rc[i] + gx * uu + gy * vv;
        float du = 0.0f, dv = 0.0f;
        if (rho < -lt * g2) {
            du = lt * gx;
            dv = lt * gy;
        } else if (rho > lt * g2) {
            du = -lt * gx;
            dv = -lt * gy;
        } else if (g2 > 1e-10f) {
            const float r = rho / g2;
            du = -r * gx;
            dv = -r * gy;
        }
        u[i] = uu + du + theta * tv_div(p, p + n, H, W, x, y, i);
        v[i] = vv + dv + theta * tv_div(p + 2 * n, p + 3 * n, H, W, x, y, i);
    }
}

extern "C" __global__ void tv_dual(const float* __restrict__ u, const float* __restrict__ v, float* __restrict__ p,
                                   float taut, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        const float ux = x < W - 1 ? u[i + 1] - u[i] : 0.0f;
        const float uy = y < H - 1 ? u[i + W] - u[i] : 0.0f;
        const float vx = x < W - 1 ? v[i + 1] - v[i] : 0.0f;
        const float vy = y < H - 1 ? v[i + W] - v[i] : 0.0f;
        const float nu = 1.0f + taut * sqrtf(ux * ux + uy * uy);
        const float nv = 1.0f + taut * sqrtf(vx * vx + vy * vy);
        p[i] = (p[i] + taut * ux) / nu;
        p[n + i] = (p[n + i] + taut * uy) / nu;
        p[2 * n + i] = (p[2 * n + i] + taut * vx) / nv;
        p[3 * n + i] = (p[3 * n + i] + taut * vy) / nv;
    }
}

// edge-aware smoothness: ginv = 1 / max(exp(-alpha |grad I1|), gmin), the inverse weight of the
// total variation at each pixel (weak across the first frame's edges, where motions break)
extern "C" __global__ void tv_edge(const float* __restrict__ I1, float* __restrict__ ginv, float alpha, float gmin,
                                   int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        float gx, gy;
        flow_grad(I1, H, W, x, y, gx, gy);
        ginv[i] = 1.0f / fmaxf(expf(-alpha * sqrtf(gx * gx + gy * gy)), gmin);
    }
}

// tv_dual for the weighted total variation sum g |grad f|: the dual field is held to |p| <= g
extern "C" __global__ void tv_dual_w(const float* __restrict__ u, const float* __restrict__ v, float* __restrict__ p,
                                     const float* __restrict__ ginv, float taut, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        const float ux = x < W - 1 ? u[i + 1] - u[i] : 0.0f;
        const float uy = y < H - 1 ? u[i + W] - u[i] : 0.0f;
        const float vx = x < W - 1 ? v[i + 1] - v[i] : 0.0f;
        const float vy = y < H - 1 ? v[i + W] - v[i] : 0.0f;
        const float gi = ginv[i];
        const float nu = 1.0f + taut * sqrtf(ux * ux + uy * uy) * gi;
        const float nv = 1.0f + taut * sqrtf(vx * vx + vy * vy) * gi;
        p[i] = (p[i] + taut * ux) / nu;
        p[n + i] = (p[n + i] + taut * uy) / nu;
        p[2 * n + i] = (p[2 * n + i] + taut * vx) / nv;
        p[3 * n + i] = (p[3 * n + i] + taut * vy) / nv;
    }
}

// All `iters` iterations of a small level in one block (blockDim.x threads, one launch): the same
// primal and dual updates as tv_primal and tv_dual / tv_dual_w, each pass over every pixel
// followed by a block barrier, so the result is the one of 2 * iters launches. A level of a few
// thousand pixels costs a kernel launch's latency per pass otherwise (most of a 1080p run's time
// at the coarse levels).
extern "C" __global__ void tv_iterate_block(float* __restrict__ u, float* __restrict__ v, float* __restrict__ p,
                                            const float* __restrict__ gxy, const float* __restrict__ rc,
                                            const float* __restrict__ ginv, int has_ginv, float lt, float theta,
                                            float taut, int H, int W, int iters) {
    const int n = H * W;
    for (int it = 0; it < iters; ++it) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const int x = i % W, y = i / W;
            const float gx = gxy[i], gy = gxy[n + i];
            const float uu = u[i], vv = v[i];
            const float g2 = gx * gx + gy * gy;
            const float rho = rc[i] + gx * uu + gy * vv;
            float du = 0.0f, dv = 0.0f;
            if (rho < -lt * g2) {
                du = lt * gx;
                dv = lt * gy;
            } else if (rho > lt * g2) {
                du = -lt * gx;
                dv = -lt * gy;
            } else if (g2 > 1e-10f) {
                const float r = rho / g2;
                du = -r * gx;
                dv = -r * gy;
            }
            u[i] = uu + du + theta * tv_div(p, p + n, H, W, x, y, i);
            v[i] = vv + dv + theta * tv_div(p + 2 * n, p + 3 * n, H, W, x, y, i);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const int x = i % W, y = i / W;
            const float ux = x < W - 1 ? u[i + 1] - u[i] : 0.0f;
            const float uy = y < H - 1 ? u[i + W] - u[i] : 0.0f;
            const float vx = x < W - 1 ? v[i + 1] - v[i] : 0.0f;
            const float vy = y < H - 1 ? v[i + W] - v[i] : 0.0f;
            float nu, nv;
            if (has_ginv) {
                const float gi = ginv[i];
                nu = 1.0f + taut * sqrtf(ux * ux + uy * uy) * gi;
                nv = 1.0f + taut * sqrtf(vx * vx + vy * vy) * gi;
            } else {
                nu = 1.0f + taut * sqrtf(ux * ux + uy * uy);
                nv = 1.0f + taut * sqrtf(vx * vx + vy * vy);
            }
            p[i] = (p[i] + taut * ux) / nu;
            p[n + i] = (p[n + i] + taut * uy) / nu;
            p[2 * n + i] = (p[2 * n + i] + taut * vx) / nv;
            p[3 * n + i] = (p[3 * n + i] + taut * vy) / nv;
        }
        __syncthreads();
    }
}

// `iters` iterations of tv_primal + tv_dual / tv_dual_w over one tile held in shared memory
// (temporal blocking: one launch for `iters` iterations instead of 2 * iters). The block
// (TVT_S x TVT_TY threads; each thread keeps TVT_S / TVT_TY pixels of one column in registers,
// with their gradients, residual and weight) holds a TVT_S x TVT_S window of (u, v, p0..p3) whose
// origin is (blockIdx.y * (TVT_S - 2 halo) - halo, blockIdx.x * (TVT_S - 2 halo) - halo); the
// neighbours' values go through shared memory. Each primal pass reads p left and above, each dual
// pass u right and below, so the values next to the window's edge go wrong one pixel further in
// per pass, and after `iters` <= halo iterations the inner (TVT_S - 2 halo)^2 pixels are exact;
// only those are written, to (uo, vo, po): other blocks may still be reading their edges from
// (u, v, p), so several windows need a second set of arrays. A level of at most TVT_S x TVT_S
// runs with halo 0 and one block, in place (uo = u ...). The arithmetic of each pixel is that of
// tv_primal and tv_dual(_w), in the same order.
#ifndef TVT_S
#define TVT_S 64
#endif
#ifndef TVT_TY
#define TVT_TY 16
#endif
#define TVT_K (TVT_S / TVT_TY)
extern "C" __global__ void __launch_bounds__(TVT_S * TVT_TY)
tv_iterate_tile(const float* u, const float* v, const float* p, float* uo, float* vo, float* po,
                const float* __restrict__ gxy, const float* __restrict__ rc, const float* __restrict__ ginv,
                int has_ginv, float lt, float theta, float taut, int H, int W, int iters, int halo) {
    extern __shared__ float tv_sm[];
    const int S = TVT_S * TVT_S;
    float* su = tv_sm;
    float* sv = su + S;
    float* s0 = sv + S;
    float* s1 = s0 + S;
    float* s2 = s1 + S;
    float* s3 = s2 + S;
    const long long n = (long long)H * W;
    const int lx = threadIdx.x;
    const int x = blockIdx.x * (TVT_S - 2 * halo) - halo + lx;
    const int y0 = blockIdx.y * (TVT_S - 2 * halo) - halo;
    float ru[TVT_K], rv[TVT_K], r0[TVT_K], r1[TVT_K], r2[TVT_K], r3[TVT_K];
    float gx[TVT_K], gy[TVT_K], rr[TVT_K], gi[TVT_K];
    bool in[TVT_K];
#pragma unroll
    for (int k = 0; k < TVT_K; ++k) {
        const int ly = threadIdx.y + k * TVT_TY, y = y0 + ly, l = ly * TVT_S + lx;
        in[k] = x >= 0 && x < W && y >= 0 && y < H;
        if (in[k]) {
            const long long i = (long long)y * W + x;
            ru[k] = u[i];
            rv[k] = v[i];
            r0[k] = p[i];
            r1[k] = p[n + i];
            r2[k] = p[2 * n + i];
            r3[k] = p[3 * n + i];
            gx[k] = gxy[i];
            gy[k] = gxy[n + i];
            rr[k] = rc[i];
            gi[k] = has_ginv ? ginv[i] : 1.0f;
        } else {
            ru[k] = rv[k] = r0[k] = r1[k] = r2[k] = r3[k] = gx[k] = gy[k] = rr[k] = gi[k] = 0.0f;
        }
        su[l] = ru[k];
        sv[l] = rv[k];
        s0[l] = r0[k];
        s1[l] = r1[k];
        s2[l] = r2[k];
        s3[l] = r3[k];
    }
    __syncthreads();
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < TVT_K; ++k) {
            if (!in[k]) continue;
            const int ly = threadIdx.y + k * TVT_TY, y = y0 + ly, l = ly * TVT_S + lx;
            const float g2 = gx[k] * gx[k] + gy[k] * gy[k];
            const float rho = rr[k] + gx[k] * ru[k] + gy[k] * rv[k];
            float du = 0.0f, dv = 0.0f;
            if (rho < -lt * g2) {
                du = lt * gx[k];
                dv = lt * gy[k];
            } else if (rho > lt * g2) {
                du = -lt * gx[k];
                dv = -lt * gy[k];
            } else if (g2 > 1e-10f) {
                const float r = rho / g2;
                du = -r * gx[k];
                dv = -r * gy[k];
            }
            // tv_div with the window's missing neighbours read as 0 (those pixels are not kept)
            float da = r0[k] + r1[k], db = r2[k] + r3[k];
            if (x > 0) {
                da -= lx > 0 ? s0[l - 1] : 0.0f;
                db -= lx > 0 ? s2[l - 1] : 0.0f;
            }
            if (y > 0) {
                da -= ly > 0 ? s1[l - TVT_S] : 0.0f;
                db -= ly > 0 ? s3[l - TVT_S] : 0.0f;
            }
            ru[k] = ru[k] + du + theta * da;
            rv[k] = rv[k] + dv + theta * db;
            su[l] = ru[k];                     // the primal pass reads no u from shared memory
            sv[l] = rv[k];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TVT_K; ++k) {
            if (!in[k]) continue;
            const int ly = threadIdx.y + k * TVT_TY, y = y0 + ly, l = ly * TVT_S + lx;
            const float uc = ru[k], vc = rv[k];
            const float ur = lx < TVT_S - 1 ? su[l + 1] : uc, vr = lx < TVT_S - 1 ? sv[l + 1] : vc;
            const float ud = ly < TVT_S - 1 ? su[l + TVT_S] : uc, vd = ly < TVT_S - 1 ? sv[l + TVT_S] : vc;
            const float ux = x < W - 1 ? ur - uc : 0.0f;
            const float uy = y < H - 1 ? ud - uc : 0.0f;
            const float vx = x < W - 1 ? vr - vc : 0.0f;
            const float vy = y < H - 1 ? vd - vc : 0.0f;
            float nu, nv;
            if (has_ginv) {
                nu = 1.0f + taut * sqrtf(ux * ux + uy * uy) * gi[k];
                nv = 1.0f + taut * sqrtf(vx * vx + vy * vy) * gi[k];
            } else {
                nu = 1.0f + taut * sqrtf(ux * ux + uy * uy);
                nv = 1.0f + taut * sqrtf(vx * vx + vy * vy);
            }
            r0[k] = (r0[k] + taut * ux) / nu;
            r1[k] = (r1[k] + taut * uy) / nu;
            r2[k] = (r2[k] + taut * vx) / nv;
            r3[k] = (r3[k] + taut * vy) / nv;
            s0[l] = r0[k];                     // the dual pass reads no p from shared memory
            s1[l] = r1[k];
            s2[l] = r2[k];
            s3[l] = r3[k];
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < TVT_K; ++k) {
        const int ly = threadIdx.y + k * TVT_TY, y = y0 + ly;
        if (!in[k] || ly < halo || ly >= TVT_S - halo || lx < halo || lx >= TVT_S - halo) continue;
        const long long i = (long long)y * W + x;
        uo[i] = ru[k];
        vo[i] = rv[k];
        po[i] = r0[k];
        po[n + i] = r1[k];
        po[2 * n + i] = r2[k];
        po[3 * n + i] = r3[k];
    }
}

// 5 x 5 median of each of nch channels (C, H, W), edge-clamped: the 13th smallest by rank counting
extern "C" __global__ void tv_median5(const float* __restrict__ src, float* __restrict__ dst, int nch, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(j, n * nch) {
        const long long c = j / n, i = j % n;
        const int x = (int)(i % W), y = (int)(i / W);
        const float* f = src + c * n;
        float w[25];
#pragma unroll
        for (int k = 0; k < 25; ++k)
            w[k] = f[(long long)ops_clampi(y + k / 5 - 2, 0, H - 1) * W + ops_clampi(x + k % 5 - 2, 0, W - 1)];
        float med = w[0];
#pragma unroll
        for (int a = 0; a < 25; ++a) {
            int below = 0, equal_before = 0;
#pragma unroll
            for (int b = 0; b < 25; ++b) {
                below += w[b] < w[a];
                equal_before += (b < a) & (w[b] == w[a]);
            }
            const int rank = below + equal_before;
            if (rank == 12) med = w[a];
        }
        dst[j] = med;
    }
}

// 3 x 3 median of each channel, edge-clamped (Paeth's exchange network)
__device__ __forceinline__ void tv_sort2(float& a, float& b) {
    const float lo = fminf(a, b), hi = fmaxf(a, b);
    a = lo;
    b = hi;
}
extern "C" __global__ void tv_median3(const float* __restrict__ src, float* __restrict__ dst, int nch, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(j, n * nch) {
        const long long c = j / n, i = j % n;
        const int x = (int)(i % W), y = (int)(i / W);
        const float* f = src + c * n;
        float p[9];
#pragma unroll
        for (int k = 0; k < 9; ++k)
            p[k] = f[(long long)ops_clampi(y + k / 3 - 1, 0, H - 1) * W + ops_clampi(x + k % 3 - 1, 0, W - 1)];
        tv_sort2(p[1], p[2]); tv_sort2(p[4], p[5]); tv_sort2(p[7], p[8]);
        tv_sort2(p[0], p[1]); tv_sort2(p[3], p[4]); tv_sort2(p[6], p[7]);
        tv_sort2(p[1], p[2]); tv_sort2(p[4], p[5]); tv_sort2(p[7], p[8]);
        tv_sort2(p[0], p[3]); tv_sort2(p[5], p[8]); tv_sort2(p[4], p[7]);
        tv_sort2(p[3], p[6]); tv_sort2(p[1], p[4]); tv_sort2(p[2], p[5]);
        tv_sort2(p[4], p[7]); tv_sort2(p[4], p[2]); tv_sort2(p[6], p[4]);
        tv_sort2(p[4], p[2]);
        dst[j] = p[4];
    }
}

// Quality map: local normalised cross-correlation of I1 and the warped I2 over a window (the
// window means S = (m1, m2, m11, m22, m12) are box filters of tv_ncc_products), divided by
// 1 + G|grad f| / kappa (G a Gaussian): low where the flow does not align the images (occlusions,
// errors) and at motion boundaries, where flow errors gather.
extern "C" __global__ void tv_ncc_products(const float* __restrict__ I1, const float* __restrict__ I2w,
                                           float* __restrict__ prod, long long n) {
    FLOW_GRID_STRIDE(i, n) {
        const float a = I1[i], b = I2w[i];
        prod[i] = a;
        prod[n + i] = b;
        prod[2 * n + i] = a * a;
        prod[3 * n + i] = b * b;
        prod[4 * n + i] = a * b;
    }
}

// |grad f| = sqrt(|grad u|^2 + |grad v|^2), central differences
extern "C" __global__ void tv_flowgrad(const float* __restrict__ u, const float* __restrict__ v,
                                       float* __restrict__ gm, int H, int W) {
    const long long n = (long long)H * W;
    FLOW_GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        float ux, uy, vx, vy;
        flow_grad(u, H, W, x, y, ux, uy);
        flow_grad(v, H, W, x, y, vx, vy);
        gm[i] = sqrtf(ux * ux + uy * uy + vx * vx + vy * vy);
    }
}

extern "C" __global__ void tv_ncc_conf(const float* __restrict__ S, const float* __restrict__ gm,
                                       const float* __restrict__ inside, const float* __restrict__ mask,
                                       int has_mask, float* __restrict__ conf, float inv_kappa, long long n) {
    FLOW_GRID_STRIDE(i, n) {
        const float m1 = S[i], m2 = S[n + i];
        const float v1 = S[2 * n + i] - m1 * m1;
        const float v2 = S[3 * n + i] - m2 * m2;
        const float cov = S[4 * n + i] - m1 * m2;
        const float vv = v1 * v2;
        const float ncc = vv > 1e-12f ? cov / sqrtf(vv) : 0.0f;
        float c = fminf(fmaxf(ncc, 0.0f), 1.0f) / (1.0f + gm[i] * inv_kappa) * inside[i];
        if (has_mask) c *= mask[i];
        conf[i] = c;
    }
}
