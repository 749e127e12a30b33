// The element-wise steps of Groth16's H polynomial (the NTTs are ntt.cu's).
//
//   H = (coset_intt(A_c * B_c) - intt(c)) / Z,   Z = g^n - 1 on the coset,
//
// where A_c, B_c are a's and b's evaluations on the coset. This uses six NTTs,
// not seven: C's coset evaluations are never needed, because coset_intt of
// them is C's coefficients, which intt(c) already gives.
#define FR_MUL_FOLDED 1  // the folded product (fr.cuh)
#include "ntt.cuh"

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (uint64_t)gridDim.x * blockDim.x)

// a[i] = a[i] * b[i] / R (the 1/R is folded into the final scaling).
extern "C" __global__ void hpoly_pointwise_kernel(uint4* a, const uint4* b, uint64_t n) {
    GRID_STRIDE(i, n) { fr_store(a, i, fr_mul(fr_load(a, i), fr_load(b, i))); }
}

// H's coefficient i from the entries at p = bitrev(i) of ab and c:
// ab[p] * G(i) - c[p] * kc.
__device__ __forceinline__ fr_t hpoly_h(const uint4* ab, const uint4* c, uint64_t p, uint64_t i,
                                        const ntt_pow_table& g, const fr_t& k) {
    const fr_t v = fr_mul(fr_load(ab, p), ntt_pow_lookup(g, i));
    return fr_sub(v, fr_mul(fr_load(c, p), k));
}

// out[i] = ab[bitrev(i)] * G(i) - c[bitrev(i)] * kc for i < count, where ab
// and c hold unnormalised inverse DFTs in bit-reversed order, G(i) =
// R z^-1 g^-i / n and kc = z^-1 / n (both in Montgomery form).
extern "C" __global__ void hpoly_final_kernel(uint4* out, const uint4* ab, const uint4* c,
                                              uint64_t count, uint32_t log_n, const uint4* g_full,
                                              const uint4* g_lo, const uint4* g_hi,
                                              uint32_t g_lobits, const uint4* kc) {
    const ntt_pow_table g{g_full, g_lo, g_hi, g_lobits};
    const fr_t k = fr_load(kc, 0);
    GRID_STRIDE(i, count) {
        const uint64_t p = ntt_brev((uint32_t)i, log_n);
        fr_store(out, i, hpoly_h(ab, c, p, i, g, k));
    }
}

// hpoly_final_kernel's values written over ab itself (count = n - 1). bitrev
// is an involution, so the thread of i with i <= bitrev(i) owns the pair:
// it reads both entries of ab and c, then writes both outputs. n - 1 is its
// own reverse and the only index not below count, so every pair fits.
extern "C" __global__ void hpoly_final_inplace_kernel(uint4* ab, const uint4* c, uint64_t count,
                                                      uint32_t log_n, const uint4* g_full,
                                                      const uint4* g_lo, const uint4* g_hi,
                                                      uint32_t g_lobits, const uint4* kc) {
    const ntt_pow_table g{g_full, g_lo, g_hi, g_lobits};
    const fr_t k = fr_load(kc, 0);
    GRID_STRIDE(i, count) {
        const uint64_t p = ntt_brev((uint32_t)i, log_n);
        if (p < i) continue;  // the pair's other thread writes it
        const fr_t h_i = hpoly_h(ab, c, p, i, g, k);
        if (p != i) {
            const fr_t h_p = hpoly_h(ab, c, i, p, g, k);  // reads ab[i] before it is written
            fr_store(ab, p, h_p);
        }
        fr_store(ab, i, h_i);
    }
}
