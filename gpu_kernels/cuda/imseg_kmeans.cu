// Stage 1 of the image segmentation: k-means on the quantised CIELAB colours.
//
// The occupied colours (code, weight = pixel count) are a compact list whose length and the
// number of centres stay on the device: every kernel reads them from device memory, so the
// host never waits for the GPU in this stage. Centres and distances are double; the centroid
// sums are integers (weights times bin indices), so the result does not depend on the order
// in which the atomics land.
#include "imseg_common.cuh"

#define KM_MAXK 1024  // largest number of centres (k_max)
#define KM_INIT_THREADS 32

// ------------------------------------------------------------------ weights by sorting
// sorted: the pixels' codes in ascending order. A segmented reduction over equal codes:
// the weight of a code is (end of its segment) - (start of its segment).
extern "C" __global__ void sorted_weights(const int* __restrict__ sorted, long long n, unsigned int* __restrict__ hist) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int c = sorted[i];
    bool head = (i == 0) || (sorted[i - 1] != c);
    bool tail = (i == n - 1) || (sorted[i + 1] != c);
    // unsigned wrap-around: hist[c] = (tail + 1) - head as the two updates land in any order
    if (head) atomicAdd(&hist[c], (unsigned int)(0u - (unsigned int)i));
    if (tail) atomicAdd(&hist[c], (unsigned int)(i + 1));
}

// ------------------------------------------------------------------ occupied colours
extern "C" __global__ void compact_colours(const unsigned int* __restrict__ hist, int F, int* __restrict__ ccode,
                                           unsigned int* __restrict__ cw, int* __restrict__ count) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= F) return;
    unsigned int w = hist[c];
    if (w == 0) return;
    int slot = atomicAdd(count, 1);
    ccode[slot] = c;
    cw[slot] = w;
}

// ------------------------------------------------------------------ initial centres
// Samples on a grid of ny x nx pixels (equal intervals), taken in raster order; a sample whose
// bin centre is closer than sqrt(thr2) to the nearest candidate is merged into it (running
// mean), otherwise it becomes a new candidate (ties: the lower index; the same arithmetic, in
// the same order, as the CPU). One warp: init_centres_fast below.

// The nearest of the candidates c0, c0 + step, ... below k to (L, A, B) in squared CIELAB
// distance, into (bd, bi): only a strictly nearer one replaces, so ties keep the lower index.
__device__ __forceinline__ void km_scan(double L, double A, double B, const double* sc, int c0, int k, int step,
                                        double& bd, int& bi) {
    for (int c = c0; c < k; c += step) {
        double dL = L - sc[3 * c], dA = A - sc[3 * c + 1], dB = B - sc[3 * c + 2];
        double d = dL * dL + dA * dA + dB * dB;
        if (d < bd) {
            bd = d;
            bi = c;
        }
    }
}

// The sample (L, A, B) joins candidate bi (running mean) when bd, its squared distance, is below
// thr2, else becomes candidate k; returns the number of candidates after.
__device__ __forceinline__ int km_init_place(double L, double A, double B, int bi, double bd, double thr2, double* cand,
                                             double* cwt, int k) {
    if (bi != 0x7fffffff && bd < thr2) {
        double w = cwt[bi];
        cand[3 * bi] = (cand[3 * bi] * w + L) / (w + 1.0);
        cand[3 * bi + 1] = (cand[3 * bi + 1] * w + A) / (w + 1.0);
        cand[3 * bi + 2] = (cand[3 * bi + 2] * w + B) / (w + 1.0);
        cwt[bi] = w + 1.0;
        return k;
    }
    cand[3 * k] = L;
    cand[3 * k + 1] = A;
    cand[3 * k + 2] = B;
    cwt[k] = 1.0;
    return k + 1;
}

// One sample of the initial centres, by the warp: the nearest of the cnt candidates (ties: the
// lower index) found with shuffles; lane 0 merges the sample into it (running mean) when closer
// than sqrt(thr2), else appends it (the same arithmetic, in the same order, as the CPU).
__device__ __forceinline__ void km_init_step(double L, double A, double B, double thr2, double* cand, double* cwt,
                                             int* cnt, int tid) {
    const int k = *cnt;
    double bd = 1e300;
    int bi = 0x7fffffff;
    km_scan(L, A, B, cand, tid, k, KM_INIT_THREADS, bd, bi);
    for (int off = KM_INIT_THREADS / 2; off > 0; off >>= 1) {
        double od = __shfl_xor_sync(0xffffffffu, bd, off);
        int oi = __shfl_xor_sync(0xffffffffu, bi, off);
        if (od < bd || (od == bd && oi < bi)) {
            bd = od;
            bi = oi;
        }
    }
    if (tid == 0) *cnt = km_init_place(L, A, B, bi, bd, thr2, cand, cwt, k);
    __syncwarp();
}

// The initial centres, by one warp: the samples' bin centres computed by all lanes first (into
// dynamic shared memory: 3 doubles a candidate, 1 a candidate weight, 3 a sample: 56 * kmax
// bytes), then the nearest-candidate search made by lane 0 alone while there are at most
// KM_SERIAL_MAX candidates (a short loop beats the warp's five-step shuffle reduction there), by
// the warp (km_init_step) after. The same arithmetic in the same order as the CPU: the same
// centres. (Session 9; the session-2 kernel init_centres, the warp's search from the first
// sample, was removed in session 10.)
#define KM_SERIAL_MAX 32

extern "C" __global__ void init_centres_fast(const int* __restrict__ codes, int W, int H, int nx, int ny, int Q,
                                             double thr2, double* __restrict__ centres, int* __restrict__ kcount,
                                             int kmax) {
    extern __shared__ double ic_smem[];
    double* cand = ic_smem;        // 3 kmax
    double* cwt = cand + 3 * kmax; // kmax
    double* sl = cwt + kmax;       // 3 per sample (ns <= kmax)
    __shared__ int cnt, sdone;
    const int tid = threadIdx.x;
    const int ns = nx * ny;
    for (int s = tid; s < ns; s += KM_INIT_THREADS) {
        int iy = s / nx, ix = s - iy * nx;
        long long y = ((long long)(2 * iy + 1) * H) / (2LL * ny);
        long long x = ((long long)(2 * ix + 1) * W) / (2LL * nx);
        code_centre(codes[y * W + x], Q, sl[3 * s], sl[3 * s + 1], sl[3 * s + 2]);
    }
    __syncwarp();
    if (tid == 0) {
        int k = 0, s = 0;
        for (; s < ns && k <= KM_SERIAL_MAX; ++s) {
            const double L = sl[3 * s], A = sl[3 * s + 1], B = sl[3 * s + 2];
            double bd = 1e300;
            int bi = 0x7fffffff;
            km_scan(L, A, B, cand, 0, k, 1, bd, bi);
            k = km_init_place(L, A, B, bi, bd, thr2, cand, cwt, k);
        }
        cnt = k;
        sdone = s;
    }
    __syncwarp();
    for (int s = sdone; s < ns; ++s) km_init_step(sl[3 * s], sl[3 * s + 1], sl[3 * s + 2], thr2, cand, cwt, &cnt, tid);
    const int k = cnt;
    for (int i = tid; i < 3 * k; i += KM_INIT_THREADS) centres[i] = cand[i];
    if (tid == 0) *kcount = k;
}

// ------------------------------------------------------------------ assignment
// The nearest centre of a colour code (ties: the lower index), over the k centres in sc; the
// assignment kernel and the one-block k-means both call it.
__device__ __forceinline__ int km_nearest(int code, int Q, const double* sc, int k) {
    double L, A, B;
    code_centre(code, Q, L, A, B);
    double bd = 1e300;
    int bi = 0;
    km_scan(L, A, B, sc, 0, k, 1, bd, bi);
    return bi;
}

// Each occupied colour takes its nearest centre (ties: the lower index). With table != 0 the
// dense code -> cluster table is written as well (the final assignment).
extern "C" __global__ void kmeans_assign(const int* __restrict__ ccode, const int* __restrict__ count, int Q,
                                         const double* __restrict__ centres, const int* __restrict__ kcount,
                                         int* __restrict__ cassign, int* __restrict__ table) {
    __shared__ double sc[KM_MAXK * 3];
    const int k = *kcount;
    for (int i = threadIdx.x; i < 3 * k; i += blockDim.x) sc[i] = centres[i];
    __syncthreads();
    const int m = *count;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    const int code = ccode[i];
    const int bi = km_nearest(code, Q, sc, k);
    cassign[i] = bi;
    if (table != 0) table[code] = bi;
}

// ------------------------------------------------------------------ centroid update
// One block of 1024 threads: per cluster the sums of w, w qL, w qa, w qb over its occupied
// colours, as exact integers in shared memory (so the order the atomics land in does not
// matter), then the centres. A cluster left without colours keeps its centre.
#define KM_UPD_THREADS 1024

extern "C" __global__ void kmeans_update(const int* __restrict__ ccode, const unsigned int* __restrict__ cw,
                                         const int* __restrict__ count, const int* __restrict__ cassign, int Q,
                                         double* __restrict__ centres, const int* __restrict__ kcount) {
    __shared__ u64 s0[KM_MAXK];
    __shared__ u64 s1[KM_MAXK];
    __shared__ u64 s2[KM_MAXK];
    __shared__ u64 s3[KM_MAXK];
    const int t = threadIdx.x;
    const int k = *kcount;
    const int m = *count;
    s0[t] = 0;
    s1[t] = 0;
    s2[t] = 0;
    s3[t] = 0;
    __syncthreads();
    const int mask = (1 << Q) - 1;
    for (int i = t; i < m; i += KM_UPD_THREADS) {
        const int c = cassign[i];
        const u64 w = (u64)cw[i];
        const int code = ccode[i];
        atomicAdd(&s0[c], w);
        atomicAdd(&s1[c], w * (u64)(code >> (2 * Q)));
        atomicAdd(&s2[c], w * (u64)((code >> Q) & mask));
        atomicAdd(&s3[c], w * (u64)(code & mask));
    }
    __syncthreads();
    if (t < k && s0[t] > 0) {
        const double fl = (double)(1 << Q);
        const double wt = (double)s0[t];
        centres[3 * t] = (double)IMSEG_L_LO + ((double)s1[t] / wt + 0.5) * (((double)IMSEG_L_HI - (double)IMSEG_L_LO) / fl);
        centres[3 * t + 1] = (double)IMSEG_A_LO + ((double)s2[t] / wt + 0.5) * (((double)IMSEG_A_HI - (double)IMSEG_A_LO) / fl);
        centres[3 * t + 2] = (double)IMSEG_B_LO + ((double)s3[t] / wt + 0.5) * (((double)IMSEG_B_HI - (double)IMSEG_B_LO) / fl);
    }
}

// ------------------------------------------------------------------ pixels take their colour's cluster
extern "C" __global__ void map_clusters(int* __restrict__ codes, long long n, const int* __restrict__ table) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    codes[p] = table[codes[p]];
}

// ------------------------------------------------------------------ all iterations in one block
// kmeans_assign and kmeans_update, `iterations` times, then the final assignment with the
// code -> cluster table, in one block of 1024 threads (no launch between the steps): the same
// arithmetic on the same values, so the same centres and clusters. The centres live in shared
// memory, and the centroid sums as 32-bit words there: each sum as a low and a high word, the
// low word's carry added to the high one (the sum is exact, whatever order the additions land
// in; the high words of the weight sums stay 0 below 2^32 pixels). 32-bit shared atomic adds are
// single instructions; 64-bit ones on shared memory may not be (session 9, which replaced the
// 64-bit kmeans_fused64: 67 -> 22 us at 512^2, benchmarks/results/imseg_speed_session9.md).
// Dynamic shared memory: 3 doubles and 8 words for each of kmax centres.
__device__ __forceinline__ void km_add64(unsigned int* lo, unsigned int* hi, u64 x) {
    const unsigned int xl = (unsigned int)x, xh = (unsigned int)(x >> 32);
    const unsigned int old = atomicAdd(lo, xl);
    const unsigned int carry = (old + xl < old) ? 1u : 0u;
    if (xh + carry) atomicAdd(hi, xh + carry);
}

extern "C" __global__ void __launch_bounds__(1024) kmeans_fused(const int* __restrict__ ccode,
                                                                  const unsigned int* __restrict__ cw,
                                                                  const int* __restrict__ count, int Q,
                                                                  double* __restrict__ centres,
                                                                  const int* __restrict__ kcount, int kmax,
                                                                  int iterations, int* __restrict__ table) {
    extern __shared__ double km_smem32[];
    double* sc = km_smem32;                                  // 3 kmax doubles
    unsigned int* s0 = (unsigned int*)(sc + 3 * kmax);      // kmax words each
    unsigned int* s0h = s0 + kmax;
    unsigned int* s1l = s0h + kmax;
    unsigned int* s1h = s1l + kmax;
    unsigned int* s2l = s1h + kmax;
    unsigned int* s2h = s2l + kmax;
    unsigned int* s3l = s2h + kmax;
    unsigned int* s3h = s3l + kmax;
    const int t = threadIdx.x, T = blockDim.x;
    const int k = *kcount;
    const int m = *count;
    const int mask = (1 << Q) - 1;
    for (int i = t; i < 3 * k; i += T) sc[i] = centres[i];
    __syncthreads();
    for (int it = 0; it < iterations; ++it) {
        for (int c = t; c < k; c += T) {
            s0[c] = s0h[c] = 0u;
            s1l[c] = s1h[c] = 0u;
            s2l[c] = s2h[c] = 0u;
            s3l[c] = s3h[c] = 0u;
        }
        __syncthreads();
        for (int i = t; i < m; i += T) {
            const int code = ccode[i];
            const int c = km_nearest(code, Q, sc, k);
            const unsigned int w = cw[i];
            km_add64(&s0[c], &s0h[c], (u64)w);
            km_add64(&s1l[c], &s1h[c], (u64)w * (u64)(code >> (2 * Q)));
            km_add64(&s2l[c], &s2h[c], (u64)w * (u64)((code >> Q) & mask));
            km_add64(&s3l[c], &s3h[c], (u64)w * (u64)(code & mask));
        }
        __syncthreads();
        for (int c = t; c < k; c += T) {
            const u64 v0 = ((u64)s0h[c] << 32) | (u64)s0[c];
            if (v0 == 0) continue;
            const double fl = (double)(1 << Q);
            const double wt = (double)v0;
            const u64 v1 = ((u64)s1h[c] << 32) | (u64)s1l[c];
            const u64 v2 = ((u64)s2h[c] << 32) | (u64)s2l[c];
            const u64 v3 = ((u64)s3h[c] << 32) | (u64)s3l[c];
            sc[3 * c] = (double)IMSEG_L_LO + ((double)v1 / wt + 0.5) * (((double)IMSEG_L_HI - (double)IMSEG_L_LO) / fl);
            sc[3 * c + 1] = (double)IMSEG_A_LO + ((double)v2 / wt + 0.5) * (((double)IMSEG_A_HI - (double)IMSEG_A_LO) / fl);
            sc[3 * c + 2] = (double)IMSEG_B_LO + ((double)v3 / wt + 0.5) * (((double)IMSEG_B_HI - (double)IMSEG_B_LO) / fl);
        }
        __syncthreads();
    }
    for (int i = t; i < m; i += T) {
        const int code = ccode[i];
        table[code] = km_nearest(code, Q, sc, k);
    }
    for (int i = t; i < 3 * k; i += T) centres[i] = sc[i];
}
