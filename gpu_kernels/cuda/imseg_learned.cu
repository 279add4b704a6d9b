// The learned merge of the contours method's superpixels (gpu_kernels/imseg/learned.py): the region
// graph with the learned merge's extra sums in one pass over the pixels, then all merge rounds in
// one persistent block (each round: the hand-made cost and its log for every pair, the regions'
// perimeters and lowest log cost, the 24 features, the 64 trees where a pair's float32 features
// changed, the mutual lowest pairs under tau merge, the pairs renamed and summed again through a
// hash table). Compiled with --fmad=false; the log is learned.flog's (frexp and a polynomial), every
// sum a sum of integers: the NumPy/numba path gives the same labels.
#include "imseg_common.cuh"

#define LM_EMPTY 0xFFFFFFFFFFFFFFFFULL
#define LM_NB 16
#define LM_NH 48
#define LM_NG 8
#define LM_NF 24
#define LM_CHUNK 16
#define LM_MAXNODES 2048

#ifdef GPULAB_EMU
__device__ __forceinline__ long long lm_clock() { return 0; }  // the emulator has no cycle counter
#else
__device__ __forceinline__ long long lm_clock() { return clock64(); }
#endif

// ------------------------------------------------------------------ learned.flog
__device__ __forceinline__ double lm_log(double x) {
    int e;
    double m = frexp(x, &e);
    if (m < 0.7071067811865476) {
        m = m * 2.0;
        e = e - 1;
    }
    double s = (m - 1.0) / (m + 1.0);
    double z = s * s;
    double r = 0.04;
    r = r * z + 0.043478260869565216;
    r = r * z + 0.047619047619047616;
    r = r * z + 0.05263157894736842;
    r = r * z + 0.058823529411764705;
    r = r * z + 0.06666666666666667;
    r = r * z + 0.07692307692307693;
    r = r * z + 0.09090909090909091;
    r = r * z + 0.1111111111111111;
    r = r * z + 0.14285714285714285;
    r = r * z + 0.2;
    r = r * z + 0.3333333333333333;
    double s2 = s + s;
    double fe = (double)e;
    return fe * 6.93147180369123816490e-01 + ((s2 + (s2 * z) * r) + fe * 1.90821492927058770002e-10);
}

// ------------------------------------------------------------------ the graph
__device__ __forceinline__ unsigned int lm_hash(u64 key, int logcap) {
    return (unsigned int)((key * 0x9E3779B97F4A7C15ULL) >> (64 - logcap));
}

// add (len, gsum, gradient histogram) to the slot of key; returns the slot when this call created it, else -1
__device__ __forceinline__ int lm_insert(u64* __restrict__ hkey, int* __restrict__ hlen,
                                         unsigned long long* __restrict__ hgs, int* __restrict__ hgh, int logcap,
                                         u64 key, int len, unsigned long long gs, const int* gh) {
    unsigned int mask = (1u << logcap) - 1u;
    unsigned int s = lm_hash(key, logcap);
    while (true) {
        u64 old = atomicCAS((unsigned long long*)&hkey[s], (unsigned long long)LM_EMPTY, (unsigned long long)key);
        if (old == LM_EMPTY || old == key) {
            atomicAdd(&hlen[s], len);
            atomicAdd(&hgs[s], gs);
            for (int k = 0; k < LM_NG; ++k)
                if (gh[k]) atomicAdd(&hgh[LM_NG * s + k], gh[k]);
            return old == LM_EMPTY ? (int)s : -1;
        }
        s = (s + 1u) & mask;
    }
}

__device__ __forceinline__ int lm_gbin(int s) {
    // how many of 1, 2, 4, ..., 64 gradient units are <= s / 16 (s: the pair's two fixed-point gradients)
    int b = 0;
    for (int k = 0; k < LM_NG - 1; ++k) b += s >= (16 << k) ? 1 : 0;
    return b;
}

__device__ __forceinline__ int lm_hbin(int v, int off, int div) {
    int b = (v + off) / div;  // truncation, not floor: both are clipped to 0 below 0
    return b < 0 ? 0 : (b > LM_NB - 1 ? LM_NB - 1 : b);
}

__device__ __forceinline__ void lm_flush_region(int rl, long long ra, long long r0, long long r1, long long r2,
                                                long long sq, long long gi, int bo, long long* area,
                                                long long* rsum, long long* rsq, long long* gin, int* bord) {
    atomicAdd((unsigned long long*)&area[rl], (unsigned long long)ra);
    atomicAdd((unsigned long long*)&rsum[3 * rl], (unsigned long long)r0);
    atomicAdd((unsigned long long*)&rsum[3 * rl + 1], (unsigned long long)r1);
    atomicAdd((unsigned long long*)&rsum[3 * rl + 2], (unsigned long long)r2);
    atomicAdd((unsigned long long*)&rsq[rl], (unsigned long long)sq);
    atomicAdd((unsigned long long*)&gin[rl], (unsigned long long)gi);
    if (bo) atomicAdd(&bord[rl], bo);
}

// per pixel: its region's area, colour sums and squares, gradient, histogram bins, image-border
// count; every pair of 4-adjacent pixels of two regions adds one boundary pixel pair, its two
// gradients and its gradient bin to the pair's slot. A thread takes LM_CHUNK consecutive pixels
// and adds runs at once.
extern "C" __global__ void lm_rag_pixels(const int* __restrict__ labels, const int* __restrict__ gq,
                                         const int* __restrict__ q, int W, int H, long long* __restrict__ area,
                                         long long* __restrict__ rsum, long long* __restrict__ rsq,
                                         long long* __restrict__ gin, int* __restrict__ hist,
                                         int* __restrict__ bord, u64* __restrict__ hkey, int* __restrict__ hlen,
                                         unsigned long long* __restrict__ hgs, int* __restrict__ hgh, int logcap) {
    long long n = (long long)W * H;
    long long p0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * LM_CHUNK;
    if (p0 >= n) return;
    int rl = -1;
    long long ra = 0, r0 = 0, r1 = 0, r2 = 0, sq = 0, gi = 0;
    int bo = 0;
    int hb[3] = {-1, -1, -1}, hc[3] = {0, 0, 0};
    u64 hk = LM_EMPTY, vk = LM_EMPTY;
    int hn = 0, vn = 0;
    unsigned long long hs = 0, vs = 0;
    int hg[LM_NG], vg[LM_NG];
    for (int k = 0; k < LM_NG; ++k) hg[k] = vg[k] = 0;
    for (int j = 0; j < LM_CHUNK; ++j) {
        long long pp = p0 + j;
        if (pp >= n) break;
        int p = (int)pp;
        int y = p / W, x = p - y * W;
        int l = labels[p] - 1;
        int qa = q[p], qb = q[n + p], qc = q[2 * n + p];
        int bins[3] = {lm_hbin(qa, 0, 100), lm_hbin(qb, 1024, 128), lm_hbin(qc, 1024, 128)};
        if (l != rl) {
            if (rl >= 0) {
                lm_flush_region(rl, ra, r0, r1, r2, sq, gi, bo, area, rsum, rsq, gin, bord);
                for (int c = 0; c < 3; ++c)
                    if (hc[c]) atomicAdd(&hist[LM_NH * rl + LM_NB * c + hb[c]], hc[c]);
            }
            rl = l;
            ra = r0 = r1 = r2 = sq = gi = 0;
            bo = 0;
            for (int c = 0; c < 3; ++c) {
                hb[c] = bins[c];
                hc[c] = 0;
            }
        }
        for (int c = 0; c < 3; ++c) {
            if (bins[c] != hb[c]) {
                if (hc[c]) atomicAdd(&hist[LM_NH * rl + LM_NB * c + hb[c]], hc[c]);
                hb[c] = bins[c];
                hc[c] = 0;
            }
            hc[c] += 1;
        }
        ra += 1;
        r0 += qa;
        r1 += qb;
        r2 += qc;
        sq += (long long)qa * qa + (long long)qb * qb + (long long)qc * qc;
        gi += gq[p];
        if (x == 0 || y == 0 || x == W - 1 || y == H - 1) bo += 1;
        if (x + 1 < W) {
            int m = labels[p + 1] - 1;
            if (m != l) {
                u64 key = ((u64)imin(l, m) << 32) | (u64)imax(l, m);
                if (key != hk) {
                    if (hn) lm_insert(hkey, hlen, hgs, hgh, logcap, hk, hn, hs, hg);
                    hk = key;
                    hn = 0;
                    hs = 0;
                    for (int k = 0; k < LM_NG; ++k) hg[k] = 0;
                }
                int s = gq[p] + gq[p + 1];
                hn += 1;
                hs += (unsigned long long)s;
                hg[lm_gbin(s)] += 1;
            }
        }
        if (y + 1 < H) {
            int m = labels[p + W] - 1;
            if (m != l) {
                u64 key = ((u64)imin(l, m) << 32) | (u64)imax(l, m);
                if (key != vk) {
                    if (vn) lm_insert(hkey, hlen, hgs, hgh, logcap, vk, vn, vs, vg);
                    vk = key;
                    vn = 0;
                    vs = 0;
                    for (int k = 0; k < LM_NG; ++k) vg[k] = 0;
                }
                int s = gq[p] + gq[p + W];
                vn += 1;
                vs += (unsigned long long)s;
                vg[lm_gbin(s)] += 1;
            }
        }
    }
    if (rl >= 0) {
        lm_flush_region(rl, ra, r0, r1, r2, sq, gi, bo, area, rsum, rsq, gin, bord);
        for (int c = 0; c < 3; ++c)
            if (hc[c]) atomicAdd(&hist[LM_NH * rl + LM_NB * c + hb[c]], hc[c]);
    }
    if (hn) lm_insert(hkey, hlen, hgs, hgh, logcap, hk, hn, hs, hg);
    if (vn) lm_insert(hkey, hlen, hgs, hgh, logcap, vk, vn, vs, vg);
}

// ------------------------------------------------------------------ the features (learned._features)
// Per region (where it grew): its mean colour rd[5r..5r+2], colour-variance term rd[5r+3], texture
// term rd[5r+4] and normalised histograms hn[48r..]; the same expressions as learned._features'
// per-pair ones, so the same bits. item 0: the means and terms; 1..48: one histogram bin.
__device__ __forceinline__ void lm_region_item(int r, int item, const long long* area, const long long* rsum,
                                               const long long* rsq, const long long* gin, const int* hist,
                                               double* rd, double* hn) {
    double aA = (double)area[r];
    if (item == 0) {
        double m0 = (double)rsum[3 * r] / aA, m1 = (double)rsum[3 * r + 1] / aA, m2 = (double)rsum[3 * r + 2] / aA;
        double v = (double)rsq[r] / aA - ((m0 * m0 + m1 * m1) + m2 * m2);
        rd[5 * r] = m0;
        rd[5 * r + 1] = m1;
        rd[5 * r + 2] = m2;
        rd[5 * r + 3] = (v > 0.0 ? v : 0.0) / 256.0 + 1.0;
        rd[5 * r + 4] = ((double)gin[r] / aA) / 8.0 + 0.5;
    } else {
        double iA = aA > 1.0 ? aA : 1.0;
        hn[LM_NH * r + item - 1] = (double)hist[LM_NH * r + item - 1] / iA;
    }
}

__device__ __forceinline__ double lm_chi2(const double* hn, int a, int b, int k) {
    double r[8];
    for (int j = 0; j < LM_NB; ++j) {
        double x = hn[LM_NH * a + LM_NB * k + j];
        double y = hn[LM_NH * b + LM_NB * k + j];
        double s = x + y;
        double d = 0.0;
        if (s > 0) {
            double dx = x - y;
            d = (dx * dx) / s;
        }
        if (j < 8) r[j] = d;
        else r[j - 8] += d;
    }
    return 0.5 * (((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])));
}

__device__ __forceinline__ float lm_cost(const long long* area, const double* rd, int a, int b, double ln, double gs,
                                         double inv_norm, double npx) {
    double aA = (double)area[a], aB = (double)area[b];
    double dd0 = rd[5 * a] - rd[5 * b];
    double dd1 = rd[5 * a + 1] - rd[5 * b + 1];
    double dd2 = rd[5 * a + 2] - rd[5 * b + 2];
    double d2 = ((dd0 * dd0 + dd1 * dd1) + dd2 * dd2) / 256.0;
    double hm = (aA * aB) / (aA + aB);
    double bnd = gs / (ln * 16.0);
    double t = bnd + 0.5;
    double t2 = t * t;
    double cost = (((hm * d2) / ln) * t2) * inv_norm;
    double f = (aA + aB) / npx;
    double f3 = (f * f) * f;
    cost = cost * (1.0 + 7.0 * f3);
    return (float)cost;
}

__device__ __forceinline__ u64 lm_dkey(double v) {  // order-preserving bits of a double
    u64 u = (u64)__double_as_longlong(v);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}

__device__ __forceinline__ double lm_dval(u64 k) {
    u64 u = (k >> 63) ? (k & 0x7FFFFFFFFFFFFFFFULL) : ~k;
    return __longlong_as_double((long long)u);
}

// one part of a pair's features 0-20 into x32 (learned._features): 0: 0-8; 1: 12-17; 2: 18-20;
// 3-5: the chi2 distance of L, a, b (9-11)
__device__ void lm_feature_part(int part, float* x32, int a, int b, double ln, double gs, const int* gh,
                                const long long* area, const double* rd, const double* hn, const long long* per,
                                double lce, double npx) {
    if (part >= 3) {
        x32[6 + part] = (float)lm_chi2(hn, a, b, part - 3);
        return;
    }
    double aA = (double)area[a], aB = (double)area[b];
    double t = gs / ((ln * 2.0) * 8.0) + 0.5;
    double tA = rd[5 * a + 4], tB = rd[5 * b + 4];
    if (part == 0) {
        double d0 = rd[5 * a] - rd[5 * b], d1 = rd[5 * a + 1] - rd[5 * b + 1], d2_ = rd[5 * a + 2] - rd[5 * b + 2];
        double d2 = ((d0 * d0 + d1 * d1) + d2_ * d2_) / 256.0;
        double hm = (aA * aB) / (aA + aB);
        x32[0] = (float)lce;
        x32[1] = (float)lm_log(hm);
        x32[2] = (float)lm_log(d2 + 1e-4);
        x32[3] = (float)lm_log(ln);
        x32[4] = (float)lm_log(t);
        long long c = (long long)gh[7] + gh[6];
        c = c + gh[5];
        x32[8] = (float)((double)c / ln);
        c = c + gh[4];
        x32[7] = (float)((double)c / ln);
        c = c + gh[3];
        x32[6] = (float)((double)c / ln);
        c = c + gh[2];
        x32[5] = (float)((double)c / ln);
    } else if (part == 1) {
        double pA = (double)per[a], pB = (double)per[b];
        x32[12] = (float)lm_log((aA < aB ? aA : aB) / npx);
        x32[13] = (float)lm_log((aA > aB ? aA : aB) / npx);
        x32[14] = (float)(ln / (pA < pB ? pA : pB));
        x32[15] = (float)(ln / (pA > pB ? pA : pB));
        x32[16] = (float)lm_log(tA * tB);
        x32[17] = (float)fabs(lm_log(tA / tB));
    } else {
        double vA = rd[5 * a + 3], vB = rd[5 * b + 3];
        x32[18] = (float)lm_log(t / (tA > tB ? tA : tB));
        x32[19] = (float)lm_log(vA * vB);
        x32[20] = (float)fabs(lm_log(vA / vB));
    }
}

// All rounds of the learned merge in one block (see learned._merge_loop). hkey/hlen/hgs/hgh: the
// table lm_rag_pixels filled (capacity 2^logcap), then the pairs being summed again. The pair list
// keeps its positions: a pair of two unchanged regions stays where it is (with its log cost,
// features and p); the pairs at a region that grew go through the table, and the new pairs fill
// their holes (ea = -1: a hole). Model: T trees of L nodes (thr, val; meta = feature | left << 8 |
// right << 16 | leaf << 24); t23: the sorted thresholds on feature 23. use_smem: the regions'
// arrays (lm_region_smem_bytes(R)) in dynamic shared memory. into[r] (out): the region r merged
// into; state[0] = regions left, state[1] = rounds, state[2] = tree walks.
extern "C" __global__ void __launch_bounds__(1024) lm_merge(
    int R, u64* __restrict__ hkey, int* __restrict__ hlen, unsigned long long* __restrict__ hgs,
    int* __restrict__ hgh, int logcap, int* ea, int* eb, int* el, unsigned long long* eg, int* gh, unsigned int* pb,
    double* lc, float* X32, int* slots, int* holes, int* dlist, int* wlist, float* Xn, double* leafv, int* clist,
    double* rd, double* hn,
    long long* g_area, long long* g_rsum, long long* g_rsq,
    long long* g_gin, int* hist, int* g_bord, long long* g_per, u64* g_mn, u64* g_best, int* g_into, int* g_chg,
    const double* __restrict__ m_thr, const double* __restrict__ m_val, const int* __restrict__ m_meta, int T, int L,
    double base, const double* __restrict__ t23, int n23, float tau, int target, int min_area, double inv_norm,
    double npx, int max_rounds, int* __restrict__ state, int use_smem, long long* __restrict__ prof) {
    __shared__ int sE, sNew, sHoles, sCount, sRounds, sTmp, sK, sWalks, sD, sW, sC;
    __shared__ double s_thr[LM_MAXNODES];
    __shared__ double s_val[LM_MAXNODES];
    __shared__ int s_meta[LM_MAXNODES];
    extern __shared__ u64 lm_smem[];
    const int t = threadIdx.x, NT = blockDim.x;
    const int cap = 1 << logcap;
    long long* area = g_area;
    long long* rsum = g_rsum;
    long long* rsq = g_rsq;
    long long* gin = g_gin;
    long long* per = g_per;
    u64* mn = g_mn;
    u64* best = g_best;
    int* bord = g_bord;
    int* into = g_into;
    int* chg = g_chg;
    if (use_smem) {
        area = (long long*)lm_smem;
        rsum = area + R;
        rsq = rsum + 3 * R;
        gin = rsq + R;
        per = gin + R;
        mn = (u64*)(per + R);
        best = mn + R;
        bord = (int*)(best + R);
        into = bord + R;
        chg = into + R;
        for (int r = t; r < R; r += NT) {
            area[r] = g_area[r];
            rsum[3 * r] = g_rsum[3 * r];
            rsum[3 * r + 1] = g_rsum[3 * r + 1];
            rsum[3 * r + 2] = g_rsum[3 * r + 2];
            rsq[r] = g_rsq[r];
            gin[r] = g_gin[r];
            bord[r] = g_bord[r];
        }
    }
    for (int i = t; i < T * L; i += NT) {
        s_thr[i] = m_thr[i];
        s_val[i] = m_val[i];
        s_meta[i] = m_meta[i];
    }
    for (int r = t; r < R; r += NT) {
        into[r] = r;
        chg[r] = 1;
    }
    if (t == 0) {
        sE = 0;
        sNew = 0;
        sHoles = 0;
        sCount = R;
        sRounds = 0;
        sWalks = 0;
        sD = 0;
        sW = 0;
        sC = 0;
    }
    __syncthreads();
    for (int s = t; s < cap; s += NT) {
        u64 k = hkey[s];
        if (k != LM_EMPTY) {
            int i = atomicAdd(&sE, 1);
            ea[i] = (int)(k >> 32);
            eb[i] = (int)(k & 0xffffffffULL);
            el[i] = hlen[s];
            eg[i] = hgs[s];
            for (int j = 0; j < LM_NG; ++j) {
                gh[LM_NG * i + j] = hgh[LM_NG * s + j];
                hgh[LM_NG * s + j] = 0;
            }
            X32[LM_NF * i] = __int_as_float(0x7fc00000);  // NaN: never equal, the trees are walked
            hkey[s] = LM_EMPTY;
            hlen[s] = 0;
            hgs[s] = 0ULL;
        }
    }
    __syncthreads();
    const int E = sE;  // positions (live pairs and holes)
    // prof (optional, 12 longs): clock cycles of each phase summed over the rounds (thread 0)
    long long pt[12];
    for (int k = 0; k < 12; ++k) pt[k] = 0;
    long long tk = lm_clock();
#define LM_MARK(k)                          \
    if (prof != nullptr && t == 0) {        \
        long long now = lm_clock();          \
        pt[k] += now - tk;                  \
        tk = now;                           \
    }
    int live = E;
    while (true) {
        if (live == 0 || sRounds >= max_rounds || (target > 0 && sCount <= target)) break;
        // 1. every region's perimeter and lowest log cost (computed again where a region grew)
        for (int r = t; r < R; r += NT) {
            per[r] = (long long)bord[r];
            mn[r] = LM_EMPTY;
            best[r] = LM_EMPTY;
            if (chg[r]) clist[atomicAdd(&sC, 1)] = r;
        }
        __syncthreads();
        const int nC = sC;
        for (int i = t; i < 49 * nC; i += NT) {
            const int c = i / 49;
            lm_region_item(clist[c], i - 49 * c, area, rsum, rsq, gin, hist, rd, hn);
        }
        __syncthreads();
        LM_MARK(0);
        for (int e = t; e < E; e += NT) {
            int a = ea[e];
            if (a < 0) continue;
            int b = eb[e];
            double v;
            if (chg[a] || chg[b]) {
                float c32 = lm_cost(area, rd, a, b, (double)el[e], (double)eg[e], inv_norm, npx);
                double c = (double)c32;
                v = lm_log(c > 1e-12 ? c : 1e-12);
                lc[e] = v;
            } else {
                v = lc[e];
            }
            u64 k = lm_dkey(v);
            atomicMin((unsigned long long*)&mn[a], (unsigned long long)k);
            atomicMin((unsigned long long*)&mn[b], (unsigned long long)k);
            atomicAdd((unsigned long long*)&per[a], (unsigned long long)el[e]);
            atomicAdd((unsigned long long*)&per[b], (unsigned long long)el[e]);
        }
        __syncthreads();
        LM_MARK(1);
        // 2. features where a region grew, the round's context for all; the trees where the kept
        // features changed (one work item a tree); every region's lowest p. Work lists: dlist (pairs
        // at a grown region), wlist (pairs to walk).
        const float f23 = (float)lm_log((double)sCount / (double)R);
        int bin23 = 0;
        for (int k = 0; k < n23; ++k) bin23 += ((double)f23 > t23[k]) ? 1 : 0;
        for (int e = t; e < E; e += NT) {
            int a = ea[e];
            if (a < 0) continue;
            int b = eb[e];
            if (chg[a] || chg[b]) {
                dlist[atomicAdd(&sD, 1)] = e;
                continue;
            }
            const double lce = lc[e];
            double cA = lce - lm_dval(mn[a]), cB = lce - lm_dval(mn[b]);
            float x21 = (float)(cA < cB ? cA : cB), x22 = (float)(cA > cB ? cA : cB), x23 = (float)bin23;
            float* X = X32 + LM_NF * e;
            if (!(x21 == X[21] && x22 == X[22] && x23 == X[23])) {
                X[21] = x21;
                X[22] = x22;
                X[23] = x23;
                wlist[atomicAdd(&sW, 1)] = e;
            }
        }
        __syncthreads();
        LM_MARK(2);
        const int nD = sD;
        for (int i = t; i < 6 * nD; i += NT) {
            const int q = i / 6, part = i - 6 * q;
            const int e = dlist[q];
            lm_feature_part(part, Xn + LM_NF * e, ea[e], eb[e], (double)el[e], (double)eg[e], gh + LM_NG * e, area, rd,
                            hn, per, lc[e], npx);
        }
        __syncthreads();
        LM_MARK(3);
        for (int i = t; i < nD; i += NT) {
            const int e = dlist[i];
            const int a = ea[e], b = eb[e];
            const double lce = lc[e];
            double cA = lce - lm_dval(mn[a]), cB = lce - lm_dval(mn[b]);
            float* x = Xn + LM_NF * e;
            x[21] = (float)(cA < cB ? cA : cB);
            x[22] = (float)(cA > cB ? cA : cB);
            x[23] = (float)bin23;
            float* X = X32 + LM_NF * e;
            bool same = true;
            for (int k = 0; k < LM_NF; ++k) same = same && (x[k] == X[k]);
            if (!same) {
                for (int k = 0; k < LM_NF; ++k) X[k] = x[k];
                wlist[atomicAdd(&sW, 1)] = e;
            }
        }
        __syncthreads();
        LM_MARK(4);
        const int nW = sW;
        for (int i = t; i < T * nW; i += NT) {
            const int w = i / T, tr = i - w * T;
            const float* x = X32 + LM_NF * wlist[w];
            int nd = 0;
            int mt = s_meta[tr * L];
            while (!(mt >> 24)) {
                const int f = mt & 255;
                const float xv = f == LM_NF - 1 ? f23 : x[f];  // the walk sees f23 itself
                nd = ((double)xv <= s_thr[tr * L + nd]) ? ((mt >> 8) & 255) : ((mt >> 16) & 255);
                mt = s_meta[tr * L + nd];
            }
            leafv[(long long)T * w + tr] = s_val[tr * L + nd];
        }
        __syncthreads();
        LM_MARK(5);
        for (int w = t; w < nW; w += NT) {
            double acc = base;
            const double* lv = leafv + (long long)T * w;
            int tr = 0;
            for (; tr + 8 <= T; tr += 8) {  // eight loads at once, then the sums in tree order
                double v0 = lv[tr], v1 = lv[tr + 1], v2 = lv[tr + 2], v3 = lv[tr + 3];
                double v4 = lv[tr + 4], v5 = lv[tr + 5], v6 = lv[tr + 6], v7 = lv[tr + 7];
                acc += v0;
                acc += v1;
                acc += v2;
                acc += v3;
                acc += v4;
                acc += v5;
                acc += v6;
                acc += v7;
            }
            for (; tr < T; ++tr) acc += lv[tr];
            pb[wlist[w]] = __float_as_uint((float)(acc > 0.0 ? acc : 0.0));
        }
        __syncthreads();
        LM_MARK(6);
        for (int e = t; e < E; e += NT) {
            int a = ea[e];
            if (a < 0) continue;
            int b = eb[e];
            const unsigned int bits = pb[e];
            atomicMin((unsigned long long*)&best[a], (unsigned long long)(((u64)bits << 32) | (u64)b));
            atomicMin((unsigned long long*)&best[b], (unsigned long long)(((u64)bits << 32) | (u64)a));
        }
        if (t == 0) {
            sWalks += nW;
            sD = 0;
            sW = 0;
            sC = 0;
        }
        __syncthreads();
        LM_MARK(7);
        for (int r = t; r < R; r += NT) chg[r] = 0;
        // 3. mutual lowest pairs under tau (flag: negative length)
        int nm = im_flag_mutual(ea, eb, el, pb, best, tau, E, &sTmp);
        LM_MARK(8);
        if (nm == 0) {
            if (target > 0 || min_area <= 1) break;
            // clean-up: every region smaller than min_area joins its lowest-p neighbour
            if (im_join_small(ea, eb, best, area, into, (long long)min_area, E, &sTmp) == 0) break;
            int mv = 0;
            for (int r = t; r < R; r += NT) {
                if (best[r] == LM_EMPTY) continue;  // merged away earlier (or no pair)
                int root = uf_find(into, r);
                if (root != r) {
                    chg[root] = 1;
                    atomicAdd((unsigned long long*)&area[root], (unsigned long long)area[r]);
                    for (int c = 0; c < 3; ++c)
                        atomicAdd((unsigned long long*)&rsum[3 * root + c], (unsigned long long)rsum[3 * r + c]);
                    atomicAdd((unsigned long long*)&rsq[root], (unsigned long long)rsq[r]);
                    atomicAdd((unsigned long long*)&gin[root], (unsigned long long)gin[r]);
                    for (int k = 0; k < LM_NH; ++k)
                        if (hist[LM_NH * r + k]) atomicAdd(&hist[LM_NH * root + k], hist[LM_NH * r + k]);
                    if (bord[r]) atomicAdd(&bord[root], bord[r]);
                    into[r] = root;
                    mv += 1;
                }
            }
            nm = im_block_count(mv, &sTmp);
        } else {
            if (target > 0 && sCount - nm < target) {
                const int k = sCount - target;
                im_keep_lowest(ea, el, pb, k, E, &sTmp);
                if (t == 0) sK = k;
                __syncthreads();
                nm = sK;
            }
            for (int e = t; e < E; e += NT) {
                if (el[e] < 0) {
                    int a = ea[e], b = eb[e];
                    into[b] = a;
                    chg[a] = 1;
                    area[a] += area[b];
                    for (int c = 0; c < 3; ++c) rsum[3 * a + c] += rsum[3 * b + c];
                    rsq[a] += rsq[b];
                    gin[a] += gin[b];
                    for (int k = 0; k < LM_NH; ++k) hist[LM_NH * a + k] += hist[LM_NH * b + k];
                    bord[a] += bord[b];
                }
            }
        }
        __syncthreads();
        LM_MARK(9);
        // 4. the pairs at a grown region are renamed and summed again through the table; their
        // positions become holes, which the new pairs fill
        for (int e = t; e < E; e += NT) {
            int a0 = ea[e];
            if (a0 < 0) continue;
            int len = el[e];
            bool hole = len < 0;
            if (!hole) {
                int a = into[a0], b = into[eb[e]];
                if (chg[a] || chg[b]) {
                    hole = true;
                    if (a != b) {
                        int lo = imin(a, b), hi2 = imax(a, b);
                        int slot = lm_insert(hkey, hlen, hgs, hgh, logcap, ((u64)lo << 32) | (u64)hi2, len, eg[e],
                                             gh + LM_NG * e);
                        if (slot >= 0) slots[atomicAdd(&sNew, 1)] = slot;
                    }
                }
            }
            if (hole) {
                holes[atomicAdd(&sHoles, 1)] = e;
                ea[e] = -1;
                el[e] = 0;
            }
        }
        __syncthreads();
        LM_MARK(10);
        const int nNew = sNew;
        for (int i = t; i < nNew; i += NT) {
            const int s = slots[i];
            const int e = holes[i];
            u64 k = hkey[s];
            ea[e] = (int)(k >> 32);
            eb[e] = (int)(k & 0xffffffffULL);
            el[e] = hlen[s];
            eg[e] = hgs[s];
            for (int j = 0; j < LM_NG; ++j) {
                gh[LM_NG * e + j] = hgh[LM_NG * s + j];
                hgh[LM_NG * s + j] = 0;
            }
            X32[LM_NF * e] = __int_as_float(0x7fc00000);
            hkey[s] = LM_EMPTY;
            hlen[s] = 0;
            hgs[s] = 0ULL;
        }
        live += nNew - sHoles;
        __syncthreads();
        LM_MARK(11);
        if (t == 0) {
            sNew = 0;
            sHoles = 0;
            sCount -= nm;
            sRounds += 1;
        }
        __syncthreads();
    }
    __syncthreads();
    if (use_smem)
        for (int r = t; r < R; r += NT) g_into[r] = into[r];
    if (t == 0) {
        state[0] = sCount;
        state[1] = sRounds;
        state[2] = sWalks;
        if (prof != nullptr)
            for (int k = 0; k < 12; ++k) prof[k] = pt[k];
    }
}
