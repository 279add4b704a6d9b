// Stage 2 of the image segmentation: connected components of pixels with equal values.
//
// Union-find (the paper's Algorithm 4): seams between column blocks and then row blocks are
// merged with doubling strides. Level i (1, 2, 4, ...) merges the seams x = i-1 (mod 2i),
// i.e. blocks of i columns into blocks of 2i. A local step runs the levels inside a 32 x 32
// tile in shared memory; a global step runs one launch per remaining level and direction.
// Unions are lock-free (atomicMin on the larger root), so the roots are the components'
// smallest pixel indices, and numbering the roots in raster order gives scipy.ndimage.label's
// numbering.
//
// Label equivalence (Kalentev et al. 2011) is the comparison: every pixel repeatedly lowers
// the label of its label to the smallest label among its equal neighbours, then follows its
// label chain to the root, until nothing changes (one host check per iteration).
//
// The relabelling (flatten_count, scan_blocks, write_root_labels, finalize_labels) numbers the
// roots 1..R in raster order with no host round-trip; R stays on the device.
//
// Value types: u8 (binary masks, cluster ids < 256) and i32. A pixel equal to bg (when has_bg)
// is background: label 0, never merged. Edges: horizontal and vertical; with conn8 also the
// two diagonals.
#include "imseg_common.cuh"

#define UF_T 32          // tile side of the local step
#define UF_BY 8          // threads per column of a tile (each handles UF_T / UF_BY rows)
#define RL_THREADS 256
#define RL_ITEMS 16      // pixels per thread in the relabelling kernels

template <typename T>
__device__ __forceinline__ bool is_fg(T v, int has_bg, int bg) {
    return !(has_bg && (int)v == bg);
}

// ------------------------------------------------------------------ local step
// The local step's unions find with path halving: in a tile of one colour, unions that never
// shorten their paths build chains hundreds of links long (every union walks them twice).
// Halving only ever points a non-root at one of its ancestors, so no link of the forest is
// lost and the roots (the components' smallest indices) are those of plain finds.
__device__ __forceinline__ int uf_find_halve(int* parent, int x) {
    int p = parent[x];
    while (p != x) {
        const int gp = parent[p];
        if (gp < p) parent[x] = gp;  // x skips to its grandparent
        x = gp < p ? gp : p;
        p = parent[x];
    }
    return x;
}

struct UfFindHalve {
    __device__ __forceinline__ int operator()(int* parent, int x) const { return uf_find_halve(parent, x); }
};

__device__ __forceinline__ void uf_union_halve(int* parent, int a, int b) {
    uf_union_by(parent, a, b, UfFindHalve());
}

template <typename T>
__device__ __forceinline__ void uf_local_impl(const T* __restrict__ img, int* __restrict__ parent, int W, int H,
                                              int conn8, int has_bg, int bg) {
    __shared__ int sp[UF_T * UF_T];
    __shared__ int sv[UF_T * UF_T];
    __shared__ unsigned char sf[UF_T * UF_T];
    const int lx = threadIdx.x;
    const int x0 = blockIdx.x * UF_T, y0 = blockIdx.y * UF_T;
    const int gx = x0 + lx;
    for (int r = 0; r < UF_T / UF_BY; ++r) {
        int ly = threadIdx.y + r * UF_BY;
        int gy = y0 + ly;
        int l = ly * UF_T + lx;
        bool inside = gx < W && gy < H;
        int v = inside ? (int)img[(long long)gy * W + gx] : 0;
        sv[l] = v;
        sf[l] = (inside && is_fg<T>((T)v, has_bg, bg)) ? 1 : 0;
        sp[l] = l;
    }
    __syncthreads();
    for (int i = 1; i < UF_T; i <<= 1) {
        // column seams: lx = i - 1 (mod 2i) merges with lx + 1
        if ((lx & (2 * i - 1)) == i - 1) {
            for (int r = 0; r < UF_T / UF_BY; ++r) {
                int ly = threadIdx.y + r * UF_BY;
                int l = ly * UF_T + lx;
                if (!sf[l]) continue;
                int v = sv[l];
                int q = l + 1;
                if (sf[q] && sv[q] == v) uf_union_halve(sp, l, q);
                if (conn8) {
                    if (ly > 0) {
                        q = l - UF_T + 1;
                        if (sf[q] && sv[q] == v) uf_union_halve(sp, l, q);
                    }
                    if (ly < UF_T - 1) {
                        q = l + UF_T + 1;
                        if (sf[q] && sv[q] == v) uf_union_halve(sp, l, q);
                    }
                }
            }
        }
        __syncthreads();
        // row seams: ly = i - 1 (mod 2i) merges with ly + 1
        for (int r = 0; r < UF_T / UF_BY; ++r) {
            int ly = threadIdx.y + r * UF_BY;
            if ((ly & (2 * i - 1)) != i - 1) continue;
            int l = ly * UF_T + lx;
            if (!sf[l]) continue;
            int q = l + UF_T;
            if (sf[q] && sv[q] == sv[l]) uf_union_halve(sp, l, q);
        }
        __syncthreads();
    }
    for (int r = 0; r < UF_T / UF_BY; ++r) {
        int ly = threadIdx.y + r * UF_BY;
        int gy = y0 + ly;
        if (gx >= W || gy >= H) continue;
        int l = ly * UF_T + lx;
        int out = -1;
        if (sf[l]) {
            // all unions are done: compressing the paths is safe and shortens the next finds
            int root = uf_find_compress(sp, l);
            int ry = root / UF_T, rx = root - ry * UF_T;
            out = (y0 + ry) * W + (x0 + rx);
        }
        parent[(long long)gy * W + gx] = out;
    }
}

// ------------------------------------------------------------------ global step
// Column seams x = first + s * step (s < nseams): horizontal edges and, with conn8, both
// diagonals that cross the seam.
template <typename T>
__device__ __forceinline__ void uf_cols_impl(const T* __restrict__ img, int* __restrict__ parent, int W, int H,
                                             int first, int step, int nseams, int conn8, int has_bg, int bg) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)nseams * H) return;
    int y = (int)(idx / nseams);
    int s = (int)(idx - (long long)y * nseams);
    int x = first + s * step;
    if (x + 1 >= W) return;
    int p = y * W + x;
    T v = img[p];
    if (!is_fg<T>(v, has_bg, bg)) return;
    int q = p + 1;
    if (img[q] == v) uf_union(parent, p, q);
    if (conn8) {
        if (y > 0) {
            q = p - W + 1;
            if (img[q] == v) uf_union(parent, p, q);
        }
        if (y < H - 1) {
            q = p + W + 1;
            if (img[q] == v) uf_union(parent, p, q);
        }
    }
}

// Row seams y = first + s * step: vertical edges and, with conn8, both diagonals across it.
template <typename T>
__device__ __forceinline__ void uf_rows_impl(const T* __restrict__ img, int* __restrict__ parent, int W, int H,
                                             int first, int step, int nseams, int conn8, int has_bg, int bg) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)nseams * W) return;
    int s = (int)(idx / W);
    int x = (int)(idx - (long long)s * W);
    int y = first + s * step;
    if (y + 1 >= H) return;
    int p = y * W + x;
    T v = img[p];
    if (!is_fg<T>(v, has_bg, bg)) return;
    int q = p + W;
    if (img[q] == v) uf_union(parent, p, q);
    if (conn8) {
        if (x > 0) {
            q = p + W - 1;
            if (img[q] == v) uf_union(parent, p, q);
        }
        if (x < W - 1) {
            q = p + W + 1;
            if (img[q] == v) uf_union(parent, p, q);
        }
    }
}

// ------------------------------------------------------------------ label equivalence
template <typename T>
__device__ __forceinline__ void le_init_impl(const T* __restrict__ img, int* __restrict__ label, long long n,
                                             int has_bg, int bg) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    label[p] = is_fg<T>(img[p], has_bg, bg) ? (int)p : -1;
}

template <typename T>
__device__ __forceinline__ void le_scan_impl(const T* __restrict__ img, int* __restrict__ label, int W, int H,
                                             int conn8, int has_bg, int bg, int* __restrict__ changed) {
    long long pp = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pp >= (long long)W * H) return;
    int p = (int)pp;
    T v = img[p];
    if (!is_fg<T>(v, has_bg, bg)) return;
    int y = p / W, x = p - y * W;
    int l = label[p];
    int m = l;
    for (int dy = -1; dy <= 1; ++dy) {
        int yy = y + dy;
        if (yy < 0 || yy >= H) continue;
        for (int dx = -1; dx <= 1; ++dx) {
            if (dx == 0 && dy == 0) continue;
            if (!conn8 && dx != 0 && dy != 0) continue;
            int xx = x + dx;
            if (xx < 0 || xx >= W) continue;
            int q = yy * W + xx;
            if (img[q] != v) continue;
            int lq = label[q];
            if (lq < m) m = lq;
        }
    }
    if (m < l) {
        atomicMin(&label[l], m);
        *changed = 1;
    }
}

extern "C" __global__ void le_analysis(int* __restrict__ label, long long n) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    int l = label[p];
    if (l < 0) return;
    int r = l;
    int nx = label[r];
    while (nx != r) {
        r = nx;
        nx = label[r];
    }
    if (r != l) label[p] = r;
}

#define DEF_LABEL_KERNELS(suf, T)                                                                        \
    extern "C" __global__ void uf_local_##suf(const T* __restrict__ img, int* __restrict__ parent, int W,    \
                                              int H, int conn8, int has_bg, int bg) {                        \
        uf_local_impl<T>(img, parent, W, H, conn8, has_bg, bg);                                              \
    }                                                                                                        \
    extern "C" __global__ void uf_cols_##suf(const T* __restrict__ img, int* __restrict__ parent, int W,     \
                                             int H, int first, int step, int nseams, int conn8, int has_bg,  \
                                             int bg) {                                                       \
        uf_cols_impl<T>(img, parent, W, H, first, step, nseams, conn8, has_bg, bg);                          \
    }                                                                                                        \
    extern "C" __global__ void uf_rows_##suf(const T* __restrict__ img, int* __restrict__ parent, int W,     \
                                             int H, int first, int step, int nseams, int conn8, int has_bg,  \
                                             int bg) {                                                       \
        uf_rows_impl<T>(img, parent, W, H, first, step, nseams, conn8, has_bg, bg);                          \
    }                                                                                                        \
    extern "C" __global__ void le_init_##suf(const T* __restrict__ img, int* __restrict__ label, long long n, \
                                             int has_bg, int bg) {                                           \
        le_init_impl<T>(img, label, n, has_bg, bg);                                                          \
    }                                                                                                        \
    extern "C" __global__ void le_scan_##suf(const T* __restrict__ img, int* __restrict__ label, int W,      \
                                             int H, int conn8, int has_bg, int bg, int* __restrict__ changed) { \
        le_scan_impl<T>(img, label, W, H, conn8, has_bg, bg, changed);                                       \
    }

DEF_LABEL_KERNELS(u8, unsigned char)
DEF_LABEL_KERNELS(i32, int)

// ------------------------------------------------------------------ relabelling
// parent: a union-find forest (parent[p] <= p, -1 = background). Items of a block:
// [b * RL_THREADS * RL_ITEMS, ...), thread t owns RL_ITEMS consecutive ones (raster order).
// nptr (optional): the number of valid items, read on the device.
__device__ __forceinline__ long long valid_items(long long n, const int* nptr) {
    return nptr != 0 ? (long long)(*nptr) : n;
}

// parent[p] = root(p); blockcount[b] = number of roots in block b
extern "C" __global__ void flatten_count(int* __restrict__ parent, long long n, const int* __restrict__ nptr,
                                         int* __restrict__ blockcount) {
    __shared__ int bc;
    if (threadIdx.x == 0) bc = 0;
    __syncthreads();
    const long long nn = valid_items(n, nptr);
    const long long base = (long long)blockIdx.x * (RL_THREADS * RL_ITEMS) + (long long)threadIdx.x * RL_ITEMS;
    int local = 0;
    for (int j = 0; j < RL_ITEMS; ++j) {
        long long p = base + j;
        if (p >= nn) break;
        int v = parent[p];
        if (v < 0) continue;
        if (v == (int)p) {
            local += 1;
            continue;
        }
        int r = uf_find(parent, v);
        if (r != v) parent[p] = r;
    }
    if (local) atomicAdd(&bc, local);
    __syncthreads();
    if (threadIdx.x == 0) blockcount[blockIdx.x] = bc;
}

// exclusive scan of nb block counts (one block of 1024 threads); *total = sum
extern "C" __global__ void scan_blocks(const int* __restrict__ blockcount, int nb, int* __restrict__ offsets,
                                       int* __restrict__ total) {
    __shared__ int buf[1024];
    __shared__ int carry;
    const int t = threadIdx.x;
    if (t == 0) carry = 0;
    __syncthreads();
    for (int base = 0; base < nb; base += 1024) {
        int i = base + t;
        int v = i < nb ? blockcount[i] : 0;
        buf[t] = v;
        __syncthreads();
        for (int off = 1; off < 1024; off <<= 1) {
            int add = t >= off ? buf[t - off] : 0;
            __syncthreads();
            buf[t] += add;
            __syncthreads();
        }
        if (i < nb) offsets[i] = carry + buf[t] - v;
        __syncthreads();
        if (t == 1023) carry += buf[1023];
        __syncthreads();
    }
    if (t == 0) *total = carry;
}

// labels[root] = 1 + rank of the root in raster order
extern "C" __global__ void write_root_labels(const int* __restrict__ parent, long long n, const int* __restrict__ nptr,
                                             const int* __restrict__ offsets, int* __restrict__ labels) {
    __shared__ int buf[RL_THREADS];
    const int t = threadIdx.x;
    const long long nn = valid_items(n, nptr);
    const long long base = (long long)blockIdx.x * (RL_THREADS * RL_ITEMS) + (long long)t * RL_ITEMS;
    int cnt = 0;
    for (int j = 0; j < RL_ITEMS; ++j) {
        long long p = base + j;
        if (p >= nn) break;
        if (parent[p] == (int)p) cnt += 1;
    }
    buf[t] = cnt;
    __syncthreads();
    for (int off = 1; off < RL_THREADS; off <<= 1) {
        int add = t >= off ? buf[t - off] : 0;
        __syncthreads();
        buf[t] += add;
        __syncthreads();
    }
    int rank = offsets[blockIdx.x] + buf[t] - cnt;
    for (int j = 0; j < RL_ITEMS; ++j) {
        long long p = base + j;
        if (p >= nn) break;
        if (parent[p] == (int)p) labels[p] = ++rank;
    }
}

// labels[p] = labels[root(p)] (parent flattened), 0 for background
extern "C" __global__ void finalize_labels(const int* __restrict__ parent, long long n, const int* __restrict__ nptr,
                                           int* __restrict__ labels) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= valid_items(n, nptr)) return;
    int r = parent[p];
    if (r == (int)p) return;
    labels[p] = r < 0 ? 0 : labels[r];
}

// labels[p] = newid[labels[p] - 1] (region renumbering after merges); 0 stays 0
extern "C" __global__ void relabel_pixels(int* __restrict__ labels, long long n, const int* __restrict__ newid) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    int l = labels[p];
    if (l > 0) labels[p] = newid[l - 1];
}

// identity forest over the first *nptr items (cap items allocated)
extern "C" __global__ void iota_forest(int* __restrict__ parent, long long cap, const int* __restrict__ nptr) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= cap) return;
    parent[p] = p < valid_items(cap, nptr) ? (int)p : -1;
}
