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
