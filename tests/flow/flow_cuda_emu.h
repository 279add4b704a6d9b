// Run CUDA C kernels on the CPU, for tests on machines without a GPU.
//
// Force-included (g++ -include) before a gpu_kernels/cuda/*.cu source. Every CUDA thread of
// a block is a ucontext fiber; __syncthreads() switches back to a round-robin scheduler, so
// a barrier is reached when every fiber of the block has yielded once. Blocks run one after
// another. Static __shared__ arrays become function-local statics (one copy, reused by the
// blocks in turn, as shared memory is). Atomics are plain read-modify-writes (fibers never
// preempt each other). Only what gpu_kernels' kernels use is provided.
#pragma once
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ucontext.h>
#include <vector>

struct dim3 {
    unsigned x, y, z;
};

namespace emu {
struct Fiber {
    ucontext_t ctx;
    dim3 tid;
    bool done;
    std::vector<char> stack;
};
inline dim3 g_grid{1, 1, 1}, g_block{1, 1, 1}, g_bid{0, 0, 0}, g_tid{0, 0, 0};
inline ucontext_t g_sched;
inline Fiber* g_cur = nullptr;
inline void (*g_body)(void*) = nullptr;
inline void* g_body_arg = nullptr;
inline long g_barriers = 0;

inline void trampoline() {
    g_body(g_body_arg);
    g_cur->done = true;  // uc_link returns to the scheduler
}

template <typename F>
void run_grid(dim3 grid, dim3 block, F& body) {
    g_grid = grid;
    g_block = block;
    g_body = [](void* p) { (*static_cast<F*>(p))(); };
    g_body_arg = &body;
    const unsigned nt = block.x * block.y * block.z;
    std::vector<Fiber> fibers(nt);
    for (auto& f : fibers) f.stack.resize(256 * 1024);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                g_bid = dim3{bx, by, bz};
                for (unsigned t = 0; t < nt; ++t) {
                    Fiber& f = fibers[t];
                    f.tid = dim3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
                    f.done = false;
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = f.stack.data();
                    f.ctx.uc_stack.ss_size = f.stack.size();
                    f.ctx.uc_link = &g_sched;
                    makecontext(&f.ctx, trampoline, 0);
                }
                bool running = true;
                while (running) {
                    running = false;
                    for (unsigned t = 0; t < nt; ++t) {
                        Fiber& f = fibers[t];
                        if (f.done) continue;
                        g_cur = &f;
                        g_tid = f.tid;
                        swapcontext(&g_sched, &f.ctx);
                        if (!f.done) running = true;
                    }
                }
            }
}
// kernels without barriers: every thread runs to completion in turn, no fibers
template <typename F>
void run_grid_nosync(dim3 grid, dim3 block, F& body) {
    g_grid = grid;
    g_block = block;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                g_bid = dim3{bx, by, bz};
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx) {
                            g_tid = dim3{tx, ty, tz};
                            body();
                        }
            }
}
}  // namespace emu

#define threadIdx (emu::g_tid)
#define blockIdx (emu::g_bid)
#define blockDim (emu::g_block)
#define gridDim (emu::g_grid)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __constant__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

inline void __syncthreads() {
    if (emu::g_cur == nullptr) { std::fprintf(stderr, "emulator: __syncthreads in a kernel run without fibers\n"); std::abort(); }
    ++emu::g_barriers;
    swapcontext(&emu::g_cur->ctx, &emu::g_sched);
}
inline int __syncthreads_or(int p) {
    // a barrier that also ORs a predicate over the block
    static int acc = 0;
    static long epoch = -1;
    if (epoch != emu::g_barriers) { epoch = emu::g_barriers; acc = 0; }
    acc |= (p != 0);
    __syncthreads();
    int r = acc;
    __syncthreads();
    return r;
}

template <typename T> inline T __ldg(const T* p) { return *p; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float a) { return a < 0.f ? 0.f : (a > 1.f ? 1.f : a); }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
inline int __float2int_rd(float a) { return (int)std::floor(a); }
inline int __float2int_rn(float a) { return (int)std::nearbyint(a); }
inline float __int2float_rn(int a) { return (float)a; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline float atomicAdd(float* p, float v) { float o = *p; *p = o + v; return o; }
inline int atomicAdd(int* p, int v) { int o = *p; *p = o + v; return o; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline int atomicMax(int* p, int v) { int o = *p; if (v > o) *p = v; return o; }
inline int atomicMin(int* p, int v) { int o = *p; if (v < o) *p = v; return o; }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
    unsigned long long o = *p; if (v > o) *p = v; return o;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
