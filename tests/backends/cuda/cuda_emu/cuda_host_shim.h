// Compile CUDA kernels as plain C++ and run them on the CPU, for tests.
//
// Every CUDA thread of a block is one std::thread; blocks of a grid run one
// after another. __syncthreads is a barrier that exited threads leave, warp
// shuffles go through a per-warp exchange buffer, and dynamic shared memory is
// filled with a poison pattern before each launch so that reads of unwritten
// shared memory show up as wrong results. Inline PTX is not available: kernels
// guard it with __CUDA_ARCH__ and provide a portable twin.
#pragma once
#define CUZK_HOST_EMU 1

#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __constant__
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__ __restrict

struct uint2 {
    unsigned x, y;
};
struct uint3 {
    unsigned x, y, z;
};
struct uint4 {
    unsigned x, y, z, w;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

// A barrier whose party count drops as threads exit the kernel.
struct cuzk_emu_barrier {
    std::mutex m;
    std::condition_variable cv;
    int expected = 0, arrived = 0;
    unsigned long long gen = 0;
    void reset(int n) {
        std::lock_guard<std::mutex> l(m);
        expected = n;
        arrived = 0;
    }
    void release_locked() {
        arrived = 0;
        gen++;
        cv.notify_all();
    }
    void arrive_and_wait() {
        std::unique_lock<std::mutex> l(m);
        unsigned long long g = gen;
        if (++arrived == expected) {
            release_locked();
        } else {
            cv.wait(l, [&] { return gen != g; });
        }
    }
    void drop() {
        std::lock_guard<std::mutex> l(m);
        expected--;
        if (arrived > 0 && arrived == expected) release_locked();
    }
};

inline cuzk_emu_barrier cuzk_emu_block_bar;
inline std::vector<cuzk_emu_barrier>* cuzk_emu_warp_bars = nullptr;
inline std::vector<unsigned long long> cuzk_emu_xbuf;
inline std::vector<unsigned char> cuzk_emu_smem;

inline unsigned cuzk_emu_tid() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

inline void __syncthreads() { cuzk_emu_block_bar.arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
    (*cuzk_emu_warp_bars)[cuzk_emu_tid() / 32].arrive_and_wait();
}

template <class T, class F>
inline T cuzk_emu_exchange(T v, F src) {
    static_assert(sizeof(T) <= 8, "shuffle of at most 64 bits");
    const unsigned tid = cuzk_emu_tid();
    const unsigned lane = tid % 32, warp = tid / 32;
    unsigned long long raw = 0;
    std::memcpy(&raw, &v, sizeof(T));
    cuzk_emu_xbuf[tid] = raw;
    (*cuzk_emu_warp_bars)[warp].arrive_and_wait();
    unsigned s = src(lane) % 32;
    raw = cuzk_emu_xbuf[warp * 32 + s];
    (*cuzk_emu_warp_bars)[warp].arrive_and_wait();
    T out;
    std::memcpy(&out, &raw, sizeof(T));
    return out;
}

template <class T>
inline T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
    return cuzk_emu_exchange(v, [&](unsigned lane) { return lane ^ (unsigned)mask; });
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta, int = 32) {
    return cuzk_emu_exchange(v, [&](unsigned lane) { return lane + delta < 32 ? lane + delta : lane; });
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int = 32) {
    return cuzk_emu_exchange(v, [&](unsigned lane) { return lane >= delta ? lane - delta : lane; });
}
template <class T>
inline T __shfl_sync(unsigned, T v, int src, int = 32) {
    return cuzk_emu_exchange(v, [&](unsigned) { return (unsigned)src; });
}

inline unsigned __ballot_sync(unsigned, int pred) {
    const unsigned tid = cuzk_emu_tid();
    const unsigned lane = tid % 32, warp = tid / 32;
    cuzk_emu_xbuf[tid] = pred ? 1u : 0u;
    (*cuzk_emu_warp_bars)[warp].arrive_and_wait();
    unsigned r = 0;
    for (unsigned k = 0; k < 32; k++)
        if (warp * 32 + k < cuzk_emu_xbuf.size() && cuzk_emu_xbuf[warp * 32 + k]) r |= 1u << k;
    (*cuzk_emu_warp_bars)[warp].arrive_and_wait();
    (void)lane;
    return r;
}
inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }

inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    unsigned long long r = 0;
    for (int i = 0; i < 64; i++) r |= ((x >> i) & 1ull) << (63 - i);
    return r;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
template <class T>
inline T __ldg(const T* p) {
    return *p;
}

#define CUZK_DYN_SMEM(T, name) T* name = reinterpret_cast<T*>(cuzk_emu_smem.data())

// Run body() as grid x block CUDA threads.
inline void cuzk_emu_launch(dim3 grid, dim3 block, size_t smem_bytes,
                            const std::function<void()>& body) {
    const int nt = (int)(block.x * block.y * block.z);
    const int nwarps = (nt + 31) / 32;
    blockDim = block;
    gridDim = grid;
    cuzk_emu_smem.assign(smem_bytes + 16, 0xA5);
    cuzk_emu_xbuf.assign((size_t)nwarps * 32, 0);
    std::vector<cuzk_emu_barrier> warp_bars(nwarps);
    cuzk_emu_warp_bars = &warp_bars;
    auto reset = [&]() noexcept {
        cuzk_emu_block_bar.reset(nt);
        for (int w = 0; w < nwarps; w++) warp_bars[w].reset(w == nwarps - 1 ? nt - 32 * w : 32);
    };
    reset();
    std::barrier<decltype(reset)> between_blocks(nt, reset);
    std::vector<std::thread> threads;
    threads.reserve(nt);
    for (int t = 0; t < nt; t++) {
        threads.emplace_back([&, t] {
            threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            for (unsigned bz = 0; bz < grid.z; bz++)
                for (unsigned by = 0; by < grid.y; by++)
                    for (unsigned bx = 0; bx < grid.x; bx++) {
                        blockIdx = uint3{bx, by, bz};
                        body();
                        cuzk_emu_block_bar.drop();
                        warp_bars[t / 32].drop();
                        between_blocks.arrive_and_wait();
                    }
        });
    }
    for (auto& th : threads) th.join();
    cuzk_emu_warp_bars = nullptr;
}
