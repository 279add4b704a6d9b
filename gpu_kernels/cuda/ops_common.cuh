// Device helpers shared by the image operations (ops_*.cu) and the tools that use them.
#pragma once

// scipy.ndimage "reflect" (half-sample symmetric): d c b a | a b c d | d c b a
__device__ __forceinline__ int ops_reflect(int i, int n) {
    if (n <= 1) return 0;
    const int p = 2 * n;
    i %= p;
    if (i < 0) i += p;
    return i < n ? i : p - 1 - i;
}

__device__ __forceinline__ int ops_clampi(int i, int lo, int hi) {
    return i < lo ? lo : (i > hi ? hi : i);
}

// Bilinear sample of a row-major H x W image at (xs, ys), coordinates clamped to the image
// (edge replication). The same arithmetic as gpu_kernels.ops.warp's NumPy path.
__device__ __forceinline__ float ops_bilinear(const float* __restrict__ img, int H, int W, float xs, float ys) {
    xs = fminf(fmaxf(xs, 0.0f), (float)(W - 1));
    ys = fminf(fmaxf(ys, 0.0f), (float)(H - 1));
    const int x0 = (int)xs, y0 = (int)ys;
    const int x1 = min(x0 + 1, W - 1), y1 = min(y0 + 1, H - 1);
    const float a = xs - (float)x0, b = ys - (float)y0;
    const float i00 = img[(long long)y0 * W + x0], i01 = img[(long long)y0 * W + x1];
    const float i10 = img[(long long)y1 * W + x0], i11 = img[(long long)y1 * W + x1];
    const float top = i00 + a * (i01 - i00);
    const float bot = i10 + a * (i11 - i10);
    return top + b * (bot - top);
}

__device__ __forceinline__ float ops_trilinear(const float* __restrict__ vol, int D, int H, int W,
                                               float zs, float ys, float xs) {
    zs = fminf(fmaxf(zs, 0.0f), (float)(D - 1));
    const int z0 = (int)zs, z1 = min(z0 + 1, D - 1);
    const float c = zs - (float)z0;
    const long long plane = (long long)H * W;
    const float p0 = ops_bilinear(vol + z0 * plane, H, W, xs, ys);
    const float p1 = ops_bilinear(vol + z1 * plane, H, W, xs, ys);
    return p0 + c * (p1 - p0);
}

__device__ __forceinline__ bool ops_inside(float xs, float ys, int H, int W) {
    return xs >= 0.0f && ys >= 0.0f && xs <= (float)(W - 1) && ys <= (float)(H - 1);
}
