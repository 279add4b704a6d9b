// Packs one 8-bit view for the optimiser on the device (gpu_kernels/mvs/optimize.py, pack_views):
// the same values as the NumPy prepare_image, without the host's float conversion, gradients and
// interleave (the upload is the 8-bit image alone).
//
// Output: three float4 per pixel, (r, g, b, 0), (dr/dx, dg/dx, db/dx, 0), (dr/dy, dg/dy, db/dy, 0),
// with channels in [0, 1] (value / 255: an IEEE division, as NumPy's float32 divide; no fast-math) and central
// differences 0.5 (f(x + 1) - f(x - 1)), zero on the image border (as prepare_image). C is the
// number of channels per pixel of the input: 1 (grey, replicated) or >= 3 (the first three).

__device__ __forceinline__ float3 mvs_px(const unsigned char* __restrict__ img, const long long i, const int C)
{
    const unsigned char* p = img + i * C;
    if (C < 3) {
        const float g = (float)p[0] / 255.0f;
        return make_float3(g, g, g);
    }
    return make_float3((float)p[0] / 255.0f, (float)p[1] / 255.0f,
                       (float)p[2] / 255.0f);
}

extern "C" __global__ void mvs_pack_view(const unsigned char* __restrict__ img, const int H, const int W,
                                         const int C, float4* __restrict__ out)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)H * W) return;
    const int y = (int)(i / W), x = (int)(i - (long long)y * W);
    const float3 f = mvs_px(img, i, C);
    float4 gx = make_float4(0.f, 0.f, 0.f, 0.f), gy = gx;
    if (x >= 1 && x <= W - 2) {
        const float3 a = mvs_px(img, i + 1, C), b = mvs_px(img, i - 1, C);
        gx = make_float4(0.5f * (a.x - b.x), 0.5f * (a.y - b.y), 0.5f * (a.z - b.z), 0.f);
    }
    if (y >= 1 && y <= H - 2) {
        const float3 a = mvs_px(img, i + W, C), b = mvs_px(img, i - W, C);
        gy = make_float4(0.5f * (a.x - b.x), 0.5f * (a.y - b.y), 0.5f * (a.z - b.z), 0.f);
    }
    out[3 * i] = make_float4(f.x, f.y, f.z, 0.f);
    out[3 * i + 1] = gx;
    out[3 * i + 2] = gy;
}
