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
// add (len, gsum, gradient histogram) to the slot of key; returns the slot when this call created it, else
// -1. A full table (no free slot after cap probes) sets bit 1 of *err (when given) and adds nothing.
__device__ __forceinline__ int lm_insert(u64* __restrict__ hkey, int* __restrict__ hlen,
                                         unsigned long long* __restrict__ hgs, int* __restrict__ hgh, int logcap,
                                         u64 key, int len, unsigned long long gs, const int* gh, int* err) {
    unsigned int mask = (1u << logcap) - 1u;
    unsigned int s = im_hash(key, logcap);
    for (unsigned int probe = 0; probe <= mask; ++probe) {
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
    if (err != nullptr) atomicOr(err, 1);
    return -1;
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
                                         unsigned long long* __restrict__ hgs, int* __restrict__ hgh, int logcap,
                                         int* err) {
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
                    if (hn) lm_insert(hkey, hlen, hgs, hgh, logcap, hk, hn, hs, hg, err);
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
                    if (vn) lm_insert(hkey, hlen, hgs, hgh, logcap, vk, vn, vs, vg, err);
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
    if (hn) lm_insert(hkey, hlen, hgs, hgh, logcap, hk, hn, hs, hg, err);
    if (vn) lm_insert(hkey, hlen, hgs, hgh, logcap, vk, vn, vs, vg, err);
}

// ------------------------------------------------------------------ the features (learned._features)
// a region's terms from its sums: mean colour, colour-variance term, texture term (learned._features')
__device__ __forceinline__ void lm_region_terms(double aA, long long s0, long long s1, long long s2, long long sq,
                                                long long gi, double gscale, double* rdr) {
    double m0 = (double)s0 / aA, m1 = (double)s1 / aA, m2 = (double)s2 / aA;
    double v = (double)sq / aA - ((m0 * m0 + m1 * m1) + m2 * m2);
    rdr[0] = m0;
    rdr[1] = m1;
    rdr[2] = m2;
    rdr[3] = (v > 0.0 ? v : 0.0) / 256.0 + 1.0;
    rdr[4] = ((double)gi / aA) / gscale + 0.5;
}
// Per region (where it grew): its mean colour rd[5r..5r+2], colour-variance term rd[5r+3], texture
// term rd[5r+4] and normalised histograms hn[48r..]; the same expressions as learned._features'
// per-pair ones, so the same bits. item 0: the means and terms; 1..48: one histogram bin.
__device__ __forceinline__ void lm_region_item(int r, int item, const long long* area, const long long* rsum,
                                               const long long* rsq, const long long* gin, const int* hist,
                                               double* rd, double* hn, double gscale) {
    double aA = (double)area[r];
    if (item == 0) {
        lm_region_terms(aA, rsum[3 * r], rsum[3 * r + 1], rsum[3 * r + 2], rsq[r], gin[r], gscale, rd + 5 * r);
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
                                         double inv_norm, double npx, double gscale, double b0, double size_k) {
    double aA = (double)area[a], aB = (double)area[b];
    double dd0 = rd[5 * a] - rd[5 * b];
    double dd1 = rd[5 * a + 1] - rd[5 * b + 1];
    double dd2 = rd[5 * a + 2] - rd[5 * b + 2];
    double d2 = ((dd0 * dd0 + dd1 * dd1) + dd2 * dd2) / 256.0;
    double hm = (aA * aB) / (aA + aB);
    double bnd = gs / ((ln * 2.0) * gscale);  // = gs / (ln x 16): the products are exact
    double t = bnd + b0;
    double t2 = t * t;
    double cost = (((hm * d2) / ln) * t2) * inv_norm;
    double f = (aA + aB) / npx;
    double f3 = (f * f) * f;
    cost = cost * (1.0 + size_k * f3);
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
                                double lce, double npx, double gscale, double b0) {
    if (part >= 3) {
        x32[6 + part] = (float)lm_chi2(hn, a, b, part - 3);
        return;
    }
    double aA = (double)area[a], aB = (double)area[b];
    double t = gs / ((ln * 2.0) * gscale) + b0;
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
// into; state[0] = regions left, state[1] = rounds, state[2] = tree walks, state[3] = error bits (as
// lm_merge_grid's: 1 the table is full, 2 more pairs than the emax positions; the rounds stop). gscale, b0,
// size_k: the contour cost's constants (contours.GSCALE, B0, SIZE_K).
extern "C" __global__ void __launch_bounds__(1024) lm_merge(
    int R, u64* __restrict__ hkey, int* __restrict__ hlen, unsigned long long* __restrict__ hgs,
    int* __restrict__ hgh, int logcap, int* ea, int* eb, int* el, unsigned long long* eg, int* gh, unsigned int* pb,
    double* lc, float* X32, int* slots, int* holes, int* dlist, int* wlist, float* Xn, double* leafv, int* clist,
    double* rd, double* hn,
    long long* g_area, long long* g_rsum, long long* g_rsq,
    long long* g_gin, int* hist, int* g_bord, long long* g_per, u64* g_mn, u64* g_best, int* g_into, int* g_chg,
    const double* __restrict__ m_thr, const double* __restrict__ m_val, const int* __restrict__ m_meta, int T, int L,
    double base, const double* __restrict__ t23, int n23, float tau, int target, int min_area, double inv_norm,
    double npx, double gscale, double b0, double size_k, int emax, int max_rounds, int* __restrict__ state,
    int use_smem, long long* __restrict__ prof) {
    __shared__ int sE, sNew, sHoles, sCount, sRounds, sTmp, sK, sWalks, sD, sW, sC, sErr;
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
        sErr = 0;
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
            if (i >= emax) {  // labels beyond the bounds (regions in several pieces): stop, one clear error
                atomicOr(&sErr, 2);
                continue;
            }
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
    const int E = imin(sE, emax);  // positions (live pairs and holes)
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
        if (sErr || live == 0 || sRounds >= max_rounds || (target > 0 && sCount <= target)) break;
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
            lm_region_item(clist[c], i - 49 * c, area, rsum, rsq, gin, hist, rd, hn, gscale);
        }
        __syncthreads();
        LM_MARK(0);
        for (int e = t; e < E; e += NT) {
            int a = ea[e];
            if (a < 0) continue;
            int b = eb[e];
            double v;
            if (chg[a] || chg[b]) {
                float c32 = lm_cost(area, rd, a, b, (double)el[e], (double)eg[e], inv_norm, npx, gscale, b0, size_k);
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
                            hn, per, lc[e], npx, gscale, b0);
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
                                             gh + LM_NG * e, &sErr);
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
        state[3] = sErr;
        if (prof != nullptr)
            for (int k = 0; k < 12; ++k) prof[k] = pt[k];
    }
}

// ================================================================== the grid-wide merge (lm_merge_grid)
// The same rounds as lm_merge, spread over every SM: one cooperative launch; the blocks meet at a grid
// barrier three times a round (B: the new pairs of the last renaming into their holes, their log costs and
// features; every region's lowest log cost | C: the context features, the trees where the features
// changed, every region's lowest p | D: the mutual lowest pairs under tau merge, and the pairs at a
// merging region are renamed into the table at once: each pair's thread reads the regions' partners from
// the lowest-p table), more only in the clean-up and target-count rounds. Every pair at a region that grew
// is renamed, so the pairs that need their log cost and features again are exactly the new ones. A new
// pair's features and a changed pair's trees are done by one warp: one feature a lane (the divisions and
// logs of all lanes at once), the chi2 sums by shuffles in NumPy's pairwise order, two trees a lane, the
// leaf values added in tree order by one running sum: the same bits as the CPU path and lm_merge.
// Session 14 (shorter chains, the same operations): the merge count and the next round's counters are read
// in one trip after D's barrier, and B's warps load their first new pair's slot meanwhile; a new pair takes
// the position of the renamed pair that created its slot (no count of emptied positions); D adds the kept
// pairs' log costs to the next round's lowest (B does only the new pairs); one warp a block computes the
// progress feature during B; in one pass over the positions each lane keeps its pair (ends, length, log cost,
// context features, p) in registers across the rounds, so C reads only the regions' lowest log costs; a new
// pair's log cost is lane 31's of the features' division and log. Built with -DLG_CHECKPOINTS (a profiling
// build: learned.GRID_CHECKPOINTS) the rounds also record per-phase checkpoints into prof[16..49].

#ifdef GPULAB_EMU
__device__ __forceinline__ unsigned int lm_ld_acquire(unsigned int* p) { return *(volatile unsigned int*)p; }
__device__ __forceinline__ unsigned int lm_arrive(unsigned int* p) { return atomicAdd(p, 1u); }
__device__ __forceinline__ unsigned long long lm_gtime() { return 0ULL; }
#else
// a load with acquire semantics at GPU scope: what other blocks wrote before their release is seen after it
__device__ __forceinline__ unsigned int lm_ld_acquire(unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// one arrival at the barrier count (release this block's writes, acquire the others')
__device__ __forceinline__ unsigned int lm_arrive(unsigned int* p) {
    unsigned int old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
    return old;
}
__device__ __forceinline__ unsigned long long lm_gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

// grid barrier: bar[0] counts the arrivals and only grows; a block's n-th barrier waits until it reaches
// n x gridDim.x. Every block must be resident (a cooperative launch); one block (the emulator) is a block
// barrier. tlast (profiling, or null): the latest arrival time (globaltimer, ns).
__device__ __forceinline__ void lm_grid_sync(unsigned int* bar, unsigned int& nb, unsigned long long* tlast,
                                             long long* trel = nullptr) {
    __syncthreads();
    nb += 1u;
    if (gridDim.x > 1) {
        if (threadIdx.x == 0) {
            if (tlast != nullptr) atomicMax(tlast, lm_gtime());
            const unsigned int target = nb * gridDim.x;
            if (lm_arrive(&bar[0]) != target - 1u)
                while (lm_ld_acquire(&bar[0]) < target) {
                }
            if (trel != nullptr) *trel = lm_clock();
        }
        __syncthreads();
    } else if (trel != nullptr && threadIdx.x == 0) {
        *trel = lm_clock();
    }
}

__device__ __forceinline__ int lm_ldv(const int* p) { return *(const volatile int*)p; }

// a counter read once a block (thread 0, then shared memory), not by every warp: thousands of warps
// reading one L2 line at once queue behind each other. sh: a shared slot not read again before the next
// block barrier.
__device__ __forceinline__ int lm_block_ldv(const int* p, int* sh) {
    if (threadIdx.x == 0) *sh = lm_ldv(p);
    __syncthreads();
    return *sh;
}

// the global counters of lm_merge_grid (gc)
#define LG_ERR 0     // bit 1: the hash table is full (lm_insert); bit 2: more pairs than positions
#define LG_E 1       // pair positions
#define LG_NEW 2     // new pairs of this round's renaming (their slots)
// (3: free; session 13's count of emptied positions: a new pair now takes its creator's position)
#define LG_NM 4      // pairs merged this round
#define LG_WALKS 5   // pairs whose trees were walked
#define LG_SEL 6     // clean-up: pairs joined
#define LG_MV 7      // clean-up: regions merged
#define LG_KC 8      // target count: three counters of the binary search (8, 9, 10)
#define LG_N 12


// one warp: chi2 of channel ch (lanes 0-15) and ch + 1 (lanes 16-31) of regions a and b; the sums in
// NumPy's pairwise order (r_j = d_j + d_j+8, then ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)));
// the result at lanes 0 and 16
__device__ __forceinline__ double lm_chi2_warp(const double* hn, int a, int b, int ch) {
    const int lane = threadIdx.x & 31;
    const int c = ch + (lane >> 4), j = lane & 15;
    double d = 0.0;
    if (c < 3) {
        double x = hn[LM_NH * a + LM_NB * c + j];
        double y = hn[LM_NH * b + LM_NB * c + j];
        double s = x + y;
        if (s > 0) {
            double dx = x - y;
            d = (dx * dx) / s;
        }
    }
    double r = d + __shfl_down_sync(0xffffffffu, d, 8);
    r = r + __shfl_down_sync(0xffffffffu, r, 1);
    r = r + __shfl_down_sync(0xffffffffu, r, 2);
    r = r + __shfl_down_sync(0xffffffffu, r, 4);
    return 0.5 * r;
}

// one warp (every lane calls it): new pair e = (a, b) with its length, gradient sum and gradient histogram
// (lane j < 8: bin j): its log cost (returned, every lane) and features 0-20 into X32 (lane k: feature k).
// Branch-free: every lane runs the same divisions and logs on its own operands, and the log cost's
// (the same on every lane) can overlap them. hm, d2 and t are the log cost's own (gs / (ln x 2 gscale)
// and gs / ((ln x 2) x gscale) are the same double: the products are exact).
__device__ double lm_new_pair_warp(int e, int a, int b, int len, unsigned long long g, int ghj, float* X32,
                                   const long long* area, const double* rd, const double* hn, const long long* per,
                                   double npx, double gscale, double b0, double size_k, double inv_norm,
                                   float& xout) {
    const unsigned FULL = 0xffffffffu;
    const int k = threadIdx.x & 31;
    const double aA = (double)area[a], aB = (double)area[b];
    const double ln = (double)len, gs = (double)g;
    const double* rA = rd + 5 * a;
    const double* rB = rd + 5 * b;
    const double tA = rA[4], tB = rB[4];
    const double vA = rA[3], vB = rB[3];
    const double pA = (double)per[a], pB = (double)per[b];
    const double chA = lm_chi2_warp(hn, a, b, 0);
    const double chB = lm_chi2_warp(hn, a, b, 2);
    long long c = 0;  // lanes 5-8: the boundary pixels in gradient bins k - 3 .. 7
    for (int j = 7; j >= 2; --j) {
        const int v = __shfl_sync(FULL, ghj, j);
        c += j >= k - 3 ? v : 0;
    }
    const double x9 = __shfl_sync(FULL, chA, 0), x10 = __shfl_sync(FULL, chA, 16), x11 = __shfl_sync(FULL, chB, 0);
    // the log cost (lm_cost, then the log of max(float cost, 1e-12)) is lane 31's: its division by the length
    // and its log are the same instructions as the features' (one chain for the warp, not two)
    const double dd0 = rA[0] - rB[0], dd1 = rA[1] - rB[1], dd2 = rA[2] - rB[2];
    const double d2 = ((dd0 * dd0 + dd1 * dd1) + dd2 * dd2) / 256.0;
    const double hm = (aA * aB) / (aA + aB);
    const double tt = gs / ((ln * 2.0) * gscale) + b0;
    const double f = (aA + aB) / npx;
    const double f3 = (f * f) * f;
    // the value each lane takes the log of, or divides: num / den (den 1: exact), then one of + 1e-4, x tB, x vB
    const bool c58 = k >= 5 && k <= 8;
    const double num = k == 31 ? hm * d2
                       : k == 1 ? hm
                       : k == 2 ? d2
                       : (k == 3 || k == 14 || k == 15) ? ln
                       : (k == 4 || k == 18) ? tt
                       : c58 ? (double)c
                       : k == 12 ? (aA < aB ? aA : aB)
                       : k == 13 ? (aA > aB ? aA : aB)
                       : (k == 16 || k == 17) ? tA
                       : (k == 19 || k == 20) ? vA
                       : 1.0;
    const double den = k == 31 ? ln
                       : k == 18 ? (tA > tB ? tA : tB)
                       : c58 ? ln
                       : (k == 12 || k == 13) ? npx
                       : k == 14 ? (pA < pB ? pA : pB)
                       : k == 15 ? (pA > pB ? pA : pB)
                       : k == 17 ? tB
                       : k == 20 ? vB
                       : 1.0;
    const double q0 = num / den;
    double q = k == 2 ? q0 + 1e-4 : (k == 16 ? q0 * tB : (k == 19 ? q0 * vB : q0));
    if (k == 31) {  // lm_cost's float cost from (hm d2) / ln
        const double cost = (double)(float)(((q0 * (tt * tt)) * inv_norm) * (1.0 + size_k * f3));
        q = cost > 1e-12 ? cost : 1e-12;
    }
    const bool lg = k == 1 || k == 2 || k == 3 || k == 4 || k == 12 || k == 13 || (k >= 16 && k <= 20) || k == 31;
    const double lq = lm_log(lg ? q : 1.0);
    const double lce = __shfl_sync(FULL, lq, 31);
    const float xk = lg ? (float)((k == 17 || k == 20) ? fabs(lq) : lq)
                     : (c58 || k == 14 || k == 15) ? (float)q
                     : k == 0 ? (float)lce
                     : k == 9 ? (float)x9
                     : k == 10 ? (float)x10
                     : (float)x11;
    if (k < 21) X32[LM_NF * e + k] = xk;
    xout = xk;
    return lce;
}

// one warp walks a pair's trees (every lane calls it; lane k < 24 holds feature k): p's bits, every lane
__device__ __forceinline__ unsigned int lm_walk_regs(float xk, float f23, const double* s_thr, const double* s_val,
                                                     const int* s_meta, int T, int L, double base) {
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const float xw = lane == LM_NF - 1 ? f23 : xk;  // the walk sees f23 itself
    const int t0 = lane, t1 = lane + 32;
    int n0 = 0, n1 = 0;
    int m0 = t0 < T ? s_meta[t0 * L] : (1 << 24);
    int m1 = t1 < T ? s_meta[t1 * L] : (1 << 24);
    while (__any_sync(FULL, !(m0 >> 24) || !(m1 >> 24))) {
        const float y0 = __shfl_sync(FULL, xw, m0 & 31);
        const float y1 = __shfl_sync(FULL, xw, m1 & 31);
        if (!(m0 >> 24)) {
            n0 = ((double)y0 <= s_thr[t0 * L + n0]) ? ((m0 >> 8) & 255) : ((m0 >> 16) & 255);
            m0 = s_meta[t0 * L + n0];
        }
        if (!(m1 >> 24)) {
            n1 = ((double)y1 <= s_thr[t1 * L + n1]) ? ((m1 >> 8) & 255) : ((m1 >> 16) & 255);
            m1 = s_meta[t1 * L + n1];
        }
    }
    const double v0 = t0 < T ? s_val[t0 * L + n0] : 0.0;
    const double v1 = t1 < T ? s_val[t1 * L + n1] : 0.0;
    double acc = base;
    for (int tr = 0; tr < T; ++tr) {  // in tree order
        const double v = __shfl_sync(FULL, tr < 32 ? v0 : v1, tr & 31);
        acc += v;
    }
    return __float_as_uint((float)(acc > 0.0 ? acc : 0.0));
}

// one warp walks pair e's trees, its features read from X32's row (every lane calls it)
__device__ __forceinline__ unsigned int lm_walk_warp(int e, const float* X32, float f23, const double* s_thr,
                                                     const double* s_val, const int* s_meta, int T, int L,
                                                     double base) {
    const int lane = threadIdx.x & 31;
    return lm_walk_regs(lane < LM_NF ? X32[LM_NF * e + lane] : 0.0f, f23, s_thr, s_val, s_meta, T, L, base);
}

// one warp merges region b into a (every lane calls it): the sums, the perimeter (less the pair's
// length twice), the region's terms and normalised histogram again
__device__ void lm_merge_warp(int a, int b, int len, int round, long long* area, long long* rsum, long long* rsq,
                              long long* gin, int* hist, int* bord, long long* per, int* into, int* grown,
                              double* rd, double* hn, double gscale) {
    const int lane = threadIdx.x & 31;
    const long long A = area[a] + area[b];
    const double aA = (double)A;
    const double iA = aA > 1.0 ? aA : 1.0;
    long long s0 = 0, s1 = 0, s2 = 0, sq = 0, gi = 0, pe = 0;
    int bo = 0;
    if (lane == 0) {
        s0 = rsum[3 * a] + rsum[3 * b];
        s1 = rsum[3 * a + 1] + rsum[3 * b + 1];
        s2 = rsum[3 * a + 2] + rsum[3 * b + 2];
        sq = rsq[a] + rsq[b];
        gi = gin[a] + gin[b];
        pe = per[a] + per[b] - 2LL * len;
        bo = bord[a] + bord[b];
    }
    __syncwarp();  // every lane has read the sums before any lane writes them
    for (int k = lane; k < LM_NH; k += 32) {
        const int v = hist[LM_NH * a + k] + hist[LM_NH * b + k];
        hist[LM_NH * a + k] = v;
        hn[LM_NH * a + k] = (double)v / iA;
    }
    if (lane == 0) {
        area[a] = A;
        rsum[3 * a] = s0;
        rsum[3 * a + 1] = s1;
        rsum[3 * a + 2] = s2;
        rsq[a] = sq;
        gin[a] = gi;
        bord[a] = bo;
        per[a] = pe;
        into[b] = a;
        grown[a] = round;
        lm_region_terms(aA, s0, s1, s2, sq, gi, gscale, rd + 5 * a);
    }
    __syncwarp();
}

// The renaming's steps, shared by phase D (one counter add a warp) and lm_rename (the clean-up's and the target
// count's, one a thread). A renamed pair's key (the lower region first) into the table: the slot when this call
// created it (a new pair, filled in B), else -1.
__device__ __forceinline__ int lm_rename_insert(int e, int a, int b, int len, u64* hkey, int* hlen,
                                                unsigned long long* hgs, int* hgh, int logcap,
                                                const unsigned long long* eg, const int* gh, int* gc, u64& key) {
    key = ((u64)imin(a, b) << 32) | (u64)imax(a, b);
    return lm_insert(hkey, hlen, hgs, hgh, logcap, key, len, eg[e], gh + LM_NG * e, &gc[LG_ERR]);
}
// new pair j of the renaming: its slot, its key (B reads it with the slot: the regions' loads need not wait for the
// table) and the position of the pair that created it, which it takes (the other emptied positions stay empty)
__device__ __forceinline__ void lm_new_slot(int j, int slot, u64 key, int e, int* slots, u64* skey, int* holes) {
    slots[j] = slot;
    skey[j] = key;
    holes[j] = e;
}
// position e becomes a hole of this round
__device__ __forceinline__ void lm_hole(int e, int* ea, int* el, int* hstamp, int round) {
    ea[e] = -1;
    el[e] = 0;
    hstamp[e] = round;
}

// a pair renamed into the table (its position becomes a hole, filled by a new pair in B)
__device__ __forceinline__ void lm_rename(int e, int a, int b, int len, u64* hkey, int* hlen, unsigned long long* hgs,
                                          int* hgh, int logcap, const unsigned long long* eg, const int* gh, int* ea,
                                          int* el, int* hstamp, int* slots, u64* skey, int* holes, int* gc, int round,
                                          bool insert) {
    if (insert) {
        u64 key;
        const int slot = lm_rename_insert(e, a, b, len, hkey, hlen, hgs, hgh, logcap, eg, gh, gc, key);
        if (slot >= 0) lm_new_slot(atomicAdd(&gc[LG_NEW], 1), slot, key, e, slots, skey, holes);
    }
    lm_hole(e, ea, el, hstamp, round);
}

// All rounds of the learned merge over the whole grid (see lm_merge; the same results). Launch it
// cooperatively with at most as many blocks as the device holds at once (gridDim 1 in the emulator).
// Zeroed by the host: per, bar, gc. hstamp[e]: the round in which position e became a hole (-1: filled
// in round 0); grown[r]: the round in which region r last grew (-1: never); mn2, best2: two buffers a round
// each (one in use, the other emptied for the next round). state: [count, rounds, walks, error bits].
// prof (optional, 16 long longs): [0-2] the rounds' phases B, C, D (from the barrier's end to the latest
// arrival at the next, ns), [3] the clean-up and target-count steps, [4] the barriers (latest arrival to
// block 0's release), [15] the latest arrival (scratch). A -DLG_CHECKPOINTS build (prof of 64): [16 + k]
// the blocks' largest sum over the rounds of checkpoint k's clock less the block's release at the phase's
// opening barrier (cycles; benchmarks/imseg_gpu14.py names them), [32 + k] their sum over the blocks, [48]
// block 0's cycles and [49] its ns (globaltimer) over the kernel.
__device__ __forceinline__ void lm_merge_grid_body(
    int R, u64* hkey, int* hlen, unsigned long long* hgs, int* hgh, int logcap, int* ea, int* eb, int* el,
    unsigned long long* eg, int* gh, unsigned int* pb, double* lc, float* X32, int* slots, u64* skey, int* holes,
    int* hstamp,
    double* rd, double* hn, long long* area, long long* rsum, long long* rsq, long long* gin, int* hist, int* bord,
    long long* per, u64* mn2, u64* best2, int* into, int* grown, const double* __restrict__ m_thr,
    const double* __restrict__ m_val, const int* __restrict__ m_meta, int T, int L, double base,
    const double* __restrict__ t23, int n23, float tau, int target, int min_area, double gscale, double b0,
    double size_k, double inv_norm, double npx, int max_rounds, int emax, unsigned int* bar, int* gc,
    int* state, long long* prof) {
    __shared__ double s_thr[LM_MAXNODES];
    __shared__ double s_val[LM_MAXNODES];
    __shared__ int s_meta[LM_MAXNODES];
    __shared__ double s_t23[256];  // the thresholds on feature 23 (the host checks n23 <= 256)
    __shared__ int s_cnt[8];       // the global counters as read by thread 0
    // checkpoints (prof of 64): per round, the latest warp's clock at each checkpoint of a phase, less the
    // block's release clock; summed over the rounds per block (s_pk); at the end the blocks' max and sum
#ifdef LG_CHECKPOINTS
    __shared__ unsigned long long s_ck[16];
    __shared__ long long s_pk[16];
    __shared__ long long s_tph;
#endif
    __shared__ float s_f23;        // the round's progress feature and its bin (one warp computes them in B)
    __shared__ int s_b23;
    const unsigned FULL = 0xffffffffu;
    const int t = threadIdx.x;
    const int gt = blockIdx.x * blockDim.x + t, GT = gridDim.x * blockDim.x;
    const int lane = t & 31, NW = GT >> 5;
    // work spread over the SMs: consecutive items go to consecutive blocks (an SM's fp64 units and issue
    // slots are shared by its warps, so a few heavy items a block, not a block of heavy items): thread
    // index st, warp index sw (from a block's first warp) and swt (from its last)
    const int wpb = blockDim.x >> 5, wl = t >> 5;
    const int st = t * gridDim.x + blockIdx.x;
    const int sw = wl * gridDim.x + blockIdx.x;
    const int swt = (wpb - 1 - wl) * gridDim.x + blockIdx.x;
    const int cap = 1 << logcap;
    unsigned int nb = 0u;
#ifndef LG_CHECKPOINTS
    unsigned long long lg_dummy_u = 0ULL;
    long long lg_dummy_l = 0LL;
    (void)lg_dummy_u;
    (void)lg_dummy_l;
#endif
    for (int i = t; i < n23; i += blockDim.x) s_t23[i] = t23[i];
#ifdef LG_CHECKPOINTS
    if (t < 16) {
        s_ck[t] = 0ULL;
        s_pk[t] = 0LL;
    }
    if (t == 0) s_tph = lm_clock();
    const long long tk0 = lm_clock();
    const unsigned long long tg0 = lm_gtime();
#endif
    unsigned long long* tlast = prof != nullptr ? (unsigned long long*)&prof[15] : nullptr;
    long long pt[5] = {0, 0, 0, 0, 0};
    unsigned long long ts = 0ULL;
#ifdef LG_CHECKPOINTS
#define LG_PROFILING 1
#define LG_TREL (prof != nullptr ? &s_tph : nullptr)
#define LG_CKV(q) s_ck[q]
#define LG_PKV(q) s_pk[q]
#define LG_TPH s_tph
#else
#define LG_PROFILING 0
#define LG_TREL nullptr
#define LG_CKV(q) lg_dummy_u
#define LG_PKV(q) lg_dummy_l
#define LG_TPH lg_dummy_l
#endif
#ifdef LG_CHECKPOINTS
#define LG_CK(k)                                                                     \
    do {                                                                             \
        if (prof != nullptr && lane == 0) atomicMax(&s_ck[k], (unsigned long long)lm_clock()); \
    } while (0)
#else
#define LG_CK(k) \
    do {        \
    } while (0)
#endif
#define LG_SYNC(k)                                                                   \
    do {                                                                             \
        if (LG_PROFILING && prof != nullptr) {                                       \
            __syncthreads();                                                         \
            if (t == 0) {                                                            \
                const long long now = lm_clock();                                    \
                const int k0 = (k) == 0 ? 0 : ((k) == 1 ? 6 : ((k) == 2 ? 10 : 16)); \
                const int k1 = (k) == 0 ? 5 : ((k) == 1 ? 9 : ((k) == 2 ? 13 : 16)); \
                for (int q = 0; q < 16; ++q) {                                       \
                    if (q >= k0 && q < k1 && LG_CKV(q) > (unsigned long long)LG_TPH)    \
                        LG_PKV(q) += (long long)LG_CKV(q) - LG_TPH;                       \
                    LG_CKV(q) = 0ULL;                                                  \
                }                                                                    \
                if (k1 < 16) LG_PKV(k1) += now - LG_TPH;                                \
            }                                                                        \
        }                                                                            \
        lm_grid_sync(bar, nb, tlast, LG_TREL);                                       \
        if (tlast != nullptr && gt == 0) {                                           \
            const unsigned long long la = *(volatile unsigned long long*)tlast;       \
            const unsigned long long now = lm_gtime();                               \
            pt[k] += (long long)(la - ts);                                           \
            pt[4] += (long long)(now - la);                                          \
            ts = now;                                                                \
        }                                                                            \
    } while (0)
    for (int i = t; i < T * L; i += blockDim.x) {
        s_thr[i] = m_thr[i];
        s_val[i] = m_val[i];
        s_meta[i] = m_meta[i];
    }
    for (int r = gt; r < R; r += GT) {
        into[r] = r;
        grown[r] = -1;
        mn2[r] = LM_EMPTY;
        mn2[R + r] = LM_EMPTY;
        best2[r] = LM_EMPTY;
        best2[R + r] = LM_EMPTY;
        if (bord[r]) atomicAdd((unsigned long long*)&per[r], (unsigned long long)(long long)bord[r]);
        lm_region_terms((double)area[r], rsum[3 * r], rsum[3 * r + 1], rsum[3 * r + 2], rsq[r], gin[r], gscale,
                        rd + 5 * r);
    }
    for (int i = gt; i < LM_NH * R; i += GT) {
        const int r = i / LM_NH;
        const double aA = (double)area[r];
        hn[i] = (double)hist[i] / (aA > 1.0 ? aA : 1.0);
    }
    // every pair of the table is a new pair of round 0 (position i, filled in B)
    for (int s = gt; s < cap; s += GT) {
        const u64 k = hkey[s];
        if (k == LM_EMPTY) continue;
        const int i = atomicAdd(&gc[LG_E], 1);
        if (i < emax) {
            const int len = hlen[s];
            slots[i] = s;
            skey[i] = k;
            holes[i] = i;
            hstamp[i] = -1;
            atomicAdd((unsigned long long*)&per[(int)(k >> 32)], (unsigned long long)(long long)len);
            atomicAdd((unsigned long long*)&per[(int)(k & 0xffffffffULL)], (unsigned long long)(long long)len);
        } else {
            atomicOr(&gc[LG_ERR], 2);
        }
    }
    if (gt == 0 && tlast != nullptr) ts = lm_gtime();
    LG_SYNC(3);
    const int E = imin(lm_ldv(&gc[LG_E]), emax);
    int count = R, rounds = 0, myWalks = 0;
    int myE = -1, myA = 0, myB = 0;  // the warp's last new pair of B (its features stay in registers for C)
    float myX = 0.0f;
    double myL = 0.0;
    const bool one = E <= 32 * NW;  // one pass over the positions: C's loads serve D
    int pa0 = -1, pb0 = -1, pl = 0;
    double plc = 0.0;
    // one pass: each lane keeps its position's pair in registers across the rounds (pa0, pb0, pl, plc and the
    // context features cy21-23 and p bits cmine): cst 0: read it from memory this round (a new pair of the
    // last renaming, or after a clean-up / target-count round whose renames other threads did), 1: the
    // registers hold it, 2: an empty position (it stays empty: a new pair only takes its creator's position)
    int cst = 0;
    float cy21 = 0.0f, cy22 = 0.0f, cy23 = 0.0f;
    unsigned int cmine = 0u;
    bool kdone = false;  // D gave the kept pairs' log costs to this round's lowest (B does only the new pairs)
    bool have = false;  // the counters were read with the merge count after D's barrier (one trip, not two)
    // B's first new pair of this warp (slot, position, key), loaded while thread 0 reads the counters after D
    int pf_s = 0, pf_e = 0;
    u64 pf_k = 0ULL;
    bool pf = false;
    while (true) {
        int nNew = E;
        if (!have) {
            if (t == 0) {
                s_cnt[0] = lm_ldv(&gc[LG_NEW]);
                s_cnt[2] = lm_ldv(&gc[LG_ERR]);
            }
            __syncthreads();
        }
        have = false;
        LG_CK(0);
        const bool pfr = pf;
        pf = false;
        if (rounds > 0) nNew = s_cnt[0];
        // (no pairs left: nothing merges and the round's end stops the rounds, as the CPU loop)
        if (s_cnt[2] || E == 0 || rounds >= max_rounds || (target > 0 && count <= target)) break;
        const int par = rounds & 1;
        u64* mn = mn2 + par * R;
        u64* best = best2 + par * R;
        if (wl == (wpb >> 1)) {  // one warp (one the positions rarely reach) for the block; read after B's barrier
            const float f = (float)lm_log((double)count / (double)R);
            int bn = 0;
            for (int k = 0; k < n23; ++k) bn += ((double)f > s_t23[k]) ? 1 : 0;
            if (lane == 0) {
                s_f23 = f;
                s_b23 = bn;
            }
        }
        LG_CK(1);
        // B. every region's lowest log cost: the kept pairs' (one thread a pair), the new pairs' with their
        // log cost and features 0-20 (one warp a pair, moved from the table into the holes)
        for (int e = kdone ? E : st; e < E; e += GT) {
            const int hs = hstamp[e], a = ea[e], b = eb[e];
            const double v = lc[e];
            if (hs == rounds - 1 || a < 0) continue;  // a hole of the last renaming (refilled below), or empty
            const u64 kk = lm_dkey(v);
            atomicMin((unsigned long long*)&mn[a], (unsigned long long)kk);
            atomicMin((unsigned long long*)&mn[b], (unsigned long long)kk);
        }
        LG_CK(2);
        for (int i = swt; i < nNew; i += NW) {  // the blocks' last warps: their first ones have the kept pairs
            int s = pf_s, e = pf_e;
            u64 k = pf_k;
            if (!pfr || i != swt) {
                s = slots[i];
                e = holes[i];
                k = skey[i];
            }
            const int a = (int)(k >> 32), b = (int)(k & 0xffffffffULL);
            const int len = hlen[s];
            const unsigned long long g = hgs[s];
            const int ghj = lane < LM_NG ? hgh[LM_NG * s + lane] : 0;
            float xk;
            const double v = lm_new_pair_warp(e, a, b, len, g, ghj, X32, area, rd, hn, per, npx, gscale, b0, size_k,
                                              inv_norm, xk);
            myE = e;
            myA = a;
            myB = b;
            myX = xk;
            myL = v;
            __syncwarp();  // every lane has read the slot before it is emptied
            if (lane < LM_NG) {
                gh[LM_NG * e + lane] = ghj;
                hgh[LM_NG * s + lane] = 0;
            }
            if (lane == 0) {
                ea[e] = a;
                eb[e] = b;
                el[e] = len;
                eg[e] = g;
                hkey[s] = LM_EMPTY;
                hlen[s] = 0;
                hgs[s] = 0ULL;
                lc[e] = v;
                const u64 kk = lm_dkey(v);
                atomicMin((unsigned long long*)&mn[a], (unsigned long long)kk);
                atomicMin((unsigned long long*)&mn[b], (unsigned long long)kk);
            }
            LG_CK(3);
        }
        LG_SYNC(0);
        const float f23 = s_f23;
        const int bin23 = s_b23;
        // C. the context features for all, the trees of the new pairs and of the pairs whose features changed
        // (one warp a pair); every region's lowest p. The other round's buffers are emptied for the next round.
        if (gt == 0) {
            gc[LG_NEW] = 0;
            gc[LG_NM] = 0;
            gc[LG_SEL] = 0;
            gc[LG_MV] = 0;
            gc[LG_KC] = 0;
            gc[LG_KC + 1] = 0;
        }
        {
            u64* mnx = mn2 + (par ^ 1) * R;
            u64* bestx = best2 + (par ^ 1) * R;
            for (int r = gt; r < R; r += GT) {
                mnx[r] = LM_EMPTY;
                bestx[r] = LM_EMPTY;
            }
        }
        LG_CK(6);
        // the new pairs, by the warps that computed their features in B (the last one's still in registers)
        for (int i = swt; i < nNew; i += NW) {
            int e = myE, a = myA, b = myB;
            float xk = myX;
            double lce = myL;
            if (i + NW < nNew) {  // an earlier one of this warp (round 0): from memory
                e = holes[i];
                a = ea[e];
                b = eb[e];
                lce = lc[e];
                xk = lane < 21 ? X32[LM_NF * e + lane] : 0.0f;
            }
            const double cA = lce - lm_dval(mn[a]), cB = lce - lm_dval(mn[b]);
            if (lane == 21) xk = (float)(cA < cB ? cA : cB);
            else if (lane == 22) xk = (float)(cA > cB ? cA : cB);
            else if (lane == 23) xk = (float)bin23;
            if (lane >= 21 && lane < LM_NF) X32[LM_NF * e + lane] = xk;
            const unsigned int bits = lm_walk_regs(xk, f23, s_thr, s_val, s_meta, T, L, base);
            if (lane == 0) {
                pb[e] = bits;
                myWalks += 1;
                atomicMin((unsigned long long*)&best[a], (unsigned long long)(((u64)bits << 32) | (u64)b));
                atomicMin((unsigned long long*)&best[b], (unsigned long long)(((u64)bits << 32) | (u64)a));
            }
            LG_CK(7);
        }
        // the kept pairs: the trees again where their context features changed
        for (int base0 = 0; base0 < E; base0 += 32 * NW) {
            const int e = base0 + sw + lane * NW;
            int a = -1, b = -1, hs = -2;
            double lce = 0.0;
            float y21 = 0.0f, y22 = 0.0f, y23 = 0.0f;
            unsigned int mine = 0u;
            if (one && cst == 1) {
                a = pa0;
                b = pb0;
                lce = plc;
                y21 = cy21;
                y22 = cy22;
                y23 = cy23;
                mine = cmine;
            } else if (!(one && cst == 2) && e < E) {  // one trip: the pair and its kept features and p
                a = ea[e];
                b = eb[e];
                hs = hstamp[e];
                lce = lc[e];
                pl = el[e];
                const float* X = X32 + LM_NF * e;
                y21 = X[21];
                y22 = X[22];
                y23 = X[23];
                mine = pb[e];
                // a new pair (walked above: its features and p are read next round), a pair, or a hole
                cst = hs == rounds - 1 ? 0 : (a >= 0 ? 1 : 2);
            }
            plc = lce;
            pa0 = a;  // D's loop reads the same positions (when one pass covers them)
            pb0 = b;
            if (hs == rounds - 1) a = -1;  // a new pair: done above
            bool walk = false;
            if (a >= 0) {
                float* X = X32 + LM_NF * e;
                double cA = lce - lm_dval(mn[a]), cB = lce - lm_dval(mn[b]);
                float x21 = (float)(cA < cB ? cA : cB), x22 = (float)(cA > cB ? cA : cB), x23 = (float)bin23;
                walk = !(x21 == y21 && x22 == y22 && x23 == y23);
                if (walk) {
                    X[21] = x21;
                    X[22] = x22;
                    X[23] = x23;
                    cy21 = x21;
                    cy22 = x22;
                    cy23 = x23;
                } else {
                    cy21 = y21;
                    cy22 = y22;
                    cy23 = y23;
                }
            }
            unsigned work = __ballot_sync(FULL, walk);
            if (work) __syncwarp();  // the owners' features 21-23 are written
            while (work) {
                const int src = __ffs((int)work) - 1;
                work &= work - 1u;
                const int ew = __shfl_sync(FULL, e, src);
                const unsigned int bits = lm_walk_warp(ew, X32, f23, s_thr, s_val, s_meta, T, L, base);
                if (lane == src) mine = bits;
                if (lane == 0) {
                    pb[ew] = bits;
                    myWalks += 1;
                }
            }
            if (a >= 0) {
                cmine = mine;
                atomicMin((unsigned long long*)&best[a], (unsigned long long)(((u64)mine << 32) | (u64)b));
                atomicMin((unsigned long long*)&best[b], (unsigned long long)(((u64)mine << 32) | (u64)a));
            }
        }
        LG_CK(8);
        LG_SYNC(1);
        int nm = 0;
        bool cleaned = false;
        if (target == 0) {
            // D. the mutual lowest pairs under tau merge (one warp a pair; each region is in one at most); a
            // pair at a region that merges is renamed now: region x merges with x' = best[x]'s other region when
            // best[x']'s is x and best[x]'s p is under tau (into the lower of the two)
            for (int base0 = 0; base0 < E; base0 += 32 * NW) {
                const int e = base0 + sw + lane * NW;
                int a = pa0, b = pb0, len = pl;  // C's loads (one pass)
                double lce = plc;
                if (!one) {
                    a = -1;
                    if (e < E) {
                        a = ea[e];
                        b = eb[e];
                        len = el[e];
                        lce = lc[e];
                    }
                }
                bool m = false, ren = false;
                int na = 0, nb2 = 0;
                if (a >= 0) {
                    const u64 Ba = best[a], Bb = best[b];
                    const int pa = (int)(Ba & 0xffffffffULL), pq = (int)(Bb & 0xffffffffULL);
                    const u64 Bpa = best[pa], Bpq = best[pq];
                    const bool ma = (int)(Bpa & 0xffffffffULL) == a && __uint_as_float((unsigned int)(Ba >> 32)) < tau;
                    const bool mb = (int)(Bpq & 0xffffffffULL) == b && __uint_as_float((unsigned int)(Bb >> 32)) < tau;
                    m = ma && pa == b;
                    ren = ma || mb;
                    na = ma ? imin(a, pa) : a;
                    nb2 = mb ? imin(b, pq) : b;
                    if (!ren) {  // a kept pair: its log cost into the next round's lowest (cleared in C)
                        u64* mnx = mn2 + (par ^ 1) * R;
                        const u64 kk = lm_dkey(lce);
                        atomicMin((unsigned long long*)&mnx[a], (unsigned long long)kk);
                        atomicMin((unsigned long long*)&mnx[b], (unsigned long long)kk);
                    }
                }
                // the renamed pairs' holes and new slots (lm_rename's steps), one counter add a warp
                const unsigned below = (1u << lane) - 1u;
                int slot = -1;
                u64 key = 0ULL;
                if (ren && !m)
                    slot = lm_rename_insert(e, na, nb2, len, hkey, hlen, hgs, hgh, logcap, eg, gh, gc, key);
                const unsigned smask = __ballot_sync(FULL, slot >= 0);
                int sbase = 0;  // (its add is in flight during the merges below)
                if (lane == 0 && smask) sbase = atomicAdd(&gc[LG_NEW], __popc(smask));
                if (ren) {
                    lm_hole(e, ea, el, hstamp, rounds);
                    cst = slot >= 0 ? 0 : 2;
                }
                LG_CK(10);
                unsigned mm = __ballot_sync(FULL, m);
                if (lane == 0 && mm) atomicAdd(&gc[LG_NM], __popc(mm));
                while (mm) {
                    const int src = __ffs((int)mm) - 1;
                    mm &= mm - 1u;
                    lm_merge_warp(__shfl_sync(FULL, a, src), __shfl_sync(FULL, b, src), __shfl_sync(FULL, len, src),
                                  rounds, area, rsum, rsq, gin, hist, bord, per, into, grown, rd, hn, gscale);
                }
                sbase = __shfl_sync(FULL, sbase, 0);
                if (slot >= 0) lm_new_slot(sbase + __popc(smask & below), slot, key, e, slots, skey, holes);
                LG_CK(11);
            }
            LG_SYNC(2);
            if (swt < emax) {  // (read before the count is known: used only when it says a new pair is there)
                pf_s = slots[swt];
                pf_e = holes[swt];
                pf_k = skey[swt];
            }
            if (t == 0) {  // the merge count and the next round's counters in one trip
                s_cnt[3] = lm_ldv(&gc[LG_NM]);
                s_cnt[0] = lm_ldv(&gc[LG_NEW]);
                s_cnt[2] = lm_ldv(&gc[LG_ERR]);
            }
            __syncthreads();
            nm = s_cnt[3];
            have = nm != 0;
            pf = have;
            kdone = nm != 0;  // (nm 0: the clean-up renames pairs; the next lowest are emptied below, B does all)
#ifdef LG_CHECKPOINTS
            if (prof != nullptr && t == 0) s_pk[14] += lm_clock() - s_tph;
#endif
            if (nm == 0) {
                if (min_area <= 1) break;
                // clean-up: every region smaller than min_area joins its lowest-p neighbour
                int sel = 0;
                for (int e = gt; e < E; e += GT) {
                    const int a = ea[e];
                    if (a < 0) continue;
                    const int b = eb[e];
                    bool la = (int)(best[a] & 0xffffffffULL) == b && area[a] < (long long)min_area;
                    bool lb = (int)(best[b] & 0xffffffffULL) == a && area[b] < (long long)min_area;
                    if (la || lb) {
                        uf_union(into, a, b);
                        sel += 1;
                    }
                }
                if (sel) atomicAdd(&gc[LG_SEL], sel);
                LG_SYNC(3);
                if (lm_ldv(&gc[LG_SEL]) == 0) break;
                int mv = 0;
                for (int r = gt; r < R; r += GT) {
                    if (best[r] == LM_EMPTY) continue;  // merged away earlier (or no pair)
                    int root = uf_find(into, r);
                    if (root != r) {
                        grown[root] = rounds;
                        atomicAdd((unsigned long long*)&area[root], (unsigned long long)area[r]);
                        for (int c = 0; c < 3; ++c)
                            atomicAdd((unsigned long long*)&rsum[3 * root + c], (unsigned long long)rsum[3 * r + c]);
                        atomicAdd((unsigned long long*)&rsq[root], (unsigned long long)rsq[r]);
                        atomicAdd((unsigned long long*)&gin[root], (unsigned long long)gin[r]);
                        atomicAdd((unsigned long long*)&per[root], (unsigned long long)per[r]);
                        for (int k = 0; k < LM_NH; ++k)
                            if (hist[LM_NH * r + k]) atomicAdd(&hist[LM_NH * root + k], hist[LM_NH * r + k]);
                        if (bord[r]) atomicAdd(&bord[root], bord[r]);
                        into[r] = root;
                        mv += 1;
                    }
                }
                if (mv) atomicAdd(&gc[LG_MV], mv);
                LG_SYNC(3);
                nm = lm_ldv(&gc[LG_MV]);
                cleaned = true;
            }
        } else {
            // D with a target count: flag the mutual pairs, keep the lowest where they overshoot, then merge
            for (int e = gt; e < E; e += GT) {
                const int a = ea[e];
                if (a < 0) continue;
                const int b = eb[e];
                if ((int)(best[a] & 0xffffffffULL) == b && (int)(best[b] & 0xffffffffULL) == a &&
                    __uint_as_float(pb[e]) < tau) {
                    el[e] = -el[e] - 1;
                    atomicAdd(&gc[LG_NM], 1);
                }
            }
            LG_SYNC(3);
            nm = lm_ldv(&gc[LG_NM]);
            if (nm == 0) break;
            if (count - nm < target) {
                // keep only the k lowest flagged pairs by (p bits << 32 | lower region): a binary search,
                // one grid barrier a step (three counters in turn)
                const int k = count - target;
                u64 lo = 0ULL, hi = 0xFFFFFFFFFFFFFFFFULL;
                int it = 0;
                while (lo < hi) {
                    const u64 mid = lo + (hi - lo) / 2ULL;
                    int c = 0;
                    for (int e = gt; e < E; e += GT)
                        if (ea[e] >= 0 && el[e] < 0 && ((((u64)pb[e]) << 32) | (u64)ea[e]) <= mid) c += 1;
                    if (c) atomicAdd(&gc[LG_KC + it % 3], c);
                    if (gt == 0) gc[LG_KC + (it + 1) % 3] = 0;
                    LG_SYNC(3);
                    const int tot = lm_ldv(&gc[LG_KC + it % 3]);
                    if (tot >= k) hi = mid;
                    else lo = mid + 1ULL;
                    it += 1;
                }
                for (int e = gt; e < E; e += GT)
                    if (ea[e] >= 0 && el[e] < 0 && ((((u64)pb[e]) << 32) | (u64)ea[e]) > lo) el[e] = -el[e] - 1;
                nm = k;
                LG_SYNC(3);
            }
            for (int base0 = 0; base0 < E; base0 += 32 * NW) {
                const int e = base0 + sw + lane * NW;
                int a = -1, b = -1, len = 0;
                bool m = false;
                if (e < E) a = ea[e];
                if (a >= 0 && el[e] < 0) {
                    b = eb[e];
                    len = -el[e] - 1;
                    m = true;
                }
                unsigned mm = __ballot_sync(FULL, m);
                while (mm) {
                    const int src = __ffs((int)mm) - 1;
                    mm &= mm - 1u;
                    lm_merge_warp(__shfl_sync(FULL, a, src), __shfl_sync(FULL, b, src), __shfl_sync(FULL, len, src),
                                  rounds, area, rsum, rsq, gin, hist, bord, per, into, grown, rd, hn, gscale);
                }
            }
            LG_SYNC(3);
        }
        if (cleaned) {
            u64* mnx = mn2 + (par ^ 1) * R;
            for (int r = gt; r < R; r += GT) mnx[r] = LM_EMPTY;
        }
        if (target > 0 || cleaned) {
            // after the clean-up (regions' terms again) or the target count's merges: the pairs at a grown
            // region are renamed (flagged ones: merged, holes); the perimeters lose the pairs that became inner
            if (target == 0)
                for (int r = gt; r < R; r += GT)
                    if (grown[r] == rounds) {
                        lm_region_terms((double)area[r], rsum[3 * r], rsum[3 * r + 1], rsum[3 * r + 2], rsq[r],
                                        gin[r], gscale, rd + 5 * r);
                        const double aA = (double)area[r];
                        for (int k = 0; k < LM_NH; ++k)
                            hn[LM_NH * r + k] = (double)hist[LM_NH * r + k] / (aA > 1.0 ? aA : 1.0);
                    }
            for (int e = gt; e < E; e += GT) {
                const int a0 = ea[e];
                if (a0 < 0) continue;
                const int len = el[e];
                if (len < 0) {
                    lm_rename(e, 0, 0, 0, hkey, hlen, hgs, hgh, logcap, eg, gh, ea, el, hstamp, slots, skey, holes, gc, rounds,
                              false);
                    continue;
                }
                const int a = into[a0], b = into[eb[e]];
                if (grown[a] == rounds || grown[b] == rounds) {
                    if (a == b) atomicAdd((unsigned long long*)&per[a], (unsigned long long)(-2LL * len));
                    lm_rename(e, a, b, len, hkey, hlen, hgs, hgh, logcap, eg, gh, ea, el, hstamp, slots, skey, holes, gc,
                              rounds, a != b);
                }
            }
            LG_SYNC(3);
        }
        if (target > 0 || cleaned) cst = 0;  // other threads renamed pairs: every position is read again
        count -= nm;
        rounds += 1;
    }
    if (lane == 0 && myWalks) atomicAdd(&gc[LG_WALKS], myWalks);
    LG_SYNC(3);
#ifdef LG_CHECKPOINTS
    if (prof != nullptr && t == 0) {
        for (int q = 0; q < 15; ++q) {
            atomicMax((unsigned long long*)&prof[16 + q], (unsigned long long)s_pk[q]);
            atomicAdd((unsigned long long*)&prof[32 + q], (unsigned long long)s_pk[q]);
        }
        if (blockIdx.x == 0) {
            prof[48] = lm_clock() - tk0;
            prof[49] = (long long)(lm_gtime() - tg0);
        }
    }
#endif
    if (gt == 0) {
        state[0] = count;
        state[1] = rounds;
        state[2] = lm_ldv(&gc[LG_WALKS]);
        state[3] = lm_ldv(&gc[LG_ERR]);
        if (prof != nullptr)
            for (int k = 0; k < 5; ++k) prof[k] = pt[k];
    }
#undef LG_SYNC
#undef LG_CK
#undef LG_PROFILING
#undef LG_TREL
#undef LG_CKV
#undef LG_PKV
#undef LG_TPH
}

// 1024 threads a block (64 registers a thread), or 512 (128 registers): the same rounds, one parameter list
#define LM_MERGE_GRID_KERNEL(NAME, THREADS) \
extern "C" __global__ void __launch_bounds__(THREADS) NAME( \
int R, u64* hkey, int* hlen, unsigned long long* hgs, int* hgh, int logcap, int* ea, int* eb, int* el, \
    unsigned long long* eg, int* gh, unsigned int* pb, double* lc, float* X32, int* slots, u64* skey, int* holes, \
    int* hstamp, \
    double* rd, double* hn, long long* area, long long* rsum, long long* rsq, long long* gin, int* hist, int* bord, \
    long long* per, u64* mn2, u64* best2, int* into, int* grown, const double* __restrict__ m_thr, \
    const double* __restrict__ m_val, const int* __restrict__ m_meta, int T, int L, double base, \
    const double* __restrict__ t23, int n23, float tau, int target, int min_area, double gscale, double b0, \
    double size_k, double inv_norm, double npx, int max_rounds, int emax, unsigned int* bar, int* gc, \
    int* state, long long* prof) { \
    lm_merge_grid_body(R, hkey, hlen, hgs, hgh, logcap, ea, eb, el, eg, gh, pb, lc, X32, slots, skey, holes, hstamp, rd, \
                       hn, area, rsum, rsq, gin, hist, bord, per, mn2, best2, into, grown, m_thr, m_val, m_meta, T, L, \
                       base, t23, n23, tau, target, min_area, gscale, b0, size_k, inv_norm, npx, max_rounds, emax, \
                       bar, gc, state, prof); \
}
LM_MERGE_GRID_KERNEL(lm_merge_grid, 1024)
LM_MERGE_GRID_KERNEL(lm_merge_grid512, 512)
#undef LM_MERGE_GRID_KERNEL
