// Per-pixel depth / normal / colour-scale optimisation of region-growing multi-view stereo
// (Goesele et al. 2007, as ported to CUDA by Sauer-style "one thread per (pixel, neighbour view)").
//
// One launch optimises a whole batch of pixels, possibly of several reference views. Each pixel
// gets TPP consecutive threads (a power of two >= the number of neighbour views, <= 32, so a
// pixel's threads sit in one warp); thread `lane` handles neighbour view `lane`. Per-view sums
// are reduced per pixel with a butterfly of warp shuffles (bit-identical in every lane, so all
// lanes solve the same normal equations and keep identical parameters without a broadcast).
//
// Unknowns: h (z-depth along the pixel ray, ray scaled to camera z = 1), hs and ht (depth change
// per pixel in s = x and t = y: the window point (i, j) is at depth h + i hs + j ht along the ray
// of pixel (s + i, t + j)), and a per-view RGB colour scale c_k.
//
// Iterations (the paper's Figure 1): the colour scale is set first; iteration `it` (1-based) is a
// depth-only Gauss-Newton step, every fifth one a joint (h, hs, ht) step with the 3x3 normal
// equations, after which the colour scale is updated. After each step the NCC of every active
// view decides: views below ncc_accept leave the active set (from pass `drop_from` on; views whose
// window leaves the image leave at once), fewer than `min_views` active views fail the pixel, and
// when no active view's NCC changes by eps or more the pixel has converged.
//
// The samples of one pass serve everything computed at the same parameters: the NCC, the colour
// scale (when due) and the next update, so each iteration samples the n x n window once.
//
// Layout: `tex` holds every view as rows of pixels, each pixel three float4: (r, g, b, -),
// (dr/dx, dg/dx, db/dx, -), (dr/dy, dg/dy, db/dy, -). `geo[ref][k]` = (H row-major 3x3, e 3):
// the neighbour-k homogeneous pixel of window point (u, v, depth d) is e + d * H (u, v, 1).

//
// Sample split (SPL): with few pixels in a batch (one view's growing front) the GPU is latency
// bound: each iteration walks the n x n window one dependent texture fetch after another. SPL > 1
// gives each (pixel, view) SPL threads that take every SPL-th window sample, so a pixel has
// G = TPP * SPL (<= 32) threads and an iteration's chain of fetches is SPL times shorter. Per-view
// sums add the SPL partial sums (xor shuffles over the lanes of one view), the normal equations
// add over the whole group; every lane still ends with bit-identical values.
//
// Two kernels share the per-pixel optimisation (optimize_pixel below):
//   mvs_optimize    a host-given batch (optimize_pixels / launch_optimize): outputs per item;
//   mvs_grow_apply  region growing's batch, selected on the device (cuda/mvs_queue.cu): the item
//                   count comes from device memory and the result is applied at once (accepted:
//                   depth, offsets, confidence, normal, DONE; failed: one more attempt, CLOSED after
//                   max_attempts), so no batch makes a round trip through the host.

#ifndef WIN
#define WIN 5
#endif
#ifndef TPP
#define TPP 8
#endif
#ifndef SPL
#define SPL 1
#endif
#ifndef PPB
#define PPB 16
#endif

#define GRP (TPP * SPL)
#define RAD ((WIN - 1) / 2)
#define NS (WIN * WIN)

#define ST_TOO_FEW_VIEWS -1
#define ST_TEXTURELESS -2
#define ST_BAD_DEPTH -3

#define PX_FREE 0
#define PX_DONE 1
#define PX_CLOSED 2

// sum over every lane of the pixel's group (all views, all sample subsets)
__device__ __forceinline__ float group_sum(float v, unsigned mask) {
#pragma unroll
    for (int o = GRP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o, GRP);
    return v;
}

// sum over the SPL lanes of one view (the sample subsets)
__device__ __forceinline__ float sub_sum(float v, unsigned mask) {
#pragma unroll
    for (int o = TPP; o < GRP; o <<= 1) v += __shfl_xor_sync(mask, v, o, GRP);
    return v;
}

struct PixelResult {
    float h, hs, ht, conf, ncc;
    int iters, status;
    bool act;
};

// Optimise one pixel; `sref` is the slot's reference window (loaded by the caller), `lane` the
// thread's index in the pixel's group (view lane = lane % TPP, sample subset = lane / TPP).
__device__ __forceinline__ PixelResult optimize_pixel(
    const float4* __restrict__ tex, const long long* __restrict__ vofs, const int* __restrict__ vW,
    const int* __restrict__ vH, const float* __restrict__ geo, const int* __restrict__ nbr,
    const float (*sref)[3], const int r, const int s, const int t, float h, float hs, float ht, const int min_iter_in,
    const int lane, const unsigned gmask, const unsigned vmask, const int gbase,
    const int nv, const int min_views, const int max_iter, const int drop_from,
    const float ncc_accept, const float eps, const float step_px, const float min_ref_var)
{
    const int vl = lane % TPP;
    const int sub = lane / TPP;
    const float N = 3.0f * NS;
    float sx = 0.f, sxx = 0.f;
    for (int q = 0; q < NS; ++q)
        for (int c = 0; c < 3; ++c) { const float x = sref[q][c]; sx += x; sxx += x * x; }
    const float vx = sxx - sx * sx / N;

    const int min_iter = max(1, min_iter_in);
    int status = 0, iters = 0;
    float ncc = -1.f, ncc_prev = -2.f;
    float ck0 = 1.f, ck1 = 1.f, ck2 = 1.f;

    const int nb = (vl < nv) ? nbr[r * TPP + vl] : -1;
    bool act = nb >= 0;
    float H[9], e[3];
    const float4* img = tex;
    int W = 1, Hh = 1;
    if (act) {
        const float* g = geo + ((long long)r * TPP + vl) * 12;
#pragma unroll
        for (int k = 0; k < 9; ++k) H[k] = g[k];
        e[0] = g[9]; e[1] = g[10]; e[2] = g[11];
        img = tex + vofs[nb];
        W = vW[nb];
        Hh = vH[nb];
    }

    if (!(vx > min_ref_var * N)) {
        status = ST_TEXTURELESS;
    } else {
        for (int pass = 0;; ++pass) {
            const bool joint = ((pass + 1) % 5) == 0;
            const bool cupd = (pass % 5) == 0;
            float Sk0 = 0, Sk1 = 0, Sk2 = 0, Skk0 = 0, Skk1 = 0, Skk2 = 0, Srk0 = 0, Srk1 = 0, Srk2 = 0;
            float Sdd0 = 0, Sdd1 = 0, Sdd2 = 0, Srd0 = 0, Srd1 = 0, Srd2 = 0, Skd0 = 0, Skd1 = 0, Skd2 = 0;
            float a11 = 0, a12 = 0, a13 = 0, a22 = 0, a23 = 0, a33 = 0, b1 = 0, b2 = 0, b3 = 0;
            float rate = 0.f;
            bool valid = act;
            if (act) {
#pragma unroll 1
                for (int q = sub; q < NS; q += SPL) {
                    const float fi = (float)(q % WIN - RAD), fj = (float)(q / WIN - RAD);
                    const float u = (float)s + fi, v = (float)t + fj;
                    const float d = h + fi * hs + fj * ht;
                    const float qx = H[0] * u + H[1] * v + H[2];
                    const float qy = H[3] * u + H[4] * v + H[5];
                    const float qz = H[6] * u + H[7] * v + H[8];
                    const float px = e[0] + d * qx, py = e[1] + d * qy, pz = e[2] + d * qz;
                    if (!(pz > 1e-12f)) { valid = false; break; }
                    const float iz = 1.f / pz;
                    const float x = px * iz, y = py * iz;
                    if (!(x >= 1.f && y >= 1.f && x < (float)(W - 2) && y < (float)(Hh - 2))) { valid = false; break; }
                    const float dxdh = (qx - x * qz) * iz, dydh = (qy - y * qz) * iz;
                    if (q == NS / 2) rate = sqrtf(dxdh * dxdh + dydh * dydh);
                    const int x0 = (int)x, y0 = (int)y;
                    const float fx = x - (float)x0, fy = y - (float)y0;
                    const float w00 = (1.f - fx) * (1.f - fy), w10 = fx * (1.f - fy), w01 = (1.f - fx) * fy, w11 = fx * fy;
                    const float4* p0 = img + 3LL * ((long long)y0 * W + x0);
                    const float4* p1 = p0 + 3LL * W;
                    const float4 c00 = __ldg(p0), c10 = __ldg(p0 + 3), c01 = __ldg(p1), c11 = __ldg(p1 + 3);
                    const float4 gx00 = __ldg(p0 + 1), gx10 = __ldg(p0 + 4), gx01 = __ldg(p1 + 1), gx11 = __ldg(p1 + 4);
                    const float4 gy00 = __ldg(p0 + 2), gy10 = __ldg(p0 + 5), gy01 = __ldg(p1 + 2), gy11 = __ldg(p1 + 5);
                    const float I0 = w00 * c00.x + w10 * c10.x + w01 * c01.x + w11 * c11.x;
                    const float I1 = w00 * c00.y + w10 * c10.y + w01 * c01.y + w11 * c11.y;
                    const float I2 = w00 * c00.z + w10 * c10.z + w01 * c01.z + w11 * c11.z;
                    const float D0 = (w00 * gx00.x + w10 * gx10.x + w01 * gx01.x + w11 * gx11.x) * dxdh +
                                     (w00 * gy00.x + w10 * gy10.x + w01 * gy01.x + w11 * gy11.x) * dydh;
                    const float D1 = (w00 * gx00.y + w10 * gx10.y + w01 * gx01.y + w11 * gx11.y) * dxdh +
                                     (w00 * gy00.y + w10 * gy10.y + w01 * gy01.y + w11 * gy11.y) * dydh;
                    const float D2 = (w00 * gx00.z + w10 * gx10.z + w01 * gx01.z + w11 * gx11.z) * dxdh +
                                     (w00 * gy00.z + w10 * gy10.z + w01 * gy01.z + w11 * gy11.z) * dydh;
                    const float R0 = sref[q][0], R1 = sref[q][1], R2 = sref[q][2];
                    Sk0 += I0; Sk1 += I1; Sk2 += I2;
                    Skk0 += I0 * I0; Skk1 += I1 * I1; Skk2 += I2 * I2;
                    Srk0 += R0 * I0; Srk1 += R1 * I1; Srk2 += R2 * I2;
                    if (joint) {
                        // rows of A: c * dI/dh * (1, i, j); b: I_R - c I_k (c fixed during a joint pass)
                        const float g0 = ck0 * D0, g1 = ck1 * D1, g2 = ck2 * D2;
                        const float r0 = R0 - ck0 * I0, r1 = R1 - ck1 * I1, r2 = R2 - ck2 * I2;
                        const float gg = g0 * g0 + g1 * g1 + g2 * g2;
                        const float gr = g0 * r0 + g1 * r1 + g2 * r2;
                        a11 += gg; a12 += gg * fi; a13 += gg * fj;
                        a22 += gg * fi * fi; a23 += gg * fi * fj; a33 += gg * fj * fj;
                        b1 += gr; b2 += gr * fi; b3 += gr * fj;
                    } else {
                        Sdd0 += D0 * D0; Sdd1 += D1 * D1; Sdd2 += D2 * D2;
                        Srd0 += R0 * D0; Srd1 += R1 * D1; Srd2 += R2 * D2;
                        Skd0 += I0 * D0; Skd1 += I1 * D1; Skd2 += I2 * D2;
                    }
                }
            }
#if SPL > 1
            {   // a view stays valid only if every sample subset was; the per-view sums add up
                int inv = valid ? 0 : 1;
#pragma unroll
                for (int o = TPP; o < GRP; o <<= 1) inv |= __shfl_xor_sync(gmask, inv, o, GRP);
                valid = act && inv == 0;
                Sk0 = sub_sum(Sk0, gmask); Sk1 = sub_sum(Sk1, gmask); Sk2 = sub_sum(Sk2, gmask);
                Skk0 = sub_sum(Skk0, gmask); Skk1 = sub_sum(Skk1, gmask); Skk2 = sub_sum(Skk2, gmask);
                Srk0 = sub_sum(Srk0, gmask); Srk1 = sub_sum(Srk1, gmask); Srk2 = sub_sum(Srk2, gmask);
            }
#endif
            if (!valid) act = false;
            if (act && cupd) {
                ck0 = Skk0 > 1e-12f ? Srk0 / Skk0 : 1.f;
                ck1 = Skk1 > 1e-12f ? Srk1 / Skk1 : 1.f;
                ck2 = Skk2 > 1e-12f ? Srk2 / Skk2 : 1.f;
            }
            if (act) {
                const float sy = ck0 * Sk0 + ck1 * Sk1 + ck2 * Sk2;
                const float syy = ck0 * ck0 * Skk0 + ck1 * ck1 * Skk1 + ck2 * ck2 * Skk2;
                const float sxy = ck0 * Srk0 + ck1 * Srk1 + ck2 * Srk2;
                const float vy = syy - sy * sy / N;
                ncc = vy > 1e-12f ? (sxy - sx * sy / N) * rsqrtf(vx * vy) : -1.f;
                if (pass >= drop_from && ncc < ncc_accept) act = false;
            }
            int count = __popc(__ballot_sync(gmask, act) & vmask);
            if (count < min_views) { status = ST_TOO_FEW_VIEWS; break; }
            const bool moving = act && fabsf(ncc - ncc_prev) >= eps;
            const bool conv = pass >= min_iter && (__ballot_sync(gmask, moving) & gmask) == 0u;
            if (conv || pass >= max_iter) {
                if (act && ncc < ncc_accept) act = false;
                const unsigned bits = __ballot_sync(gmask, act) & vmask;
                count = __popc(bits);
                status = count < min_views ? ST_TOO_FEW_VIEWS : (int)(bits >> gbase);
                break;
            }
            ncc_prev = ncc;
            // ------------------------------------------------------------- the update
            // (rate is set in the one lane of each view that holds the centre sample)
            const float mrate = group_sum(act ? rate : 0.f, gmask) / (float)count;
            const float max_dh = mrate > 0.f ? step_px / mrate : 0.f;
            float dh = 0.f, dhs = 0.f, dht = 0.f;
            if (joint) {
                if (!act) { a11 = a12 = a13 = a22 = a23 = a33 = b1 = b2 = b3 = 0.f; }
                a11 = group_sum(a11, gmask); a12 = group_sum(a12, gmask); a13 = group_sum(a13, gmask);
                a22 = group_sum(a22, gmask); a23 = group_sum(a23, gmask); a33 = group_sum(a33, gmask);
                b1 = group_sum(b1, gmask); b2 = group_sum(b2, gmask); b3 = group_sum(b3, gmask);
                // explicit inverse of the symmetric 3x3 matrix, Jacobi-scaled (no overflow)
                if (a11 > 0.f && a22 > 0.f && a33 > 0.f) {
                    const float s1 = rsqrtf(a11), s2 = rsqrtf(a22), s3 = rsqrtf(a33);
                    const float n12 = a12 * s1 * s2, n13 = a13 * s1 * s3, n23 = a23 * s2 * s3;
                    const float e1 = b1 * s1, e2 = b2 * s2, e3 = b3 * s3;
                    const float c11 = 1.f - n23 * n23, c12 = n13 * n23 - n12, c13 = n12 * n23 - n13;
                    const float c22 = 1.f - n13 * n13, c23 = n12 * n13 - n23, c33 = 1.f - n12 * n12;
                    const float det = c11 + n12 * c12 + n13 * c13;
                    if (det > 1e-6f) {
                        const float id = 1.f / det;
                        dh = (c11 * e1 + c12 * e2 + c13 * e3) * id * s1;
                        dhs = (c12 * e1 + c22 * e2 + c23 * e3) * id * s2;
                        dht = (c13 * e1 + c23 * e2 + c33 * e3) * id * s3;
                    } else {
                        dh = b1 / a11;
                    }
                } else if (a11 > 0.f) {
                    dh = b1 / a11;
                }
            } else {
                // partial sums of this lane's samples; the group sum adds views and subsets
                float a = 0.f, b = 0.f;
                if (act) {
                    a = ck0 * ck0 * Sdd0 + ck1 * ck1 * Sdd1 + ck2 * ck2 * Sdd2;
                    b = ck0 * Srd0 + ck1 * Srd1 + ck2 * Srd2 - (ck0 * ck0 * Skd0 + ck1 * ck1 * Skd1 + ck2 * ck2 * Skd2);
                }
                a = group_sum(a, gmask);
                b = group_sum(b, gmask);
                dh = a > 0.f ? b / a : 0.f;
            }
            const float max_ds = max_dh / (float)(RAD > 0 ? RAD : 1);
            dh = fminf(fmaxf(dh, -max_dh), max_dh);
            dhs = fminf(fmaxf(dhs, -max_ds), max_ds);
            dht = fminf(fmaxf(dht, -max_ds), max_ds);
            h += dh; hs += dhs; ht += dht;
            ++iters;
            if (!(h > 0.f) || !isfinite(h) || !isfinite(hs) || !isfinite(ht)) { status = ST_BAD_DEPTH; break; }
        }
    }
    // every view counted SPL times in both sums: the mean is the same
    const float csum = group_sum(act ? ncc : 0.f, gmask);
    const float ccnt = group_sum(act ? 1.f : 0.f, gmask);
    PixelResult res;
    res.h = h; res.hs = hs; res.ht = ht;
    res.conf = (status >= 0 && ccnt > 0.f) ? csum / ccnt : 0.f;
    res.ncc = ncc;
    res.iters = iters;
    res.status = status;
    res.act = act;
    return res;
}

// the lane masks of the calling thread's pixel group
#define GROUP_MASKS                                                                                      \
    const int wl = threadIdx.x & 31;                                                                     \
    const int gbase = wl & ~(GRP - 1);                                                                   \
    const unsigned gmask = (GRP == 32) ? 0xffffffffu : (((1u << GRP) - 1u) << gbase);                    \
    const unsigned vmask = (TPP == 32) ? 0xffffffffu : (((1u << TPP) - 1u) << gbase);

__device__ __forceinline__ void load_ref_window(float (*sref)[3], const float4* __restrict__ tex,
                                                const long long* __restrict__ vofs, const int* __restrict__ vW,
                                                const int rv, const int s, const int t, const int lane)
{
    // nearest samples at integer pixels (the caller keeps RAD away from borders)
    const float4* rimg = tex + vofs[rv];
    const int W = vW[rv];
    for (int q = lane; q < NS; q += GRP) {
        const int i = q % WIN - RAD, j = q / WIN - RAD;
        const float4 c = rimg[3LL * ((long long)(t + j) * W + (s + i))];
        sref[q][0] = c.x;
        sref[q][1] = c.y;
        sref[q][2] = c.z;
    }
}

extern "C" __global__ void __launch_bounds__(TPP * SPL * PPB)
mvs_optimize(const float4* __restrict__ tex, const long long* __restrict__ vofs,
             const int* __restrict__ vW, const int* __restrict__ vH,
             const float* __restrict__ geo, const int* __restrict__ nbr, const int* __restrict__ refid,
             const int* __restrict__ item_ref, const int* __restrict__ item_xy,
             const float* __restrict__ item_init, const int* __restrict__ item_min_iter,
             const int n_items, const int nv, const int min_views, const int max_iter, const int drop_from,
             const float ncc_accept, const float eps, const float step_px, const float min_ref_var,
             float* __restrict__ out_param, float* __restrict__ out_conf, int* __restrict__ out_iters,
             int* __restrict__ out_status, float* __restrict__ out_ncc)
{
    __shared__ float sref[PPB][NS][3];

    const int lane = threadIdx.x % GRP;
    const int slot = threadIdx.x / GRP;
    const int item = blockIdx.x * PPB + slot;
    const bool have = item < n_items;
    GROUP_MASKS

    int r = 0, s = 0, t = 0;
    if (have) {
        r = item_ref[item];
        s = item_xy[2 * item];
        t = item_xy[2 * item + 1];
        load_ref_window(sref[slot], tex, vofs, vW, refid[r], s, t, lane);
    }
    __syncthreads();
    if (!have) return;  // whole pixel groups leave together

    const PixelResult res = optimize_pixel(
        tex, vofs, vW, vH, geo, nbr, sref[slot], r, s, t, item_init[3 * item], item_init[3 * item + 1],
        item_init[3 * item + 2], item_min_iter[item], lane, gmask, vmask, gbase, nv, min_views, max_iter, drop_from,
        ncc_accept, eps, step_px, min_ref_var);

    if (lane < TPP) out_ncc[(long long)item * TPP + lane] = res.act ? res.ncc : -2.f;
    if (lane == 0) {
        out_param[3 * item] = res.h;
        out_param[3 * item + 1] = res.hs;
        out_param[3 * item + 2] = res.ht;
        out_conf[item] = res.conf;
        out_iters[item] = res.iters;
        out_status[item] = res.status;
    }
}

// Region growing's batch (selected by mvs_select in cuda/mvs_queue.cu): ctrl[0] items, pixel
// item_key[i] (flat index over the group's views) of reference row item_ref[i]. The result is
// applied here: accepted pixels (success, confidence >= ncc_accept, depth in the reference's
// range, a surface seen less obliquely than the slant limit) get their depth, offsets,
// confidence and unit normal (facing the camera) and turn DONE (records: one plane each); the others count an attempt and
// are CLOSED after max_attempts. rtab[a] = (K^-1 row-major 9, dmin, dmax, -) per reference.
extern "C" __global__ void __launch_bounds__(TPP * SPL * PPB)
mvs_grow_apply(const float4* __restrict__ tex, const long long* __restrict__ vofs,
               const int* __restrict__ vW, const int* __restrict__ vH,
               const float* __restrict__ geo, const int* __restrict__ nbr, const int* __restrict__ refid,
               const int* __restrict__ ctrl, const int* __restrict__ item_key, const int* __restrict__ item_ref,
               const int* __restrict__ item_xy, const float* __restrict__ item_init,
               const int* __restrict__ item_min_iter, const float* __restrict__ rtab,
               const int nv, const int min_views, const int max_iter, const int drop_from,
               const float ncc_accept, const float eps, const float step_px, const float min_ref_var,
               const float cos_slant, const int max_attempts,
               unsigned char* __restrict__ state, unsigned char* __restrict__ attempts,
               float* __restrict__ rh, float* __restrict__ rhs, float* __restrict__ rht, float* __restrict__ rconf,
               float* __restrict__ rnrm, short* __restrict__ riters, int* __restrict__ counters)
{
    __shared__ float sref[PPB][NS][3];
    __shared__ int n_accepted;

    const int lane = threadIdx.x % GRP;
    const int slot = threadIdx.x / GRP;
    const int item = blockIdx.x * PPB + slot;
    const bool have = item < ctrl[0];
    GROUP_MASKS

    int r = 0, s = 0, t = 0;
    if (threadIdx.x == 0) n_accepted = 0;
    if (have) {
        r = item_ref[item];
        s = item_xy[2 * item];
        t = item_xy[2 * item + 1];
        load_ref_window(sref[slot], tex, vofs, vW, refid[r], s, t, lane);
    }
    __syncthreads();
    if (have) {  // (no early return: the block meets again below to count its accepted pixels)
        const PixelResult res = optimize_pixel(
            tex, vofs, vW, vH, geo, nbr, sref[slot], r, s, t, item_init[3 * item], item_init[3 * item + 1],
            item_init[3 * item + 2], item_min_iter[item], lane, gmask, vmask, gbase, nv, min_views, max_iter,
            drop_from, ncc_accept, eps, step_px, min_ref_var);
        if (lane == 0) {
            const int p = item_key[item];
            const float* K = rtab + 12 * r;
            const float h = res.h, hs = res.hs, ht = res.ht, conf = res.conf;
            bool ok = res.status >= 0 && conf >= ncc_accept && h >= K[9] && h <= K[10];
            // the window's plane against the viewing ray (as grow.py's CPU path)
            const float xf = (float)s, yf = (float)t;
            const float ray0 = K[0] * xf + K[1] * yf + K[2];
            const float ray1 = K[3] * xf + K[4] * yf + K[5];
            const float ray2 = K[6] * xf + K[7] * yf + K[8];
            const float pu0 = hs * ray0 + h * K[0], pu1 = hs * ray1 + h * K[3], pu2 = hs * ray2 + h * K[6];
            const float pv0 = ht * ray0 + h * K[1], pv1 = ht * ray1 + h * K[4], pv2 = ht * ray2 + h * K[7];
            const float n0 = pu1 * pv2 - pu2 * pv1, n1 = pu2 * pv0 - pu0 * pv2, n2 = pu0 * pv1 - pu1 * pv0;
            const float nn = sqrtf(n0 * n0 + n1 * n1 + n2 * n2);
            const float dot = n0 * ray0 + n1 * ray1 + n2 * ray2;
            const float rr = sqrtf(ray0 * ray0 + ray1 * ray1 + ray2 * ray2);
            ok = ok && fabsf(dot) >= cos_slant * rr * nn;
            riters[p] = (short)res.iters;
            if (ok) {
                rh[p] = h;
                rhs[p] = hs;
                rht[p] = ht;
                rconf[p] = conf;
                const float sg = (dot > 0.f ? -1.f : 1.f) / fmaxf(nn, 1e-30f);
                rnrm[3LL * p] = n0 * sg;
                rnrm[3LL * p + 1] = n1 * sg;
                rnrm[3LL * p + 2] = n2 * sg;
                state[p] = PX_DONE;
                atomicAdd(&n_accepted, 1);
            } else {
                const int att = attempts[p] + 1;
                attempts[p] = (unsigned char)min(att, 255);
                if (att >= max_attempts) state[p] = PX_CLOSED;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && n_accepted) atomicAdd(counters, n_accepted);  // the samples accepted so far
}
