// Contour-following segmentation (gpu_kernels/imseg/contours.py): CIELAB through lookup
// tables, a Gaussian blur, the colour gradient, SLIC superpixels, the region adjacency graph
// with the boundary strength of every pair of adjacent regions, and the hierarchical merging
// of the graph in one persistent block (the rounds stop on the device).
//
// Compiled with --fmad=false: every float and double operation is rounded as the NumPy path
// rounds it (same operations, same order), and every sum is a sum of integers, so the CPU
// and the GPU give the same labels.
#include "imseg_common.cuh"

#define CT_NF 1024         // entries of the f(t) = cbrt(t) table (plus two)
#define CT_EMPTY 0xFFFFFFFFFFFFFFFFULL
// best[r] of a region that absorbed another in this round (the renaming's skip, session 16): no
// cost value can equal it (its low word would be region 0xFFFFFFFE)
#define CT_MARK 0xFFFFFFFFFFFFFFFEULL

__device__ __forceinline__ float ct_flook(const float* __restrict__ F, float t) {
    float u = t * (float)CT_NF;
    u = fminf(fmaxf(u, 0.0f), (float)CT_NF);
    int i = (int)u;
    if (i > CT_NF - 1) i = CT_NF - 1;
    float fr = u - (float)i;
    return F[i] + fr * (F[i + 1] - F[i]);
}

// u8 image (C = 1, 3 or 4 channels) -> planar CIELAB (3 n floats)
extern "C" __global__ void ct_lab(const unsigned char* __restrict__ img, long long n, int C,
                                  const float* __restrict__ lin, const float* __restrict__ F,
                                  const float* __restrict__ M, float* __restrict__ lab) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    float r, g, b;
    if (C >= 3) {
        r = lin[img[p * C]];
        g = lin[img[p * C + 1]];
        b = lin[img[p * C + 2]];
    } else {
        r = g = b = lin[img[p]];
    }
    float x = (r * M[0] + g * M[1]) + b * M[2];
    float y = (r * M[3] + g * M[4]) + b * M[5];
    float z = (r * M[6] + g * M[7]) + b * M[8];
    float fx = ct_flook(F, x), fy = ct_flook(F, y), fz = ct_flook(F, z);
    lab[p] = 116.0f * fy - 16.0f;
    lab[n + p] = 500.0f * (fx - fy);
    lab[2 * n + p] = 200.0f * (fy - fz);
}

// one separable Gaussian pass over 3 planes; axis 0: along rows (x), 1: along columns (y)
extern "C" __global__ void ct_blur(const float* __restrict__ src, float* __restrict__ dst, int W, int H,
                                   const float* __restrict__ wts, int r, int axis) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n = (long long)W * H;
    if (idx >= 3 * n) return;
    int ch = (int)(idx / n);
    int p = (int)(idx - (long long)ch * n);
    int y = p / W, x = p - y * W;
    const float* s = src + (long long)ch * n;
    float acc = 0.0f;
    for (int k = 0; k <= 2 * r; ++k) {
        int q;
        if (axis == 0) {
            int xx = imin(imax(x + k - r, 0), W - 1);
            q = y * W + xx;
        } else {
            int yy = imin(imax(y + k - r, 0), H - 1);
            q = yy * W + x;
        }
        acc = acc + wts[k] * s[q];
    }
    dst[(long long)ch * n + p] = acc;
}

// colour gradient magnitude of the smoothed planes; its fixed-point value gq and the
// fixed-point colour q (16 per CIELAB unit) that the region sums use
extern "C" __global__ void ct_gradient(const float* __restrict__ sm, int W, int H, float gscale, float gmax,
                                       int* __restrict__ gq, int* __restrict__ q) {
    long long pp = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n = (long long)W * H;
    if (pp >= n) return;
    int p = (int)pp;
    int y = p / W, x = p - y * W;
    int xp = imin(x + 1, W - 1), xm = imax(x - 1, 0), yp = imin(y + 1, H - 1), ym = imax(y - 1, 0);
    float g = 0.0f;
    for (int c = 0; c < 3; ++c) {
        const float* s = sm + (long long)c * n;
        float gx = s[y * W + xp] - s[y * W + xm];
        float gy = s[yp * W + x] - s[ym * W + x];
        g = g + (gx * gx + gy * gy);
        q[(long long)c * n + p] = (int)rintf(s[p] * 16.0f);
    }
    float G = sqrtf(g);
    gq[p] = (int)fminf(rintf(G * gscale), gmax);
}

// ------------------------------------------------------------------ SLIC
// centres: cc (3 K floats, planar), cy, cx (K floats); cell k = gy * gw + gx
extern "C" __global__ void ct_slic_init(const float* __restrict__ sm, long long n, int W, int H, int S, int gw,
                                        int K, float* __restrict__ cc, float* __restrict__ cy,
                                        float* __restrict__ cx) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    int gy = k / gw, gx = k - gy * gw;
    int y = imin(gy * S + S / 2, H - 1), x = imin(gx * S + S / 2, W - 1);
    cy[k] = (float)y;
    cx[k] = (float)x;
    for (int c = 0; c < 3; ++c) cc[c * K + k] = sm[(long long)c * n + (long long)y * W + x];
}

#define CT_CHUNK 16
// pixels per thread of ct_slic_assign (its runs are summed across the warp, so a short chunk
// costs few atomics and reads the planes coalesced)
#ifndef CT_SLIC_CHUNK
#define CT_SLIC_CHUNK 16
#endif

__device__ __forceinline__ void ct_flush(int k, int c, long long s0, long long s1, long long s2, long long sy,
                                         long long sx, int* __restrict__ cnt, long long* __restrict__ sums) {
    atomicAdd(&cnt[k], c);
    atomicAdd((unsigned long long*)&sums[5 * k], (unsigned long long)s0);
    atomicAdd((unsigned long long*)&sums[5 * k + 1], (unsigned long long)s1);
    atomicAdd((unsigned long long*)&sums[5 * k + 2], (unsigned long long)s2);
    atomicAdd((unsigned long long*)&sums[5 * k + 3], (unsigned long long)sy);
    atomicAdd((unsigned long long*)&sums[5 * k + 4], (unsigned long long)sx);
}

// assign every pixel to the nearest of the 9 centres of its cell's neighbourhood; with acc,
// add it to that centre's integer sums (count, colour, row, column). A thread takes
// CT_CHUNK consecutive pixels and adds each run of one centre with one set of atomics; the
// run that ends its chunk is first summed across the warp (imseg_common.cuh: ft_seg_end).
extern "C" __global__ void ct_slic_assign(const float* __restrict__ sm, const int* __restrict__ q, int W, int H,
                                          int S, int gw, int gh, float wxy, const float* __restrict__ cc,
                                          const float* __restrict__ cy, const float* __restrict__ cx,
                                          int* __restrict__ lab, int acc, int* __restrict__ cnt,
                                          long long* __restrict__ sums) {
    long long n = (long long)W * H;
    long long p0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * CT_SLIC_CHUNK;
    const int K = gw * gh;
    int rk = -1, rc = 0;
    long long r0 = 0, r1 = 0, r2 = 0, ry = 0, rx = 0;
    for (int j = 0; j < CT_SLIC_CHUNK; ++j) {
        long long pp = p0 + j;
        if (pp >= n) break;
        int p = (int)pp;
        int y = p / W, x = p - y * W;
        int py = y / S, px = x / S;
        float v0 = sm[p], v1 = sm[n + p], v2 = sm[2 * n + p];
        float fy = (float)y, fx = (float)x;
        float best = 0.0f;
        int bk = -1;
        for (int dy = -1; dy <= 1; ++dy) {
            int gy = py + dy;
            if (gy < 0 || gy >= gh) continue;
            for (int dx = -1; dx <= 1; ++dx) {
                int gx = px + dx;
                if (gx < 0 || gx >= gw) continue;
                int k = gy * gw + gx;
                float d0 = v0 - cc[k], d1 = v1 - cc[K + k], d2 = v2 - cc[2 * K + k];
                float ey = fy - cy[k], ex = fx - cx[k];
                float D = ((d0 * d0 + d1 * d1) + d2 * d2) + wxy * (ey * ey + ex * ex);
                if (bk < 0 || D < best) {
                    best = D;
                    bk = k;
                }
            }
        }
        lab[p] = bk;
        if (acc) {
            if (bk != rk) {
                if (rk >= 0) ct_flush(rk, rc, r0, r1, r2, ry, rx, cnt, sums);
                rk = bk;
                rc = 0;
                r0 = r1 = r2 = ry = rx = 0;
            }
            rc += 1;
            r0 += q[p];
            r1 += q[n + p];
            r2 += q[2 * n + p];
            ry += y;
            rx += x;
        }
    }
    // the last run: summed over the warp's lanes that end in the same cell (no early return
    // above, every lane takes part), one set of atomics per run of lanes
    if (acc) {
        bool head;
        const int end = ft_seg_end(rk, head);
        rc = ft_seg_sum<int>(rc, end);
        r0 = ft_seg_sum<long long>(r0, end);
        r1 = ft_seg_sum<long long>(r1, end);
        r2 = ft_seg_sum<long long>(r2, end);
        ry = ft_seg_sum<long long>(ry, end);
        rx = ft_seg_sum<long long>(rx, end);
        if (head && rk >= 0) ct_flush(rk, rc, r0, r1, r2, ry, rx, cnt, sums);
    }
}

// new centres from the sums (a centre with no pixel keeps its place); clears the sums
extern "C" __global__ void ct_slic_update(int K, int* __restrict__ cnt, long long* __restrict__ sums,
                                          float* __restrict__ cc, float* __restrict__ cy, float* __restrict__ cx) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    int c = cnt[k];
    if (c > 0) {
        double dc = (double)c;
        double d16 = dc * 16.0;
        cc[k] = (float)((double)sums[5 * k] / d16);
        cc[K + k] = (float)((double)sums[5 * k + 1] / d16);
        cc[2 * K + k] = (float)((double)sums[5 * k + 2] / d16);
        cy[k] = (float)((double)sums[5 * k + 3] / dc);
        cx[k] = (float)((double)sums[5 * k + 4] / dc);
    }
    cnt[k] = 0;
    for (int j = 0; j < 5; ++j) sums[5 * k + j] = 0;
}

// ------------------------------------------------------------------ region adjacency graph
// add (len, gsum) to the slot of key (open addressing, linear probing); returns the slot
// when this call created it, else -1; a full table (labels beyond the graph's bounds) sets bit 1
// of *err and gives up instead of probing forever
__device__ __forceinline__ int ct_insert(u64* __restrict__ hkey, int* __restrict__ hlen,
                                          unsigned long long* __restrict__ hgs, int logcap, u64 key, int len,
                                          unsigned long long gs, int* err) {
    unsigned int mask = (1u << logcap) - 1u;
    unsigned int s = im_hash(key, logcap);
    for (unsigned int probe = 0; probe <= mask; ++probe) {
        u64 old = atomicCAS((unsigned long long*)&hkey[s], (unsigned long long)CT_EMPTY, (unsigned long long)key);
        if (old == CT_EMPTY || old == key) {
            atomicAdd(&hlen[s], len);
            atomicAdd(&hgs[s], gs);
            return old == CT_EMPTY ? (int)s : -1;
        }
        s = (s + 1u) & mask;
    }
    atomicOr(err, 1);
    return -1;
}

// per pixel: its region's area and colour sums; every pair of 4-adjacent pixels of two
// regions adds one boundary pixel pair (and its two gradient values) to the pair's slot.
// Regions are 0-based (label - 1). A thread takes CT_CHUNK consecutive pixels and adds each
// run of one region, and each run of one horizontal or vertical pair, at once. A label beyond
// the nreg regions that area and rsum hold sets bit 4 of the error bits and writes nothing more.
extern "C" __global__ void ct_rag_pixels(const int* __restrict__ labels, const int* __restrict__ gq,
                                         const int* __restrict__ q, int W, int H, long long* __restrict__ area,
                                         long long* __restrict__ rsum, u64* __restrict__ hkey,
                                         int* __restrict__ hlen, unsigned long long* __restrict__ hgs, int logcap,
                                         int* __restrict__ state, int nreg) {
    int* err = state + 2;  // error bits (ct_merge's state[2])
    long long n = (long long)W * H;
    long long p0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * CT_CHUNK;
    if (p0 >= n) return;
    int rl = -1;
    long long ra = 0, r0 = 0, r1 = 0, r2 = 0;
    u64 hk = CT_EMPTY, vk = CT_EMPTY;
    int hn = 0, vn = 0;
    unsigned long long hs = 0, vs = 0;
    for (int j = 0; j < CT_CHUNK; ++j) {
        long long pp = p0 + j;
        if (pp >= n) break;
        int p = (int)pp;
        int y = p / W, x = p - y * W;
        int l = labels[p] - 1;
        if ((unsigned int)l >= (unsigned int)nreg) {  // beyond area's nreg regions: stop, error bit 4
            atomicOr(err, 4);
            return;
        }
        if (l != rl) {
            if (rl >= 0) {
                atomicAdd((unsigned long long*)&area[rl], (unsigned long long)ra);
                atomicAdd((unsigned long long*)&rsum[3 * rl], (unsigned long long)r0);
                atomicAdd((unsigned long long*)&rsum[3 * rl + 1], (unsigned long long)r1);
                atomicAdd((unsigned long long*)&rsum[3 * rl + 2], (unsigned long long)r2);
            }
            rl = l;
            ra = r0 = r1 = r2 = 0;
        }
        ra += 1;
        r0 += q[p];
        r1 += q[n + p];
        r2 += q[2 * n + p];
        if (x + 1 < W) {
            int m = labels[p + 1] - 1;
            if (m != l) {
                u64 key = ((u64)imin(l, m) << 32) | (u64)imax(l, m);
                if (key != hk) {
                    if (hn) ct_insert(hkey, hlen, hgs, logcap, hk, hn, hs, err);
                    hk = key;
                    hn = 0;
                    hs = 0;
                }
                hn += 1;
                hs += (unsigned long long)(gq[p] + gq[p + 1]);
            }
        }
        if (y + 1 < H) {
            int m = labels[p + W] - 1;
            if (m != l) {
                u64 key = ((u64)imin(l, m) << 32) | (u64)imax(l, m);
                if (key != vk) {
                    if (vn) ct_insert(hkey, hlen, hgs, logcap, vk, vn, vs, err);
                    vk = key;
                    vn = 0;
                    vs = 0;
                }
                vn += 1;
                vs += (unsigned long long)(gq[p] + gq[p + W]);
            }
        }
    }
    if (rl >= 0) {
        atomicAdd((unsigned long long*)&area[rl], (unsigned long long)ra);
        atomicAdd((unsigned long long*)&rsum[3 * rl], (unsigned long long)r0);
        atomicAdd((unsigned long long*)&rsum[3 * rl + 1], (unsigned long long)r1);
        atomicAdd((unsigned long long*)&rsum[3 * rl + 2], (unsigned long long)r2);
    }
    if (hn) ct_insert(hkey, hlen, hgs, logcap, hk, hn, hs, err);
    if (vn) ct_insert(hkey, hlen, hgs, logcap, vk, vn, vs, err);
}

// the merge cost of regions a and b (see contours.py: _merge_cost_np); float32 bits
__device__ __forceinline__ unsigned int ct_cost_bits(const long long* __restrict__ area,
                                                     const long long* __restrict__ rsum, int a, int b, int len,
                                                     unsigned long long gs, double g2, double b0, double inv_norm,
                                                     double npx, double size_k) {
    double aA = (double)area[a], aB = (double)area[b];
    double dd0 = (double)rsum[3 * a] / aA - (double)rsum[3 * b] / aB;
    double dd1 = (double)rsum[3 * a + 1] / aA - (double)rsum[3 * b + 1] / aB;
    double dd2 = (double)rsum[3 * a + 2] / aA - (double)rsum[3 * b + 2] / aB;
    double d2 = ((dd0 * dd0 + dd1 * dd1) + dd2 * dd2) / 256.0;
    double hm = (aA * aB) / (aA + aB);
    double ln = (double)len;
    double bnd = (double)gs / (ln * g2);
    double t = bnd + b0;
    double t2 = t * t;
    double cost = (((hm * d2) / ln) * t2) * inv_norm;
    // the size guard: merges that would cover much of the image cost more (fraction f^3)
    double f = (aA + aB) / npx;
    double f3 = (f * f) * f;
    cost = cost * (1.0 + size_k * f3);
    return __float_as_uint((float)cost);
}

// Hierarchical merging, one block of 1024 threads, all rounds. Each round: the cost of every
// adjacent pair; every region's cheapest pair (atomicMin of cost bits << 32 | other); the
// pairs that are each other's cheapest and below thr merge (with a target count, only the
// cheapest ones that reach it); the lower region absorbs the higher (area and colour sums);
// the pairs are renamed and aggregated again through the hash table.
// hkey/hlen/hgs: the table (cleared, capacity 2^logcap) holding the initial pairs.
// slc (session 15): a second table of 2^slc slots in shared memory, after the arrays use_smem puts
// there (at byte offset soff); a round with at most 2^(slc-1) pairs renames and aggregates them
// there instead of in the global table (0: never, the kernel before session 15).
// use_smem (where the arrays live): 0 all global; 1 all in shared memory; 2 the regions' (area, rsum,
// best, into); 3 (session 16) best and into only; 4 best only (the others global).
// skip (session 16, pairs in global memory: use_smem != 1): the pairs alternate between two sets of
// arrays (g_ea.. and g_ea2..); a pair whose two regions neither absorbed nor were absorbed in this
// round is copied to the next round's set as it is (no other pair can rename onto it), the others go
// through the table. The pair list's order differs; the labels cannot depend on it.
// CT_PROF (a define): thread 0's clock64 per phase summed into state[4..] (as long long).
// into[r] (out): the region r merged into (r itself for survivors); state[0] = regions left,
// state[1] = rounds, state[2] = error bits (1 the table was full, here or in ct_rag_pixels; 2 more
// pairs than the emax positions: labels whose regions are not one 4-connected piece; the rounds stop).
extern "C" __global__ void __launch_bounds__(1024) ct_merge(
    int R, u64* __restrict__ hkey, int* __restrict__ hlen, unsigned long long* __restrict__ hgs, int logcap,
    int* g_ea, int* g_eb, int* g_el, unsigned long long* g_eg, unsigned int* g_ecost, long long* g_area,
    long long* g_rsum, u64* g_best, int* g_into, int target, float thr, double g2, double b0, double inv_norm,
    double npx, double size_k, int max_rounds, int min_area, int* __restrict__ state, int emax, int use_smem,
    int slc, long long soff, int* g_ea2, int* g_eb2, int* g_el2, unsigned long long* g_eg2, int skip) {
    __shared__ int sE, sNew, sDir, sNd, sCount, sRounds, sDone, sTmp, sK, sErr;
#ifdef CT_PROF
    long long pt0 = clock64(), pt1;
#define CT_PT(i) do { if (threadIdx.x == 0) { pt1 = clock64(); ((long long*)(state + 4))[i] += pt1 - pt0; pt0 = pt1; } } while (0)
#else
#define CT_PT(i) do { } while (0)
#endif
    const int t = threadIdx.x, T = blockDim.x;
    const int cap = 1 << logcap;
    // the regions' and the pairs' arrays live in shared memory when they fit (use_smem 1: the
    // launch gave ct_merge_smem_bytes(R, emax) bytes; 2: the regions' only), else in the global
    // arrays; every round
    // reads and writes them several times, and shared memory answers in tens of cycles
    // instead of an L2 round trip. The hash table stays global.
    extern __shared__ u64 ct_smem[];
    long long* area = g_area;
    long long* rsum = g_rsum;
    u64* best = g_best;
    unsigned long long* eg = g_eg;
    int* into = g_into;
    int* ea = g_ea;
    int* eb = g_eb;
    int* el = g_el;
    unsigned int* ecost = g_ecost;
    if (use_smem == 1) {
        area = (long long*)ct_smem;
        rsum = area + R;
        best = (u64*)(rsum + 3 * R);
        eg = (unsigned long long*)(best + R);
        into = (int*)(eg + emax);
        ea = into + R;
        eb = ea + emax;
        el = eb + emax;
        ecost = (unsigned int*)(el + emax);
    } else if (use_smem == 2) {
        // only the regions' arrays (ct_merge_region_smem_bytes): the pairs are read in order
        // (coalesced), the regions at random (the costs' sums, the atomics on best)
        area = (long long*)ct_smem;
        rsum = area + R;
        best = (u64*)(rsum + 3 * R);
        into = (int*)(best + R);
    } else if (use_smem == 3) {
        // best and into only (12 bytes a region; session 16): the atomics on best and the reads of
        // best and into stay on chip, the colour sums and the pairs in global memory (and L1)
        best = (u64*)ct_smem;
        into = (int*)(best + R);
    } else if (use_smem == 4) {
        best = (u64*)ct_smem;
    }
    if (use_smem == 1) skip = 0;
    // the next round's pair arrays where skip
    int* ya = g_ea2;
    int* yb = g_eb2;
    int* yl = g_el2;
    unsigned long long* yg = g_eg2;
    // the small table (shared memory): keys, gradient sums, lengths; cleared here, and after every
    // round that used it by the read-back (as the global table)
    const int scap = slc > 0 ? (1 << slc) : 0;
    u64* skey = (u64*)((char*)ct_smem + soff);
    unsigned long long* sgs = (unsigned long long*)(skey + scap);
    int* slen = (int*)(sgs + scap);
    for (int s = t; s < scap; s += T) {
        skey[s] = CT_EMPTY;
        sgs[s] = 0ULL;
        slen[s] = 0;
    }
    if (use_smem == 1 || use_smem == 2) {
        for (int r = t; r < R; r += T) {
            area[r] = g_area[r];
            rsum[3 * r] = g_rsum[3 * r];
            rsum[3 * r + 1] = g_rsum[3 * r + 1];
            rsum[3 * r + 2] = g_rsum[3 * r + 2];
        }
    }
    for (int r = t; r < R; r += T) {
        into[r] = r;
        best[r] = CT_EMPTY;
    }
    if (t == 0) {
        sE = 0;
        sNew = 0;
        sDir = 0;
        sCount = R;
        sRounds = 0;
        sDone = 0;
        sErr = state[2];  // the pixel pass's
    }
    __syncthreads();
    // compact the initial table into the edge list, clearing it
    for (int s = t; s < cap; s += T) {
        u64 k = hkey[s];
        if (k != CT_EMPTY) {
            int i = atomicAdd(&sE, 1);
            if (i >= emax) {  // labels beyond the bounds: stop, one clear error
                atomicOr(&sErr, 2);
                hkey[s] = CT_EMPTY;
                hlen[s] = 0;
                hgs[s] = 0ULL;
                continue;
            }
            ea[i] = (int)(k >> 32);
            eb[i] = (int)(k & 0xffffffffULL);
            el[i] = hlen[s];
            eg[i] = hgs[s];
            hkey[s] = CT_EMPTY;
            hlen[s] = 0;
            hgs[s] = 0ULL;
        }
    }
    __syncthreads();
    CT_PT(0);
    while (!sDone) {
        const int E = imin(sE, emax);
        if (sErr || E == 0 || sRounds >= max_rounds || (target > 0 && sCount <= target)) break;
        // this round's renaming table: the small one where the pairs fit it at most half full
        const bool small = scap > 0 && 2 * E <= scap;
        u64* tkey = small ? skey : hkey;
        int* tlen = small ? slen : hlen;
        unsigned long long* tgs = small ? sgs : hgs;
        const int tlc = small ? slc : logcap;
        // 1. costs and every region's cheapest pair
        for (int e = t; e < E; e += T) {
            int a = ea[e], b = eb[e];
            unsigned int bits = ct_cost_bits(area, rsum, a, b, el[e], eg[e], g2, b0, inv_norm, npx, size_k);
            ecost[e] = bits;
            atomicMin((unsigned long long*)&best[a], (unsigned long long)(((u64)bits << 32) | (u64)b));
            atomicMin((unsigned long long*)&best[b], (unsigned long long)(((u64)bits << 32) | (u64)a));
        }
        __syncthreads();
        CT_PT(1);
        // 2. mutual pairs below the threshold (flag: ecost's pair is kept in el's sign)
        int nm = im_flag_mutual(ea, eb, el, ecost, best, thr, E, &sTmp);
        bool cleanup = false;
        if (nm == 0) {
            // clean-up (coarseness mode): every region smaller than min_area joins its cheapest
            // neighbour, all at once (min-root union-find over the regions)
            if (target > 0 || min_area <= 1) break;
            if (im_join_small(ea, eb, best, area, into, (long long)min_area, E, &sTmp) == 0) break;
            int mv = 0;
            for (int r = t; r < R; r += T) {
                if (best[r] == CT_EMPTY) continue;  // merged away earlier
                int root = uf_find(into, r);
                if (root != r) {
                    atomicAdd((unsigned long long*)&area[root], (unsigned long long)area[r]);
                    for (int c = 0; c < 3; ++c)
                        atomicAdd((unsigned long long*)&rsum[3 * root + c], (unsigned long long)rsum[3 * r + c]);
                    into[r] = root;
                    mv += 1;
                }
                best[r] = CT_EMPTY;
            }
            nm = im_block_count(mv, &sTmp);
            cleanup = true;
        }
        if (!cleanup) {
        // 3. a target count: keep only the k cheapest (cost bits, lower region) mutual pairs
        if (target > 0 && sCount - nm < target) {
            const int k = sCount - target;
            im_keep_lowest(ea, el, ecost, k, E, &sTmp);
            if (t == 0) sK = k;
            __syncthreads();
            nm = sK;
        }
        // 4. merge: the lower region absorbs the higher
        for (int e = t; e < E; e += T) {
            if (el[e] < 0) {
                int a = ea[e], b = eb[e];
                into[b] = a;
                area[a] += area[b];
                for (int c = 0; c < 3; ++c) rsum[3 * a + c] += rsum[3 * b + c];
                if (skip) best[a] = CT_MARK;   // a absorbed b (read by the renaming's skip)
            }
        }
        __syncthreads();
        }
        __syncthreads();
        CT_PT(2);
        // 5. rename the pairs and aggregate them again
        if (!skip) {
        for (int e = t; e < E; e += T) {
            int len = el[e];
            if (len < 0) continue;
            int a = ea[e], b = eb[e];
            if (!cleanup) {
                best[a] = CT_EMPTY;
                best[b] = CT_EMPTY;
            }
            a = into[a];
            b = into[b];
            if (a == b) continue;
            int lo = imin(a, b), hi2 = imax(a, b);
            int slot = ct_insert(tkey, tlen, tgs, tlc, ((u64)lo << 32) | (u64)hi2, len, eg[e], &sErr);
            if (slot >= 0) ecost[atomicAdd(&sNew, 1)] = (unsigned int)slot;  // ecost: the new slots
        }
        for (int e = t; e < E; e += T) {
            if (el[e] < 0) {
                best[ea[e]] = CT_EMPTY;
                best[eb[e]] = CT_EMPTY;
            }
        }
        } else {
        // skip: a pair of two regions untouched by this round's merges (into[r] == r and best[r] not
        // CT_MARK: neither absorbed nor absorbing) goes to the next set as it is, at a place counted per
        // warp (the loop is warp-uniform: every lane reaches the ballot); the others through the table.
        // best[] is cleared here except a CT_MARK (read by other pairs of that region), which the
        // read-back clears with the merged pairs' (after the barrier).
        const int lane = t & 31;
        for (int e0 = t - lane; e0 < E; e0 += T) {
            const int e = e0 + lane;
            bool direct = false, hashed = false;
            int a = 0, b = 0, len = 0;
            if (e < E) {
                len = el[e];
                if (len >= 0) {
                    a = ea[e];
                    b = eb[e];
                    bool touched = cleanup;
                    if (!cleanup) {
                        const u64 ba = best[a], bb = best[b];
                        touched = ba == CT_MARK || bb == CT_MARK;
                        if (ba != CT_MARK) best[a] = CT_EMPTY;
                        if (bb != CT_MARK) best[b] = CT_EMPTY;
                    }
                    const int ia = into[a], ib = into[b];
                    touched = touched || ia != a || ib != b;
                    a = ia;
                    b = ib;
                    direct = !touched;
                    hashed = touched && a != b;
                }
            }
            const unsigned m = __ballot_sync(0xffffffffu, direct);
            int at = 0;
            if (lane == 0 && m) at = atomicAdd(&sDir, __popc(m));
            at = __shfl_sync(0xffffffffu, at, 0);
            if (direct) {
                const int i = at + __popc(m & ((1u << lane) - 1u));
                ya[i] = a;
                yb[i] = b;
                yl[i] = len;
                yg[i] = eg[e];
            } else if (hashed) {
                int lo = imin(a, b), hi2 = imax(a, b);
                int slot = ct_insert(tkey, tlen, tgs, tlc, ((u64)lo << 32) | (u64)hi2, len, eg[e], &sErr);
                if (slot >= 0) ecost[atomicAdd(&sNew, 1)] = (unsigned int)slot;
            }
        }
        }
        __syncthreads();
        CT_PT(3);
        if (t == 0) {
            sE = sDir + sNew;
            sNd = sDir;
            sDir = 0;
            sNew = 0;
            sCount -= nm;
            sRounds += 1;
        }
        __syncthreads();
        const int E2 = sE, nd = sNd;
        int* da = skip ? ya : ea;
        int* db = skip ? yb : eb;
        int* dl = skip ? yl : el;
        unsigned long long* dg = skip ? yg : eg;
        for (int i = t; i < E2 - nd; i += T) {
            const int s = (int)ecost[i];
            u64 k = tkey[s];
            da[nd + i] = (int)(k >> 32);
            db[nd + i] = (int)(k & 0xffffffffULL);
            dl[nd + i] = tlen[s];
            dg[nd + i] = tgs[s];
            tkey[s] = CT_EMPTY;
            tlen[s] = 0;
            tgs[s] = 0ULL;
        }
        if (skip) {
            for (int e = t; e < E; e += T) {
                if (el[e] < 0) {
                    best[ea[e]] = CT_EMPTY;
                    best[eb[e]] = CT_EMPTY;
                }
            }
            // the next round reads the set just written
            ya = ea;
            yb = eb;
            yl = el;
            yg = eg;
            ea = da;
            eb = db;
            el = dl;
            eg = dg;
        }
        __syncthreads();
        CT_PT(4);
    }
    __syncthreads();
    if (use_smem >= 1 && use_smem <= 3)
        for (int r = t; r < R; r += T) g_into[r] = into[r];
    if (t == 0) {
        state[0] = sCount;
        state[1] = sRounds;
        state[2] = sErr;
    }
}

// into[] -> a union-find forest (into[r] <= r) that relabel_device numbers: nothing to do
// but follow the chains, which flatten_count does.
