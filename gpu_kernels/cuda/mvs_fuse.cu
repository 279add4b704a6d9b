// Depth-map fusion on the device (gpu_kernels/mvs/fusion.py, fuse_depth_maps, GPU path): for the
// free samples of one view a, the sums over every other view b that confirms them, in one launch
// (the CuPy path took some forty launches and three host round trips per pair of views).
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
//   mvs_fuse_gather  thread k: sample idx[k] of view a; writes its sums (point, normal, colour,
//                    confidence), its count (its own view included) and, per view b, the pixel
//                    of b that confirmed it (-1 where none) for the marking;
//   mvs_fuse_mark    after the counts are known: the sample is used, and where at least
//                    min_views views agree, so are the pixels that confirmed it.

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
    const int a, const int m, const long long* __restrict__ idx, const int n, const long long* __restrict__ offs,
    const int* __restrict__ Ws, const int* __restrict__ Hs, const double* __restrict__ cam,
    const float* __restrict__ D, const unsigned char* __restrict__ used, const double* __restrict__ N,
    const double* __restrict__ Q, const unsigned char* __restrict__ IMG, const int* __restrict__ flags,
    const double rel_tol, double* __restrict__ sx, int* __restrict__ cnt, double* __restrict__ sn,
    double* __restrict__ sc, double* __restrict__ sq, int* __restrict__ pixb)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m) return;
    const long long p = idx[k];
    const double* ca = cam + (long long)a * CAM;
    const long long oa = offs[a];
    double X[3];
    mvs_backproject(ca, p, Ws[a], (double)D[oa + p], X);
    double s[3] = {X[0], X[1], X[2]};
    double nrm[3] = {0.0, 0.0, 0.0}, col[3] = {0.0, 0.0, 0.0}, q = 0.0;
    const int fa = flags[a];
    if (fa & 1) mvs_normal(ca, N + 3 * (oa + p), nrm);
    if (fa & 2) for (int i = 0; i < 3; ++i) col[i] = (double)IMG[3 * (oa + p) + i];
    if (fa & 4) q = Q[oa + p];
    int c = 1;
    for (int b = 0; b < n; ++b) {
        if (b == a) {
            pixb[(long long)b * m + k] = -1;
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
        pixb[(long long)b * m + k] = agree ? (int)pix : -1;
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
    for (int i = 0; i < 3; ++i) {
        sx[3 * k + i] = s[i];
        sn[3 * k + i] = nrm[i];
        sc[3 * k + i] = col[i];
    }
    sq[k] = q;
    cnt[k] = c;
}

extern "C" __global__ void mvs_fuse_mark(const int a, const int m, const long long* __restrict__ idx, const int n,
                                         const long long* __restrict__ offs, const int* __restrict__ pixb,
                                         const int* __restrict__ cnt, const int min_views,
                                         unsigned char* __restrict__ used)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m) return;
    used[offs[a] + idx[k]] = 1;
    if (cnt[k] < min_views) return;
    for (int b = 0; b < n; ++b) {
        const int pix = pixb[(long long)b * m + k];
        if (pix >= 0) used[offs[b] + pix] = 1;
    }
}
