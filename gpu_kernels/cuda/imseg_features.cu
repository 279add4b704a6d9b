// Stage 3 of the image segmentation: region features as segmented reductions.
//
// The pixels are walked in a sequence: raster order (the "runs" method and the merge's sums:
// feat_pass1_smem_*, feat_moments_digits, `chunk` pixels a thread, a run's sums through a
// block-private table in shared memory), or sorted by label (order = the permutation, the
// paper's sort-then-segmented-scan: feat_pass1_*, feat_moments_exact, FT_CHUNK items a thread,
// straight to the global accumulators). A run of equal labels inside a thread's items is one
// segment, reduced in registers. Labels are 1..R (0 = no region, skipped); region r's
// accumulators sit at index r - 1.
//
// Pass 1: area, bbox (min_row, min_col, max_row + 1, max_col + 1), the sums of row and column
// (exact integers, for the centroid), the sums of the raw values per channel and of L, a, b.
// Pass 2: the central moments mu[i][j] = sum dr^i dc^j, i, j = 0..3, about the centroid of
// pass 1 (mu[0][0] is the area and is not accumulated), as exact integer sums.
#include "imseg_common.cuh"

#ifndef FT_CHUNK
#define FT_CHUNK 16
#endif

// CIELAB sums in fixed point: every pixel adds rint(v * FT_LAB_SCALE) as a 64-bit integer,
// so the sums are exact and do not depend on the order of the atomics (float atomics did),
// and the CPU path (merge.py) adds the same integers. |v| <= 128: 2^21 a pixel, under 2^52
// for 2^31 pixels, so the sums are exact in a double too.
#define FT_LAB_SCALE 16384.0
__device__ __forceinline__ long long ft_lab_fixed(float v) { return llrint((double)v * FT_LAB_SCALE); }

#define FT_BBOX 1
#define FT_RAW 2
#define FT_LAB 4


template <typename T>
__device__ __forceinline__ void feat_pass1_flush(int j, int flags, int nc, int cnt, int minr, int minc, int maxr,
                                                 int maxc, u64 sr, u64 sc, double v0, double v1, double v2,
                                                 long long l0, long long l1, long long l2, int* __restrict__ area,
                                                 int* __restrict__ bbox, u64* __restrict__ sum_rc,
                                                 double* __restrict__ raw_sum, long long* __restrict__ lab_sum) {
    atomicAdd(&area[j], cnt);
    if (flags & FT_BBOX) {
        atomicMin(&bbox[4 * j], minr);
        atomicMin(&bbox[4 * j + 1], minc);
        atomicMax(&bbox[4 * j + 2], maxr + 1);
        atomicMax(&bbox[4 * j + 3], maxc + 1);
        atomicAdd(&sum_rc[2 * j], sr);
        atomicAdd(&sum_rc[2 * j + 1], sc);
    }
    if (flags & FT_RAW) {
        atomicAdd(&raw_sum[nc * j], v0);
        if (nc == 3) {
            atomicAdd(&raw_sum[nc * j + 1], v1);
            atomicAdd(&raw_sum[nc * j + 2], v2);
        }
    }
    if (flags & FT_LAB) {
        atomicAdd((unsigned long long*)&lab_sum[3 * j], (unsigned long long)l0);
        atomicAdd((unsigned long long*)&lab_sum[3 * j + 1], (unsigned long long)l1);
        atomicAdd((unsigned long long*)&lab_sum[3 * j + 2], (unsigned long long)l2);
    }
}

// Pass 1's walk over one thread's items [i0, i1) (RASTER: raster order, the row and column
// stepped; else the permutation `order`, the row and column divided out):
// the sums of each run of one label, handed to sink(rl, cnt, minr, minc, maxr, maxc, sr, sc, v0,
// v1, v2, l0, l1, l2) when the label changes; the last run is first summed over the warp's lanes
// that end in the same region, and its lowest lane hands it on. (No early return: every lane
// takes part in the reduction.)
template <bool RASTER, typename T, typename Sink>
__device__ __forceinline__ void ft_pass1_walk(const int* __restrict__ labels, long long i0, long long i1, int W,
                                              const int* __restrict__ order, const T* __restrict__ img, int C,
                                              const float* __restrict__ lab, int flags, Sink& sink) {
    const int nc = C >= 3 ? 3 : 1;
    int rl = -1;
    int cnt = 0, minr = 0, minc = 0, maxr = 0, maxc = 0;
    u64 sr = 0, sc = 0;
    double v0 = 0, v1 = 0, v2 = 0;
    long long l0 = 0, l1 = 0, l2 = 0;
    int sy = 0, sx = 0;
    if (RASTER) {
        sy = (int)(i0 / W);
        sx = (int)(i0 - (long long)sy * W) - 1;
    }
    for (long long i = i0; i < i1; ++i) {
        const long long p = RASTER ? i : (long long)order[i];
        int y, x;
        if (RASTER) {
            if (++sx == W) {
                sx = 0;
                ++sy;
            }
            y = sy;
            x = sx;
        } else {
            y = (int)(p / W);
            x = (int)(p - (long long)y * W);
        }
        const int l = labels[p];
        if (l != rl) {
            if (rl > 0)  // a segment inside the chunk ends: flush it
                sink(rl, cnt, minr, minc, maxr, maxc, sr, sc, v0, v1, v2, l0, l1, l2);
            rl = l;
            cnt = 0;
            minr = 0x7fffffff;
            minc = 0x7fffffff;
            maxr = -1;
            maxc = -1;
            sr = sc = 0;
            v0 = v1 = v2 = 0.0;
            l0 = l1 = l2 = 0;
        }
        if (l <= 0) continue;
        cnt += 1;
        minr = imin(minr, y);
        maxr = imax(maxr, y);
        minc = imin(minc, x);
        maxc = imax(maxc, x);
        sr += (u64)y;
        sc += (u64)x;
        if (flags & FT_RAW) {
            if (nc == 3) {
                v0 += raw_value<T>(img[p * C]);
                v1 += raw_value<T>(img[p * C + 1]);
                v2 += raw_value<T>(img[p * C + 2]);
            } else {
                v0 += raw_value<T>(img[p * C]);
            }
        }
        if (flags & FT_LAB) {
            float L, A, B;
            if (lab != 0) {
                L = lab[3 * p];
                A = lab[3 * p + 1];
                B = lab[3 * p + 2];
            } else {
                pixel_lab<T>(img, C, p, L, A, B);
            }
            l0 += ft_lab_fixed(L);
            l1 += ft_lab_fixed(A);
            l2 += ft_lab_fixed(B);
        }
    }
    // the last segment: summed over the lanes that end in the same region, one flush per run
    bool head;
    const int end = ft_seg_end(rl, head);
    cnt = ft_seg_sum<int>(cnt, end);
    if (flags & FT_BBOX) {
        minr = ft_seg_min(minr, end);
        minc = ft_seg_min(minc, end);
        maxr = ft_seg_max(maxr, end);
        maxc = ft_seg_max(maxc, end);
        sr = ft_seg_sum<u64>(sr, end);
        sc = ft_seg_sum<u64>(sc, end);
    }
    if (flags & FT_RAW) {
        v0 = ft_seg_sum<double>(v0, end);
        v1 = ft_seg_sum<double>(v1, end);
        v2 = ft_seg_sum<double>(v2, end);
    }
    if (flags & FT_LAB) {
        l0 = ft_seg_sum<long long>(l0, end);
        l1 = ft_seg_sum<long long>(l1, end);
        l2 = ft_seg_sum<long long>(l2, end);
    }
    if (head && rl > 0) sink(rl, cnt, minr, minc, maxr, maxc, sr, sc, v0, v1, v2, l0, l1, l2);
}

// a run's sums straight to the region's global accumulators
struct FtGlobalPass1 {
    int flags, nc;
    int* area;
    int* bbox;
    u64* sum_rc;
    double* raw_sum;
    long long* lab_sum;
    __device__ __forceinline__ void operator()(int rl, int cnt, int minr, int minc, int maxr, int maxc, u64 sr, u64 sc,
                                               double v0, double v1, double v2, long long l0, long long l1,
                                               long long l2) {
        feat_pass1_flush<int>(rl - 1, flags, nc, cnt, minr, minc, maxr, maxc, sr, sc, v0, v1, v2, l0, l1, l2, area,
                              bbox, sum_rc, raw_sum, lab_sum);
    }
};

template <typename T>
__device__ __forceinline__ void feat_pass1_impl(const int* __restrict__ labels, long long n, int W,
                                                const int* __restrict__ order, const T* __restrict__ img, int C,
                                                const float* __restrict__ lab, int flags, int* __restrict__ area,
                                                int* __restrict__ bbox, u64* __restrict__ sum_rc,
                                                double* __restrict__ raw_sum, long long* __restrict__ lab_sum) {
    const long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * FT_CHUNK;
    const long long i1 = lmin(i0 + FT_CHUNK, n);
    FtGlobalPass1 sink{flags, C >= 3 ? 3 : 1, area, bbox, sum_rc, raw_sum, lab_sum};
    ft_pass1_walk<false, T>(labels, i0, i1, W, order, img, C, lab, flags, sink);
}

#define DEF_FEAT_KERNELS(suf, T)                                                                               \
    extern "C" __global__ void feat_pass1_##suf(const int* __restrict__ labels, long long n, int W,              \
                                                const int* __restrict__ order, const T* __restrict__ img, int C, \
                                                const float* __restrict__ lab, int flags, int* __restrict__ area, \
                                                int* __restrict__ bbox, u64* __restrict__ sum_rc,                \
                                                double* __restrict__ raw_sum, long long* __restrict__ lab_sum) {    \
        feat_pass1_impl<T>(labels, n, W, order, img, C, lab, flags, area, bbox, sum_rc, raw_sum, lab_sum);     \
    }

DEF_FEAT_KERNELS(u8, unsigned char)
DEF_FEAT_KERNELS(u16, unsigned short)
DEF_FEAT_KERNELS(f32, float)

// ------------------------------------------------------------------ exact central moments
// The moments as exact integer sums, so the result does not depend on the order the atomics
// land in (float atomics made moments_central differ between two runs on the GPU): every
// pixel adds u^i v^j, u = row - anchor_row, v = col - anchor_col (the anchor: the centroid
// rounded down, so |u|, |v| stay small), as a 128-bit two's-complement integer (two 64-bit
// words, the low word's carry added to the high one). feat_moments_finish then shifts the
// sums from the anchor to the centroid (a shift under one pixel: no cancellation).
__device__ __forceinline__ void ft_mul128(long long a, long long b, u64& lo, u64& hi) {
    // 64 x 64 -> 128-bit signed product from 32-bit limbs (the same code on the GPU and in
    // the test suite's emulator): the unsigned product, then the sign correction
    const u64 ua = (u64)a, ub = (u64)b;
    const u64 a0 = ua & 0xffffffffULL, a1 = ua >> 32, b0 = ub & 0xffffffffULL, b1 = ub >> 32;
    const u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const u64 mid = (p00 >> 32) + (p01 & 0xffffffffULL) + (p10 & 0xffffffffULL);
    lo = (p00 & 0xffffffffULL) | (mid << 32);
    hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    if (a < 0) hi -= ub;
    if (b < 0) hi -= ua;
}

__device__ __forceinline__ void ft_add128(u64& lo, u64& hi, u64 alo, u64 ahi) {
    u64 s = lo + alo;
    hi += ahi + (s < lo ? 1ULL : 0ULL);
    lo = s;
}

// acc: 32 words per region (lo[16], hi[16]); anchor: 2 per region (row, col). A thread walks
// its FT_CHUNK items; within a run of one label on one row only sum v^j (j = 0..3, exact in
// 64 bits) is kept per pixel, and the run adds u^i * sum v^j (one 128-bit product per
// moment and run, not per pixel); a change of label sends the thread's sums to the region's
// accumulators (two 64-bit atomics per moment).
__device__ __forceinline__ void ft_moments_flush(u64* __restrict__ acc, int rl, const u64* lo, const u64* hi) {
    u64* dst = acc + 32 * (long long)(rl - 1);
#pragma unroll
    for (int k = 1; k < 16; ++k) {
        u64 old = atomicAdd((unsigned long long*)&dst[k], (unsigned long long)lo[k]);
        u64 carry = (old + lo[k]) < old ? 1ULL : 0ULL;
        atomicAdd((unsigned long long*)&dst[16 + k], (unsigned long long)(hi[k] + carry));
    }
}

// The moments' walk over one thread's items [i0, i1) (RASTER: raster order, the row and column
// stepped; else the permutation `order`, the row and column divided out): per row run the
// sums of v^j, at its end u^i * sum v^j added to the thread's 128-bit
// sums, which go to sink(rl, lo, hi) when the label changes; the last run's sums are first
// added over the warp's lanes that end in the same region (128-bit), and its lowest lane hands
// them on. (No early return: every lane takes part in the reduction.)
template <bool RASTER, typename Sink>
__device__ __forceinline__ void ft_moments_walk(const int* __restrict__ labels, long long i0, long long i1, int W,
                                                const int* __restrict__ order, const long long* __restrict__ anchor,
                                                Sink& sink) {
    int rl = -1;
    long long ry = -1, ar = 0, ac = 0, u1 = 0, u2 = 0, u3 = 0;
    long long s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    u64 lo[16], hi[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        lo[k] = 0ULL;
        hi[k] = 0ULL;
    }
    long long sy = 0, sx = 0;   // RASTER: the row and column, stepped
    if (RASTER) {
        sy = i0 / W;
        sx = i0 - sy * W - 1;
    }
    for (long long i = i0; i <= i1; ++i) {
        int l = -2;
        long long y = -1;
        if (i < i1) {
            const long long p = RASTER ? i : (long long)order[i];
            l = labels[p];
            if (RASTER) {
                if (++sx == W) {
                    sx = 0;
                    ++sy;
                }
                y = sy;
            } else {
                y = p / W;
                sx = p - y * W;   // the column, for the run below
            }
        }
        if (l != rl || y != ry) {
            if (rl > 0 && s0 > 0) {  // the run ends: add u^i * sum v^j
                const long long pu[4] = {1, u1, u2, u3};
                const long long sv[4] = {s0, s1, s2, s3};
#pragma unroll
                for (int a = 0; a < 4; ++a) {
#pragma unroll
                    for (int b = 0; b < 4; ++b) {
                        if (a == 0 && b == 0) continue;
                        u64 plo, phi;
                        ft_mul128(pu[a], sv[b], plo, phi);
                        ft_add128(lo[4 * a + b], hi[4 * a + b], plo, phi);
                    }
                }
            }
            s0 = s1 = s2 = s3 = 0;
            if (i >= i1) break;  // the last segment stays for the warp's reduction
            if (l != rl) {
                if (rl > 0) sink(rl, lo, hi);
#pragma unroll
                for (int k = 0; k < 16; ++k) {
                    lo[k] = 0ULL;
                    hi[k] = 0ULL;
                }
                rl = l;
                if (l > 0) {
                    ar = anchor[2 * (l - 1)];
                    ac = anchor[2 * (l - 1) + 1];
                }
            }
            ry = y;
            if (l > 0) {
                u1 = y - ar;
                u2 = u1 * u1;
                u3 = u2 * u1;
            }
        }
        if (l <= 0) continue;
        const long long v = sx - ac;
        const long long v2 = v * v;
        s0 += 1;
        s1 += v;
        s2 += v2;
        s3 += v2 * v;
    }
    // the last segment: 128-bit sums over the lanes that end in the same region
    bool head;
    const int end = ft_seg_end(rl, head);
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 1; k < 16; ++k) {
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const u64 olo = __shfl_down_sync(0xffffffffu, lo[k], off);
            const u64 ohi = __shfl_down_sync(0xffffffffu, hi[k], off);
            if (lane + off <= end) ft_add128(lo[k], hi[k], olo, ohi);
        }
    }
    if (head && rl > 0) sink(rl, lo, hi);
}

struct FtGlobalMoments {
    u64* acc;
    __device__ __forceinline__ void operator()(int rl, const u64* lo, const u64* hi) { ft_moments_flush(acc, rl, lo, hi); }
};

extern "C" __global__ void feat_moments_exact(const int* __restrict__ labels, long long n, int W,
                                              const int* __restrict__ order, const long long* __restrict__ anchor,
                                              u64* __restrict__ acc) {
    const long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * FT_CHUNK;
    const long long i1 = lmin(i0 + FT_CHUNK, n);
    FtGlobalMoments sink{acc};
    ft_moments_walk<false>(labels, i0, i1, W, order, anchor, sink);
}

__device__ __forceinline__ double ft_to_double(u64 lo, u64 hi) {
    if ((long long)hi < 0) {  // negative: the magnitude is the two's complement
        u64 nlo = ~lo + 1ULL;
        u64 nhi = ~hi + (nlo == 0ULL ? 1ULL : 0ULL);
        return -((double)nhi * 18446744073709551616.0 + (double)nlo);
    }
    return (double)hi * 18446744073709551616.0 + (double)lo;
}

// mu (16 per region) from the exact sums about the anchor and the centroid (double, 2 per region)
extern "C" __global__ void feat_moments_finish(int R, const u64* __restrict__ acc, const int* __restrict__ area,
                                               const long long* __restrict__ anchor,
                                               const double* __restrict__ centroid, double* __restrict__ mu) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const u64* a = acc + 32 * (long long)r;
    double M[16];
    M[0] = (double)area[r];
    for (int k = 1; k < 16; ++k) M[k] = ft_to_double(a[k], a[16 + k]);
    const double dr = -(centroid[2 * r] - (double)anchor[2 * r]);
    const double dc = -(centroid[2 * r + 1] - (double)anchor[2 * r + 1]);
    const double pr[4] = {1.0, dr, dr * dr, (dr * dr) * dr};
    const double pc[4] = {1.0, dc, dc * dc, (dc * dc) * dc};
    const double Cb[4][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 2, 1, 0}, {1, 3, 3, 1}};
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
            double s = 0.0;
            for (int k = 0; k <= i; ++k)
                for (int l = 0; l <= j; ++l) s += ((Cb[i][k] * Cb[j][l]) * (pr[i - k] * pc[j - l])) * M[4 * k + l];
            mu[16 * (long long)r + 4 * i + j] = s;
        }
    }
    mu[16 * (long long)r] = (double)area[r];
}

// accumulators' initial values over cap regions: area 0, bbox (INT_MAX, INT_MAX, -1, -1)
extern "C" __global__ void feat_init_bbox(int* __restrict__ bbox, long long cap) {
    long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cap) return;
    bbox[4 * j] = 0x7fffffff;
    bbox[4 * j + 1] = 0x7fffffff;
    bbox[4 * j + 2] = -1;
    bbox[4 * j + 3] = -1;
}

// Everything pass 1's sums give, in one launch (it replaced a dozen array operations): label,
// centroid (row, col), the mean of each raw channel and of L, a, b, and the moments' anchor
// (the centroid rounded down, as integers). Regions of no pixels divide by 1.
extern "C" __global__ void feat_finish(int R, int nc, const int* __restrict__ area, const u64* __restrict__ sum_rc,
                                       const double* __restrict__ raw_sum, const long long* __restrict__ lab_sum,
                                       int* __restrict__ label, double* __restrict__ centroid,
                                       double* __restrict__ mean, double* __restrict__ lab_mean,
                                       long long* __restrict__ anchor) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const int a = imax(area[r], 1);
    const double af = (double)a;
    label[r] = r + 1;
    for (int k = 0; k < 2; ++k) {
        centroid[2 * r + k] = (double)sum_rc[2 * r + k] / af;
        anchor[2 * r + k] = (long long)(sum_rc[2 * r + k] / (u64)a);
    }
    for (int k = 0; k < nc; ++k) mean[nc * r + k] = raw_sum[nc * r + k] / af;
    const double lf = FT_LAB_SCALE * af;
    for (int k = 0; k < 3; ++k) lab_mean[3 * r + k] = (double)lab_sum[3 * r + k] / lf;
}

// ------------------------------------------------------------------ block-private sums (session 9)
// The raster-order sums: a run's sums go first to a small table of the block's regions in
// shared memory (open addressing on the label, FS_SLOTS slots), and each region a block saw
// reaches the global accumulators once, when the block ends. The session-4 raster kernels sent
// one set of global atomics per run (and per warp), all on the same addresses: at 512^2 with ~90
// regions the sums were bound by their atomics, not by the pixels
// (benchmarks/results/imseg_speed_session9.md; those kernels were removed in session 10). A run
// whose label finds no free slot (more regions in one block than the table holds, or FS_PROBES
// probes) goes to the global accumulators directly. Integer sums (and double sums of integer
// values) are exact, so the results equal the sorted kernels' and the CPU's bit for bit whatever
// the grouping; float images' raw sums depend on the order.
// ``chunk`` pixels a thread (runtime), blocks of FS_THREADS threads.
#ifndef FS_SLOTS
#define FS_SLOTS 128
#endif
#ifndef FS_MSLOTS
#define FS_MSLOTS 64
#endif
#define FS_PROBES 16
#define FS_THREADS 256

// the slot of label l (> 0) in a table of `slots` keys (0 = free), or -1
__device__ __forceinline__ int fs_slot(int* keys, int slots, int l) {
    int h = (int)(((unsigned)l * 2654435761u) >> 16) & (slots - 1);
    for (int probe = 0; probe < FS_PROBES; ++probe) {
        const int k = ((volatile int*)keys)[h];
        if (k == l) return h;
        if (k == 0) {
            const int old = atomicCAS(&keys[h], 0, l);
            if (old == 0 || old == l) return h;
        }
        h = (h + 1) & (slots - 1);
    }
    return -1;
}

// The table's 64-bit sums are kept as 16-bit digits in 32-bit words (64-bit shared atomics cost
// what the table saves: see feat_moments_digits). A run covers at most 32 lanes x chunk (<= 32)
// pixels: row and column sums (< 2^41 a run) as three unsigned digits, CIELAB sums (|x| < 2^31
// a run) as a balanced low digit and the rest, raw sums of integer pixels (< 2^26 a run) as two
// unsigned digits; float pixels' raw sums stay doubles. A word takes at most one add a run of a
// thread (a few thousand a block, each digit < 2^16): no overflow.
struct FsPass1 {
    int key[FS_SLOTS];
    int cnt[FS_SLOTS];
    int minr[FS_SLOTS];
    int minc[FS_SLOTS];
    int maxr[FS_SLOTS];
    int maxc[FS_SLOTS];
    unsigned int rc[6 * FS_SLOTS];   // sum of rows, then of columns: 3 digits each
    int lab[6 * FS_SLOTS];           // L, a, b: 2 balanced digits each
    unsigned int rawi[6 * FS_SLOTS]; // integer pixels: 3 channels, 2 digits each
    double rawf[3 * FS_SLOTS];       // float pixels
};

template <typename T> struct FsIsFloat { static const bool value = false; };
template <> struct FsIsFloat<float> { static const bool value = true; };

__device__ __forceinline__ void fs_add_u48(unsigned int* w, u64 x) {
    const unsigned int d0 = (unsigned int)(x & 0xffffULL), d1 = (unsigned int)((x >> 16) & 0xffffULL),
                       d2 = (unsigned int)(x >> 32);
    if (d0) atomicAdd(&w[0], d0);
    if (d1) atomicAdd(&w[1], d1);
    if (d2) atomicAdd(&w[2], d2);
}

__device__ __forceinline__ u64 fs_u48(const unsigned int* w) {
    return (u64)w[0] + ((u64)w[1] << 16) + ((u64)w[2] << 32);
}

__device__ __forceinline__ void fs_add_u32(unsigned int* w, u64 x) {
    const unsigned int d0 = (unsigned int)(x & 0xffffULL), d1 = (unsigned int)(x >> 16);
    if (d0) atomicAdd(&w[0], d0);
    if (d1) atomicAdd(&w[1], d1);
}

__device__ __forceinline__ u64 fs_u32(const unsigned int* w) { return (u64)w[0] + ((u64)w[1] << 16); }

__device__ __forceinline__ void fs_add_s32(int* w, long long x) {
    const int d0 = (int)(short)(unsigned short)(x & 0xffffLL);
    const int d1 = (int)((x - d0) >> 16);
    if (d0) atomicAdd(&w[0], d0);
    if (d1) atomicAdd(&w[1], d1);
}

__device__ __forceinline__ long long fs_s32(const int* w) { return (long long)w[0] + (long long)w[1] * 65536LL; }

template <typename T>
__device__ __forceinline__ void fs_pass1_add(FsPass1& t, int rl, int flags, int nc, int cnt, int minr, int minc,
                                             int maxr, int maxc, u64 sr, u64 sc, double v0, double v1, double v2,
                                             long long l0, long long l1, long long l2, int* __restrict__ area,
                                             int* __restrict__ bbox, u64* __restrict__ sum_rc,
                                             double* __restrict__ raw_sum, long long* __restrict__ lab_sum) {
    const int s = fs_slot(t.key, FS_SLOTS, rl);
    if (s < 0) {
        feat_pass1_flush<int>(rl - 1, flags, nc, cnt, minr, minc, maxr, maxc, sr, sc, v0, v1, v2, l0, l1, l2, area,
                              bbox, sum_rc, raw_sum, lab_sum);
        return;
    }
    atomicAdd(&t.cnt[s], cnt);
    if (flags & FT_BBOX) {
        atomicMin(&t.minr[s], minr);
        atomicMin(&t.minc[s], minc);
        atomicMax(&t.maxr[s], maxr);
        atomicMax(&t.maxc[s], maxc);
        fs_add_u48(&t.rc[6 * s], sr);
        fs_add_u48(&t.rc[6 * s + 3], sc);
    }
    if (flags & FT_RAW) {
        if (FsIsFloat<T>::value) {
            atomicAdd(&t.rawf[3 * s], v0);
            if (nc == 3) {
                atomicAdd(&t.rawf[3 * s + 1], v1);
                atomicAdd(&t.rawf[3 * s + 2], v2);
            }
        } else {  // integer pixel values: the sums are exact integers below 2^24 a run
            fs_add_u32(&t.rawi[6 * s], (u64)v0);
            if (nc == 3) {
                fs_add_u32(&t.rawi[6 * s + 2], (u64)v1);
                fs_add_u32(&t.rawi[6 * s + 4], (u64)v2);
            }
        }
    }
    if (flags & FT_LAB) {
        fs_add_s32(&t.lab[6 * s], l0);
        fs_add_s32(&t.lab[6 * s + 2], l1);
        fs_add_s32(&t.lab[6 * s + 4], l2);
    }
}

// a run's sums to the block's table (or, without a slot, to the global accumulators)
template <typename T>
struct FsTablePass1 {
    FsPass1& t;
    int flags, nc;
    int* area;
    int* bbox;
    u64* sum_rc;
    double* raw_sum;
    long long* lab_sum;
    __device__ __forceinline__ void operator()(int rl, int cnt, int minr, int minc, int maxr, int maxc, u64 sr, u64 sc,
                                               double v0, double v1, double v2, long long l0, long long l1,
                                               long long l2) {
        fs_pass1_add<T>(t, rl, flags, nc, cnt, minr, minc, maxr, maxc, sr, sc, v0, v1, v2, l0, l1, l2, area, bbox,
                        sum_rc, raw_sum, lab_sum);
    }
};

// (no early return: the block's barriers and the warp's reduction need every thread)
template <typename T>
__device__ __forceinline__ void feat_pass1_smem_impl(const int* __restrict__ labels, long long n, int W, int chunk,
                                                     const T* __restrict__ img, int C, const float* __restrict__ lab,
                                                     int flags, int* __restrict__ area, int* __restrict__ bbox,
                                                     u64* __restrict__ sum_rc, double* __restrict__ raw_sum,
                                                     long long* __restrict__ lab_sum) {
    __shared__ FsPass1 t;
    for (int s = threadIdx.x; s < FS_SLOTS; s += blockDim.x) {
        t.key[s] = 0;
        t.cnt[s] = 0;
        t.minr[s] = 0x7fffffff;
        t.minc[s] = 0x7fffffff;
        t.maxr[s] = -1;
        t.maxc[s] = -1;
        for (int j = 0; j < 6; ++j) {
            t.rc[6 * s + j] = 0u;
            t.lab[6 * s + j] = 0;
            t.rawi[6 * s + j] = 0u;
        }
        t.rawf[3 * s] = t.rawf[3 * s + 1] = t.rawf[3 * s + 2] = 0.0;
    }
    __syncthreads();
    const long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk;
    const long long i1 = lmin(i0 + chunk, n);
    const int nc = C >= 3 ? 3 : 1;
    FsTablePass1<T> sink{t, flags, nc, area, bbox, sum_rc, raw_sum, lab_sum};
    ft_pass1_walk<true, T>(labels, i0, i1, W, 0, img, C, lab, flags, sink);
    __syncthreads();
    for (int s = threadIdx.x; s < FS_SLOTS; s += blockDim.x) {
        const int k = t.key[s];
        if (k <= 0) continue;
        double r0, r1, r2;
        if (FsIsFloat<T>::value) {
            r0 = t.rawf[3 * s];
            r1 = t.rawf[3 * s + 1];
            r2 = t.rawf[3 * s + 2];
        } else {
            r0 = (double)fs_u32(&t.rawi[6 * s]);
            r1 = (double)fs_u32(&t.rawi[6 * s + 2]);
            r2 = (double)fs_u32(&t.rawi[6 * s + 4]);
        }
        feat_pass1_flush<int>(k - 1, flags, nc, t.cnt[s], t.minr[s], t.minc[s], t.maxr[s], t.maxc[s],
                              fs_u48(&t.rc[6 * s]), fs_u48(&t.rc[6 * s + 3]), r0, r1, r2, fs_s32(&t.lab[6 * s]),
                              fs_s32(&t.lab[6 * s + 2]), fs_s32(&t.lab[6 * s + 4]), area, bbox, sum_rc, raw_sum,
                              lab_sum);
    }
}

#define DEF_FEAT_SMEM_KERNELS(suf, T)                                                                               \
    extern "C" __global__ void __launch_bounds__(FS_THREADS) feat_pass1_smem_##suf(                                 \
        const int* __restrict__ labels, long long n, int W, int chunk, const T* __restrict__ img, int C,            \
        const float* __restrict__ lab, int flags, int* __restrict__ area, int* __restrict__ bbox,                  \
        u64* __restrict__ sum_rc, double* __restrict__ raw_sum, long long* __restrict__ lab_sum) {                 \
        feat_pass1_smem_impl<T>(labels, n, W, chunk, img, C, lab, flags, area, bbox, sum_rc, raw_sum, lab_sum);     \
    }

DEF_FEAT_SMEM_KERNELS(u8, unsigned char)
DEF_FEAT_SMEM_KERNELS(u16, unsigned short)
DEF_FEAT_SMEM_KERNELS(f32, float)

// ------------------------------------------------------------------ moments in 16-bit digits (session 9)
// A first table held each region's 15 sums as 128-bit (lo, hi) pairs, added with 64-bit shared
// atomics that return the old value (for the carry): those adds were ~85% of that kernel's time
// at 512^2, and it was no faster than feat_moments_exact (benchmarks/results/imseg_speed_session9.md). Here a run's 128-bit
// sum is split into eight balanced 16-bit digits, x = sum_i d_i 2^(16 i), d_i in [-2^15, 2^15)
// (small values, of either sign, have few non-zero digits), and each non-zero digit goes to its
// own 32-bit slot word with one plain 32-bit shared atomic add (a block adds at most a few
// thousand digits to a word, so the words cannot overflow). The block's sums are rebuilt from
// the digits (sum_i D_i 2^(16 i), exact in 128 bits) and sent to the global accumulators as
// before: the same exact integers, so the same moments bit for bit.
#define FD_DIGITS 8

struct FsMomentDigits {
    int key[FS_MSLOTS];
    int d[FS_MSLOTS * 15 * FD_DIGITS];
};

// the balanced digits of the 128-bit two's complement (lo, hi), added to w[0..7]
__device__ __forceinline__ void fd_add_digits(int* w, u64 lo, u64 hi) {
#pragma unroll
    for (int i = 0; i < FD_DIGITS; ++i) {
        const int d = (int)(short)(unsigned short)(lo & 0xffffULL);
        if (d != 0) atomicAdd(&w[i], d);
        const u64 dl = (u64)(long long)d, dh = d < 0 ? ~0ULL : 0ULL;
        const u64 nlo = lo - dl;
        const u64 nhi = hi - dh - (lo < dl ? 1ULL : 0ULL);
        lo = (nlo >> 16) | (nhi << 48);
        hi = (u64)((long long)nhi >> 16);
    }
}

// sum_i w[i] 2^(16 i) as a 128-bit two's complement (lo, hi)
__device__ __forceinline__ void fd_value(const int* w, u64& lo, u64& hi) {
    lo = 0ULL;
    hi = 0ULL;
#pragma unroll
    for (int i = FD_DIGITS - 1; i >= 0; --i) {
        hi = (hi << 16) | (lo >> 48);
        lo <<= 16;
        const long long v = (long long)w[i];
        ft_add128(lo, hi, (u64)v, v < 0 ? ~0ULL : 0ULL);
    }
}

__device__ __forceinline__ void fd_moments_add(FsMomentDigits& t, u64* __restrict__ acc, int rl, const u64* lo,
                                               const u64* hi) {
    const int s = fs_slot(t.key, FS_MSLOTS, rl);
    if (s < 0) {
        ft_moments_flush(acc, rl, lo, hi);
        return;
    }
    int* w = &t.d[s * 15 * FD_DIGITS];
#pragma unroll
    for (int k = 1; k < 16; ++k) fd_add_digits(w + (k - 1) * FD_DIGITS, lo[k], hi[k]);
}

// a thread's 128-bit sums to the block's table of digits
struct FdTableMoments {
    FsMomentDigits& t;
    u64* acc;
    __device__ __forceinline__ void operator()(int rl, const u64* lo, const u64* hi) { fd_moments_add(t, acc, rl, lo, hi); }
};

// the moments' exact sums in raster order through the block's table of digits
extern "C" __global__ void __launch_bounds__(FS_THREADS) feat_moments_digits(const int* __restrict__ labels,
                                                                             long long n, int W, int chunk,
                                                                             const long long* __restrict__ anchor,
                                                                             u64* __restrict__ acc) {
    __shared__ FsMomentDigits t;
    for (int s = threadIdx.x; s < FS_MSLOTS; s += blockDim.x) t.key[s] = 0;
    for (int s = threadIdx.x; s < FS_MSLOTS * 15 * FD_DIGITS; s += blockDim.x) t.d[s] = 0;
    __syncthreads();
    const long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk;
    const long long i1 = lmin(i0 + chunk, n);
    FdTableMoments sink{t, acc};
    ft_moments_walk<true>(labels, i0, i1, W, 0, anchor, sink);
    __syncthreads();
    for (int s = threadIdx.x; s < FS_MSLOTS; s += blockDim.x) {
        const int k = t.key[s];
        if (k <= 0) continue;
        u64 blo[16], bhi[16];
        blo[0] = bhi[0] = 0ULL;
#pragma unroll
        for (int m = 1; m < 16; ++m) fd_value(&t.d[(s * 15 + m - 1) * FD_DIGITS], blo[m], bhi[m]);
        ft_moments_flush(acc, k, blo, bhi);
    }
}

// the digits' round trip (tests): n 128-bit values (lo, hi pairs) each split into a zeroed
// digit array (shared memory, as in the kernels) with fd_add_digits `reps` times and rebuilt
// with fd_value (= reps * value); blocks of at most 64 threads
extern "C" __global__ void fd_roundtrip(const u64* __restrict__ in, u64* __restrict__ out, int n, int reps) {
    __shared__ int ws[64 * FD_DIGITS];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || threadIdx.x >= 64) return;
    int* w = &ws[threadIdx.x * FD_DIGITS];
    for (int k = 0; k < FD_DIGITS; ++k) w[k] = 0;
    for (int r = 0; r < reps; ++r) fd_add_digits(w, in[2 * i], in[2 * i + 1]);
    fd_value(w, out[2 * i], out[2 * i + 1]);
}
