// Run gpu_kernels' CUDA C kernels on the CPU, for the tests on machines without a GPU.
//
// Force-included (g++ -include) before a gpu_kernels/cuda/*.cu source by tests/cuda_emu.
// Blocks run one after another. In a kernel that can reach a barrier or a warp collective
// (tests/cuda_emu finds them in the source) every CUDA thread of the block is a fiber on its
// own stack, and a scheduler on the host thread runs them:
//   * __syncthreads (and _or/_and/_count) releases once every thread of the block that has
//     not returned waits at it (an exited thread no longer counts, as on the GPU);
//   * a warp collective (__shfl*_sync, __ballot_sync, __any/__all_sync, __syncwarp) releases
//     once every live lane named in its mask has reached one, so sub-warp groups that loop
//     a different number of times (masks of 8 or 16 lanes) work as on the GPU;
//   * when nothing can run and nothing can be released, the launch fails with "deadlock"
//     and says where the threads wait (a barrier in divergent code, say).
// Other kernels run every thread to completion in turn, with no fibers. Blocks, and threads
// within a block, run in a shuffled order when the driver passes a seed (the default: CUDA
// promises no order, so a result that depends on it is a bug the emulator should show).
// Static __shared__ arrays are function-local statics (one copy, used by the blocks in
// turn, as shared memory is); dynamic shared memory (extern __shared__) is one buffer,
// filled with 0xff bytes before each block so that a read of memory the block never wrote
// shows up. __constant__ variables are ordinary globals (the driver finds them by name for
// get_global). Atomics are plain read-modify-writes: fibers never preempt each other.
// Errors are reported to the driver (emu_error), not by aborting the test process. Inline
// PTX is not C++: the driver turns the few instructions it knows (f16 <-> f32 conversions)
// into calls of emu:: functions.
#pragma once
#include <math.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector>

#define GPULAB_EMU 1

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

#define EMU_VEC2(T, N) \
    struct N##2 { T x, y; }; \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define EMU_VEC3(T, N) \
    struct N##3 { T x, y, z; }; \
    inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define EMU_VEC4(T, N, A) \
    struct alignas(A) N##4 { T x, y, z, w; }; \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define EMU_VEC(T, N, A4) EMU_VEC2(T, N) EMU_VEC3(T, N) EMU_VEC4(T, N, A4)
EMU_VEC(float, float, 16)
EMU_VEC(double, double, 16)
EMU_VEC(int, int, 16)
EMU_VEC(unsigned int, uint, 16)
EMU_VEC(short, short, 8)
EMU_VEC(unsigned short, ushort, 8)
EMU_VEC(unsigned char, uchar, 4)
EMU_VEC(signed char, char, 4)
EMU_VEC(long long, longlong, 16)
EMU_VEC(unsigned long long, ulonglong, 16)
#undef EMU_VEC
#undef EMU_VEC2
#undef EMU_VEC3
#undef EMU_VEC4

namespace emu {
struct Error {
    const char* what;
};

enum State { RUN, AT_BARRIER, AT_WARP, DONE };
enum Op { SYNC, B_OR, B_AND, B_COUNT, W_IDX, W_UP, W_DOWN, W_XOR, W_BALLOT, W_ANY, W_ALL, W_SYNC };

struct Fiber {
    ucontext_t ctx;
    jmp_buf jb;
    char* stack = nullptr;
    uint3 tid{0, 0, 0};
    unsigned lin = 0;
    State st = DONE;
    bool started = false;
    int op = SYNC;
    unsigned mask = 0;
    int arg = 0, width = 32;
    uint64_t val = 0, res = 0;
};

inline uint3 g_tid{0, 0, 0}, g_bid{0, 0, 0};
inline dim3 g_bdim{1, 1, 1}, g_gdim{1, 1, 1};
inline Fiber* g_cur = nullptr;
inline jmp_buf g_sched_jb;
inline std::vector<Fiber*> g_pool;
inline std::vector<unsigned> g_torder;  // the order the threads of a block are run or resumed in
inline void (*g_body)(void*) = nullptr;
inline void* g_body_arg = nullptr;
inline char g_err[2048];
constexpr size_t STACK = 512 * 1024;
constexpr size_t DYN_SMEM = 256 * 1024;
alignas(16) inline unsigned char g_dyn_smem[DYN_SMEM];

inline void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
}

__attribute__((noreturn)) inline void trampoline() {
    g_body(g_body_arg);
    g_cur->st = DONE;
    _longjmp(g_sched_jb, 1);
}

// run f until it blocks or returns
__attribute__((noinline)) inline void resume(Fiber* f) {
    g_cur = f;
    g_tid = f->tid;
    if (_setjmp(g_sched_jb) == 0) {
        if (!f->started) {
            f->started = true;
            setcontext(&f->ctx);
        }
        _longjmp(f->jb, 1);
    }
    g_cur = nullptr;
}

// a collective: park the calling fiber, return its result once released
inline uint64_t wait(State st, int op, uint64_t val, unsigned mask = 0, int arg = 0, int width = 32) {
    Fiber* f = g_cur;
    if (f == nullptr) throw Error{"a barrier or warp collective in a kernel the emulator runs without fibers"};
    f->st = st;
    f->op = op;
    f->val = val;
    f->mask = mask;
    f->arg = arg;
    f->width = width;
    if (_setjmp(f->jb) == 0) _longjmp(g_sched_jb, 1);
    return f->res;
}

inline void ensure_pool(unsigned nt) {
    while (g_pool.size() < nt) {
        Fiber* f = new Fiber();
        void* mem = mmap(nullptr, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED) throw Error{"cannot map a fiber stack"};
        f->stack = static_cast<char*>(mem);
        getcontext(&f->ctx);
        g_pool.push_back(f);
    }
}

// release the warp collectives whose lanes have all arrived; true if any was released
inline bool release_warps(unsigned nt) {
    bool any = false;
    for (unsigned w0 = 0; w0 < nt; w0 += 32) {
        const unsigned nl = std::min(32u, nt - w0);
        Fiber** L = &g_pool[w0];
        unsigned at = 0, live = 0;
        for (unsigned l = 0; l < nl; ++l) {
            if (L[l]->st == AT_WARP) at |= 1u << l;
            if (L[l]->st != DONE) live |= 1u << l;
        }
        unsigned ready = 0;
        for (unsigned l = 0; l < nl; ++l) {
            if (!(at >> l & 1u)) continue;
            const unsigned group = (L[l]->mask | (1u << l)) & live;
            if ((group & at) != group) continue;
            bool same = true;
            for (unsigned k = 0; k < nl; ++k)
                if ((group >> k & 1u) && L[k]->op != L[l]->op) same = false;
            if (!same) {
                fail("lanes %u..%u of warp %u reach different warp collectives together", w0, w0 + nl - 1, w0 / 32);
                throw Error{g_err};
            }
            ready |= 1u << l;
        }
        // results first (from the values as they are), then release
        for (unsigned l = 0; l < nl; ++l) {
            if (!(ready >> l & 1u)) continue;
            Fiber* f = L[l];
            const unsigned group = (f->mask | (1u << l)) & live;
            const unsigned w = (unsigned)(f->width > 0 && f->width <= 32 ? f->width : 32);
            const unsigned seg = l / w * w;
            int src = -1;
            switch (f->op) {
                case W_IDX: src = (int)(seg + ((unsigned)f->arg % w)); break;
                case W_UP: src = (l - seg) >= (unsigned)f->arg ? (int)(l - f->arg) : (int)l; break;
                case W_DOWN: src = (l - seg) + (unsigned)f->arg < w ? (int)(l + f->arg) : (int)l; break;
                case W_XOR: {
                    unsigned s = l ^ (unsigned)f->arg;
                    src = s < seg + w ? (int)s : (int)l;
                    break;
                }
                default: break;
            }
            if (src >= 0) {
                // a lane that does not take part gives nothing defined on the GPU: own value
                f->res = (src < (int)nl && (group >> src & 1u)) ? L[src]->val : f->val;
            } else {
                unsigned bits = 0;
                for (unsigned k = 0; k < nl; ++k)
                    if ((group >> k & 1u) && L[k]->val) bits |= 1u << k;
                if (f->op == W_BALLOT) f->res = bits;
                else if (f->op == W_ANY) f->res = bits != 0;
                else if (f->op == W_ALL) f->res = bits == group;
                else f->res = 0;
            }
        }
        for (unsigned l = 0; l < nl; ++l)
            if (ready >> l & 1u) L[l]->st = RUN;
        any |= ready != 0;
    }
    return any;
}

inline void run_block_fibers(unsigned nt) {
    for (unsigned t = 0; t < nt; ++t) {
        Fiber* f = g_pool[t];
        f->tid = uint3{t % g_bdim.x, (t / g_bdim.x) % g_bdim.y, t / (g_bdim.x * g_bdim.y)};
        f->lin = t;
        f->st = RUN;
        f->started = false;
        f->ctx.uc_stack.ss_sp = f->stack;
        f->ctx.uc_stack.ss_size = STACK;
        f->ctx.uc_link = nullptr;
        makecontext(&f->ctx, (void (*)())trampoline, 0);
    }
    while (true) {
        for (unsigned i = 0; i < nt; ++i) {
            Fiber* f = g_pool[g_torder[i]];
            if (f->st == RUN) resume(f);
        }
        if (release_warps(nt)) continue;
        unsigned live = 0, at_bar = 0;
        for (unsigned t = 0; t < nt; ++t) {
            live += g_pool[t]->st != DONE;
            at_bar += g_pool[t]->st == AT_BARRIER;
        }
        if (live == 0) return;
        if (at_bar == live) {
            int op = -1;
            uint64_t r_or = 0, r_and = 1, r_count = 0;
            for (unsigned t = 0; t < nt; ++t) {
                Fiber* f = g_pool[t];
                if (f->st != AT_BARRIER) continue;
                if (op < 0) op = f->op;
                if (f->op != op) {
                    fail("block (%u,%u,%u): threads wait at different kinds of __syncthreads", g_bid.x, g_bid.y, g_bid.z);
                    throw Error{g_err};
                }
                r_or |= f->val != 0;
                r_and &= f->val != 0;
                r_count += f->val != 0;
            }
            for (unsigned t = 0; t < nt; ++t) {
                Fiber* f = g_pool[t];
                if (f->st != AT_BARRIER) continue;
                f->res = op == B_OR ? r_or : op == B_AND ? r_and : op == B_COUNT ? r_count : 0;
                f->st = RUN;
            }
            continue;
        }
        unsigned first_bar = nt, first_warp = nt;
        for (unsigned t = 0; t < nt; ++t) {
            if (g_pool[t]->st == AT_BARRIER && first_bar == nt) first_bar = t;
            if (g_pool[t]->st == AT_WARP && first_warp == nt) first_warp = t;
        }
        fail("deadlock in block (%u,%u,%u): %u of %u live threads wait at __syncthreads (first: thread %u), "
             "the others at a warp collective whose lanes never all arrive (first: thread %u)",
             g_bid.x, g_bid.y, g_bid.z, at_bar, live, first_bar, first_warp);
        throw Error{g_err};
    }
}

// a permutation of 0..n-1 from seed (identity for seed 0)
inline void shuffled(std::vector<unsigned long long>& v, unsigned long long n, unsigned long long& seed) {
    v.resize(n);
    for (unsigned long long i = 0; i < n; ++i) v[i] = i;
    if (!seed) return;
    for (unsigned long long i = n; i > 1; --i) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::swap(v[i - 1], v[seed % i]);
    }
}

// one kernel launch; returns 0, or 1 with the reason in g_err. With a seed, the blocks run in
// a shuffled order and the threads of a block are scheduled in one (CUDA promises no order:
// a kernel whose result depends on it shows up)
template <typename F>
int launch(dim3 grid, dim3 block, unsigned long long dyn_smem, bool fibers, unsigned long long seed, F& body) {
    g_err[0] = 0;
    g_gdim = grid;
    g_bdim = block;
    const unsigned nt = block.x * block.y * block.z;
    if (dyn_smem > DYN_SMEM) {
        fail("%llu bytes of dynamic shared memory: the emulator holds %zu", dyn_smem, DYN_SMEM);
        return 1;
    }
    g_body = [](void* p) { (*static_cast<F*>(p))(); };
    g_body_arg = &body;
    try {
        if (fibers) ensure_pool(nt);
        const unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z;
        std::vector<unsigned long long> border, torder;
        if (nb > (1ull << 24)) seed = 0;  // in order: no permutation table that large
        shuffled(border, nb, seed);
        shuffled(torder, nt, seed);
        g_torder.assign(torder.begin(), torder.end());
        for (unsigned long long b = 0; b < nb; ++b) {
            const unsigned long long q = border[b];
            g_bid = uint3{(unsigned)(q % grid.x), (unsigned)(q / grid.x % grid.y), (unsigned)(q / grid.x / grid.y)};
            if (dyn_smem) std::memset(g_dyn_smem, 0xff, dyn_smem);
            if (fibers) {
                run_block_fibers(nt);
                continue;
            }
            for (unsigned i = 0; i < nt; ++i) {
                const unsigned t = g_torder[i];
                g_tid = uint3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
                body();
            }
        }
    } catch (const Error& e) {
        if (e.what != g_err) std::snprintf(g_err, sizeof g_err, "%s", e.what);
        g_cur = nullptr;
        return 1;
    }
    return 0;
}

// half precision as the PTX cvt instructions do it (round to nearest even)
inline unsigned short f32_to_f16(float v) {
    _Float16 h = (_Float16)v;
    unsigned short b;
    std::memcpy(&b, &h, 2);
    return b;
}
inline float f16_to_f32(unsigned short b) {
    _Float16 h;
    std::memcpy(&h, &b, 2);
    return (float)h;
}

template <typename T>
inline uint64_t bits_of(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles of at most 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}
}  // namespace emu

#define threadIdx (emu::g_tid)
#define blockIdx (emu::g_bid)
#define blockDim (emu::g_bdim)
#define gridDim (emu::g_gdim)
#define warpSize 32
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __constant__
#define __managed__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

// ------------------------------------------------------------------ barriers and warps
inline void __syncthreads() { emu::wait(emu::AT_BARRIER, emu::SYNC, 0); }
inline int __syncthreads_or(int p) { return (int)emu::wait(emu::AT_BARRIER, emu::B_OR, p != 0); }
inline int __syncthreads_and(int p) { return (int)emu::wait(emu::AT_BARRIER, emu::B_AND, p != 0); }
inline int __syncthreads_count(int p) { return (int)emu::wait(emu::AT_BARRIER, emu::B_COUNT, p != 0); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::wait(emu::AT_WARP, emu::W_SYNC, 0, mask); }
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return emu::from_bits<T>(emu::wait(emu::AT_WARP, emu::W_IDX, emu::bits_of(v), mask, src, width));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return emu::from_bits<T>(emu::wait(emu::AT_WARP, emu::W_UP, emu::bits_of(v), mask, (int)d, width));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return emu::from_bits<T>(emu::wait(emu::AT_WARP, emu::W_DOWN, emu::bits_of(v), mask, (int)d, width));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    return emu::from_bits<T>(emu::wait(emu::AT_WARP, emu::W_XOR, emu::bits_of(v), mask, lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int p) { return (unsigned)emu::wait(emu::AT_WARP, emu::W_BALLOT, p != 0, mask); }
inline int __any_sync(unsigned mask, int p) { return (int)emu::wait(emu::AT_WARP, emu::W_ANY, p != 0, mask); }
inline int __all_sync(unsigned mask, int p) { return (int)emu::wait(emu::AT_WARP, emu::W_ALL, p != 0, mask); }
inline unsigned __activemask() { return 0xffffffffu; }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}

// ------------------------------------------------------------------ atomics (no preemption)
template <typename T> inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <typename T> inline T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <typename T> inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <typename T> inline T atomicMax(T* p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <typename T> inline T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <typename T> inline T atomicCAS(T* p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
template <typename T> inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <typename T> inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <typename T> inline T atomicXor(T* p, T v) { T o = *p; *p = o ^ v; return o; }
inline unsigned atomicInc(unsigned* p, unsigned v) { unsigned o = *p; *p = o >= v ? 0 : o + 1; return o; }

// ------------------------------------------------------------------ intrinsics
template <typename T> inline T __ldg(const T* p) { return *p; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float a) { return a < 0.f ? 0.f : (a > 1.f ? 1.f : a); }
inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }
inline double rsqrt(double a) { return 1.0 / sqrt(a); }
inline float __expf(float a) { return expf(a); }
inline float __logf(float a) { return logf(a); }
inline float __log2f(float a) { return log2f(a); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float a) { return sinf(a); }
inline float __cosf(float a) { return cosf(a); }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float exp10f(float a) { return powf(10.0f, a); }
inline int __float2int_rd(float a) { return (int)floorf(a); }
inline int __float2int_ru(float a) { return (int)ceilf(a); }
inline int __float2int_rn(float a) { return (int)nearbyintf(a); }
inline int __float2int_rz(float a) { return (int)a; }
inline unsigned __float2uint_rn(float a) { return (unsigned)nearbyintf(a); }
inline float __int2float_rn(int a) { return (float)a; }
inline float __uint2float_rn(unsigned a) { return (float)a; }
inline int __popc(unsigned a) { return __builtin_popcount(a); }
inline int __popcll(unsigned long long a) { return __builtin_popcountll(a); }
inline int __clz(int a) { return a == 0 ? 32 : __builtin_clz((unsigned)a); }
inline int __clzll(long long a) { return a == 0 ? 64 : __builtin_clzll((unsigned long long)a); }
inline int __ffs(int a) { return __builtin_ffs(a); }
inline int __ffsll(long long a) { return __builtin_ffsll(a); }
inline unsigned __brev(unsigned a) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
    return r;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
// DPX (sm_90): min/max of a sum, emulated exactly
inline int __viaddmin_s32(int a, int b, int c) { return min(a + b, c); }
inline int __viaddmax_s32(int a, int b, int c) { return max(a + b, c); }
inline int __vimin_s32(int a, int b) { return min(a, b); }
inline int __vimax_s32(int a, int b) { return max(a, b); }
inline int __vimin3_s32(int a, int b, int c) { return min(min(a, b), c); }
inline int __vimax3_s32(int a, int b, int c) { return max(max(a, b), c); }
