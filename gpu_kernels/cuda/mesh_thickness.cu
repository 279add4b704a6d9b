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
    const double r = qq[i];
    double best = 0.0;
    long long bjx = -1;
    for (long long j = threadIdx.x; j < S; j += blockDim.x) {
        const double g = thick_dot(a0, a1, a2, s[3 * j], s[3 * j + 1], s[3 * j + 2]);
        const double d = (r + s2[j]) - g;
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
    if (threadIdx.x == 0) {
        j_out[i] = bj[0];
        const double b = bv[0];
        d_out[i] = sqrt(b > 0.0 ? b : 0.0);
    }
}
