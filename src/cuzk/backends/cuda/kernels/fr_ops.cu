// Element-wise Fr kernels: add, sub, multiply, reduce, Montgomery conversion,
// batch inverse, random fill, and the multiply-rate probe of the benchmark.
// Arrays are (n, 4) uint64 rows in standard form, passed as uint4 pairs.
#define FR_MUL_FOLDED 1  // the folded product (fr.cuh)
#include "fr.cuh"

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (uint64_t)gridDim.x * blockDim.x)

extern "C" __global__ void fr_add_kernel(uint4* out, const uint4* a, const uint4* b, uint64_t n) {
    GRID_STRIDE(i, n) {
        fr_store(out, i, fr_add(fr_reduce_full(fr_load(a, i)), fr_reduce_full(fr_load(b, i))));
    }
}

extern "C" __global__ void fr_sub_kernel(uint4* out, const uint4* a, const uint4* b, uint64_t n) {
    GRID_STRIDE(i, n) {
        fr_store(out, i, fr_sub(fr_reduce_full(fr_load(a, i)), fr_reduce_full(fr_load(b, i))));
    }
}

// The raw Montgomery product a*b/R (both operands reduced first).
extern "C" __global__ void fr_mont_mul_kernel(uint4* out, const uint4* a, const uint4* b,
                                              uint64_t n) {
    GRID_STRIDE(i, n) {
        fr_store(out, i, fr_mul(fr_reduce_full(fr_load(a, i)), fr_reduce_full(fr_load(b, i))));
    }
}

// The field product a*b of standard-form values: (a*b/R) * R^2 / R.
extern "C" __global__ void fr_mul_kernel(uint4* out, const uint4* a, const uint4* b, uint64_t n) {
    GRID_STRIDE(i, n) {
        const fr_t p = fr_mul(fr_reduce_full(fr_load(a, i)), fr_reduce_full(fr_load(b, i)));
        fr_store(out, i, fr_mul(p, fr_r2()));
    }
}

// a * c for one constant c given in Montgomery form.
extern "C" __global__ void fr_scale_kernel(uint4* out, const uint4* a, const uint4* c_mont,
                                           uint64_t n) {
    const fr_t c = fr_load(c_mont, 0);
    GRID_STRIDE(i, n) { fr_store(out, i, fr_mul(fr_reduce_full(fr_load(a, i)), c)); }
}

extern "C" __global__ void fr_reduce_kernel(uint4* out, const uint4* a, uint64_t n) {
    GRID_STRIDE(i, n) { fr_store(out, i, fr_reduce_full(fr_load(a, i))); }
}

extern "C" __global__ void fr_to_mont_kernel(uint4* out, const uint4* a, uint64_t n) {
    GRID_STRIDE(i, n) { fr_store(out, i, fr_to_mont(fr_reduce_full(fr_load(a, i)))); }
}

extern "C" __global__ void fr_from_mont_kernel(uint4* out, const uint4* a, uint64_t n) {
    GRID_STRIDE(i, n) { fr_store(out, i, fr_from_mont(fr_reduce_full(fr_load(a, i)))); }
}

// out[i] = 1 / a[i] (0 for 0), standard form in and out. Each thread inverts
// the elements i, i + T, i + 2T, ... (T threads in all) with Montgomery's
// trick: one exponentiation per thread, three products per element.
extern "C" __global__ void fr_batch_inverse_kernel(uint4* out, const uint4* a, uint64_t n) {
    const uint64_t first = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    if (first >= n) return;
    fr_t acc = fr_one_mont();
    uint64_t last = first;
    for (uint64_t i = first; i < n; i += step) {
        const fr_t x = fr_to_mont(fr_reduce_full(fr_load(a, i)));
        fr_store(out, i, acc);  // prefix product of the earlier elements
        if (!fr_is_zero(x)) acc = fr_mul(acc, x);
        last = i;
    }
    fr_t inv = fr_inv_mont(acc);
    for (uint64_t i = last;; i -= step) {
        const fr_t x = fr_to_mont(fr_reduce_full(fr_load(a, i)));
        if (fr_is_zero(x)) {
            fr_store(out, i, fr_zero());
        } else {
            fr_store(out, i, fr_from_mont(fr_mul(inv, fr_load(out, i))));
            inv = fr_mul(inv, x);
        }
        if (i < first + step) break;
    }
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Pseudo-random canonical values below 2^254 (< p), for benchmarks only.
extern "C" __global__ void fr_random_kernel(uint64_t* out, uint64_t n, uint64_t seed) {
    GRID_STRIDE(i, n) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint64_t v = splitmix64(seed ^ splitmix64(4 * i + j));
            if (j == 3) v &= (1ull << 62) - 1;
            out[4 * i + j] = v;
        }
    }
}

// Multiply-rate probe: 4 independent chains of `iters` products per thread.
extern "C" __global__ void fr_mul_rate_kernel(uint4* data, uint64_t n, uint32_t iters) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 4 > n) return;
    fr_t x0 = fr_load(data, 4 * i), x1 = fr_load(data, 4 * i + 1);
    fr_t x2 = fr_load(data, 4 * i + 2), x3 = fr_load(data, 4 * i + 3);
    const fr_t y = fr_add(x0, x3);
    for (uint32_t k = 0; k < iters; k++) {
        x0 = fr_mul(x0, y);
        x1 = fr_mul(x1, y);
        x2 = fr_mul(x2, y);
        x3 = fr_mul(x3, y);
    }
    fr_store(data, 4 * i, fr_add(fr_add(x0, x1), fr_add(x2, x3)));
}
