// Katz-Tal fuzzy memberships of several clusterings at once (gpu_kernels/mesh/cluster.py,
// fuzzy_cluster_many on a CUDA device): one thread per face f of one component's distance
// matrix D (n x n, row-major float32). The clusterings' representatives are concatenated in
// reps; clustering s owns reps[seg[s] .. seg[s+1]). For each clustering, as memberships():
//   P_j(f) = (1 / d_j) / sum_l (1 / d_l),  d_j = D[f, reps[j]],
// except that a face at distance <= 0 from a representative belongs to those at distance 0
// (equally). W = P^power (power 1: W = P) is what the representative update multiplies D with.
// P and W are n x ktot, row-major: one launch replaces the dozen array operations per
// clustering and iteration of the generic path (issue 20: a k edit's iterations).

extern "C" __global__ void mesh_memberships(const float* __restrict__ D, const long long n,
                                           const long long* __restrict__ reps,
                                           const int* __restrict__ seg, const int nseg,
                                           const int ktot, const float power,
                                           float* __restrict__ P, float* __restrict__ W)
{
    const long long f = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n) {
        return;
    }
    const float* row = D + f * n;
    float* prow = P + f * ktot;
    float* wrow = W + f * ktot;
    for (int s = 0; s < nseg; ++s) {
        const int a = seg[s];
        const int b = seg[s + 1];
        bool any_zero = false;
        for (int j = a; j < b; ++j) {
            any_zero = any_zero || !(row[reps[j]] > 0.0f);
        }
        float sum = 0.0f;
        for (int j = a; j < b; ++j) {
            const float d = row[reps[j]];
            const bool zero = !(d > 0.0f);
            sum += any_zero ? (zero ? 1.0f : 0.0f) : 1.0f / (zero ? 1.0f : d);
        }
        for (int j = a; j < b; ++j) {
            const float d = row[reps[j]];
            const bool zero = !(d > 0.0f);
            const float inv = any_zero ? (zero ? 1.0f : 0.0f) : 1.0f / (zero ? 1.0f : d);
            const float p = inv / sum;
            prow[j] = p;
            wrow[j] = power == 1.0f ? p : powf(p, power);
        }
    }
}

// The farthest-point order of a distance matrix (gpu_kernels/mesh/cluster.py, farthest_order on
// a CUDA device), in one launch of one block instead of two host round trips per representative.
// On entry mind holds the minimum distance of every face to the `have` representatives chosen
// so far (reps[0..have)); each step takes the face farthest from them (the first one on ties,
// as argmax), stops when that distance is not > 0 (every face is a representative's), and
// lowers mind by the new representative's row of D. Writes reps[have..], G[have..] and
// *count (the number of representatives at the end); mind is updated in place.
#define FAR_THREADS 1024
extern "C" __global__ void __launch_bounds__(FAR_THREADS)
mesh_farthest(const float* __restrict__ D, const long long n, float* __restrict__ mind,
              long long* __restrict__ reps, double* __restrict__ G, const int have, const int want,
              int* __restrict__ count)
{
    __shared__ float best_v[FAR_THREADS];
    __shared__ long long best_i[FAR_THREADS];
    const int t = threadIdx.x;
    int got = have;
    while (got < want) {
        float bv = -1.0f;
        long long bi = n;
        for (long long i = t; i < n; i += FAR_THREADS) {
            const float v = mind[i];
            if (v > bv) {  // i rises: the first maximum of this thread's share
                bv = v;
                bi = i;
            }
        }
        best_v[t] = bv;
        best_i[t] = bi;
        __syncthreads();
        for (int h = FAR_THREADS / 2; h > 0; h >>= 1) {
            if (t < h) {
                const float ov = best_v[t + h];
                const long long oi = best_i[t + h];
                if (ov > best_v[t] || (ov == best_v[t] && oi < best_i[t])) {
                    best_v[t] = ov;
                    best_i[t] = oi;
                }
            }
            __syncthreads();
        }
        const long long r = best_i[0];
        const float g = best_v[0];
        __syncthreads();
        if (!(g > 0.0f)) {
            break;
        }
        if (t == 0) {
            reps[got] = r;
            G[got] = (double)g;
        }
        const float* row = D + r * n;
        for (long long i = t; i < n; i += FAR_THREADS) {
            mind[i] = fminf(mind[i], row[i]);
        }
        ++got;
        __syncthreads();
    }
    if (t == 0) {
        *count = got;
    }
}

// The column argmins of C = D @ W (gpu_kernels/mesh/cluster.py, product_argmin on a full-resolution
// graph): the representative update of fuzzy_cluster_many without cuBLAS's SGEMM (16,998^2 x 38-53
// fp32: ~1.46 ms, ~0.8 TB/s) and without the strided argmin over its (n, k) output.
//
// Pass 1, mesh_colsum_partial_{32,64}: a block computes the column sums of a tile of CA_BM = 64
// rows f of D, BN = 32 or 64 columns j of W and one slice of the summation index i,
//   Cp[s, j, f] = sum_{i in slice s} D[f, i] W[i, j],
// 256 threads as 16 x 16, each a 4 x (BN/16) register tile; D and W are staged through shared
// memory in chunks of CA_BK = 32 values of i (the next chunk's loads in flight while the current
// one is multiplied). D is read once per column group (one group for k <= 64). Every sum runs over
// i in increasing order inside its slice, whatever the block's other columns: a column's result
// does not depend on which other columns share the launch. The slices (gridDim.z, `slice` values
// of i each, a multiple of CA_BK) give the GPU enough blocks at n ~ 17k; the partial sums are
// S * k * n floats (S = 4 at n = 17k: ~1.5% of D's bytes).
// Pass 2, mesh_colargmin_reduce: one block per column j adds the S partial sums of each f in slice
// order and keeps the first minimum (ties -> the lowest f, as argmin).
#define CA_BM 64
#define CA_BK 32
#define CA_THREADS 256

template <int BN>
__device__ __forceinline__ void colsum_tile(const float* __restrict__ D, const long long n,
                                            const float* __restrict__ W, const int k,
                                            const long long slice, float* __restrict__ Cp,
                                            float (*As)[CA_BK + 4], float (*Bs)[BN])
{
    constexpr int TN = BN / 16;                       // columns per thread: 2 or 4
    constexpr int DQ = CA_BM * CA_BK / CA_THREADS;    // D values each thread stages: 8
    constexpr int WQ = CA_BK * BN / CA_THREADS;       // W values each thread stages: 4 or 8
    const int t = threadIdx.x;
    const int tx = t & 15;                            // column group: columns tx*TN ..
    const int ty = t >> 4;                            // row group: rows ty*4 ..
    const long long f0 = (long long)blockIdx.x * CA_BM;
    const int c0 = blockIdx.y * BN;
    const long long i_begin = (long long)blockIdx.z * slice;
    long long i_end = i_begin + slice;
    if (i_end > n) {
        i_end = n;
    }
    // staging: D's value q of this thread is row (t >> 5) + 8 q, column t & 31 of the chunk (a warp
    // reads 128 contiguous bytes of one row); W's is row t / BN + (CA_THREADS / BN) q, column t % BN
    const int drow = t >> 5;
    const int dcol = t & 31;
    const int wrow = t / BN;
    const int wcol = t % BN;
    float acc[4][TN];
    for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < TN; ++c) {
            acc[r][c] = 0.0f;
        }
    }
    float dv[DQ];
    float wv[WQ];
    long long i0 = i_begin;
    if (i0 < i_end) {
        for (int q = 0; q < DQ; ++q) {
            const long long f = f0 + drow + 8 * q;
            const long long i = i0 + dcol;
            dv[q] = (f < n && i < i_end) ? D[f * n + i] : 0.0f;
        }
        for (int q = 0; q < WQ; ++q) {
            const long long i = i0 + wrow + (CA_THREADS / BN) * q;
            const int j = c0 + wcol;
            wv[q] = (i < i_end && j < k) ? W[i * k + j] : 0.0f;
        }
    }
    for (; i0 < i_end; i0 += CA_BK) {
        __syncthreads();  // the previous chunk's products are done with the shared tiles
        for (int q = 0; q < DQ; ++q) {
            As[drow + 8 * q][dcol] = dv[q];
        }
        for (int q = 0; q < WQ; ++q) {
            Bs[wrow + (CA_THREADS / BN) * q][wcol] = wv[q];
        }
        __syncthreads();
        const long long i1 = i0 + CA_BK;
        if (i1 < i_end) {  // the next chunk's loads, in flight during the products below
            for (int q = 0; q < DQ; ++q) {
                const long long f = f0 + drow + 8 * q;
                const long long i = i1 + dcol;
                dv[q] = (f < n && i < i_end) ? D[f * n + i] : 0.0f;
            }
            for (int q = 0; q < WQ; ++q) {
                const long long i = i1 + wrow + (CA_THREADS / BN) * q;
                const int j = c0 + wcol;
                wv[q] = (i < i_end && j < k) ? W[i * k + j] : 0.0f;
            }
        }
#pragma unroll
        for (int kk = 0; kk < CA_BK; kk += 4) {
            float4 a[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                a[r] = *reinterpret_cast<const float4*>(&As[ty * 4 + r][kk]);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                float b[TN];
                if (TN == 4) {
                    const float4 b4 = *reinterpret_cast<const float4*>(&Bs[kk + u][tx * TN]);
                    const float t4[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
                    for (int c = 0; c < TN; ++c) {
                        b[c] = t4[c];
                    }
                } else {
                    const float2 b2 = *reinterpret_cast<const float2*>(&Bs[kk + u][tx * TN]);
                    const float t2[2] = {b2.x, b2.y};
#pragma unroll
                    for (int c = 0; c < TN; ++c) {
                        b[c] = t2[c < 2 ? c : 1];
                    }
                }
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const float av = u == 0 ? a[r].x : (u == 1 ? a[r].y : (u == 2 ? a[r].z : a[r].w));
#pragma unroll
                    for (int c = 0; c < TN; ++c) {
                        acc[r][c] = fmaf(av, b[c], acc[r][c]);
                    }
                }
            }
        }
    }
    float* out = Cp + (long long)blockIdx.z * k * n;
    for (int c = 0; c < TN; ++c) {
        const int j = c0 + tx * TN + c;
        if (j >= k) {
            continue;
        }
        for (int r = 0; r < 4; ++r) {
            const long long f = f0 + ty * 4 + r;
            if (f < n) {
                out[(long long)j * n + f] = acc[r][c];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(CA_THREADS)
mesh_colsum_partial_64(const float* __restrict__ D, const long long n, const float* __restrict__ W,
                       const int k, const long long slice, float* __restrict__ Cp)
{
    __shared__ float4 As4[CA_BM][(CA_BK + 4) / 4];  // (float4: 16-byte aligned rows)
    __shared__ float4 Bs4[CA_BK][64 / 4];
    colsum_tile<64>(D, n, W, k, slice, Cp, reinterpret_cast<float (*)[CA_BK + 4]>(&As4[0][0]),
                    reinterpret_cast<float (*)[64]>(&Bs4[0][0]));
}

extern "C" __global__ void __launch_bounds__(CA_THREADS)
mesh_colsum_partial_32(const float* __restrict__ D, const long long n, const float* __restrict__ W,
                       const int k, const long long slice, float* __restrict__ Cp)
{
    __shared__ float4 As4[CA_BM][(CA_BK + 4) / 4];  // (float4: 16-byte aligned rows)
    __shared__ float4 Bs4[CA_BK][32 / 4];
    colsum_tile<32>(D, n, W, k, slice, Cp, reinterpret_cast<float (*)[CA_BK + 4]>(&As4[0][0]),
                    reinterpret_cast<float (*)[32]>(&Bs4[0][0]));
}

#define CR_THREADS 512
#define CR_UNROLL 4
extern "C" __global__ void __launch_bounds__(CR_THREADS)
mesh_colargmin_reduce(const float* __restrict__ Cp, const long long n, const int k, const int nslices,
                      long long* __restrict__ out)
{
    __shared__ float best_v[CR_THREADS];
    __shared__ long long best_i[CR_THREADS];
    const int t = threadIdx.x;
    const int j = blockIdx.x;
    float bv = 0.0f;
    long long bi = -1;  // none yet
    // CR_UNROLL rows per step, their loads in flight together, compared in increasing f
    for (long long f0 = t; f0 < n; f0 += (long long)CR_THREADS * CR_UNROLL) {
        float v[CR_UNROLL];
#pragma unroll
        for (int u = 0; u < CR_UNROLL; ++u) {
            v[u] = 0.0f;
        }
        for (int s = 0; s < nslices; ++s) {
            const float* col = Cp + ((long long)s * k + j) * n;
#pragma unroll
            for (int u = 0; u < CR_UNROLL; ++u) {
                const long long f = f0 + (long long)u * CR_THREADS;
                v[u] += f < n ? col[f] : 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < CR_UNROLL; ++u) {
            const long long f = f0 + (long long)u * CR_THREADS;
            if (f < n && (bi < 0 || v[u] < bv)) {  // f rises: the first minimum of this thread's share
                bv = v[u];
                bi = f;
            }
        }
    }
    best_v[t] = bv;
    best_i[t] = bi;
    __syncthreads();
    for (int h = CR_THREADS / 2; h > 0; h >>= 1) {
        if (t < h) {
            const float ov = best_v[t + h];
            const long long oi = best_i[t + h];
            if (oi >= 0 && (best_i[t] < 0 || ov < best_v[t] || (ov == best_v[t] && oi < best_i[t]))) {
                best_v[t] = ov;
                best_i[t] = oi;
            }
        }
        __syncthreads();
    }
    if (t == 0) {
        out[j] = best_i[0];
    }
}
