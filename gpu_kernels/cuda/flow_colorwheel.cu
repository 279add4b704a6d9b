// Middlebury's flow colour coding on the device (Python side: gpu_kernels/flow/colorwheel.py).
//
// The same float64 arithmetic as the NumPy path, operation by operation, with the
// round-to-nearest intrinsics (__dmul_rn, __dadd_rn, ...), which the compiler never fuses into
// an FMA: the products, sums, quotients and square roots are IEEE-exact on both sides, so the
// bytes are those of the NumPy path wherever atan2 (the one libm function) rounds alike.
//
// FLOW_T: the flow's element type (float or double). Every kernel uses a grid-stride loop.

#ifndef FLOW_T
#define FLOW_T float
#endif

#ifdef GPULAB_EMU
// the test suite's CPU emulator (tests/cuda_emu, built with -ffp-contract=off): plain operations
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
#endif

#define CW_THREADS 256
#define CW_NCOLS 55

#define GRID_STRIDE(i, total) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
         i += (long long)blockDim.x * gridDim.x)

// a known vector: finite, below 1e9 in both components, and inside the mask where there is one
__device__ __forceinline__ bool cw_known(double a, double b, const unsigned char* valid, int has_valid, long long i) {
    return isfinite(a) && isfinite(b) && fabs(a) < 1e9 && fabs(b) < 1e9 && (!has_valid || valid[i] != 0);
}

// Per block, the largest u^2 + v^2 among known vectors (0 where there is none); the host takes
// the maximum of the blocks' and its square root (= the largest magnitude, sqrt being monotone
// and correctly rounded).
extern "C" __global__ void __launch_bounds__(CW_THREADS)
flow_cw_max_sq(const FLOW_T* __restrict__ u, const FLOW_T* __restrict__ v, const unsigned char* __restrict__ valid,
               int has_valid, long long n, double* __restrict__ block_max) {
    __shared__ double s[CW_THREADS];
    double m = 0.0;
    GRID_STRIDE(i, n) {
        double a = (double)u[i], b = (double)v[i];
        if (cw_known(a, b, valid, has_valid, i)) {
            double q = __dadd_rn(__dmul_rn(a, a), __dmul_rn(b, b));
            m = q > m ? q : m;
        }
    }
    s[threadIdx.x] = m;
    __syncthreads();
    for (int step = CW_THREADS / 2; step > 0; step >>= 1) {
        if ((int)threadIdx.x < step && s[threadIdx.x + step] > s[threadIdx.x])
            s[threadIdx.x] = s[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        block_max[blockIdx.x] = s[0];
}

// RGB(A) of every pixel. wheel: the 55 x 3 wheel / 255 (float64, row-major). scale: the
// normalising radius + machine epsilon. channels 3 (RGB) or 4 (RGBA: alpha where the mask is set
// and the quality is at least the threshold, else 0). Unknown vectors are black.
extern "C" __global__ void __launch_bounds__(CW_THREADS)
flow_cw_color(const FLOW_T* __restrict__ u, const FLOW_T* __restrict__ v, const unsigned char* __restrict__ valid,
              int has_valid, const float* __restrict__ quality, int has_quality, float threshold,
              const double* __restrict__ wheel, double scale, int channels, unsigned char alpha, long long n,
              unsigned char* __restrict__ out) {
    const double pi = 3.141592653589793;   // np.pi
    GRID_STRIDE(i, n) {
        double a = (double)u[i], b = (double)v[i];
        unsigned char* o = out + i * channels;
        if (channels == 4) {
            bool shown = (!has_valid || valid[i] != 0) && (!has_quality || quality[i] >= threshold);
            o[3] = shown ? alpha : (unsigned char)0;
        }
        if (!cw_known(a, b, valid, has_valid, i)) {
            o[0] = o[1] = o[2] = 0;
            continue;
        }
        double fu = __ddiv_rn(a, scale), fv = __ddiv_rn(b, scale);
        double r = __dsqrt_rn(__dadd_rn(__dmul_rn(fu, fu), __dmul_rn(fv, fv)));
        // (atan2(-fv, -fu) / pi + 1) / 2 * (ncols - 1)
        double fk = __dmul_rn(__ddiv_rn(__dadd_rn(__ddiv_rn(atan2(-fv, -fu), pi), 1.0), 2.0), (double)(CW_NCOLS - 1));
        double fl = floor(fk);
        int k0 = (int)fl;
        int k1 = (k0 + 1) % CW_NCOLS;
        double f = __dsub_rn(fk, fl);
        double g = __dsub_rn(1.0, f);
        for (int c = 0; c < 3; ++c) {
            double col = __dadd_rn(__dmul_rn(g, wheel[k0 * 3 + c]), __dmul_rn(f, wheel[k1 * 3 + c]));
            col = r <= 1.0 ? __dsub_rn(1.0, __dmul_rn(r, __dsub_rn(1.0, col))) : __dmul_rn(col, 0.75);
            o[c] = (unsigned char)(int)floor(__dmul_rn(255.0, col));
        }
    }
}
