// Region growing's priority queue on the device (gpu_kernels/mvs/grow.py, GPU path).
//
// Every pixel of the views growing together (one flat index p over their images) has a state
// (FREE, DONE, CLOSED) and at most one pending candidate, cand[p]: 0 for none, else a 32-bit key
// whose high 29 bits are the candidate's priority (the parent's confidence, as order-preserving
// float bits) and whose low 3 bits say where its start comes from: 0..3, the 4-neighbour parent
// in direction d (the child is parent + (DX[d], DY[d])), 4, a seed (depth seed_z[p]). Pushing a
// candidate is one atomicMax, so the best one wins whatever the order of the pushes.
//
// A batch is the B best candidates, by bucket: priorities are quantised into LEVELS levels over
// [lo, 1] (seeds in a level of their own above), every level above a threshold level T is
// taken whole and level T in a fixed order (block, thread, then the thread's pixels), so the
// batch is the same on every run and equal to the NumPy path's (grow.py mirrors this order).
//
//   mvs_select_count  per block of CHUNK pixels: a histogram of the candidates' levels, as
//                     suffix sums (bcum[b][l] = candidates at level >= l), and their sum over
//                     the blocks (gcum, one of two buffers by batch parity, zeroed a batch ahead);
//   mvs_select_take   every block finds T, its output offset (sums over the earlier blocks) and
//                     writes its items: pixel, reference row, (x, y), start (h, hs, ht: the
//                     parent's plane moved by one pixel, or the seed's depth), min_iter, origin
//                     code; and clears their candidates;
//   (mvs_grow_apply in mvs_optimize.cu optimises the batch and applies the results)
//   mvs_push          accepted pixels push their FREE 4-neighbours (priority: their confidence);
//                     a failed pixel with attempts left takes the best DONE neighbour other than
//                     the parent it failed from as its next candidate; one thread records the
//                     batch's figures in a small ring that the host reads without waiting.
//
// ctrl: [0] items in the batch, [1] T, [2] taken from level T, [3] candidates before the batch,
//       [4] samples accepted so far (mvs_grow_apply), [5] pixels tried so far, [6] batch number.

#define NT 256
#define KPT 16
#define CHUNK (NT * KPT)
#ifndef LEVELS
#define LEVELS 256
#endif
#define NCUM (LEVELS + 2)  // levels 0..LEVELS-1, seeds (LEVELS), and a zero (LEVELS + 1)
#define PER ((LEVELS + 32) / 32)  // levels per lane in the suffix scan

#define PX_FREE 0
#define PX_DONE 1
#define PX_CLOSED 2

__device__ __constant__ int DXC[4] = {1, -1, 0, 0};
__device__ __constant__ int DYC[4] = {0, 0, 1, -1};

__device__ __forceinline__ unsigned cand_key(const float f, const unsigned code) {
    const unsigned b = __float_as_uint(f);
    const unsigned o = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return (o & ~7u) | code;
}

__device__ __forceinline__ int cand_level(const unsigned c, const float lo, const float scale) {
    if ((c & 7u) == 4u) return LEVELS;
    const unsigned u = c & ~7u;
    const unsigned b = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
    const float x = (__uint_as_float(b) - lo) * scale;
    if (!(x > 0.f)) return 0;
    if (x >= (float)(LEVELS - 1)) return LEVELS - 1;
    return (int)x;
}

extern "C" __global__ void __launch_bounds__(NT)
mvs_select_count(const unsigned char* __restrict__ state, const unsigned* __restrict__ cand, const int P,
                 const float lo, const float scale, const int* __restrict__ ctrl, int* __restrict__ gcum,
                 int* __restrict__ bcum)
{
    __shared__ int hist[NCUM];
    const int tid = threadIdx.x;
    for (int i = tid; i < NCUM; i += NT) hist[i] = 0;
    __syncthreads();
    const int par = ctrl[6] & 1;
    const long long base = (long long)blockIdx.x * CHUNK;
    for (int k = 0; k < KPT; ++k) {
        const long long p = base + (long long)k * NT + tid;
        if (p < P && state[p] == PX_FREE) {
            const unsigned c = cand[p];
            if (c) atomicAdd(&hist[cand_level(c, lo, scale)], 1);
        }
    }
    __syncthreads();
    if (tid < 32) {
        // suffix sums over the LEVELS + 1 levels: lane j holds levels PER j .. PER j + PER - 1
        int loc[PER];
        int s = 0;
#pragma unroll
        for (int i = PER - 1; i >= 0; --i) {
            const int l = PER * tid + i;
            s += (l <= LEVELS) ? hist[l] : 0;
            loc[i] = s;
        }
        // add the totals of the lanes above (an inclusive suffix scan of s)
        int above = s;
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_down_sync(0xffffffffu, above, o);
            if (tid + o < 32) above += v;
        }
        const int add = above - s;
        __syncwarp();
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int l = PER * tid + i;
            if (l <= LEVELS) hist[l] = loc[i] + add;
        }
        if (tid == 0) hist[LEVELS + 1] = 0;
    }
    __syncthreads();
    for (int i = tid; i < NCUM; i += NT) {
        bcum[(long long)blockIdx.x * NCUM + i] = hist[i];
        if (hist[i]) atomicAdd(&gcum[par * NCUM + i], hist[i]);
    }
}

// exclusive block scan of two counts (NT threads)
__device__ __forceinline__ void block_scan2(int a, int e, int& ascan, int& escan, int* sh /* 2 * NT/32 */)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int ia = a, ie = e;
    for (int o = 1; o < 32; o <<= 1) {
        const int va = __shfl_up_sync(0xffffffffu, ia, o);
        const int ve = __shfl_up_sync(0xffffffffu, ie, o);
        if (lane >= o) { ia += va; ie += ve; }
    }
    if (lane == 31) { sh[warp] = ia; sh[NT / 32 + warp] = ie; }
    __syncthreads();
    int wa = 0, we = 0;
    for (int w = 0; w < warp; ++w) { wa += sh[w]; we += sh[NT / 32 + w]; }
    ascan = wa + ia - a;
    escan = we + ie - e;
}

extern "C" __global__ void __launch_bounds__(NT)
mvs_select_take(const unsigned char* __restrict__ state, unsigned* __restrict__ cand, const int P,
                const float lo, const float scale, const int B, int* __restrict__ ctrl,
                int* __restrict__ gcum, const int* __restrict__ bcum,
                const int* __restrict__ goffs, const int* __restrict__ gW, const int nref,
                const float* __restrict__ rh, const float* __restrict__ rhs, const float* __restrict__ rht,
                const float* __restrict__ seed_z, const int mi_seed, const int mi_grow,
                int* __restrict__ item_key, int* __restrict__ item_ref, int* __restrict__ item_xy,
                float* __restrict__ item_init, int* __restrict__ item_min_iter, int* __restrict__ item_code)
{
    __shared__ int sh[2 * NT / 32];
    __shared__ int red[2][NT];
    __shared__ int sT, sNeed, sN;
    const int tid = threadIdx.x;
    const int par = ctrl[6] & 1;
    const int* cum = gcum + par * NCUM;
    if (tid == 0) {
        const int navail = cum[0];
        int T = -1, need = 0, n = navail;
        if (navail > B) {
            T = LEVELS;
            while (cum[T] < B) --T;  // cum[T] >= B > cum[T + 1]
            need = B - cum[T + 1];
            n = B;
        }
        sT = T; sNeed = need; sN = n;
        if (blockIdx.x == 0) {
            ctrl[0] = n; ctrl[1] = T; ctrl[2] = need; ctrl[3] = navail; ctrl[5] += n;
        }
    }
    __syncthreads();
    const int T = sT, need = sNeed;
    // this block's offsets: the candidates taken by the blocks before it
    int sa = 0, se = 0;
    for (int b = tid; b < (int)blockIdx.x; b += NT) {
        const int* bc = bcum + (long long)b * NCUM;
        const int ab = bc[T + 1];
        sa += ab;
        se += (T >= 0) ? bc[T] - ab : 0;
    }
    red[0][tid] = sa;
    red[1][tid] = se;
    __syncthreads();
    for (int o = NT / 2; o > 0; o >>= 1) {
        if (tid < o) { red[0][tid] += red[0][tid + o]; red[1][tid] += red[1][tid + o]; }
        __syncthreads();
    }
    const int above_before = red[0][0], eq_before = red[1][0];
    if (blockIdx.x == 0) {  // the next batch's histogram starts from zero
        for (int i = tid; i < NCUM; i += NT) gcum[(par ^ 1) * NCUM + i] = 0;
    }
    if (sN == 0) return;  // uniform over the block
    const int out0 = above_before + min(need, eq_before);
    const int R = max(need - eq_before, 0);

    const long long base = (long long)blockIdx.x * CHUNK;
    int lv[KPT];
    int a = 0, e = 0;
#pragma unroll
    for (int k = 0; k < KPT; ++k) {
        const long long p = base + (long long)k * NT + tid;
        int l = -2;
        if (p < P && state[p] == PX_FREE) {
            const unsigned c = cand[p];
            if (c) l = cand_level(c, lo, scale);
        }
        lv[k] = l;
        a += l > T;
        e += (T >= 0 && l == T);
    }
    int ascan, escan;
    block_scan2(a, e, ascan, escan, sh);
    int pos = out0 + ascan + min(R, escan);
    int je = escan;
#pragma unroll
    for (int k = 0; k < KPT; ++k) {
        const int l = lv[k];
        bool take = l > T;
        if (!take && T >= 0 && l == T) { take = je < R; ++je; }
        if (!take) continue;
        const int p = (int)(base + (long long)k * NT + tid);
        const unsigned c = cand[p];
        const unsigned code = c & 7u;
        int lo_i = 0, hi_i = nref - 1;  // the reference: the last offset <= p
        while (lo_i < hi_i) {
            const int mid = (lo_i + hi_i + 1) >> 1;
            if (goffs[mid] <= p) lo_i = mid; else hi_i = mid - 1;
        }
        const int W = gW[lo_i];
        const int loc = p - goffs[lo_i];
        const int y = loc / W, x = loc - y * W;
        float h, hs, ht;
        int mi;
        if (code == 4u) {
            h = seed_z[p]; hs = 0.f; ht = 0.f; mi = mi_seed;
        } else {
            const int dx = DXC[code], dy = DYC[code];
            const long long pp = (long long)p - dx - (long long)dy * W;
            const float ph = rh[pp], phs = rhs[pp], pht = rht[pp];
            h = ph + (float)dx * phs + (float)dy * pht;
            hs = phs; ht = pht; mi = mi_grow;
        }
        cand[p] = 0u;
        item_key[pos] = p;
        item_ref[pos] = lo_i;
        item_xy[2 * pos] = x;
        item_xy[2 * pos + 1] = y;
        item_init[3 * pos] = h;
        item_init[3 * pos + 1] = hs;
        item_init[3 * pos + 2] = ht;
        item_min_iter[pos] = mi;
        item_code[pos] = (int)code;
        ++pos;
    }
}

extern "C" __global__ void __launch_bounds__(NT)
mvs_push(int* __restrict__ ctrl, const int* __restrict__ item_key, const int* __restrict__ item_ref,
         const int* __restrict__ item_code, const int* __restrict__ goffs, const int* __restrict__ gW,
         const int* __restrict__ gH, const unsigned char* __restrict__ state, const float* __restrict__ rconf,
         unsigned* __restrict__ cand, int* __restrict__ ring, const int ring_len, const int retry)
{
    const int i = blockIdx.x * NT + threadIdx.x;
    const int n = ctrl[0];
    if (i == 0) {
        const int b = ctrl[6];
        int* r = ring + 4 * (b % ring_len);
        r[0] = n; r[1] = ctrl[3]; r[2] = ctrl[4]; r[3] = b;
        ctrl[6] = b + 1;
    }
    if (i >= n) return;
    const int p = item_key[i];
    const int a = item_ref[i];
    const int W = gW[a], H = gH[a];
    const int loc = p - goffs[a];
    const int y = loc / W, x = loc - y * W;
    const unsigned char st = state[p];
    if (st == PX_DONE) {
        const unsigned kb = cand_key(rconf[p], 0u);
        for (int d = 0; d < 4; ++d) {
            const int nx = x + DXC[d], ny = y + DYC[d];
            if (nx < 0 || ny < 0 || nx >= W || ny >= H) continue;
            const int c = p + DXC[d] + DYC[d] * W;
            if (state[c] == PX_FREE) atomicMax(&cand[c], kb | (unsigned)d);
        }
    } else if (st == PX_FREE && retry) {
        const int code = item_code[i];
        unsigned best = 0u;
        for (int d = 0; d < 4; ++d) {
            if (d == code) continue;  // the parent it failed from
            const int nx = x - DXC[d], ny = y - DYC[d];
            if (nx < 0 || ny < 0 || nx >= W || ny >= H) continue;
            const int q = p - DXC[d] - DYC[d] * W;
            if (state[q] == PX_DONE) best = max(best, cand_key(rconf[q], (unsigned)d));
        }
        if (best) atomicMax(&cand[p], best);
    }
}

// The first states of the views growing together, in one launch (what textured_mask and
// _Group.first_state do view by view on the host's side): FREE where the pixel lies more than
// the window's radius inside its image (rad + 1 from the border), is inside the view's mask (if
// any) and its n x n RGB window is textured: the window variance of the channel means,
// mean(m2) - mean(m)^2 with m = (r + g + b) / 3 and m2 = (r^2 + g^2 + b^2) / 3 in float64, above
// thr = min_ref_std^2 (1 - 1e-3); else CLOSED. tex: pack_views' (pixels, 12) float32, the
// reference view a's pixels from pixel tex_ofs[a]. counts[0] += the FREE pixels (one atomic per
// warp), so the host needs no reduction (CuPy compiles one per size class: 1.5 s each, once per
// process and new number of views).
extern "C" __global__ void __launch_bounds__(NT)
mvs_grow_init(const float* __restrict__ tex, const long long* __restrict__ tex_ofs, const int* __restrict__ goffs,
              const int* __restrict__ gW, const int* __restrict__ gH, const int nref, const int P, const int rad,
              const double thr, const unsigned char* __restrict__ mask, const int has_mask,
              unsigned char* __restrict__ state, int* __restrict__ counts)
{
    const int p = blockIdx.x * NT + threadIdx.x;
    unsigned char st = PX_CLOSED;
    if (p < P) {
        int lo_i = 0, hi_i = nref - 1;  // the reference: the last offset <= p
        while (lo_i < hi_i) {
            const int mid = (lo_i + hi_i + 1) >> 1;
            if (goffs[mid] <= p) lo_i = mid; else hi_i = mid - 1;
        }
        const int W = gW[lo_i], H = gH[lo_i];
        const int loc = p - goffs[lo_i];
        const int y = loc / W, x = loc - y * W;
        const int m = rad + 1;
        if (H > 2 * m && W > 2 * m && x >= m && x < W - m && y >= m && y < H - m && (!has_mask || mask[p])) {
            double s = 0.0, s2 = 0.0;
            const long long row0 = tex_ofs[lo_i] + (long long)(y - rad) * W + (x - rad);
            for (int j = 0; j <= 2 * rad; ++j) {
                const float* t = tex + 12 * (row0 + (long long)j * W);
                for (int i = 0; i <= 2 * rad; ++i, t += 12) {
                    const double r = (double)t[0], g = (double)t[1], b = (double)t[2];
                    s += (r + g + b) / 3.0;
                    s2 += (r * r + g * g + b * b) / 3.0;
                }
            }
            const double n = (double)((2 * rad + 1) * (2 * rad + 1));
            const double mean = s / n;
            if (s2 / n - mean * mean > thr) st = PX_FREE;
        }
        state[p] = st;
    }
    const unsigned free_lanes = __ballot_sync(0xffffffffu, st == PX_FREE);
    if ((threadIdx.x & 31) == 0 && free_lanes) atomicAdd(&counts[0], __popc(free_lanes));
}

// counts[1] += the seeds (pixel keys) whose pixel is FREE
extern "C" __global__ void __launch_bounds__(NT)
mvs_count_seeds(const long long* __restrict__ keys, const int n, const unsigned char* __restrict__ state,
                int* __restrict__ counts)
{
    const int i = blockIdx.x * NT + threadIdx.x;
    if (i < n && state[keys[i]] == PX_FREE) atomicAdd(&counts[1], 1);
}

// counts[a] += the finite depths of reference a (its pixels: [offs[a], offs[a + 1]), offs[nref] =
// P): each thread 16 consecutive pixels, one atomic per view it meets (the samples per view that
// the maps' download would otherwise count on the host)
extern "C" __global__ void __launch_bounds__(NT)
mvs_count_samples(const float* __restrict__ depth, const int P, const int* __restrict__ offs, const int nref,
                  int* __restrict__ counts)
{
    const long long p0 = ((long long)blockIdx.x * NT + threadIdx.x) * 16;
    if (p0 >= P) return;
    const int p1 = (int)min((long long)P, p0 + 16);
    int a = 0;
    while (a + 1 < nref && offs[a + 1] <= p0) ++a;
    int c = 0;
    for (int p = (int)p0; p < p1; ++p) {
        while (a + 1 < nref && offs[a + 1] <= p) {
            if (c) atomicAdd(&counts[a], c);
            c = 0;
            ++a;
        }
        c += isfinite(depth[p]) ? 1 : 0;
    }
    if (c) atomicAdd(&counts[a], c);
}
