// Minimum region size: every region smaller than min_size merges into its most similar
// neighbour (the nearest mean CIELAB colour; ties: the lower label), all of them at once,
// and the rounds repeat until no region is smaller (gpu_kernels/imseg/merge.py).
//
// Region r (label r + 1) has area[r] pixels and Lab sum lab_sum[3 r .. 3 r + 2]. The choice is
// packed as (float bits of the squared distance << 32) | neighbour index and settled with
// atomicMin, so it does not depend on the order of the threads.
#include "imseg_common.cuh"

// lab_sum: fixed-point sums (imseg_features.cu, FT_LAB_SCALE = 2^14 per CIELAB unit), exact
__device__ __forceinline__ double lab_total(const long long* __restrict__ lab_sum, long long i) {
    return (double)lab_sum[i] * (1.0 / 16384.0);
}

__device__ __forceinline__ unsigned int dist_bits(const int* __restrict__ area, const long long* __restrict__ lab_sum,
                                                  int a, int b) {
    double wa = 1.0 / (double)area[a], wb = 1.0 / (double)area[b];
    double dL = lab_total(lab_sum, 3 * a) * wa - lab_total(lab_sum, 3 * b) * wb;
    double dA = lab_total(lab_sum, 3 * a + 1) * wa - lab_total(lab_sum, 3 * b + 1) * wb;
    double dB = lab_total(lab_sum, 3 * a + 2) * wa - lab_total(lab_sum, 3 * b + 2) * wb;
    float d = (float)(dL * dL + dA * dA + dB * dB);
    return __float_as_uint(d);
}

__device__ __forceinline__ void offer(const int* __restrict__ area, const long long* __restrict__ lab_sum, int S,
                                      u64* __restrict__ best, int a, int b) {
    bool sa = area[a] < S, sb = area[b] < S;
    if (!sa && !sb) return;
    u64 key = (u64)dist_bits(area, lab_sum, a, b) << 32;
    if (sa) atomicMin(&best[a], key | (u64)(unsigned int)b);
    if (sb) atomicMin(&best[b], key | (u64)(unsigned int)a);
}

// how many of the first *nptr regions are smaller than S
extern "C" __global__ void count_small(const int* __restrict__ area, const int* __restrict__ nptr, int S,
                                       int* __restrict__ out) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= *nptr) return;
    if (area[r] < S) atomicAdd(out, 1);
}

// every pair of adjacent pixels of different regions offers each region to the other
extern "C" __global__ void merge_choose(const int* __restrict__ labels, int W, int H, int conn8,
                                        const int* __restrict__ area, const long long* __restrict__ lab_sum, int S,
                                        u64* __restrict__ best) {
    long long pp = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pp >= (long long)W * H) return;
    const int p = (int)pp;
    const int y = p / W, x = p - y * W;
    const int l = labels[p];
    if (l <= 0) return;
    if (x + 1 < W) {
        int m = labels[p + 1];
        if (m > 0 && m != l) offer(area, lab_sum, S, best, l - 1, m - 1);
    }
    if (y + 1 < H) {
        int m = labels[p + W];
        if (m > 0 && m != l) offer(area, lab_sum, S, best, l - 1, m - 1);
        if (conn8) {
            if (x + 1 < W) {
                m = labels[p + W + 1];
                if (m > 0 && m != l) offer(area, lab_sum, S, best, l - 1, m - 1);
            }
            if (x > 0) {
                m = labels[p + W - 1];
                if (m > 0 && m != l) offer(area, lab_sum, S, best, l - 1, m - 1);
            }
        }
    }
}

// union every small region with its choice (region-level union-find, min root)
extern "C" __global__ void merge_link(const u64* __restrict__ best, const int* __restrict__ area,
                                      const int* __restrict__ nptr, int S, int* __restrict__ rparent) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= *nptr) return;
    if (area[r] >= S) return;
    u64 b = best[r];
    if (b == ~0ULL) return;
    uf_union(rparent, r, (int)(b & 0xffffffffULL));
}

// ------------------------------------------------------------------ the rounds on the device
// (merge.py, merge_device): the same rounds over the regions of the labelling, with no host
// read per round. A merged region is named by its smallest original region index, which keeps
// the order of the old renumbering (raster order of first pixels), so choices and ties are the
// same. Sums live at the roots and are added exactly (integers) when regions join, instead of
// recounting the pixels. st[]: MS_DONE (1: finished, 2: over the round limit), MS_ROUNDS, and
// MS_ROOTS / MS_SMALL (regions left and how many are small, counted after each round). Every kernel
// returns at once when st[MS_DONE] is set, so the host may queue more rounds than are needed.
#define MS_DONE 0
#define MS_ROUNDS 1
#define MS_ROOTS 2
#define MS_SMALL 3

// identity forest, no choices, and the counts of the starting regions
// R0p (optional): the number of regions on the device (R0 is then only the arrays' size: the
// host never read the count); md_round and md_renumber take it the same way
__device__ __forceinline__ int md_regions(int R0, const int* R0p) { return R0p != 0 ? *R0p : R0; }

extern "C" __global__ void md_init(int* __restrict__ root, int* __restrict__ rparent, u64* __restrict__ best,
                                   const int* __restrict__ area, int R0, int S, int* __restrict__ st,
                                   const int* __restrict__ R0p) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= md_regions(R0, R0p)) return;
    root[r] = r;
    rparent[r] = r;
    best[r] = ~0ULL;
    atomicAdd(&st[MS_ROOTS], 1);
    if (area[r] < S) atomicAdd(&st[MS_SMALL], 1);
}

// after the counts: stop when no region is small or one is left; flag a round limit overrun
extern "C" __global__ void md_check(int* __restrict__ st, int max_rounds) {
    if (threadIdx.x != 0 || blockIdx.x != 0 || st[MS_DONE]) return;
    if (st[MS_SMALL] == 0 || st[MS_ROOTS] <= 1) {
        st[MS_DONE] = 1;
    } else if (st[MS_ROUNDS] >= max_rounds) {
        st[MS_DONE] = 2;  // not finished within the limit: the host raises
    }
    if (!st[MS_DONE]) {
        st[MS_ROOTS] = 0;
        st[MS_SMALL] = 0;
    }
}

// merge_choose on the roots of the pixels' original regions
extern "C" __global__ void md_choose(const int* __restrict__ labels, int W, int H, int conn8,
                                     const int* __restrict__ root, const int* __restrict__ area,
                                     const long long* __restrict__ lab_sum, int S, u64* __restrict__ best,
                                     const int* __restrict__ st) {
    if (st[MS_DONE]) return;
    long long pp = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pp >= (long long)W * H) return;
    const int p = (int)pp;
    const int y = p / W, x = p - y * W;
    int l = labels[p];
    if (l <= 0) return;
    l = root[l - 1];
    const bool sl = area[l] < S;
    // only pairs with a small side offer anything; a pixel of a large region still looks at
    // its neighbours (they may be small)
    if (x + 1 < W) {
        int m = labels[p + 1];
        if (m > 0 && (m = root[m - 1]) != l && (sl || area[m] < S)) offer(area, lab_sum, S, best, l, m);
    }
    if (y + 1 < H) {
        int m = labels[p + W];
        if (m > 0 && (m = root[m - 1]) != l && (sl || area[m] < S)) offer(area, lab_sum, S, best, l, m);
        if (conn8) {
            if (x + 1 < W) {
                m = labels[p + W + 1];
                if (m > 0 && (m = root[m - 1]) != l && (sl || area[m] < S)) offer(area, lab_sum, S, best, l, m);
            }
            if (x > 0) {
                m = labels[p + W - 1];
                if (m > 0 && (m = root[m - 1]) != l && (sl || area[m] < S)) offer(area, lab_sum, S, best, l, m);
            }
        }
    }
}

// The three region steps of a round, for region r: shared by the grid kernels (md_link,
// md_settle, md_compress) and the one-block round (md_round).
// link: every small root joins its choice
__device__ __forceinline__ void md_link_one(const u64* __restrict__ best, const int* __restrict__ area,
                                            const int* __restrict__ root, int S, int* __restrict__ rparent, int r) {
    if (root[r] != r || area[r] >= S) return;
    u64 b = best[r];
    if (b != ~0ULL) uf_union(rparent, r, (int)(b & 0xffffffffULL));
}

// settle: a root that joined another adds its (exact, integer) sums to the new root
__device__ __forceinline__ void md_settle_one(const int* __restrict__ root, const int* __restrict__ rparent,
                                              int* __restrict__ area, long long* __restrict__ lab_sum, int r) {
    if (root[r] != r) return;
    int nr = uf_find(rparent, r);
    if (nr == r) return;
    atomicAdd(&area[nr], area[r]);
    for (int ch = 0; ch < 3; ++ch)
        atomicAdd((unsigned long long*)&lab_sum[3 * nr + ch], (unsigned long long)lab_sum[3 * r + ch]);
}

// compress: every region points at its new root; the next round's choices start empty.
// Returns 0 (r is no root), 1 (a root, not small) or 2 (a small root), for the counts.
__device__ __forceinline__ int md_compress_one(int* __restrict__ root, int* __restrict__ rparent,
                                               const int* __restrict__ area, int S, u64* __restrict__ best, int r) {
    int nr = uf_find(rparent, root[r]);
    root[r] = nr;
    rparent[r] = nr;  // an ancestor: safe while other threads walk the forest
    best[r] = ~0ULL;
    if (nr != r) return 0;
    return area[r] < S ? 2 : 1;
}

extern "C" __global__ void md_link(const u64* __restrict__ best, const int* __restrict__ area,
                                   const int* __restrict__ root, int R0, int S, int* __restrict__ rparent,
                                   const int* __restrict__ st, const int* __restrict__ R0p) {
    if (st[MS_DONE]) return;
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < md_regions(R0, R0p)) md_link_one(best, area, root, S, rparent, r);
}

extern "C" __global__ void md_settle(const int* __restrict__ root, const int* __restrict__ rparent, int R0,
                                    int* __restrict__ area, long long* __restrict__ lab_sum,
                                    const int* __restrict__ st, const int* __restrict__ R0p) {
    if (st[MS_DONE]) return;
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < md_regions(R0, R0p)) md_settle_one(root, rparent, area, lab_sum, r);
}

// compress, and count the roots and the small ones
extern "C" __global__ void md_compress(int* __restrict__ root, int* __restrict__ rparent, int R0,
                                       const int* __restrict__ area, int S, u64* __restrict__ best,
                                       int* __restrict__ st, const int* __restrict__ R0p) {
    if (st[MS_DONE]) return;
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r == 0) st[MS_ROUNDS] += 1;  // md_check runs after this kernel, reads it then
    if (r >= md_regions(R0, R0p)) return;
    const int kind = md_compress_one(root, rparent, area, S, best, r);
    if (kind) {
        atomicAdd(&st[MS_ROOTS], 1);
        if (kind == 2) atomicAdd(&st[MS_SMALL], 1);
    }
}

// md_link, md_settle, md_compress and md_check as one block of 1024 threads (regions that fit
// a few passes of one block: no launch between the steps; the same operations and results)
extern "C" __global__ void __launch_bounds__(1024) md_round(int* __restrict__ root, int* __restrict__ rparent,
                                                            u64* __restrict__ best, int* __restrict__ area,
                                                            long long* __restrict__ lab_sum, int R0, int S,
                                                            int max_rounds, int* __restrict__ st,
                                                            const int* __restrict__ R0p) {
    __shared__ int s_roots, s_small;
    if (st[MS_DONE]) return;
    R0 = md_regions(R0, R0p);
    const int t = threadIdx.x, T = blockDim.x;
    if (t == 0) {
        s_roots = 0;
        s_small = 0;
    }
    for (int r = t; r < R0; r += T) md_link_one(best, area, root, S, rparent, r);
    __syncthreads();
    for (int r = t; r < R0; r += T) md_settle_one(root, rparent, area, lab_sum, r);
    __syncthreads();
    int roots = 0, small = 0;
    for (int r = t; r < R0; r += T) {  // compress and count
        const int kind = md_compress_one(root, rparent, area, S, best, r);
        roots += kind != 0;
        small += kind == 2;
    }
    if (roots) atomicAdd(&s_roots, roots);
    if (small) atomicAdd(&s_small, small);
    __syncthreads();
    if (t == 0) {  // check
        const int rounds = st[MS_ROUNDS] + 1;
        st[MS_ROUNDS] = rounds;
        st[MS_ROOTS] = s_roots;
        st[MS_SMALL] = s_small;
        if (s_small == 0 || s_roots <= 1) st[MS_DONE] = 1;
        else if (rounds >= max_rounds) st[MS_DONE] = 2;
    }
}

// newid[r] = the rank (1..) of r's root among the roots in index order: one block, a running
// block-wide scan over chunks of 1024 regions; then every region takes its root's number
// gate (optional): the merge's st[]; unless its rounds are done (st[MS_DONE] == 1) every region
// keeps its number (newid[r] = r + 1: the pixels' relabelling changes nothing), so a CUDA graph
// may queue the renumbering behind rounds that might not have finished
extern "C" __global__ void __launch_bounds__(1024) md_renumber(const int* __restrict__ root, int R0,
                                                               int* __restrict__ newid, const int* __restrict__ R0p,
                                                               const int* __restrict__ gate) {
    __shared__ int warp_sum[32];
    __shared__ int s_base;
    R0 = md_regions(R0, R0p);
    if (gate != 0 && gate[MS_DONE] != 1) {
        for (int r = threadIdx.x; r < R0; r += 1024) newid[r] = r + 1;
        return;
    }
    const int t = threadIdx.x, lane = t & 31, wid = t >> 5;
    if (t == 0) s_base = 0;
    __syncthreads();
    for (int base = 0; base < R0; base += 1024) {
        const int r = base + t;
        const int f = (r < R0 && root[r] == r) ? 1 : 0;
        int x = f;  // inclusive scan within the warp
        for (int off = 1; off < 32; off <<= 1) {
            int y = __shfl_up_sync(0xffffffffu, x, off);
            if (lane >= off) x += y;
        }
        if (lane == 31) warp_sum[wid] = x;
        __syncthreads();
        if (wid == 0) {
            int v = warp_sum[lane];
            for (int off = 1; off < 32; off <<= 1) {
                int y = __shfl_up_sync(0xffffffffu, v, off);
                if (lane >= off) v += y;
            }
            warp_sum[lane] = v;  // inclusive prefix of the warps' sums
        }
        __syncthreads();
        const int before = s_base + (wid > 0 ? warp_sum[wid - 1] : 0);
        if (f) newid[r] = before + x;
        __syncthreads();
        if (t == 0) s_base += warp_sum[31];
        __syncthreads();
    }
    for (int r = t; r < R0; r += 1024)
        if (root[r] != r) newid[r] = newid[root[r]];
}
