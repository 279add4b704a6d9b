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
