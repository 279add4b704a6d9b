// Generic image operations: greyscale conversion, separable correlation along one axis of an
// N-D array (with optional decimation), linear resampling along one axis, bilinear and
// trilinear warping. Python side: gpu_kernels/ops/.
//
// An axis of a C-contiguous array is addressed as (outer, n, inner): element (o, j, k) is at
// (o * n + j) * inner + k. Every kernel uses a grid-stride loop over 64-bit indices.
#include "ops_common.cuh"

#define GRID_STRIDE(i, total) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
         i += (long long)blockDim.x * gridDim.x)

// ---------------------------------------------------------------- greyscale
// ITU-R 601 luma of interleaved channels (1: grey, 2: grey + alpha, 3: RGB, 4: RGBA), times scale.
#define OPS_GRAY(NAME, T)                                                                    \
    extern "C" __global__ void NAME(const T* __restrict__ src, float* __restrict__ dst,     \
                                    long long n, int channels, float scale) {                \
        GRID_STRIDE(i, n) {                                                                  \
            const T* p = src + i * channels;                                                 \
            float g;                                                                         \
            if (channels >= 3)                                                               \
                g = 0.299f * (float)p[0] + 0.587f * (float)p[1] + 0.114f * (float)p[2];      \
            else                                                                             \
                g = (float)p[0];                                                             \
            dst[i] = g * scale;                                                              \
        }                                                                                    \
    }
OPS_GRAY(ops_gray_u8, unsigned char)
OPS_GRAY(ops_gray_u16, unsigned short)
OPS_GRAY(ops_gray_f32, float)

// ---------------------------------------------------------------- separable filtering
// dst[o, j, k] = sum_t taps[t] * src[o, reflect(j * step + t - radius), k]  (mode 0: reflect,
// mode 1: nearest). step = 2 decimates (the pyramid's down-sampling), n_out = ceil(n_in / step).
template <typename I>
__device__ __forceinline__ void correlate_axis_body(const float* __restrict__ src, float* __restrict__ dst,
                                                    const float* __restrict__ taps, int radius, I outer,
                                                    int n_in, int n_out, I inner, int step, int mode) {
    const I total = outer * (I)n_out * inner;
    for (I idx = (I)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += (I)blockDim.x * gridDim.x) {
        const I k = idx % inner;
        const I t = idx / inner;
        const int j = (int)(t % n_out);
        const I o = t / n_out;
        const float* base = src + (long long)o * n_in * inner + k;
        const int c = j * step;
        float acc = 0.0f;
        for (int d = -radius; d <= radius; ++d) {
            const int q = mode == 0 ? ops_reflect(c + d, n_in) : ops_clampi(c + d, 0, n_in - 1);
            acc += taps[d + radius] * base[(long long)q * inner];
        }
        dst[idx] = acc;
    }
}

extern "C" __global__ void ops_correlate_axis(const float* __restrict__ src, float* __restrict__ dst,
                                              const float* __restrict__ taps, int radius,
                                              long long outer, int n_in, int n_out, long long inner,
                                              int step, int mode) {
    if (outer * n_out * inner < 2147483647LL)
        correlate_axis_body<unsigned>(src, dst, taps, radius, (unsigned)outer, n_in, n_out, (unsigned)inner,
                                      step, mode);
    else
        correlate_axis_body<long long>(src, dst, taps, radius, outer, n_in, n_out, inner, step, mode);
}

// Linear interpolation along one axis: output j samples the input at s = j * scale + offset
// (clamped to [0, n_in - 1]); the value is multiplied by vscale.
template <typename I>
__device__ __forceinline__ void linear_axis_body(const float* __restrict__ src, float* __restrict__ dst, I outer,
                                                 int n_in, int n_out, I inner, float scale, float offset,
                                                 float vscale) {
    const I total = outer * (I)n_out * inner;
    for (I idx = (I)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += (I)blockDim.x * gridDim.x) {
        const I k = idx % inner;
        const I t = idx / inner;
        const int j = (int)(t % n_out);
        const I o = t / n_out;
        float s = (float)j * scale + offset;
        s = fminf(fmaxf(s, 0.0f), (float)(n_in - 1));
        const int i0 = (int)s;
        const int i1 = min(i0 + 1, n_in - 1);
        const float a = s - (float)i0;
        const float* base = src + (long long)o * n_in * inner + k;
        const float v0 = base[(long long)i0 * inner], v1 = base[(long long)i1 * inner];
        dst[idx] = vscale * (v0 + a * (v1 - v0));
    }
}

extern "C" __global__ void ops_linear_axis(const float* __restrict__ src, float* __restrict__ dst,
                                           long long outer, int n_in, int n_out, long long inner,
                                           float scale, float offset, float vscale) {
    if (outer * n_out * inner < 2147483647LL)
        linear_axis_body<unsigned>(src, dst, (unsigned)outer, n_in, n_out, (unsigned)inner, scale, offset, vscale);
    else
        linear_axis_body<long long>(src, dst, outer, n_in, n_out, inner, scale, offset, vscale);
}

// ---------------------------------------------------------------- warping
// out[c, y, x] = img[c](x + u[y, x], y + v[y, x]), bilinear, edge-clamped; inside[y, x] = 1 where
// the sample point lies in the image (written when has_inside != 0).
extern "C" __global__ void ops_warp2d(const float* __restrict__ img, const float* __restrict__ u,
                                      const float* __restrict__ v, float* __restrict__ out,
                                      float* __restrict__ inside, int has_inside, int C, int H, int W) {
    const long long n = (long long)H * W;
    GRID_STRIDE(i, n) {
        const int x = (int)(i % W), y = (int)(i / W);
        const float xs = (float)x + u[i], ys = (float)y + v[i];
        for (int c = 0; c < C; ++c) out[c * n + i] = ops_bilinear(img + c * n, H, W, xs, ys);
        if (has_inside) inside[i] = ops_inside(xs, ys, H, W) ? 1.0f : 0.0f;
    }
}

// out[c, z, y, x] = vol[c](z + dz, y + dy, x + dx), trilinear, edge-clamped.
extern "C" __global__ void ops_warp3d(const float* __restrict__ vol, const float* __restrict__ dz,
                                      const float* __restrict__ dy, const float* __restrict__ dx,
                                      float* __restrict__ out, float* __restrict__ inside, int has_inside,
                                      int C, int D, int H, int W) {
    const long long n = (long long)D * H * W;
    GRID_STRIDE(i, n) {
        const int x = (int)(i % W);
        const int y = (int)((i / W) % H);
        const int z = (int)(i / ((long long)W * H));
        const float xs = (float)x + dx[i], ys = (float)y + dy[i], zs = (float)z + dz[i];
        for (int c = 0; c < C; ++c) out[c * n + i] = ops_trilinear(vol + c * n, D, H, W, zs, ys, xs);
        if (has_inside)
            inside[i] = (ops_inside(xs, ys, H, W) && zs >= 0.0f && zs <= (float)(D - 1)) ? 1.0f : 0.0f;
    }
}
