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
// mean), otherwise it becomes a new candidate. One block of KM_INIT_THREADS threads.
extern "C" __global__ void init_centres(const int* __restrict__ codes, int W, int H, int nx, int ny, int Q,
                                        double thr2, double* __restrict__ centres, int* __restrict__ kcount) {
    __shared__ double cand[KM_MAXK * 3];
    __shared__ double cwt[KM_MAXK];
    __shared__ double red_d[KM_INIT_THREADS];
    __shared__ int red_i[KM_INIT_THREADS];
    __shared__ int cnt;
    const int tid = threadIdx.x;
    if (tid == 0) cnt = 0;
    __syncthreads();
    const int ns = nx * ny;
    for (int s = 0; s < ns; ++s) {
        int iy = s / nx, ix = s - iy * nx;
        long long y = ((long long)(2 * iy + 1) * H) / (2LL * ny);
        long long x = ((long long)(2 * ix + 1) * W) / (2LL * nx);
        double L, A, B;
        code_centre(codes[y * W + x], Q, L, A, B);
        const int k = cnt;
        double bd = 1e300;
        int bi = 0x7fffffff;
        for (int c = tid; c < k; c += KM_INIT_THREADS) {
            double dL = L - cand[3 * c], dA = A - cand[3 * c + 1], dB = B - cand[3 * c + 2];
            double d = dL * dL + dA * dA + dB * dB;
            if (d < bd) {
                bd = d;
                bi = c;
            }
        }
        red_d[tid] = bd;
        red_i[tid] = bi;
        __syncthreads();
        for (int off = KM_INIT_THREADS / 2; off > 0; off >>= 1) {
            double od = 0.0;
            int oi = 0;
            if (tid < off) {
                od = red_d[tid + off];
                oi = red_i[tid + off];
            }
            __syncthreads();
            if (tid < off && (od < red_d[tid] || (od == red_d[tid] && oi < red_i[tid]))) {
                red_d[tid] = od;
                red_i[tid] = oi;
            }
            __syncthreads();
        }
        if (tid == 0) {
            int i = red_i[0];
            if (i != 0x7fffffff && red_d[0] < thr2) {
                double w = cwt[i];
                cand[3 * i] = (cand[3 * i] * w + L) / (w + 1.0);
                cand[3 * i + 1] = (cand[3 * i + 1] * w + A) / (w + 1.0);
                cand[3 * i + 2] = (cand[3 * i + 2] * w + B) / (w + 1.0);
                cwt[i] = w + 1.0;
            } else {
                cand[3 * k] = L;
                cand[3 * k + 1] = A;
                cand[3 * k + 2] = B;
                cwt[k] = 1.0;
                cnt = k + 1;
            }
        }
        __syncthreads();
    }
    const int k = cnt;
    for (int i = tid; i < 3 * k; i += KM_INIT_THREADS) centres[i] = cand[i];
    if (tid == 0) *kcount = k;
}

// ------------------------------------------------------------------ assignment
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
    int code = ccode[i];
    double L, A, B;
    code_centre(code, Q, L, A, B);
    double bd = 1e300;
    int bi = 0;
    for (int c = 0; c < k; ++c) {
        double dL = L - sc[3 * c], dA = A - sc[3 * c + 1], dB = B - sc[3 * c + 2];
        double d = dL * dL + dA * dA + dB * dB;
        if (d < bd) {
            bd = d;
            bi = c;
        }
    }
    cassign[i] = bi;
    if (table != 0) table[code] = bi;
}

// ------------------------------------------------------------------ centroid update
// One block of 1024 threads: counting sort of the occupied colours by cluster (histogram,
// scan, scatter into perm), then segmented sums over the sorted order: sum w, w qL, w qa, w qb
// per cluster (exact integers). A cluster left without colours keeps its centre.
#define KM_UPD_THREADS 1024

extern "C" __global__ void kmeans_update(const int* __restrict__ ccode, const unsigned int* __restrict__ cw,
                                         const int* __restrict__ count, const int* __restrict__ cassign, int Q,
                                         double* __restrict__ centres, const int* __restrict__ kcount,
                                         int* __restrict__ perm) {
    __shared__ int hc[KM_MAXK];
    __shared__ int cur[KM_MAXK];
    __shared__ u64 s0[KM_MAXK];
    __shared__ u64 s1[KM_MAXK];
    __shared__ u64 s2[KM_MAXK];
    __shared__ u64 s3[KM_MAXK];
    const int t = threadIdx.x;
    const int k = *kcount;
    const int m = *count;
    hc[t] = 0;
    s0[t] = 0;
    s1[t] = 0;
    s2[t] = 0;
    s3[t] = 0;
    __syncthreads();
    for (int i = t; i < m; i += KM_UPD_THREADS) atomicAdd(&hc[cassign[i]], 1);
    __syncthreads();
    // inclusive scan of hc into cur (Hillis-Steele), then exclusive offsets
    cur[t] = hc[t];
    __syncthreads();
    for (int off = 1; off < KM_MAXK; off <<= 1) {
        int add = (t >= off) ? cur[t - off] : 0;
        __syncthreads();
        cur[t] += add;
        __syncthreads();
    }
    cur[t] -= hc[t];
    __syncthreads();
    for (int i = t; i < m; i += KM_UPD_THREADS) {
        int pos = atomicAdd(&cur[cassign[i]], 1);
        perm[pos] = i;
    }
    __syncthreads();
    const int chunk = (m + KM_UPD_THREADS - 1) / KM_UPD_THREADS;
    const int j0 = t * chunk;
    const int j1 = imin(m, j0 + chunk);
    const int mask = (1 << Q) - 1;
    int rc = -1;
    u64 a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int j = j0; j < j1; ++j) {
        int i = perm[j];
        int c = cassign[i];
        if (c != rc) {
            if (rc >= 0) {
                atomicAdd(&s0[rc], a0);
                atomicAdd(&s1[rc], a1);
                atomicAdd(&s2[rc], a2);
                atomicAdd(&s3[rc], a3);
            }
            rc = c;
            a0 = a1 = a2 = a3 = 0;
        }
        u64 w = (u64)cw[i];
        int code = ccode[i];
        a0 += w;
        a1 += w * (u64)(code >> (2 * Q));
        a2 += w * (u64)((code >> Q) & mask);
        a3 += w * (u64)(code & mask);
    }
    if (rc >= 0) {
        atomicAdd(&s0[rc], a0);
        atomicAdd(&s1[rc], a1);
        atomicAdd(&s2[rc], a2);
        atomicAdd(&s3[rc], a3);
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
