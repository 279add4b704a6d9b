// A host emulator for the CUDA kernels of gpu_kernels/cuda/imseg_*.cu (tests only).
//
// Every CUDA thread of a block is a std::thread; the blocks of a grid run one after another,
// so `__shared__` (a function-local static here) is private to the running block.
// __syncthreads is a std::barrier; a thread that returns early drops out of it, as on the
// GPU. Atomics are the compiler's __atomic builtins. No warp intrinsics, no dynamic shared
// memory. Data races behave as on any weakly ordered machine: the emulator exercises the
// lock-free union-find concurrently for real.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#define IMSEG_EMU 1
#define __global__ __attribute__((used))
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __constant__
#define __launch_bounds__(...)

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};

namespace emu {
inline thread_local uint3 tid;
inline thread_local uint3 bid;
inline dim3 bdim, gdim;
inline std::barrier<>* bar = nullptr;

// One host thread per CUDA thread of a block, created once per launch; the threads walk the
// grid's blocks together. Each block gets a fresh __syncthreads barrier that a thread leaves
// when its body returns (as an exited CUDA thread does); a second barrier ends the block.
template <class F>
void launch(dim3 g, dim3 b, F&& body) {
    gdim = g;
    bdim = b;
    const unsigned nt = b.x * b.y * b.z;
    const unsigned long long nblocks = (unsigned long long)g.x * g.y * g.z;
    if (nblocks == 0 || nt == 0) return;
    std::optional<std::barrier<>> sync_bar;
    sync_bar.emplace((std::ptrdiff_t)nt);
    bar = &*sync_bar;
    unsigned long long cur = 0;
    auto next_block = [&]() noexcept {
        ++cur;
        sync_bar.emplace((std::ptrdiff_t)nt);
        bar = &*sync_bar;
    };
    std::barrier<decltype(next_block)> end_bar((std::ptrdiff_t)nt, next_block);
    std::vector<std::thread> ts;
    ts.reserve(nt);
    for (unsigned t = 0; t < nt; ++t) {
        ts.emplace_back([&, t]() {
            tid = uint3{t % b.x, (t / b.x) % b.y, t / (b.x * b.y)};
            while (true) {
                unsigned long long blk = cur;
                if (blk >= nblocks) break;
                bid = uint3{(unsigned)(blk % g.x), (unsigned)((blk / g.x) % g.y), (unsigned)(blk / ((unsigned long long)g.x * g.y))};
                body();
                bar->arrive_and_drop();
                end_bar.arrive_and_wait();
            }
        });
    }
    for (auto& th : ts) th.join();
    bar = nullptr;
}
}  // namespace emu

#define threadIdx emu::tid
#define blockIdx emu::bid
#define blockDim emu::bdim
#define gridDim emu::gdim

inline void __syncthreads() { emu::bar->arrive_and_wait(); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <class T>
inline T atomicAdd(T* p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline float atomicAdd(float* p, float v) {
    float old;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    float desired;
    do {
        desired = old + v;
    } while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
inline double atomicAdd(double* p, double v) {
    double old;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    double desired;
    do {
        desired = old + v;
    } while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
template <class T>
inline T atomicMin(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class T>
inline T atomicMax(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class T>
inline T atomicCAS(T* p, T expected, T desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}
template <class T>
inline T atomicExch(T* p, T v) {
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}

inline unsigned int __float_as_uint(float f) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float __uint_as_float(unsigned int u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
template <class T>
inline T __ldg(const T* p) {
    return *p;
}
