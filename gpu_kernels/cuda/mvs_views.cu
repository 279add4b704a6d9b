// Global view selection on the device (gpu_kernels/mvs/views.py, Goesele et al. 2007, Section 4.1):
// the greedy steps of every reference view in one launch, one block per reference view.
//
// Inputs: P (N x 3) the sparse points, member (N x n, 1 where view v sees point p), C (n x 3) the
// camera centres, Rz (n x 3) the cameras' third rows of R, focal (n), refs (R) the reference views.
// Scratch wn (R x n x N): each candidate view's running product of parallax factors over the views
// chosen so far (the reference first), one new factor per step, as views.py's NumPy path keeps it.
//
// Step: score(v) = sum over the points p that ref and v see of wn(v, p) * w_s(v, p), with
// wn *= min((acos(clip(dir_v(p) . dir_c(p), -1, 1)) / alpha_max)^2, 1) for the view c chosen last,
// w_s the scale weight of r = footprint_ref(p) / footprint_v(p). The best view (the first of equal
// scores, as np.argmax) is chosen while its score is positive. The same values per term as the
// NumPy path; each view's sum is one warp's (lanes over the points, then a shuffle reduction:
// another order of the floating-point sum, so equal choices up to exact ties).
//
// out (R x max_nb): the chosen views in order, -1 after the last.

#define MVS_VS_THREADS 256

__device__ __forceinline__ void mvs_vs_dir(const double* __restrict__ P, const double* __restrict__ C, const int p,
                                           const int v, double d[3])
{
    for (int k = 0; k < 3; ++k) d[k] = P[3 * p + k] - C[3 * v + k];
    const double l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int k = 0; k < 3; ++k) d[k] /= l;
}

__device__ __forceinline__ double mvs_vs_foot(const double* __restrict__ P, const double* __restrict__ C,
                                              const double* __restrict__ Rz, const double* __restrict__ focal,
                                              const int p, const int v)
{
    double z = 0.0;
    for (int k = 0; k < 3; ++k) z += (P[3 * p + k] - C[3 * v + k]) * Rz[3 * v + k];
    return fabs(z) / focal[v];
}

extern "C" __global__ void __launch_bounds__(MVS_VS_THREADS) mvs_select_views(
    const int n, const int N, const double* __restrict__ P, const unsigned char* __restrict__ member,
    const double* __restrict__ C, const double* __restrict__ Rz, const double* __restrict__ focal,
    const int* __restrict__ refs, const int max_nb, const double alpha_max, double* __restrict__ wn,
    int* __restrict__ out)
{
    __shared__ int s_chosen[1];
    __shared__ int s_stop[1];
    extern __shared__ double scores[];  // n
    const int r = blockIdx.x;
    const int ref = refs[r];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5, warps = blockDim.x >> 5;
    double* w = wn + (long long)r * n * N;
    for (int i = t; i < max_nb; i += blockDim.x) out[r * max_nb + i] = -1;
    for (long long i = t; i < (long long)n * N; i += blockDim.x) w[i] = 1.0;
    if (t == 0) {
        s_chosen[0] = ref;
        s_stop[0] = 0;
    }
    __syncthreads();
    for (int step = 0; step < max_nb; ++step) {
        const int c = s_chosen[0];
        // one warp per candidate view: its lanes over the points, then a warp reduction
        for (int v = warp; v < n; v += warps) {
            bool skip = v == ref;
            for (int j = 0; j < step && !skip; ++j) skip = out[r * max_nb + j] == v;
            double acc = 0.0;
            if (!skip) {
                for (int p = lane; p < N; p += 32) {
                    if (!member[(long long)p * n + ref] || !member[(long long)p * n + v]) continue;
                    double dv[3], dc[3];
                    mvs_vs_dir(P, C, p, v, dv);
                    mvs_vs_dir(P, C, p, c, dc);
                    double cs = dv[0] * dc[0] + dv[1] * dc[1] + dv[2] * dc[2];
                    cs = cs < -1.0 ? -1.0 : (cs > 1.0 ? 1.0 : cs);
                    const double a = acos(cs) / alpha_max;
                    const double f = a * a < 1.0 ? a * a : 1.0;
                    const double wv = w[(long long)v * N + p] * f;
                    w[(long long)v * N + p] = wv;
                    const double rr = mvs_vs_foot(P, C, Rz, focal, p, ref) /
                                      fmax(mvs_vs_foot(P, C, Rz, focal, p, v), 1e-30);
                    const double ws = rr >= 2.0 ? 2.0 / fmax(rr, 1e-12) : (rr >= 1.0 ? 1.0 : rr);
                    acc += wv * ws;
                }
            }
            for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
            if (lane == 0) scores[v] = skip ? 0.0 : acc;
        }
        __syncthreads();
        if (t == 0) {
            int best = 0;
            for (int v = 1; v < n; ++v)
                if (scores[v] > scores[best]) best = v;
            if (scores[best] <= 0.0) {
                s_stop[0] = 1;
            } else {
                out[r * max_nb + step] = best;
                s_chosen[0] = best;
            }
        }
        __syncthreads();
        if (s_stop[0]) break;
    }
}
