// Patch inverse search (DIS, Kroeger et al. 2016) and its densification, for gpu_kernels/flow/search.py.
//
// Patches of IS_P x IS_P pixels sit on a grid of Ny x Nx origins spread evenly over the level
// (origin j = j * (n - P) / (N - 1), integer division, as in the NumPy path). One thread per patch:
// the template is the first image's patch minus its mean, the second image's patch is sampled
// bilinearly at x + f and mean-normalised too, the cost is their sum of squared differences.
#include "flow_common.cuh"

#ifndef IS_P
#define IS_P 8
#endif
#define IS_N (IS_P * IS_P)

__device__ __forceinline__ int is_origin(int j, int n, int N) {
    return N > 1 ? (int)(((long long)j * (n - IS_P)) / (N - 1)) : 0;
}

// pixel q of the patch at (ox, oy): its value t and gradient (tx, ty), added to the sums of the
// values (m) and of the Hessian's terms (a, b, c); is_template and is_step_warp's lanes
__device__ __forceinline__ void is_sample(const float* __restrict__ I1, int H, int W, int ox, int oy, int q, float& t,
                                          float& tx, float& ty, float& m, float& a, float& b, float& c) {
    const int x = ox + q % IS_P, y = oy + q / IS_P;
    t = I1[(long long)y * W + x];
    m += t;
    float gx, gy;
    flow_grad(I1, H, W, x, y, gx, gy);
    tx = gx;
    ty = gy;
    a += gx * gx;
    b += gx * gy;
    c += gy * gy;
}

// template (mean removed), its gradients and the Hessian of the patch at (ox, oy)
__device__ __forceinline__ void is_template(const float* __restrict__ I1, int H, int W, int ox, int oy, float* T,
                                            float* Tx, float* Ty, float& a, float& b, float& c) {
    float m = 0.0f;
    a = b = c = 0.0f;
    for (int k = 0; k < IS_N; ++k) is_sample(I1, H, W, ox, oy, k, T[k], Tx[k], Ty[k], m, a, b, c);
    m *= 1.0f / IS_N;
    for (int k = 0; k < IS_N; ++k) T[k] -= m;
}

// mean-normalised SSD of the template against I2 at the patch shifted by (u, v); r gets the residuals
__device__ __forceinline__ float is_cost(const float* __restrict__ I2, int H, int W, int ox, int oy, float u, float v,
                                         const float* T, float* r) {
    float m = 0.0f;
    for (int k = 0; k < IS_N; ++k) {
        r[k] = ops_bilinear(I2, H, W, (float)(ox + k % IS_P) + u, (float)(oy + k / IS_P) + v);
        m += r[k];
    }
    m *= 1.0f / IS_N;
    float s = 0.0f;
    for (int k = 0; k < IS_N; ++k) {
        r[k] = (r[k] - m) - T[k];
        s += r[k] * r[k];
    }
    return s;
}

// Start: the dense flow at each patch centre, then (R > 0) the best integer shift within R of it.
extern "C" __global__ void is_init(const float* __restrict__ I1, const float* __restrict__ I2,
                                   const float* __restrict__ u0, const float* __restrict__ v0, float* __restrict__ pu,
                                   float* __restrict__ pv, float* __restrict__ pc, float* __restrict__ conf, int H,
                                   int W, int Ny, int Nx, int R, float tex) {
    FLOW_GRID_STRIDE(k, (long long)Ny * Nx) {
        const int j = (int)(k / Nx), i = (int)(k % Nx);
        const int oy = is_origin(j, H, Ny), ox = is_origin(i, W, Nx);
        float T[IS_N], Tx[IS_N], Ty[IS_N], r[IS_N];
        float a, b, c;
        is_template(I1, H, W, ox, oy, T, Tx, Ty, a, b, c);
        const long long ctr = (long long)(oy + IS_P / 2) * W + (ox + IS_P / 2);
        float u = u0[ctr], v = v0[ctr];
        float best = is_cost(I2, H, W, ox, oy, u, v, T, r);
        const float bu = u, bv = v;
        for (int dy = -R; dy <= R; ++dy)
            for (int dx = -R; dx <= R; ++dx) {
                const float cu = bu + (float)dx, cv = bv + (float)dy;
                const float s = is_cost(I2, H, W, ox, oy, cu, cv, T, r);
                if (s < best) { best = s; u = cu; v = cv; }
            }
        pu[k] = u;
        pv[k] = v;
        pc[k] = best;
        const float lmin = 0.5f * (a + c - sqrtf((a - c) * (a - c) + 4.0f * b * b)) * (1.0f / IS_N);
        conf[k] = lmin / (lmin + tex);
    }
}

// is_init with one warp per patch: lane l tries the shifts l, l + 32, ... of the (2R + 1)^2 in
// is_init's order (dy major, dx minor) and keeps its first lowest cost, then the warp keeps the
// lowest cost, ties to the earliest shift, with the start (index -1) winning every tie, as the
// sequential loop's strict "<" does: the same flow, cost and confidence, 32 threads a patch (the
// coarsest levels have a few dozen patches, so one thread per patch leaves the GPU idle while each
// thread walks 289 shifts).
extern "C" __global__ void is_init_warp(const float* __restrict__ I1, const float* __restrict__ I2,
                                        const float* __restrict__ u0, const float* __restrict__ v0,
                                        float* __restrict__ pu, float* __restrict__ pv, float* __restrict__ pc,
                                        float* __restrict__ conf, int H, int W, int Ny, int Nx, int R, float tex) {
    const long long gt = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long k = gt >> 5;
    const int lane = threadIdx.x & 31;
    if (k >= (long long)Ny * Nx) return;           // whole warps leave together (blockDim a multiple of 32)
    const int j = (int)(k / Nx), i = (int)(k % Nx);
    const int oy = is_origin(j, H, Ny), ox = is_origin(i, W, Nx);
    float T[IS_N], Tx[IS_N], Ty[IS_N], r[IS_N];
    float a, b, c;
    is_template(I1, H, W, ox, oy, T, Tx, Ty, a, b, c);
    const long long ctr = (long long)(oy + IS_P / 2) * W + (ox + IS_P / 2);
    const float bu = u0[ctr], bv = v0[ctr];
    float best = 0.0f;
    int bi = -1;
    if (lane == 0) best = is_cost(I2, H, W, ox, oy, bu, bv, T, r);
    else best = 3.4e38f;
    const int side = 2 * R + 1, ns = side * side;
    for (int s = lane; s < ns; s += 32) {
        const int dy = s / side - R, dx = s % side - R;
        const float cost = is_cost(I2, H, W, ox, oy, bu + (float)dx, bv + (float)dy, T, r);
        if (cost < best || (bi < 0 && lane != 0 && cost == best)) { best = cost; bi = s; }
    }
    if (lane != 0 && bi < 0) bi = 0x7fffffff;      // no shift tried: never wins
    for (int off = 16; off > 0; off >>= 1) {
        const float ob = __shfl_down_sync(0xffffffffu, best, off);
        const int oi = __shfl_down_sync(0xffffffffu, bi, off);
        if (ob < best || (ob == best && oi < bi)) { best = ob; bi = oi; }
    }
    if (lane == 0) {
        float u = bu, v = bv;
        if (bi >= 0) {
            u = bu + (float)(bi % side - R);
            v = bv + (float)(bi / side - R);
        }
        pu[k] = u;
        pv[k] = v;
        pc[k] = best;
        const float lmin = 0.5f * (a + c - sqrtf((a - c) * (a - c) + 4.0f * b * b)) * (1.0f / IS_N);
        conf[k] = lmin / (lmin + tex);
    }
}

// One round: the best of the patch's flow and its four grid neighbours' (prop != 0), then
// `iters` inverse-compositional Gauss-Newton steps; the lowest-cost flow seen is kept.
extern "C" __global__ void is_step(const float* __restrict__ I1, const float* __restrict__ I2,
                                   const float* __restrict__ pu_in, const float* __restrict__ pv_in,
                                   const float* __restrict__ pc_in, float* __restrict__ pu, float* __restrict__ pv,
                                   float* __restrict__ pc, int H, int W, int Ny, int Nx, int iters, int prop,
                                   float reg) {
    FLOW_GRID_STRIDE(k, (long long)Ny * Nx) {
        const int j = (int)(k / Nx), i = (int)(k % Nx);
        const int oy = is_origin(j, H, Ny), ox = is_origin(i, W, Nx);
        float T[IS_N], Tx[IS_N], Ty[IS_N], r[IS_N];
        float a, b, c;
        is_template(I1, H, W, ox, oy, T, Tx, Ty, a, b, c);
        a += reg;
        c += reg;
        const float det = a * c - b * b;
        float bu = pu_in[k], bv = pv_in[k], bc = pc_in[k];
        if (prop) {
            const int nj[4] = {j, j, j + 1, j - 1};
            const int ni[4] = {i + 1, i - 1, i, i};
            for (int q = 0; q < 4; ++q) {
                if (nj[q] < 0 || nj[q] >= Ny || ni[q] < 0 || ni[q] >= Nx) continue;
                const long long n = (long long)nj[q] * Nx + ni[q];
                const float cu = pu_in[n], cv = pv_in[n];
                const float s = is_cost(I2, H, W, ox, oy, cu, cv, T, r);
                if (s < bc) { bc = s; bu = cu; bv = cv; }
            }
        }
        float u = bu, v = bv;
        for (int it = 0; it <= iters; ++it) {
            const float s = is_cost(I2, H, W, ox, oy, u, v, T, r);
            if (s < bc) { bc = s; bu = u; bv = v; }
            if (it == iters) break;
            float ex = 0.0f, ey = 0.0f;
            for (int q = 0; q < IS_N; ++q) {
                ex += Tx[q] * r[q];
                ey += Ty[q] * r[q];
            }
            u -= (c * ex - b * ey) / det;
            v -= (a * ey - b * ex) / det;
        }
        pu[k] = bu;
        pv[k] = bv;
        pc[k] = bc;
    }
}

// is_step with one warp per patch: lane l holds the patch's pixels l, l + 32, ... (template,
// gradients, residuals), and every sum (mean, cost, Hessian, Gauss-Newton right-hand side) is a
// butterfly over the warp, which leaves the same bits in every lane, so the lanes take the same
// decisions. The same steps as is_step; the sums are added in another order (float rounding).
// A thread per patch walks 13 costs of IS_N bilinear samples a round one after the other, so a
// level's rounds took ~0.1 ms whatever its size (a few dozen patches at the coarsest levels).
#define IS_NL ((IS_N + 31) / 32)
__device__ __forceinline__ float is_wsum(float x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

__device__ __forceinline__ float is_wcost(const float* __restrict__ I2, int H, int W, int ox, int oy, float u,
                                          float v, const float* T, float* r, int lane) {
    float m = 0.0f;
#pragma unroll
    for (int t = 0; t < IS_NL; ++t) {
        const int q = lane + 32 * t;
        r[t] = 0.0f;
        if (q < IS_N) {
            r[t] = ops_bilinear(I2, H, W, (float)(ox + q % IS_P) + u, (float)(oy + q / IS_P) + v);
            m += r[t];
        }
    }
    m = is_wsum(m) * (1.0f / IS_N);
    float s = 0.0f;
#pragma unroll
    for (int t = 0; t < IS_NL; ++t) {
        if (lane + 32 * t < IS_N) {
            r[t] = (r[t] - m) - T[t];
            s += r[t] * r[t];
        }
    }
    return is_wsum(s);
}

extern "C" __global__ void is_step_warp(const float* __restrict__ I1, const float* __restrict__ I2,
                                        const float* __restrict__ pu_in, const float* __restrict__ pv_in,
                                        const float* __restrict__ pc_in, float* __restrict__ pu,
                                        float* __restrict__ pv, float* __restrict__ pc, int H, int W, int Ny, int Nx,
                                        int iters, int prop, float reg) {
    const long long gt = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long k = gt >> 5;
    const int lane = threadIdx.x & 31;
    if (k >= (long long)Ny * Nx) return;           // whole warps leave together (blockDim a multiple of 32)
    const int j = (int)(k / Nx), i = (int)(k % Nx);
    const int oy = is_origin(j, H, Ny), ox = is_origin(i, W, Nx);
    float T[IS_NL], Tx[IS_NL], Ty[IS_NL], r[IS_NL];
    float m = 0.0f, a = 0.0f, b = 0.0f, c = 0.0f;
#pragma unroll
    for (int t = 0; t < IS_NL; ++t) {
        const int q = lane + 32 * t;
        T[t] = Tx[t] = Ty[t] = 0.0f;
        if (q < IS_N) is_sample(I1, H, W, ox, oy, q, T[t], Tx[t], Ty[t], m, a, b, c);
    }
    m = is_wsum(m) * (1.0f / IS_N);
    a = is_wsum(a) + reg;
    b = is_wsum(b);
    c = is_wsum(c) + reg;
#pragma unroll
    for (int t = 0; t < IS_NL; ++t)
        if (lane + 32 * t < IS_N) T[t] -= m;
    const float det = a * c - b * b;
    float bu = pu_in[k], bv = pv_in[k], bc = pc_in[k];
    if (prop) {
        const int nj[4] = {j, j, j + 1, j - 1};
        const int ni[4] = {i + 1, i - 1, i, i};
        for (int q = 0; q < 4; ++q) {
            if (nj[q] < 0 || nj[q] >= Ny || ni[q] < 0 || ni[q] >= Nx) continue;
            const long long n = (long long)nj[q] * Nx + ni[q];
            const float cu = pu_in[n], cv = pv_in[n];
            const float s = is_wcost(I2, H, W, ox, oy, cu, cv, T, r, lane);
            if (s < bc) { bc = s; bu = cu; bv = cv; }
        }
    }
    float u = bu, v = bv;
    for (int it = 0; it <= iters; ++it) {
        const float s = is_wcost(I2, H, W, ox, oy, u, v, T, r, lane);
        if (s < bc) { bc = s; bu = u; bv = v; }
        if (it == iters) break;
        float ex = 0.0f, ey = 0.0f;
#pragma unroll
        for (int t = 0; t < IS_NL; ++t) {
            ex += Tx[t] * r[t];
            ey += Ty[t] * r[t];
        }
        ex = is_wsum(ex);
        ey = is_wsum(ey);
        u -= (c * ex - b * ey) / det;
        v -= (a * ey - b * ex) / det;
    }
    if (lane == 0) {
        pu[k] = bu;
        pv[k] = bv;
        pc[k] = bc;
    }
}

// Dense flow: each pixel's flow is the mean of the patches covering it, weighted by each
// patch's texture confidence over its photometric error at that pixel, plus `prior` times the
// flow it had before (so pixels of untextured patches keep the coarser level's flow).
extern "C" __global__ void is_densify(const float* __restrict__ I1, const float* __restrict__ I2,
                                      const float* __restrict__ pu, const float* __restrict__ pv,
                                      const float* __restrict__ conf, const float* __restrict__ u0,
                                      const float* __restrict__ v0, float* __restrict__ uo, float* __restrict__ vo,
                                      int H, int W, int Ny, int Nx, float eps, float prior) {
    FLOW_GRID_STRIDE(p, (long long)H * W) {
        const int x = (int)(p % W), y = (int)(p / W);
        const float i1 = I1[p];
        float ws = 0.0f, su = 0.0f, sv = 0.0f;
        const int jy = Ny > 1 ? (int)(((long long)y * (Ny - 1)) / max(H - IS_P, 1)) : 0;
        const int jx = Nx > 1 ? (int)(((long long)x * (Nx - 1)) / max(W - IS_P, 1)) : 0;
        for (int j = max(jy - IS_P, 0); j <= min(jy + 1, Ny - 1); ++j) {
            const int oy = is_origin(j, H, Ny);
            if (oy > y || oy + IS_P <= y) continue;
            for (int i = max(jx - IS_P, 0); i <= min(jx + 1, Nx - 1); ++i) {
                const int ox = is_origin(i, W, Nx);
                if (ox > x || ox + IS_P <= x) continue;
                const long long k = (long long)j * Nx + i;
                const float fu = pu[k], fv = pv[k];
                const float d = fabsf(ops_bilinear(I2, H, W, (float)x + fu, (float)y + fv) - i1);
                const float w = conf[k] / fmaxf(d, eps);
                ws += w;
                su += w * fu;
                sv += w * fv;
            }
        }
        ws += prior;
        su += prior * u0[p];
        sv += prior * v0[p];
        if (ws > 1e-12f) {
            uo[p] = su / ws;
            vo[p] = sv / ws;
        } else {
            uo[p] = u0[p];
            vo[p] = v0[p];
        }
    }
}

// Recursive edge-aware filter along rows (the domain transform's RF, Gastal & Oliveira 2011), for
// the forward-backward fill of search.fill_inconsistent: C channels of R rows of L samples each
// (J, row-major C x R x L, filtered in place), A the R x (L - 1) feedback weights between
// neighbours. One thread per row: left to right J[x] += A[x-1] (J[x-1] - J[x]), then right to
// left J[x] += A[x] (J[x+1] - J[x]), the NumPy path's operations in the same order.
extern "C" __global__ void is_rf_rows(float* __restrict__ J, const float* __restrict__ A, int C, int R, int L) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const float* a = A + (long long)r * (L - 1);
    for (int c = 0; c < C; ++c) {
        float* p = J + ((long long)c * R + r) * L;
        for (int x = 1; x < L; ++x) p[x] = p[x] + a[x - 1] * (p[x - 1] - p[x]);
        for (int x = L - 2; x >= 0; --x) p[x] = p[x] + a[x] * (p[x + 1] - p[x]);
    }
}

// The same recursive filter along axis 1 of J (C, L, R), one thread per (channel, column r): at each
// step the threads of a warp touch R-contiguous values (coalesced), where is_rf_rows walks rows
// L floats apart. A (L - 1, R). The row pass runs it on the transposed stack. The values are
// loaded IS_RF_CHUNK steps ahead of the recursion (independent loads in flight, then the chain in
// registers), since each step's load would otherwise wait a full memory latency.
#define IS_RF_CHUNK 32
extern "C" __global__ void is_rf_axis1(float* __restrict__ J, const float* __restrict__ A, int C, int L, int R) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)C * R) return;
    const int c = (int)(t / R), r = (int)(t % R);
    float* p = J + (long long)c * L * R + r;
    const float* a = A + r;
    float prev = p[0];
    float cur[IS_RF_CHUNK], w[IS_RF_CHUNK];
    for (int x0 = 1; x0 < L; x0 += IS_RF_CHUNK) {           // x = x0 .. x0 + CHUNK - 1, left to right
#pragma unroll
        for (int k = 0; k < IS_RF_CHUNK; ++k) {
            const int x = x0 + k;
            if (x < L) {
                cur[k] = p[(long long)x * R];
                w[k] = a[(long long)(x - 1) * R];
            }
        }
#pragma unroll
        for (int k = 0; k < IS_RF_CHUNK; ++k) {
            const int x = x0 + k;
            if (x < L) {
                prev = cur[k] + w[k] * (prev - cur[k]);
                p[(long long)x * R] = prev;
            }
        }
    }
    for (int x0 = L - 2; x0 >= 0; x0 -= IS_RF_CHUNK) {      // x = x0 .. x0 - CHUNK + 1, right to left
#pragma unroll
        for (int k = 0; k < IS_RF_CHUNK; ++k) {
            const int x = x0 - k;
            if (x >= 0) {
                cur[k] = p[(long long)x * R];
                w[k] = a[(long long)x * R];
            }
        }
#pragma unroll
        for (int k = 0; k < IS_RF_CHUNK; ++k) {
            const int x = x0 - k;
            if (x >= 0) {
                prev = cur[k] + w[k] * (prev - cur[k]);
                p[(long long)x * R] = prev;
            }
        }
    }
}

// The fill's filter with its weights computed on the fly from the guide G (H, W): the step between
// samples i - 1 and i weighs exp(la (1 + k |G_i - G_(i-1)|)) (the host path's exp(la * d)). Each
// line is split into segments (a scan of a first-order linear recurrence): a step
// y = c + w (y' - c) is affine in the previous value y', so a segment is y_end = B + P y_in, with B
// its result from y_in = 0 and P the product of its weights; a segment's input is composed from the
// earlier segments' (B, P), and the segment runs again from it, writing. Each thread walks one
// segment instead of the whole line (the sequential filter's latency: ~2 L dependent steps a pass).
// The values equal the sequential filter's up to the rounding of the composed inputs.
__device__ __forceinline__ float is_rf_w(float la, float k, float a, float b) {
    return expf(la * (1.0f + k * fabsf(a - b)));
}

// One segment's causal (dir = +1: x = x0, x0 + 1, ...) or anti-causal (dir = -1) walk over n steps of
// a line p with stride st; the weight of step x is wt(x) (a functor). write: store y, else only sum.
template <class WT>
__device__ __forceinline__ void is_rf_walk(float* p, long long st, int x0, int n, int dir, WT wt, float& y,
                                           float& prod, bool write) {
#pragma unroll 4
    for (int t = 0; t < n; ++t) {
        const int x = x0 + dir * t;
        const float cu = p[(long long)x * st], w = wt(x);
        y = cu + w * (y - cu);
        if (write) p[(long long)x * st] = y;
        else prod *= w;
    }
}

// Along axis 1 of J (C, H, W): block (32, NS), threadIdx.x one of 32 neighbouring columns (coalesced
// steps), threadIdx.y a segment of the column, blockIdx.y the channel.
extern "C" __global__ void is_rf_cols(float* __restrict__ J, const float* __restrict__ G, int C, int H, int W,
                                      float la, float k) {
    __shared__ float sB[32][33], sP[32][33];
    const int lane = threadIdx.x, s = threadIdx.y, NS = blockDim.y;
    const int x = blockIdx.x * 32 + lane, c = blockIdx.y;
    const bool ok = x < W && c < C;
    float* p = J + (long long)c * H * W + (ok ? x : 0);
    const float* g = G + (ok ? x : 0);
    const int S = (H - 1 + NS - 1) / NS;
    for (int dir = 1; dir >= -1; dir -= 2) {
        // causal: steps y = 1 .. H - 1 weigh w(y); anti-causal: y = H - 2 .. 0 weigh w(y + 1)
        const int y0 = dir > 0 ? 1 + s * S : H - 2 - s * S;
        const int n = max(0, min(S, dir > 0 ? H - y0 : y0 + 1));
        const int off = dir > 0 ? 0 : 1;
        auto wt = [&](int y) { return is_rf_w(la, k, g[(long long)(y + off) * W], g[(long long)(y + off - 1) * W]); };
        float y = 0.0f, prod = 1.0f;
        if (ok) is_rf_walk(p, W, y0, n, dir, wt, y, prod, false);
        sB[s][lane] = y;
        sP[s][lane] = prod;
        __syncthreads();
        float yin = ok ? p[dir > 0 ? 0 : (long long)(H - 1) * W] : 0.0f;
        for (int q = 0; q < s; ++q) yin = sB[q][lane] + sP[q][lane] * yin;
        __syncthreads();
        if (ok) is_rf_walk(p, W, y0, n, dir, wt, yin, prod, true);
        __syncthreads();
    }
}

// Along axis 2 of J (C, H, W), the contiguous one: one block per row (blockIdx.x), threadIdx.y the
// channel, threadIdx.x one of 32 segments. The row's C channels and weights are read into shared
// memory (coalesced), filtered there (segments of an odd length: no bank conflicts), written back.
// Dynamic shared memory: (C + 1) * W floats.
extern "C" __global__ void is_rf_rows_seg(float* __restrict__ J, const float* __restrict__ G, int C, int H, int W,
                                          float la, float k) {
    extern __shared__ float rs_sm[];
    __shared__ float sB[4][33], sP[4][33];
    const int row = blockIdx.x, s = threadIdx.x, c = threadIdx.y, NS = blockDim.x;
    const int nt = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
    float* sw = rs_sm;                              // sw[x]: the weight of the step between x - 1 and x
    const float* g = G + (long long)row * W;
    for (int i = tid; i < W; i += nt) sw[i] = i > 0 ? is_rf_w(la, k, g[i], g[i - 1]) : 0.0f;
    for (int i = tid; i < C * W; i += nt) {
        const int cc = i / W, xx = i - cc * W;
        rs_sm[(cc + 1) * W + xx] = J[((long long)cc * H + row) * W + xx];
    }
    __syncthreads();
    float* p = rs_sm + (c + 1) * W;
    int S = (W - 1 + NS - 1) / NS;
    S += 1 - (S & 1);                               // odd: the segments' starts fall in distinct banks
    for (int dir = 1; dir >= -1; dir -= 2) {
        const int x0 = dir > 0 ? 1 + s * S : W - 2 - s * S;
        const int n = max(0, min(S, dir > 0 ? W - x0 : x0 + 1));
        const int off = dir > 0 ? 0 : 1;
        auto wt = [&](int x) { return sw[x + off]; };
        float y = 0.0f, prod = 1.0f;
        is_rf_walk(p, 1, x0, n, dir, wt, y, prod, false);
        sB[c][s] = y;
        sP[c][s] = prod;
        __syncthreads();
        float yin = p[dir > 0 ? 0 : W - 1];
        for (int q = 0; q < s; ++q) yin = sB[c][q] + sP[c][q] * yin;
        __syncthreads();
        is_rf_walk(p, 1, x0, n, dir, wt, yin, prod, true);
        __syncthreads();
    }
    for (int i = tid; i < C * W; i += nt) {
        const int cc = i / W, xx = i - cc * W;
        J[((long long)cc * H + row) * W + xx] = rs_sm[(cc + 1) * W + xx];
    }
}

// The fill's stack J = (u ok, v ok, ok) and its result: the filtered flow J0 / J2, J1 / J2 where a
// pixel is not consistent (ok = 0) and the filter reached it (J2 >= 1e-4), else the flow itself.
extern "C" __global__ void is_fill_stack(const float* __restrict__ u, const float* __restrict__ v,
                                         const float* __restrict__ ok, float* __restrict__ J, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float o = ok[i];
        J[i] = u[i] * o;
        J[n + i] = v[i] * o;
        J[2 * n + i] = o;
    }
}

extern "C" __global__ void is_fill_result(const float* __restrict__ J, const float* __restrict__ u,
                                          const float* __restrict__ v, const float* __restrict__ ok,
                                          float* __restrict__ uo, float* __restrict__ vo, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float den = J[2 * n + i];
        const bool keep = ok[i] > 0.0f || den < 1e-4f;
        uo[i] = keep ? u[i] : J[i] / den;
        vo[i] = keep ? v[i] : J[n + i] / den;
    }
}

// The fill's mask of kept pixels: forward-backward consistent (|f + b(x + f)|^2 <= t2; bw is the
// backward flow sampled at x + f, (2, n)) or of local NCC at least nmin; 1 or 0. The products are
// rounded as the host path's separate array operations are (no fused multiply-add).
extern "C" __global__ void is_fill_ok(const float* __restrict__ u, const float* __restrict__ v,
                                      const float* __restrict__ bw, const float* __restrict__ ncc,
                                      float* __restrict__ ok, float t2, float nmin, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float du = u[i] + bw[i], dv = v[i] + bw[n + i];
        const float d2 = __fadd_rn(__fmul_rn(du, du), __fmul_rn(dv, dv));
        ok[i] = (d2 <= t2 || ncc[i] >= nmin) ? 1.0f : 0.0f;
    }
}

// The "fb" quality map from the local NCC q and bw = (backward u, backward v, second frame) sampled
// at x + f, (3, n): [(fl + q) sc / ((1 + d^2 cfb) (1 + |f| cmag) (1 + r cres))]^(1/4), d = |f + b(x + f)|,
// r = |I2(x + f) - I1|, times the mask (has_mask); the host path's operations in its order, unfused.
extern "C" __global__ void is_quality_fb(const float* __restrict__ q, const float* __restrict__ bw,
                                         const float* __restrict__ u, const float* __restrict__ v,
                                         const float* __restrict__ g1, const float* __restrict__ mask, int has_mask,
                                         float* __restrict__ out, float fl, float sc, float cfb, float cmag,
                                         float cres, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float uu = u[i], vv = v[i];
        const float du = uu + bw[i], dv = vv + bw[n + i];
        const float r = fabsf(bw[2 * n + i] - g1[i]);
        const float d2 = __fadd_rn(__fmul_rn(du, du), __fmul_rn(dv, dv));
        const float m2 = __fadd_rn(__fmul_rn(uu, uu), __fmul_rn(vv, vv));
        const float a = __fadd_rn(1.0f, __fmul_rn(d2, cfb));
        const float b = __fadd_rn(1.0f, __fmul_rn(__fsqrt_rn(m2), cmag));
        const float c = __fadd_rn(1.0f, __fmul_rn(r, cres));
        float o = __fmul_rn(__fadd_rn(fl, q[i]), sc) / __fmul_rn(__fmul_rn(a, b), c);
        o = __fsqrt_rn(__fsqrt_rn(fmaxf(o, 0.0f)));
        out[i] = has_mask ? o * mask[i] : o;
    }
}
