// Field and curve arithmetic exposed element-wise, for the bit-exact tests
// (GPU and CPU twin against the Python reference) and for the throughput
// measurement that picks the Montgomery multiplication variant.
// G1 curve kernels by default, G2 with -DCUZK_G2; the Fq / Fq2 kernels always.
#include "ec_affine.cuh"

using namespace cuzk;

#ifdef CUZK_G2
typedef fq2_t field;
#else
typedef fq_t field;
#endif

static __device__ __forceinline__ uint64_t thread_id() {
    return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// Inputs a, b in Montgomery form (12 words each). out[9][n][12]:
// a+b, a−b, a·b, a², −a, a⁻¹, to_mont(a), from_mont(a), a⁻¹ (binary).
extern "C" __global__ void fq_ops(const uint32_t* a, const uint32_t* b, uint32_t n,
                                  uint32_t* out) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    const fq_t x = load_fq(a + 12 * i), y = load_fq(b + 12 * i);
    const uint64_t stride = (uint64_t)n * 12;
    store_fq(out + 0 * stride + 12 * i, add(x, y));
    store_fq(out + 1 * stride + 12 * i, sub(x, y));
    store_fq(out + 2 * stride + 12 * i, mul(x, y));
    store_fq(out + 3 * stride + 12 * i, sqr(x));
    store_fq(out + 4 * stride + 12 * i, neg(x));
    store_fq(out + 5 * stride + 12 * i, inverse(x));
    store_fq(out + 6 * stride + 12 * i, to_mont(x));
    store_fq(out + 7 * stride + 12 * i, from_mont(x));
    store_fq(out + 8 * stride + 12 * i, inverse_fast(x));
}

// Fq2 inputs (24 words each). out[6][n][24]: a+b, a−b, a·b, a², a⁻¹, a⁻¹ (binary).
extern "C" __global__ void fq2_ops(const uint32_t* a, const uint32_t* b, uint32_t n,
                                   uint32_t* out) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    fq2_t x, y;
    load(x, a + 24 * i);
    load(y, b + 24 * i);
    const uint64_t stride = (uint64_t)n * 24;
    store(out + 0 * stride + 24 * i, add(x, y));
    store(out + 1 * stride + 24 * i, sub(x, y));
    store(out + 2 * stride + 24 * i, mul(x, y));
    store(out + 3 * stride + 24 * i, sqr(x));
    store(out + 4 * stride + 24 * i, inverse(x));
    store(out + 5 * stride + 24 * i, inverse_fast(x));
}

// Affine p, q (Montgomery; zeros = infinity) and a small k. out[5][n] XYZZ:
// p + q (mixed, when q is finite; else p), p + q (XYZZ), 2p, k·p, −p + q.
extern "C" __global__ void ec_ops(const uint32_t* p, const uint32_t* q, const uint32_t* k,
                                  uint32_t n, uint32_t* out) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    const int AW = 2 * words<field>::n, XW = 4 * words<field>::n;
    const affine_t<field> a = load_affine<field>(p + AW * i);
    const affine_t<field> b = load_affine<field>(q + AW * i);
    const xyzz_t<field> pa = from_affine(a), pb = from_affine(b);
    const uint64_t stride = (uint64_t)n * XW;
    store_xyzz(out + 0 * stride + XW * i, is_infinity(b) ? pa : add_affine(pa, b));
    store_xyzz(out + 1 * stride + XW * i, add(pa, pb));
    store_xyzz(out + 2 * stride + XW * i, dbl(pa));
    store_xyzz(out + 3 * stride + XW * i, mul_small(pa, k[i]));
    store_xyzz(out + 4 * stride + XW * i, add(negate(pa), pb));
}

// Affine p, q (Montgomery; zeros = infinity): out[n] affine p + q through the
// batched-affine pair sum (ec_affine.cuh), each with its own inversion, and
// kinds[n] the case it took.
extern "C" __global__ void affine_pairs(const uint32_t* p, const uint32_t* q, uint32_t n,
                                        uint32_t* out, uint32_t* kinds) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    const int AW = 2 * words<field>::n;
    const affine_t<field> a = load_affine<field>(p + AW * i);
    const affine_t<field> b = load_affine<field>(q + AW * i);
    const int kind = pair_kind(a, b, true);
    const field inv = pair_inverts(kind) ? inverse(pair_den(a, b, kind)) : field_one<field>();
    store_affine(out + AW * i, pair_finish(a, b, kind, inv));
    kinds[i] = (uint32_t)kind;
}

// Throughput: each thread runs `iters` dependent products x ← x·y + x over
// its own element (the add keeps the chain from collapsing to a power).
extern "C" __global__ void fq_mul_chain(uint32_t* data, uint32_t n, uint32_t iters) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    fq_t x = load_fq(data + 12 * i);
    const fq_t y = load_fq(data + 12 * ((i + 1) % n));
    for (uint32_t it = 0; it < iters; it++) x = add(mul(x, y), x);
    store_fq(data + 12 * i, x);
}
