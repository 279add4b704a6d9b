// Stage 0 of the image segmentation: RGB -> CIELAB, the bilateral filter in CIELAB, and the
// quantised colour code of every pixel with the colour histogram (the k-means weights).
//
// Pixel types: u8 (0..255), u16 (0..65535), f32 ([0, 1]); C = 1 (grey), 3 (RGB) or 4
// (RGBA, alpha ignored). Images are row-major, channels interleaved.
#include "imseg_common.cuh"

// ------------------------------------------------------------------ RGB -> Lab
template <typename T>
__device__ __forceinline__ void rgb2lab_impl(const T* __restrict__ img, int C, long long n, float* __restrict__ lab) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    float L, A, B;
    pixel_lab<T>(img, C, p, L, A, B);
    lab[3 * p] = L;
    lab[3 * p + 1] = A;
    lab[3 * p + 2] = B;
}

#define DEF_COLOR_KERNELS(suf, T)                                                                 \
    extern "C" __global__ void rgb2lab_##suf(const T* __restrict__ img, int C, long long n,       \
                                             float* __restrict__ lab) {                           \
        rgb2lab_impl<T>(img, C, n, lab);                                                          \
    }

DEF_COLOR_KERNELS(u8, unsigned char)
DEF_COLOR_KERNELS(u16, unsigned short)
DEF_COLOR_KERNELS(f32, float)

// ------------------------------------------------------------------ codes (+ histogram)
// Each thread codes `chunk` consecutive pixels; a run of equal codes is counted in a register,
// then in a table of the block's codes in shared memory (open addressing, CS_SLOTS slots; a code
// the table has no room for goes to hist directly), and each code a block saw reaches hist with
// one atomic when the block ends (session 9: the session-2 kernels sent one global atomic per
// run, and a large area of one colour, a sky, sent them all to one address, which the L2
// serialises). Counts are integers: the histogram does not depend on the order.
#define CS_SLOTS 256
#define CS_PROBES 16
#define CS_THREADS 256

__device__ __forceinline__ void cs_count(int* keys, unsigned int* cnt, unsigned int* hist, int code, unsigned int run) {
    if (hist == 0 || run == 0) return;
    const int key = code + 1;
    int h = (int)(((unsigned)key * 2654435761u) >> 16) & (CS_SLOTS - 1);
    for (int probe = 0; probe < CS_PROBES; ++probe) {
        int k = ((volatile int*)keys)[h];
        if (k == 0) {
            const int old = atomicCAS(&keys[h], 0, key);
            k = old == 0 ? key : old;
        }
        if (k == key) {
            atomicAdd(&cnt[h], run);
            return;
        }
        h = (h + 1) & (CS_SLOTS - 1);
    }
    atomicAdd(&hist[code], run);
}

template <typename T, bool FROM_LAB>
__device__ __forceinline__ void codes_smem_impl(const T* __restrict__ img, const float* __restrict__ lab, int C,
                                                long long n, int Q, int chunk, int* __restrict__ codes,
                                                unsigned int* __restrict__ hist) {
    __shared__ int keys[CS_SLOTS];
    __shared__ unsigned int cnt[CS_SLOTS];
    for (int s = threadIdx.x; s < CS_SLOTS; s += blockDim.x) {
        keys[s] = 0;
        cnt[s] = 0u;
    }
    __syncthreads();
    const long long p0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk;
    const long long p1 = lmin(p0 + chunk, n);
    int run_code = -1;
    unsigned int run = 0;
    for (long long p = p0; p < p1; ++p) {
        float L, A, B;
        if (FROM_LAB) {
            L = lab[3 * p];
            A = lab[3 * p + 1];
            B = lab[3 * p + 2];
        } else {
            pixel_lab<T>(img, C, p, L, A, B);
        }
        const int c = lab_code(L, A, B, Q);
        codes[p] = c;
        if (c != run_code) {
            cs_count(keys, cnt, hist, run_code, run);
            run_code = c;
            run = 0;
        }
        run += 1;
    }
    cs_count(keys, cnt, hist, run_code, run);
    __syncthreads();
    for (int s = threadIdx.x; s < CS_SLOTS; s += blockDim.x) {
        const int k = keys[s];
        if (k > 0 && hist != 0) atomicAdd(&hist[k - 1], cnt[s]);
    }
}

extern "C" __global__ void __launch_bounds__(CS_THREADS) codes_lab_smem(const float* __restrict__ lab, long long n,
                                                                        int Q, int chunk, int* __restrict__ codes,
                                                                        unsigned int* __restrict__ hist) {
    codes_smem_impl<float, true>(0, lab, 3, n, Q, chunk, codes, hist);
}

#define DEF_CODES_SMEM(suf, T)                                                                                  \
    extern "C" __global__ void __launch_bounds__(CS_THREADS) codes_smem_##suf(                                  \
        const T* __restrict__ img, int C, long long n, int Q, int chunk, int* __restrict__ codes,               \
        unsigned int* __restrict__ hist) {                                                                      \
        codes_smem_impl<T, false>(img, 0, C, n, Q, chunk, codes, hist);                                         \
    }

DEF_CODES_SMEM(u8, unsigned char)
DEF_CODES_SMEM(u16, unsigned short)
DEF_CODES_SMEM(f32, float)

// ------------------------------------------------------------------ bilateral filter
// One pass over an interleaved Lab image: out(p) = sum_q w(p, q) in(q) / sum_q w(p, q) over the
// (2r+1)^2 window inside the image, w = exp(-|p-q|^2 inv2ss - |in(p)-in(q)|^2 inv2sr).
#define BL_TILE 16
#define BL_MAXR 8

extern "C" __global__ void bilateral_lab(const float* __restrict__ in, float* __restrict__ out, int W, int H,
                                         int radius, float inv2ss, float inv2sr) {
    __shared__ float tile[(BL_TILE + 2 * BL_MAXR) * (BL_TILE + 2 * BL_MAXR) * 3];
    const int tw = BL_TILE + 2 * radius;
    const int x0 = blockIdx.x * BL_TILE - radius, y0 = blockIdx.y * BL_TILE - radius;
    const int tid = threadIdx.y * BL_TILE + threadIdx.x;
    for (int i = tid; i < tw * tw; i += BL_TILE * BL_TILE) {
        int ty = i / tw, tx = i - ty * tw;
        int gx = x0 + tx, gy = y0 + ty;
        float a = 0.0f, b = 0.0f, c = 0.0f;
        if (gx >= 0 && gx < W && gy >= 0 && gy < H) {
            long long q = (long long)gy * W + gx;
            a = in[3 * q];
            b = in[3 * q + 1];
            c = in[3 * q + 2];
        }
        tile[3 * i] = a;
        tile[3 * i + 1] = b;
        tile[3 * i + 2] = c;
    }
    __syncthreads();
    const int x = blockIdx.x * BL_TILE + threadIdx.x, y = blockIdx.y * BL_TILE + threadIdx.y;
    if (x >= W || y >= H) return;
    const int cx = threadIdx.x + radius, cy = threadIdx.y + radius;
    const float L0 = tile[3 * (cy * tw + cx)], A0 = tile[3 * (cy * tw + cx) + 1], B0 = tile[3 * (cy * tw + cx) + 2];
    float sw = 0.0f, sL = 0.0f, sA = 0.0f, sB = 0.0f;
    for (int dy = -radius; dy <= radius; ++dy) {
        int yy = y + dy;
        if (yy < 0 || yy >= H) continue;
        for (int dx = -radius; dx <= radius; ++dx) {
            int xx = x + dx;
            if (xx < 0 || xx >= W) continue;
            int t = 3 * ((cy + dy) * tw + cx + dx);
            float dL = tile[t] - L0, dA = tile[t + 1] - A0, dB = tile[t + 2] - B0;
            float d2 = (float)(dx * dx + dy * dy);
            float c2 = dL * dL + dA * dA + dB * dB;
            float w = expf(-(d2 * inv2ss + c2 * inv2sr));
            sw += w;
            sL += w * tile[t];
            sA += w * tile[t + 1];
            sB += w * tile[t + 2];
        }
    }
    long long p = (long long)y * W + x;
    out[3 * p] = sL / sw;
    out[3 * p + 1] = sA / sw;
    out[3 * p + 2] = sB / sw;
}
