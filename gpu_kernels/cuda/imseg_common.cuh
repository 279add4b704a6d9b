// Shared device helpers of the image segmentation kernels (gpu_kernels/imseg).
//
// CIELAB follows skimage.color.rgb2lab (sRGB, D65, 2 degree observer) in float32.
// The quantisation ranges of L, a and b are the sRGB gamut's (gpu_kernels/imseg/color.py
// holds the same numbers: LAB_LO / LAB_HI).
//
// Written for CUDA and for the host-side emulator of the test suite (tests/cuda_emu), which
// runs warp shuffles and ballots too; explicit types in min/max.
#pragma once

#ifndef IMSEG_EMU
typedef unsigned long long u64;
#else
typedef unsigned long long u64;
#endif

#define IMSEG_L_LO 0.0f
#define IMSEG_L_HI 100.0f
#define IMSEG_A_LO -87.0f
#define IMSEG_A_HI 99.0f
#define IMSEG_B_LO -108.0f
#define IMSEG_B_HI 95.0f

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ long long lmin(long long a, long long b) { return a < b ? a : b; }

// ------------------------------------------------------------------ warp-aggregated flushes
// A thread's last segment (the run of one label that reaches the end of its chunk) is not
// sent to the region's accumulators by the thread itself: the lanes of a warp whose last
// segments carry the same label side by side (a region wider than one chunk) first add their
// sums together (a segmented reduction over the lanes, five shuffles a quantity), and only
// the lowest lane of each such run of lanes issues the atomics. Large regions then take one
// atomic per warp instead of one per thread. Integer sums stay exact, so the result does not
// depend on the order (or the grouping) of the additions.
// ft_seg_end: the last lane of this lane's run of equal keys (every lane of the warp calls it).
__device__ __forceinline__ int ft_seg_end(int key, bool& head) {
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const int prev = __shfl_up_sync(full, key, 1);
    head = lane == 0 || prev != key;
    const unsigned heads = __ballot_sync(full, head ? 1 : 0);
    const unsigned after = lane == 31 ? 0u : (heads & ~((2u << lane) - 1u));
    return after ? __ffs((int)after) - 2 : 31;
}

template <typename V>
__device__ __forceinline__ V ft_seg_sum(V v, int end) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        V o = __shfl_down_sync(0xffffffffu, v, off);
        if (lane + off <= end) v += o;
    }
    return v;
}

__device__ __forceinline__ int ft_seg_min(int v, int end) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        int o = __shfl_down_sync(0xffffffffu, v, off);
        if (lane + off <= end) v = imin(v, o);
    }
    return v;
}

__device__ __forceinline__ int ft_seg_max(int v, int end) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        int o = __shfl_down_sync(0xffffffffu, v, off);
        if (lane + off <= end) v = imax(v, o);
    }
    return v;
}


// ------------------------------------------------------------------ pixels and CIELAB
template <typename T> __device__ __forceinline__ float unit_value(T v);
template <> __device__ __forceinline__ float unit_value<unsigned char>(unsigned char v) { return (float)v / 255.0f; }
template <> __device__ __forceinline__ float unit_value<unsigned short>(unsigned short v) { return (float)v / 65535.0f; }
template <> __device__ __forceinline__ float unit_value<float>(float v) { return v; }

// the raw value as a double (the mean colour is reported in the input's own units)
template <typename T> __device__ __forceinline__ double raw_value(T v) { return (double)v; }

__device__ __forceinline__ float srgb_to_linear(float c) {
    return c > 0.04045f ? powf((c + 0.055f) / 1.055f, 2.4f) : c / 12.92f;
}

__device__ __forceinline__ float lab_f(float t) {
    return t > 0.008856f ? cbrtf(t) : 7.787f * t + 16.0f / 116.0f;
}

// r, g, b in [0, 1] (gamma-encoded sRGB) -> L, a, b
__device__ __forceinline__ void rgb_to_lab(float r, float g, float b, float& L, float& A, float& B) {
    r = srgb_to_linear(r);
    g = srgb_to_linear(g);
    b = srgb_to_linear(b);
    float x = (0.412453f * r + 0.357580f * g + 0.180423f * b) / 0.95047f;
    float y = (0.212671f * r + 0.715160f * g + 0.072169f * b);
    float z = (0.019334f * r + 0.119193f * g + 0.950227f * b) / 1.08883f;
    float fx = lab_f(x), fy = lab_f(y), fz = lab_f(z);
    L = 116.0f * fy - 16.0f;
    A = 500.0f * (fx - fy);
    B = 200.0f * (fy - fz);
}

// grey value in [0, 1] -> L (a = b = 0: a grey image is treated as lightness only)
__device__ __forceinline__ float grey_to_L(float v) {
    return 116.0f * lab_f(srgb_to_linear(v)) - 16.0f;
}

// pixel p of an image with C channels (1, 3 or 4; alpha ignored) -> Lab
template <typename T>
__device__ __forceinline__ void pixel_lab(const T* img, int C, long long p, float& L, float& A, float& B) {
    if (C >= 3) {
        const T* q = img + p * C;
        rgb_to_lab(unit_value<T>(q[0]), unit_value<T>(q[1]), unit_value<T>(q[2]), L, A, B);
    } else {
        L = grey_to_L(unit_value<T>(img[p]));
        A = 0.0f;
        B = 0.0f;
    }
}

// ------------------------------------------------------------------ quantisation
// 2^Q levels per channel over the sRGB gamut's range; code = (qL << 2Q) | (qa << Q) | qb
__device__ __forceinline__ int quant_channel(float v, float lo, float inv_width, int levels) {
    float t = floorf((v - lo) * inv_width);
    int q = (int)fmaxf(fminf(t, (float)(levels - 1)), 0.0f);
    return q;
}

__device__ __forceinline__ int lab_code(float L, float A, float B, int Q) {
    const int levels = 1 << Q;
    const float fl = (float)levels;
    int qL = quant_channel(L, IMSEG_L_LO, fl / (IMSEG_L_HI - IMSEG_L_LO), levels);
    int qa = quant_channel(A, IMSEG_A_LO, fl / (IMSEG_A_HI - IMSEG_A_LO), levels);
    int qb = quant_channel(B, IMSEG_B_LO, fl / (IMSEG_B_HI - IMSEG_B_LO), levels);
    return (qL << (2 * Q)) | (qa << Q) | qb;
}

// centre of a code's bin, in Lab units (double)
__device__ __forceinline__ void code_centre(int code, int Q, double& L, double& A, double& B) {
    const int levels = 1 << Q;
    const int mask = levels - 1;
    const double fl = (double)levels;
    int qL = code >> (2 * Q), qa = (code >> Q) & mask, qb = code & mask;
    L = (double)IMSEG_L_LO + ((double)qL + 0.5) * (((double)IMSEG_L_HI - (double)IMSEG_L_LO) / fl);
    A = (double)IMSEG_A_LO + ((double)qa + 0.5) * (((double)IMSEG_A_HI - (double)IMSEG_A_LO) / fl);
    B = (double)IMSEG_B_LO + ((double)qb + 0.5) * (((double)IMSEG_B_HI - (double)IMSEG_B_LO) / fl);
}

// ------------------------------------------------------------------ union-find (min root)
// parent[x] <= x always; the root of a set is its smallest index. Lock-free union with
// atomicMin (Playne & Hawick): a failed link is retried from the new parent, so a link
// another thread made meanwhile is never lost.
__device__ __forceinline__ int uf_find(const int* parent, int x) {
    int p = parent[x];
    while (p != x) {
        x = p;
        p = parent[x];
    }
    return x;
}

__device__ __forceinline__ int uf_find_compress(int* parent, int x) {
    int root = x;
    int p = parent[root];
    while (p != root) {
        root = p;
        p = parent[root];
    }
    // path halving on the way: only ever lowers a parent to one of its ancestors
    while (x != root) {
        int nx = parent[x];
        if (nx < x && root < nx) parent[x] = root;
        x = nx;
    }
    return root;
}

// A lock-free union of the sets of a and b (atomicMin on the larger root, so roots are the
// sets' smallest indices), finding the roots with ``find`` (a functor: ``find(parent, x)``).
// uf_union finds plainly; the labelling's local step passes a find with path halving.
template <typename Find>
__device__ __forceinline__ void uf_union_by(int* parent, int a, int b, Find find) {
    while (true) {
        a = find(parent, a);
        b = find(parent, b);
        if (a == b) return;
        if (a < b) {
            int old = atomicMin(&parent[b], a);
            if (old == b) return;
            b = old;
        } else {
            int old = atomicMin(&parent[a], b);
            if (old == a) return;
            a = old;
        }
    }
}

struct UfFind {
    __device__ __forceinline__ int operator()(int* parent, int x) const { return uf_find(parent, x); }
};

__device__ __forceinline__ void uf_union(int* parent, int a, int b) { uf_union_by(parent, a, b, UfFind()); }

// ------------------------------------------------------------------ the region graphs' hash table
// the slot a pair key (lower region << 32 | higher) starts probing at (capacity 2^logcap); shared by the
// contour merge's and the learned merge's tables
__device__ __forceinline__ unsigned int im_hash(u64 key, int logcap) {
    return (unsigned int)((key * 0x9E3779B97F4A7C15ULL) >> (64 - logcap));
}

// ------------------------------------------------------------------ the hierarchical merges' round steps
// Shared by the contour merge (imseg_contours.cu) and the learned merge (imseg_learned.cu): one block,
// all rounds. A pair e joins regions ea[e] < eb[e] (ea[e] < 0: a hole of the pair list, skipped); best[r]
// is region r's lowest (score bits << 32 | other region); a pair chosen to merge is flagged by a negative
// length (el[e] = -el[e] - 1).

// block-wide sum of one int per thread
__device__ __forceinline__ int im_block_count(int v, int* sh) {
    __syncthreads();
    if (threadIdx.x == 0) *sh = 0;
    __syncthreads();
    if (v) atomicAdd(sh, v);
    __syncthreads();
    return *sh;
}

// flag the mutual lowest pairs whose score (float bits in score[e]) is below lim; returns how many
// (over the block)
__device__ __forceinline__ int im_flag_mutual(const int* ea, const int* eb, int* el, const unsigned int* score,
                                              const u64* best, float lim, int E, int* sh) {
    int mine = 0;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        int a = ea[e];
        if (a < 0) continue;
        int b = eb[e];
        bool m = (int)(best[a] & 0xffffffffULL) == b && (int)(best[b] & 0xffffffffULL) == a &&
                 __uint_as_float(score[e]) < lim;
        if (m) {
            el[e] = -el[e] - 1;
            mine += 1;
        }
    }
    return im_block_count(mine, sh);
}

// the clean-up's selection: a region smaller than min_area joins its lowest neighbour (min-root
// union-find into `into`); returns how many pairs were joined (over the block)
__device__ __forceinline__ int im_join_small(const int* ea, const int* eb, const u64* best, const long long* area,
                                             int* into, long long min_area, int E, int* sh) {
    int sel = 0;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        int a = ea[e];
        if (a < 0) continue;
        int b = eb[e];
        bool la = (int)(best[a] & 0xffffffffULL) == b && area[a] < min_area;
        bool lb = (int)(best[b] & 0xffffffffULL) == a && area[b] < min_area;
        if (la || lb) {
            uf_union(into, a, b);
            sel += 1;
        }
    }
    return im_block_count(sel, sh);
}

// a target count: of the flagged pairs keep only the k lowest by (score bits << 32 | lower region),
// the others lose their flag (a binary search over the 64-bit keys)
__device__ __forceinline__ void im_keep_lowest(const int* ea, int* el, const unsigned int* score, int k, int E,
                                               int* sh) {
    u64 lo = 0ULL, hi = 0xFFFFFFFFFFFFFFFFULL;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2ULL;
        int c = 0;
        for (int e = threadIdx.x; e < E; e += blockDim.x)
            if (el[e] < 0 && ((((u64)score[e]) << 32) | (u64)ea[e]) <= mid) c += 1;
        int tot = im_block_count(c, sh);
        if (tot >= k) hi = mid;
        else lo = mid + 1ULL;
    }
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        if (el[e] < 0 && ((((u64)score[e]) << 32) | (u64)ea[e]) > lo) el[e] = -el[e] - 1;
}
