// Depth-map fusion on the device (gpu_kernels/mvs/fusion.py, fuse_depth_maps, GPU path): for the
// free samples of one view a, the sums over every other view b that confirms them, in one launch
// over all of a's pixels (the CuPy path took some forty launches and three host round trips per
// pair of views; the first kernel of this file one per view after a host compaction). Nothing
// comes back to the host per view: each pixel's fused point is written at the pixel's own place
// (every map's pixels concatenated, views in order), so the cloud is one ordered compaction of the
// emitted pixels at the end (the order the per-view emission gave: view, then pixel).
//
// Every view's maps are concatenated: depth D (float32), used (uint8), normals N (3 float64,
// camera frame), confidence Q (float64), colour IMG (3 uint8), at pixel offset offs[v]; cam[v]
// holds K (9), R (9), t (3), K^-1 (9), row-major float64. flags[v]: bit 0 normals, bit 1 colours,
// bit 2 confidences present.
//
// The arithmetic follows the CuPy path operation by operation in float64 (a 3-term product as
// the GEMM computes it: fma(a2, b2, fma(a1, b1, a0 b0)); every other operation rounded on its own,
// the module is built with --fmad=false), and a view b adds in the same order (b ascending).
//
//   mvs_fuse_gather  thread p: pixel p of view a, a sample when its depth is finite, positive and
//                    not used yet; writes its count (its own view included; 0: no sample) and,
//                    where at least min_views views agree, its fused point (float32), normal sum
//                    (float64: the host side normalises it, as the CuPy path does), colour, mean
//                    confidence and view, all at pixel offs[a] + p; per view b, the pixel of b that
//                    confirmed it (-1 where none) for the marking;
//   mvs_fuse_mark    after the counts are known: the sample is used, and where at least
//                    min_views views agree, so are the pixels that confirmed it.
//
// The emitted values follow fusion._emitted's CuPy operations: point = (float)(sum / count),
// colour = clip(rint(sum / count), 0, 255), confidence = (float)(sum / count); views without
// normals / colours / confidences give 0 / 200 / 1.

#define CAM 30

__device__ __forceinline__ double mvs_dot3(const double a0, const double a1, const double a2, const double b0,
                                           const double b1, const double b2)
{
    return fma(a2, b2, fma(a1, b1, a0 * b0));
}

// X = R^T (d K^-1 (u, v, 1) - t), as (stack(u, v, 1) @ Ki.T * d - t) @ R
__device__ __forceinline__ void mvs_backproject(const double* __restrict__ c, const long long pix, const int W,
                                                const double d, double X[3])
{
    const long long vv = pix / W;
    const double u = (double)(pix - vv * W), v = (double)vv;
    const double* Ki = c + 21;
    const double* R = c + 9;
    const double* t = c + 18;
    double w[3];
    for (int j = 0; j < 3; ++j) {
        const double rc = mvs_dot3(u, v, 1.0, Ki[3 * j], Ki[3 * j + 1], Ki[3 * j + 2]);
        w[j] = rc * d - t[j];
    }
    for (int i = 0; i < 3; ++i) X[i] = mvs_dot3(w[0], w[1], w[2], R[i], R[3 + i], R[6 + i]);
}

// the world normal nan_to_num(n) @ R
__device__ __forceinline__ void mvs_normal(const double* __restrict__ c, const double* __restrict__ n, double out[3])
{
    double m[3];
    for (int j = 0; j < 3; ++j) {
        const double x = n[j];
        m[j] = isnan(x) ? 0.0 : (isinf(x) ? (x > 0 ? 1.7976931348623157e308 : -1.7976931348623157e308) : x);
    }
    const double* R = c + 9;
    for (int i = 0; i < 3; ++i) out[i] = mvs_dot3(m[0], m[1], m[2], R[i], R[3 + i], R[6 + i]);
}

extern "C" __global__ void mvs_fuse_gather(
    const int a, const int S, const int n, const long long* __restrict__ offs, const int* __restrict__ Ws,
    const int* __restrict__ Hs, const double* __restrict__ cam, const float* __restrict__ D,
    const unsigned char* __restrict__ used, const double* __restrict__ N, const double* __restrict__ Q,
    const unsigned char* __restrict__ IMG, const int* __restrict__ flags, const double rel_tol, const int min_views,
    const int view_id, int* __restrict__ pixb, const int pstride, int* __restrict__ cnt_out,
    float* __restrict__ p_out, double* __restrict__ n_out, unsigned char* __restrict__ c_out,
    float* __restrict__ q_out, int* __restrict__ s_out)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= S) return;
    const long long oa = offs[a];
    const float da = D[oa + p];
    if (!(isfinite(da) && da > 0.0f && used[oa + p] == 0)) {
        cnt_out[oa + p] = 0;
        return;
    }
    const double* ca = cam + (long long)a * CAM;
    double X[3];
    mvs_backproject(ca, p, Ws[a], (double)da, X);
    double s[3] = {X[0], X[1], X[2]};
    double nrm[3] = {0.0, 0.0, 0.0}, col[3] = {0.0, 0.0, 0.0}, q = 0.0;
    const int fa = flags[a];
    if (fa & 1) mvs_normal(ca, N + 3 * (oa + p), nrm);
    if (fa & 2) for (int i = 0; i < 3; ++i) col[i] = (double)IMG[3 * (oa + p) + i];
    if (fa & 4) q = Q[oa + p];
    int c = 1;
    for (int b = 0; b < n; ++b) {
        int* pb = pixb + (long long)b * pstride + p;
        if (b == a) {
            *pb = -1;
            continue;
        }
        const double* cb = cam + (long long)b * CAM;
        const double* K = cb;
        const double* R = cb + 9;
        const double* t = cb + 18;
        double Xc[3];
        for (int i = 0; i < 3; ++i) Xc[i] = mvs_dot3(X[0], X[1], X[2], R[3 * i], R[3 * i + 1], R[3 * i + 2]) + t[i];
        double pp[3];
        for (int i = 0; i < 3; ++i) pp[i] = mvs_dot3(Xc[0], Xc[1], Xc[2], K[3 * i], K[3 * i + 1], K[3 * i + 2]);
        const double u = pp[0] / pp[2], v = pp[1] / pp[2], z = Xc[2];
        const double ui = rint(u), vi = rint(v);
        const int W = Ws[b], H = Hs[b];
        const bool inside = (z > 0) && (ui >= 0) && (vi >= 0) && (ui < W) && (vi < H) && isfinite(ui) && isfinite(vi);
        const long long pix = inside ? (long long)(vi * W + ui) : 0;
        const long long ob = offs[b];
        const double dv = (double)D[ob + pix];
        const bool agree = inside && isfinite(dv) && (fabs(dv - z) <= rel_tol * fabs(z)) && !used[ob + pix];
        *pb = agree ? (int)pix : -1;
        if (!agree) continue;
        double Y[3];
        mvs_backproject(cb, pix, W, dv, Y);
        for (int i = 0; i < 3; ++i) s[i] += Y[i];
        ++c;
        const int fb = flags[b];
        if ((fa & 1) && (fb & 1)) {
            double nb[3];
            mvs_normal(cb, N + 3 * (ob + pix), nb);
            for (int i = 0; i < 3; ++i) nrm[i] += nb[i];
        }
        if ((fa & 2) && (fb & 2)) for (int i = 0; i < 3; ++i) col[i] += (double)IMG[3 * (ob + pix) + i];
        if ((fa & 4) && (fb & 4)) q += Q[ob + pix];
    }
    cnt_out[oa + p] = c;
    if (c < min_views) return;
    const double cd = (double)c;
    const long long o = oa + p;
    for (int i = 0; i < 3; ++i) {
        p_out[3 * o + i] = (float)(s[i] / cd);
        n_out[3 * o + i] = nrm[i];
        double r = rint(col[i] / cd);
        r = r < 0.0 ? 0.0 : (r > 255.0 ? 255.0 : r);
        c_out[3 * o + i] = (fa & 2) ? (unsigned char)r : (unsigned char)200;
    }
    q_out[o] = (fa & 4) ? (float)(q / cd) : 1.0f;
    s_out[o] = view_id;
}

extern "C" __global__ void mvs_fuse_mark(const int a, const int S, const int n, const long long* __restrict__ offs,
                                         const int* __restrict__ pixb, const int pstride,
                                         const int* __restrict__ cnt, const int min_views,
                                         unsigned char* __restrict__ used)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= S) return;
    const int c = cnt[offs[a] + p];
    if (c == 0) return;
    used[offs[a] + p] = 1;
    if (c < min_views) return;
    for (int b = 0; b < n; ++b) {
        const int pix = pixb[(long long)b * pstride + p];
        if (pix >= 0) used[offs[b] + pix] = 1;
    }
}
