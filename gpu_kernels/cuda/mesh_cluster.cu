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
