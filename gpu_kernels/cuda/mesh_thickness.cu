// The thickness's nearest-sample search (gpu_kernels/mesh/thickness.py, _nearest_on_device on a
// CUDA device) in one launch per shrinking-ball step: one block per query row i, every sample j,
//   d2(i, j) = (qq[i] + s2[j]) - g(i, j),   g(i, j) = (2 q_i) . s_j,
// the first smallest d2 of the row (argmin's tie rule), then sqrt(max(d2, 0)).
// This is the CuPy path's arithmetic, in its order, without its (rows x samples) matrices:
// qq and s2 come in as CuPy computed them, 2 q_i is exact, and the 3-term dot product is the
// chain of fused multiply-adds that cuBLAS's DGEMM computes for k = 3 (DOT_MODE 0; 1 and 2 are
// the other orders, kept to check that on a device). Compile with --fmad=false so that nothing
// else is contracted. One block of THICK_THREADS threads per row.
#ifndef DOT_MODE
#define DOT_MODE 0
#endif
#define THICK_THREADS 256

__device__ __forceinline__ double thick_dot(double a0, double a1, double a2, double b0, double b1, double b2)
{
#if DOT_MODE == 0
    return fma(a2, b2, fma(a1, b1, a0 * b0));
#elif DOT_MODE == 1
    return fma(a0, b0, fma(a1, b1, a2 * b2));
#else
    return (a0 * b0 + a1 * b1) + a2 * b2;
#endif
}

// The first smallest d2(j) = (qq + s2[j]) - (2 c) . s_j over the S samples (argmin's tie rule: the
// lowest j), by the block, with a0..a2 = 2 c: every thread gets the winner (d2 in b, j in jq). bv / bj:
// the block's shared scratch (THICK_THREADS each); free again when this returns.
__device__ __forceinline__ void thick_block_argmin(double a0, double a1, double a2, double qq,
                                                   const double* __restrict__ s, const double* __restrict__ s2,
                                                   long long S, double* bv, long long* bj, double& b, long long& jq)
{
    double best = 0.0;
    long long bjx = -1;
    for (long long j = threadIdx.x; j < S; j += blockDim.x) {
        const double g = thick_dot(a0, a1, a2, s[3 * j], s[3 * j + 1], s[3 * j + 2]);
        const double d = (qq + s2[j]) - g;
        if (bjx < 0 || d < best) {
            best = d;
            bjx = j;
        }
    }
    bv[threadIdx.x] = best;
    bj[threadIdx.x] = bjx;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            const double ov = bv[threadIdx.x + h];
            const long long oj = bj[threadIdx.x + h];
            const long long mj = bj[threadIdx.x];
            if (oj >= 0 && (mj < 0 || ov < bv[threadIdx.x] || (ov == bv[threadIdx.x] && oj < mj))) {
                bv[threadIdx.x] = ov;
                bj[threadIdx.x] = oj;
            }
        }
        __syncthreads();
    }
    b = bv[0];
    jq = bj[0];
    __syncthreads();  // every thread has read the winner before the scratch is written again
}

extern "C" __global__ void __launch_bounds__(THICK_THREADS)
mesh_thick_nearest(const double* __restrict__ q, const double* __restrict__ qq,
                   const double* __restrict__ s, const double* __restrict__ s2,
                   const long long m, const long long S,
                   long long* __restrict__ j_out, double* __restrict__ d_out)
{
    __shared__ double bv[THICK_THREADS];
    __shared__ long long bj[THICK_THREADS];
    const long long i = blockIdx.x;
    if (i >= m) {
        return;
    }
    const double a0 = 2.0 * q[3 * i];
    const double a1 = 2.0 * q[3 * i + 1];
    const double a2 = 2.0 * q[3 * i + 2];
    double b;
    long long jq;
    thick_block_argmin(a0, a1, a2, qq[i], s, s2, S, bv, bj, b, jq);
    if (threadIdx.x == 0) {
        j_out[i] = jq;
        d_out[i] = sqrt(b > 0.0 ? b : 0.0);
    }
}

// The whole shrinking-ball loop of gpu_kernels/mesh/thickness.py's face_thickness in one launch
// (thickness.LOOP_ON_DEVICE): one block of THICK_THREADS threads per face f, its steps one after
// the other, each with the search above over every sample. Each face's balls depend on nothing
// but its own centroid p, outward normal n and the samples, so running the faces' steps
// independently gives the host loop's radii, provided every operation rounds as there:
//   c = p - r n (multiply, then subtract), |c|^2 as CuPy's sum over three terms (SUM3_DEV),
//   the search's (|c|^2 + |s|^2) - (2c).s (DOT_MODE), dist = sqrt(max(d2, 0)),
//   pq = p - q, den = 2 (pq.n), num = pq.pq as NumPy's einsum over three terms (SUM3_HOST),
//   inside = dist < r - tol; ok = inside and den > den_min; new = num / den;
//   a face shrinks (r = max(new, tol)) while ok and new < r - tol, else it stops.
// SUM3_*: 0 (x0 + x1) + x2, 1 x0 + (x1 + x2), 2 (x0 + x2) + x1 (the orders are probed at run time).
#ifndef SUM3_DEV
#define SUM3_DEV 0
#endif
#ifndef SUM3_HOST
#define SUM3_HOST 2
#endif

__device__ __forceinline__ double thick_sum3(double x0, double x1, double x2, int mode)
{
    if (mode == 0) {
        return (x0 + x1) + x2;
    }
    if (mode == 1) {
        return x0 + (x1 + x2);
    }
    return (x0 + x2) + x1;
}

extern "C" __global__ void __launch_bounds__(THICK_THREADS)
mesh_thick_balls(const double* __restrict__ p, const double* __restrict__ n,
                 const double* __restrict__ s, const double* __restrict__ s2,
                 const long long F, const long long S, const double r0, const double tol,
                 const double den_min, const int max_steps, double* __restrict__ r_out)
{
    __shared__ double bv[THICK_THREADS];
    __shared__ long long bj[THICK_THREADS];
    const long long f = blockIdx.x;
    if (f >= F) {
        return;
    }
    const double p0 = p[3 * f], p1 = p[3 * f + 1], p2 = p[3 * f + 2];
    const double n0 = n[3 * f], n1 = n[3 * f + 1], n2 = n[3 * f + 2];
    double r = r0;
    for (int step = 0; step < max_steps; ++step) {
        const double c0 = p0 - r * n0;
        const double c1 = p1 - r * n1;
        const double c2 = p2 - r * n2;
        const double qq = thick_sum3(c0 * c0, c1 * c1, c2 * c2, SUM3_DEV);
        double b;
        long long jq;
        thick_block_argmin(2.0 * c0, 2.0 * c1, 2.0 * c2, qq, s, s2, S, bv, bj, b, jq);
        const double dist = sqrt(b > 0.0 ? b : 0.0);
        const double q0 = p0 - s[3 * jq], q1 = p1 - s[3 * jq + 1], q2 = p2 - s[3 * jq + 2];
        const bool inside = dist < r - tol;
        const double den = 2.0 * thick_sum3(q0 * n0, q1 * n1, q2 * n2, SUM3_HOST);
        const double num = thick_sum3(q0 * q0, q1 * q1, q2 * q2, SUM3_HOST);
        const bool ok = inside && (den > den_min);
        const double nw = ok ? num / den : r;
        if (ok && nw < r - tol) {
            r = nw > tol ? nw : tol;
        } else {
            break;
        }
    }
    if (threadIdx.x == 0) {
        r_out[f] = r;
    }
}
