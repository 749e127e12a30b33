// Pippenger multi-scalar multiplication Σ s_i·P_i over G1 (default) or G2
// (compiled with -DCUZK_G2). The host side (msm/pipeline.py) runs these in order:
//
//   classify        0 / 1 / full scalars; a bitmap of the ones
//   ones_partial    Σ of the bases whose scalar is 1, straight from the bitmap
//   digits_count    signed c-bit digits of the full scalars; bucket histogram
//   (scan)          exclusive prefix sum of the histogram (CuPy)
//   digits_scatter  counting sort: point index | sign, ordered by bucket (or,
//                   digits_scatter_points, the signed points themselves)
//   affine_first, affine_round  rounds of batched-affine pair sums while a
//                   round is large (the first gathers from the index sort)
//   accumulate      equal slices of the sorted list per thread, whatever the
//                   bucket sizes; complete buckets written directly, split
//                   ones as a head / tail partial sum per slice
//   accumulate_partials  the same over the partial sums, level by level,
//                   until every split bucket is complete
//   bucket_reduce   Σ_k (k+1)·B_k per window by running sums over segments
//   sum_pairs       tree reduction of segment sums (and of the ones partials)
//   finalize        Horner over the windows: Σ_w 2^(c·w)·W_w, plus the ones
//
// Every kernel is one independent thread per item (no shared memory, no
// barriers), so the same file runs on the CPU, thread by thread, as the
// kernels' twin in the tests.
#include "ec_affine.cuh"
#include "msm_digits.cuh"

using namespace cuzk;

// The tuning comes from the compile flags only (cuzk.backends.cuda.tuning's
// MSM tables, docs/device-notes/msm.md#tuning-table).
#if !defined(CUZK_BLOCK) || !defined(CUZK_ACC_MIN_BLOCKS) || !defined(CUZK_AFF_BLOCK) || !defined(CUZK_AFF_MIN_BLOCKS) || \
    !defined(CUZK_AFF_SHARED) || !defined(CUZK_AFF_X_FIRST) || !defined(CUZK_REDUCE_MIN_BLOCKS) || \
    !defined(CUZK_SCATTER_BATCH)
#error "msm.cu: a tuning define is missing (cuzk.backends.cuda.tuning.MSM_G1 / MSM_G2 emit them)"
#endif

#ifdef CUZK_G2
typedef fq2_t field;
#else
typedef fq_t field;
#endif
typedef affine_t<field> affine;
typedef xyzz_t<field> point;

// The bucket-accumulation loops inline the mixed addition: the call's stack
// traffic cost more than the occupancy it saved
// (docs/device-notes/msm.md#field-product).
static __device__ __forceinline__ point hot_add_affine(const point& p, const affine& a) {
    return add_affine_inline(p, a);
}

#define AFFINE_WORDS (2 * words<field>::n)
#define XYZZ_WORDS (4 * words<field>::n)
#define NO_KEY 0xffffffffu
// CUZK_ACC_MIN_BLOCKS: blocks of 128 per SM the accumulation kernels must fit,
// a register cap (docs/device-notes/msm.md#tuning-table).

static __device__ __forceinline__ uint64_t thread_id() {
    return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ int lowest_bit(uint32_t x) {
#ifdef CUZK_DEVICE_CODE
    return __ffs(x) - 1;
#else
    return __builtin_ctz(x);
#endif
}

// Field elements (12 words each) standard → Montgomery form, in place.
extern "C" __global__ void to_montgomery(uint32_t* elems, uint64_t count) {
    const uint64_t i = thread_id();
    if (i >= count) return;
    store_fq(elems + 12 * i, to_mont(load_fq(elems + 12 * i)));
}

// One thread per 32 scalars: the bitmap word of the ones, and the counts of
// ones (counters[0]) and of full scalars, s > 1 (counters[1]).
extern "C" __global__ void classify(const uint64_t* scalars, uint32_t n, uint32_t* ones_bitmap,
                                    uint32_t* counters) {
    const uint64_t w = thread_id();
    if (w * 32 >= n) return;
    uint32_t bits = 0, full = 0;
    for (uint32_t k = 0; k < 32; k++) {
        const uint64_t i = w * 32 + k;
        if (i >= n) break;
        scalar_t s = load_scalar(scalars + 4 * i);
        if (scalar_is_one(s))
            bits |= 1u << k;
        else if (!scalar_is_zero(s))
            full++;
    }
    ones_bitmap[w] = bits;
    if (bits) atomicAdd(&counters[0], (uint32_t)__popc(bits));
    if (full) atomicAdd(&counters[1], full);
}

// Σ of the bases marked in the bitmap, words_per_thread bitmap words per thread.
extern "C" __global__ void __launch_bounds__(CUZK_BLOCK, CUZK_ACC_MIN_BLOCKS)
    ones_partial(const uint32_t* bases, const uint32_t* ones_bitmap, uint32_t nwords,
                 uint32_t words_per_thread, uint32_t* out) {
    const uint64_t t = thread_id();
    const uint64_t w0 = t * words_per_thread;
    if (w0 >= nwords) return;
    uint64_t w1 = w0 + words_per_thread;
    if (w1 > nwords) w1 = nwords;
    point acc = xyzz_infinity<field>();
    for (uint64_t w = w0; w < w1; w++) {
        uint32_t bits = ones_bitmap[w];
        while (bits) {
            const int k = lowest_bit(bits);
            bits &= bits - 1;
            const affine a = load_affine<field>(bases + (w * 32 + k) * AFFINE_WORDS);
            if (!is_infinity(a)) acc = hot_add_affine(acc, a);
        }
    }
    store_xyzz(out + t * XYZZ_WORDS, acc);
}

// Scalar i, reduced, when it is a full one (neither 0 nor 1: those take the
// bitmap's path).
static __device__ __forceinline__ bool full_scalar(const uint64_t* scalars, uint64_t i,
                                                   uint32_t n, scalar_t& s) {
    if (i >= n) return false;
    s = load_scalar(scalars + 4 * i);
    if (scalar_is_zero(s) || scalar_is_one(s)) return false;
    s = reduce_scalar(s);
    return true;
}

// emit(key, negative) for every non-zero signed digit d of s in the window
// group [w0, w1): key = (w − w0)·nb + |d| − 1 (nb = 2^(c−1) buckets per
// window). The digits below w0 are recomputed for their carries (a few
// integer operations).
template <class Emit>
static __device__ __forceinline__ void group_digits(const scalar_t& s, uint32_t c, uint32_t w0,
                                                    uint32_t w1, const Emit& emit) {
    const uint32_t nb = 1u << (c - 1);
    signed_digits sd;
    for (uint32_t w = 0; w < w1; w++) {
        uint32_t negative;
        const uint32_t mag = sd.next(s, w, c, negative);
        if (mag && w >= w0) emit((w - w0) * nb + mag - 1, negative);
    }
}

// Histogram of bucket keys over the window group [w0, w1), every full
// scalar's digits. Groups of windows keep the histogram and the cursors small
// enough for L2 at large n
// (docs/device-notes/msm.md#sort-and-accumulation).
extern "C" __global__ void digits_count(const uint64_t* scalars, uint32_t n, uint32_t c,
                                        uint32_t w0, uint32_t w1, uint32_t* counts) {
    scalar_t s;
    if (!full_scalar(scalars, thread_id(), n, s)) return;
    group_digits(s, c, w0, w1, [&](uint32_t key, uint32_t) { atomicAdd(&counts[key], 1u); });
}

// CUZK_SCATTER_BATCH: windows whose cursor atomics a scatter thread issues
// before it stores their entries, so atomics overlap instead of each waiting
// on L2 (docs/device-notes/msm.md#tuning-table); its arrays are indexed only
// by unrolled loop counters, so they stay in registers.
// Counting sort: cursor starts as the exclusive prefix sum of the histogram;
// the bucket of an entry is implied by its position. vals hold point index · 2
// + sign. The order inside a bucket is whatever the
// atomics give; a bucket's sum does not depend on it.
extern "C" __global__ void digits_scatter(const uint64_t* scalars, uint32_t n, uint32_t c,
                                          uint32_t w0, uint32_t w1, uint32_t* cursor,
                                          uint32_t* vals) {
    const uint64_t i = thread_id();
    scalar_t s;
    if (!full_scalar(scalars, i, n, s)) return;
    const uint32_t nb = 1u << (c - 1);
    signed_digits sd;
    for (uint32_t w = 0; w < w1; w += CUZK_SCATTER_BATCH) {
        uint32_t key[CUZK_SCATTER_BATCH], val[CUZK_SCATTER_BATCH];
#pragma unroll
        for (int j = 0; j < CUZK_SCATTER_BATCH; j++) {
            key[j] = NO_KEY;
            if (w + j < w1) {
                uint32_t negative;
                const uint32_t mag = sd.next(s, w + j, c, negative);
                if (mag && w + j >= w0) {
                    key[j] = (w + j - w0) * nb + mag - 1;
                    val[j] = (uint32_t)(i << 1) | negative;
                }
            }
        }
        uint32_t pos[CUZK_SCATTER_BATCH];
#pragma unroll
        for (int j = 0; j < CUZK_SCATTER_BATCH; j++)
            if (key[j] != NO_KEY) pos[j] = atomicAdd(&cursor[key[j]], 1u);
#pragma unroll
        for (int j = 0; j < CUZK_SCATTER_BATCH; j++)
            if (key[j] != NO_KEY) vals[pos[j]] = val[j];
    }
}

// The same counting sort writing the points themselves (Tuning.sort_points):
// entry `pos` is base i, negated for a negative digit, so that round 1 of the
// affine rounds reads each thread's own run of the list in place, as the
// later rounds do, instead of gathering two random bases twice an item
// (docs/device-notes/msm.md#sort-and-accumulation).
// A thread reads its base once, beside its warp's neighbours.
extern "C" __global__ void digits_scatter_points(const uint64_t* scalars, uint32_t n, uint32_t c,
                                                 uint32_t w0, uint32_t w1, uint32_t* cursor,
                                                 const uint32_t* bases, uint32_t* list) {
    const uint64_t i = thread_id();
    scalar_t s;
    if (!full_scalar(scalars, i, n, s)) return;
    const affine a = load_affine<field>(bases + i * AFFINE_WORDS);
    const field ny = neg(a.y);  // infinity (all zero) stays infinity
    group_digits(s, c, w0, w1, [&](uint32_t key, uint32_t negative) {
        uint32_t* p = list + (uint64_t)atomicAdd(&cursor[key], 1u) * AFFINE_WORDS;
        store(p, a.x);  // two stores, not a select of points: that went to the stack
        if (negative)
            store(p + words<field>::n, ny);
        else
            store(p + words<field>::n, a.y);
    });
}

// Thread t sums entries [t·T, t·T + T) of a list sorted by bucket key. A
// bucket that lies wholly inside the slice is written to buckets[key]. A
// bucket cut by a slice boundary leaves partial sums instead: the slice's
// first bucket, when it began in an earlier slice, as head[t]; its last, when
// it runs past the slice, as tail[t] (a bucket running through the whole
// slice is its head). Partials are listed in slice order (head before tail)
// and summed by the same slicing again (accumulate_partials), until none is
// left: a bucket of a million points costs log_{T/2} levels, not a serial walk.
struct slice_out {
    uint32_t *buckets, *head, *head_key, *tail, *tail_key;
    uint64_t t;

    __device__ __forceinline__ void flush(uint32_t key, const point& acc, bool is_head,
                                          bool runs_on) const {
        if (is_head) {
            store_xyzz(head + t * XYZZ_WORDS, acc);
            head_key[t] = key;
        } else if (runs_on) {
            store_xyzz(tail + t * XYZZ_WORDS, acc);
            tail_key[t] = key;
        } else {
            store_xyzz(buckets + (uint64_t)key * XYZZ_WORDS, acc);
        }
    }
};

// Level 0 walks a list sorted by bucket key whose bucket boundaries come
// from ends[] (the inclusive prefix sum of the counts), so a sort need write
// one word per entry, not two. `Src` reads entry j of bucket `key` (whose
// entries begin at `first`) as an affine point; false means infinity.
template <class Src>
static __device__ __forceinline__ void accumulate_slices(const Src& src, const uint32_t* ends,
                                                         uint32_t nkeys, uint32_t E, uint32_t T,
                                                         uint32_t nslices, const slice_out& out) {
    const uint64_t t = out.t;
    if (t >= nslices) return;
    out.head_key[t] = NO_KEY;
    out.tail_key[t] = NO_KEY;
    const uint64_t start = t * T;
    if (start >= E) return;
    const uint64_t end = start + T < E ? start + T : E;

    // The bucket holding entry `start`: the first key whose end lies past it.
    uint32_t lo = 0, hi = nkeys - 1;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (ends[mid] > start)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t cur = lo;
    uint64_t bucket_end = ends[cur];
    uint64_t bucket_start = cur ? ends[cur - 1] : 0u;
    const bool began_before = start > bucket_start;
    bool first = true;
    point acc = xyzz_infinity<field>();
    for (uint64_t j = start;; j++) {
        if (j == bucket_end || j == end) {
            out.flush(cur, acc, first && began_before, j == end && bucket_end > end);
            if (j == end) break;
            first = false;
            acc = xyzz_infinity<field>();
            do cur++;
            while (ends[cur] == j);  // skip empty buckets
            bucket_start = j;
            bucket_end = ends[cur];
        }
        affine a;
        if (!src.load(j, cur, bucket_start, a)) continue;
        acc = hot_add_affine(acc, a);
    }
}

// Entries of the counting sort: point index · 2 + sign, over the bases.
struct sorted_index_src {
    const uint32_t* bases;
    const uint32_t* vals;
    __device__ __forceinline__ bool load(uint64_t j, uint32_t, uint64_t, affine& a) const {
        const uint32_t v = vals[j];
        a = load_affine<field>(bases + (uint64_t)(v >> 1) * AFFINE_WORDS);
        if (is_infinity(a)) return false;
        if (v & 1) a = negate(a);
        return true;
    }
};

// Entries left by the affine rounds: bucket `key` keeps its points in place
// at list[off[key] + i·stride] (see affine_round).
struct strided_src {
    const uint32_t* list;
    const uint32_t* off;
    uint32_t stride;
    __device__ __forceinline__ bool load(uint64_t j, uint32_t key, uint64_t first,
                                         affine& a) const {
        const uint64_t pos = off[key] + (j - first) * stride;
        a = load_affine<field>(list + pos * AFFINE_WORDS);
        return !is_infinity(a);
    }
};

extern "C" __global__ void __launch_bounds__(CUZK_BLOCK, CUZK_ACC_MIN_BLOCKS) accumulate(
    const uint32_t* bases, const uint32_t* vals, const uint32_t* ends, uint32_t nkeys,
    uint32_t E, uint32_t T, uint32_t nslices, uint32_t* buckets, uint32_t* head,
    uint32_t* head_key, uint32_t* tail, uint32_t* tail_key) {
    const slice_out out = {buckets, head, head_key, tail, tail_key, thread_id()};
    const sorted_index_src src = {bases, vals};
    accumulate_slices(src, ends, nkeys, E, T, nslices, out);
}

// The XYZZ tail after the affine rounds: the same slicing over what they left.
extern "C" __global__ void __launch_bounds__(CUZK_BLOCK, CUZK_ACC_MIN_BLOCKS) accumulate_strided(
    const uint32_t* list, const uint32_t* off, uint32_t stride, const uint32_t* ends,
    uint32_t nkeys, uint32_t E, uint32_t T, uint32_t nslices, uint32_t* buckets, uint32_t* head,
    uint32_t* head_key, uint32_t* tail, uint32_t* tail_key) {
    const slice_out out = {buckets, head, head_key, tail, tail_key, thread_id()};
    const strided_src src = {list, off, stride};
    accumulate_slices(src, ends, nkeys, E, T, nslices, out);
}

// Later levels: entries are the XYZZ partial sums of the level before, with
// their keys.
extern "C" __global__ void accumulate_partials(const uint32_t* partials, const uint32_t* keys,
                                               uint32_t E, uint32_t T, uint32_t nslices,
                                               uint32_t* buckets, uint32_t* head,
                                               uint32_t* head_key, uint32_t* tail,
                                               uint32_t* tail_key) {
    const uint64_t t = thread_id();
    if (t >= nslices) return;
    head_key[t] = NO_KEY;
    tail_key[t] = NO_KEY;
    const uint64_t start = t * T;
    if (start >= E) return;
    const uint64_t end = start + T < E ? start + T : E;
    const slice_out out = {buckets, head, head_key, tail, tail_key, t};

    uint32_t cur = keys[start];
    bool first = true;
    const bool began_before = start > 0 && keys[start - 1] == cur;
    point acc = xyzz_infinity<field>();
    for (uint64_t j = start;; j++) {
        const uint32_t k = j < end ? keys[j] : NO_KEY;
        if (k != cur) {
            out.flush(cur, acc, first && began_before, j == end && end < E && keys[end] == cur);
            if (j == end) break;
            first = false;
            acc = xyzz_infinity<field>();
            cur = k;
        }
        acc = add(acc, load_xyzz<field>(partials + j * XYZZ_WORDS));
    }
}

// --- batched-affine accumulation ---------------------------------------------------
// (docs/device-notes/msm.md#sort-and-accumulation)
//
// Buckets are summed in rounds of pairwise affine sums: round 1 pairs the
// sorted entries (2i, 2i+1) of every bucket into a compact list; each later
// round pairs a bucket's surviving points in place, at a doubling stride, so
// a bucket's points after round r sit at list[off[k] + i·2^(r−1)] and a
// finished bucket is never copied. A thread takes m consecutive pairs ("items")
// and shares one inversion among them (Montgomery's trick): pass 1 stores each
// pair's prefix product of denominators in device memory, one inversion,
// pass 2 walks back. With m in the hundreds the inversion's ~600 products add
// ~1–4 per pair, and no thread depends on another (no shared memory, no
// barriers), so the CPU twin runs these kernels like the others. Items are
// numbered key by key: iend[k] is the inclusive prefix sum of the items of
// keys 0..k.

// Round 1: pair i of key k is entries ends[k−1] + 2i and + 2i + 1 of the
// sorted index list (the second may be absent: an odd count), and item `it`
// writes list[it]. The output slot holds the pair's prefix product until
// pass 2 replaces it by the sum, so round 1 needs no scratch.
struct first_round {
    const uint32_t* bases;
    const uint32_t* vals;
    const uint32_t* ends;
    uint32_t* list;

    __device__ __forceinline__ bool locate(uint32_t k, uint64_t i, const uint32_t*& pa, bool& na,
                                           const uint32_t*& pb, bool& nb) const {
        const uint64_t e0 = (k ? ends[k - 1] : 0u) + 2 * i;
        const uint32_t va = vals[e0];
        pa = bases + (uint64_t)(va >> 1) * AFFINE_WORDS;
        na = va & 1;
        const bool has_b = e0 + 1 < ends[k];
        const uint32_t vb = has_b ? vals[e0 + 1] : va;
        pb = bases + (uint64_t)(vb >> 1) * AFFINE_WORDS;
        nb = vb & 1;
        return has_b;
    }
    __device__ __forceinline__ uint32_t* out(uint32_t, uint64_t, uint64_t it) const {
        return list + it * AFFINE_WORDS;
    }
    __device__ __forceinline__ uint32_t* prefix(uint64_t it, uint64_t, uint64_t, uint64_t) const {
        return list + it * AFFINE_WORDS;
    }
};

// Later rounds: pair i of key k is its points 2i and 2i + 1 (each key has
// floor(count/2) items; an odd last point stays where it is, which is where
// the next round expects it), the sum replacing point 2i. Prefix products go
// to scratch, slot j of thread t at (j·threads + t) so a warp's stores are
// contiguous.
struct later_round {
    uint32_t* list;
    const uint32_t* off;
    uint32_t stride;
    uint32_t* scratch;

    __device__ __forceinline__ uint64_t pos(uint32_t k, uint64_t i) const {
        return off[k] + 2 * i * stride;
    }
    __device__ __forceinline__ bool locate(uint32_t k, uint64_t i, const uint32_t*& pa, bool& na,
                                           const uint32_t*& pb, bool& nb) const {
        const uint64_t p = pos(k, i);
        pa = list + p * AFFINE_WORDS;
        pb = list + (p + stride) * AFFINE_WORDS;
        na = nb = false;
        return true;
    }
    __device__ __forceinline__ uint32_t* out(uint32_t k, uint64_t i, uint64_t) const {
        return list + pos(k, i) * AFFINE_WORDS;
    }
    __device__ __forceinline__ uint32_t* prefix(uint64_t, uint64_t j, uint64_t t,
                                                uint64_t threads) const {
        return scratch + (j * threads + t) * words<field>::n;
    }
};

static __device__ __forceinline__ affine load_signed(const uint32_t* p, bool negated) {
    const affine a = load_affine<field>(p);
    return negated ? negate(a) : a;
}

// Pair i of key k as whole points (a round's `locate`: where they are, and
// which to negate); b is a again when the pair has no second point.
template <class Round>
static __device__ __forceinline__ bool load_pair(const Round& r, uint32_t k, uint64_t i, affine& a,
                                                 affine& b) {
    const uint32_t *pa, *pb;
    bool na, nb;
    const bool has_b = r.locate(k, i, pa, na, pb, nb);
    a = load_signed(pa, na);
    b = has_b ? load_signed(pb, nb) : a;
    return has_b;
}

// The affine rounds run in blocks of CUZK_AFF_BLOCK threads, CUZK_AFF_MIN_BLOCKS
// of them per SM (a register cap); CUZK_AFF_SHARED keeps each thread's pair
// of points in shared memory so the capped compiler reloads rather than
// spills; CUZK_AFF_X_FIRST makes pass 1 read the x coordinates (and a y only
// where they do not decide) instead of whole points
// (docs/device-notes/msm.md#tuning-table).

// A point padded to an odd number of words: a warp reading one word of each
// lane's point touches 32 different banks.
struct padded_affine {
    affine p;
    uint32_t pad;
};

template <class Round>
static __device__ __forceinline__ void pair_round(const Round& r, const uint32_t* iend,
                                                  uint32_t nkeys, uint64_t total, uint32_t m) {
    const uint64_t t = thread_id();
    const uint64_t threads = (total + m - 1) / m;
    const uint64_t i0 = t * m;
    if (i0 >= total) return;
    const uint64_t i1 = i0 + m < total ? i0 + m : total;
    uint32_t lo = 0, hi = nkeys - 1;  // the key of item i0: the first with iend > i0
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (iend[mid] > i0)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t k = lo;
    field acc = field_one<field>();
#if CUZK_AFF_SHARED
    __shared__ padded_affine shared_a[CUZK_AFF_BLOCK], shared_b[CUZK_AFF_BLOCK];
    affine& a = shared_a[threadIdx.x].p;
    affine& b = shared_b[threadIdx.x].p;
#else
    affine a, b;
#endif
    for (uint64_t it = i0; it < i1; it++) {
        while (iend[k] <= it) k++;
        const uint64_t i = it - (k ? iend[k - 1] : 0u);
#if CUZK_AFF_X_FIRST
        const uint32_t *pa, *pb;
        bool na, nb;
        const bool has_b = r.locate(k, i, pa, na, pb, nb);
        field den;
        const int kind = pair_kind_den<field>(pa, na, pb, nb, has_b, den);
#else
        const int kind = pair_kind(a, b, load_pair(r, k, i, a, b));
        const field den = pair_den(a, b, kind);
#endif
        if (pair_inverts(kind)) {
            store(r.prefix(it, it - i0, t, threads), acc);
            acc = aff_mul(acc, den);
        }
    }
    // Binary extended Euclid: fewer issue slots than Fermat's products
    // (docs/device-notes/msm.md#inversion).
    field inv = inverse_fast(acc);
    for (uint64_t it = i1; it-- > i0;) {
        while (k > 0 && iend[k - 1] > it) k--;
        const uint64_t i = it - (k ? iend[k - 1] : 0u);
        const int kind = pair_kind(a, b, load_pair(r, k, i, a, b));
        field inv_it = inv;
        if (pair_inverts(kind)) {
            field before;
            load(before, r.prefix(it, it - i0, t, threads));
            inv_it = aff_mul(inv, before);
            inv = aff_mul(inv, pair_den(a, b, kind));
        }
        store_affine(r.out(k, i, it), pair_finish(a, b, kind, inv_it));
    }
}

extern "C" __global__ void __launch_bounds__(CUZK_AFF_BLOCK, CUZK_AFF_MIN_BLOCKS)
    affine_first(const uint32_t* bases, const uint32_t* vals, const uint32_t* ends,
                 const uint32_t* iend, uint32_t nkeys, uint32_t total, uint32_t m,
                 uint32_t* list) {
    const first_round r = {bases, vals, ends, list};
    pair_round(r, iend, nkeys, total, m);
}

extern "C" __global__ void __launch_bounds__(CUZK_AFF_BLOCK, CUZK_AFF_MIN_BLOCKS)
    affine_round(uint32_t* list, const uint32_t* off, uint32_t stride, const uint32_t* iend,
                 uint32_t nkeys, uint32_t total, uint32_t m, uint32_t* scratch) {
    const later_round r = {list, off, stride, scratch};
    pair_round(r, iend, nkeys, total, m);
}

// The 0/1 path as a sorted list of one bucket: popcounts of the bitmap words,
// then (after their exclusive prefix sum) the point indices of the ones, in
// the counting sort's format (index · 2, sign 0).
extern "C" __global__ void bitmap_popc(const uint32_t* bitmap, uint32_t nwords, uint32_t* out) {
    const uint64_t w = thread_id();
    if (w < nwords) out[w] = (uint32_t)__popc(bitmap[w]);
}

extern "C" __global__ void ones_list(const uint32_t* bitmap, uint32_t nwords,
                                     const uint32_t* start, uint32_t* vals) {
    const uint64_t w = thread_id();
    if (w >= nwords) return;
    uint32_t bits = bitmap[w];
    uint32_t pos = start[w];
    while (bits) {
        const int k = lowest_bit(bits);
        bits &= bits - 1;
        vals[pos++] = (uint32_t)(w * 32 + k) << 1;
    }
}

// CUZK_REDUCE_MIN_BLOCKS: blocks of 128 per SM the bucket reduction must fit
// (docs/device-notes/msm.md#tuning-table).
// Thread g = w·S + s reduces buckets [s·L, s·L + L) of window w to
// Σ_k (k + 1)·B_k: running sums from the top give Σ (k − lo + 1)·B_k, and
// lo·Σ B_k adds the offset. Buckets with a zero count were never written and
// count as infinity.
extern "C" __global__ void __launch_bounds__(CUZK_BLOCK, CUZK_REDUCE_MIN_BLOCKS) bucket_reduce(
    const uint32_t* buckets, const uint32_t* counts, uint32_t nb, uint32_t nw, uint32_t S,
    uint32_t L, uint32_t* out) {
    const uint64_t g = thread_id();
    if (g >= (uint64_t)nw * S) return;
    const uint32_t w = (uint32_t)(g / S), s = (uint32_t)(g % S);
    const uint32_t lo = s * L;
    const uint32_t hi = lo + L < nb ? lo + L : nb;
    point running = xyzz_infinity<field>();
    point acc = xyzz_infinity<field>();
    for (uint32_t k = hi; k > lo; k--) {
        const uint64_t key = (uint64_t)w * nb + k - 1;
        if (counts[key]) running = add(running, load_xyzz<field>(buckets + key * XYZZ_WORDS));
        acc = add(acc, running);
    }
    if (lo > 0 && !is_infinity(running)) acc = add(acc, mul_small(running, lo));
    store_xyzz(out + g * XYZZ_WORDS, acc);
}

// out[g][i] = in[g][2i] + in[g][2i+1] over `groups` groups of count_in points.
extern "C" __global__ void sum_pairs(const uint32_t* in, uint32_t* out, uint32_t groups,
                                     uint32_t count_in) {
    const uint32_t count_out = (count_in + 1) / 2;
    const uint64_t id = thread_id();
    if (id >= (uint64_t)groups * count_out) return;
    const uint64_t g = id / count_out, i = id % count_out;
    const uint32_t* src = in + (g * count_in + 2 * i) * XYZZ_WORDS;
    point a = load_xyzz<field>(src);
    if (2 * i + 1 < count_in) a = add(a, load_xyzz<field>(src + XYZZ_WORDS));
    store_xyzz(out + id * XYZZ_WORDS, a);
}

// One thread: Σ_w 2^(c·w)·window_sums[w] (Horner), plus each of `extra`.
extern "C" __global__ void finalize(const uint32_t* window_sums, uint32_t nw, uint32_t c,
                                    const uint32_t* extra, uint32_t n_extra, uint32_t* out) {
    if (thread_id() != 0) return;
    point acc = xyzz_infinity<field>();
    for (uint32_t w = nw; w > 0; w--) {
        for (uint32_t i = 0; i < c; i++) acc = dbl(acc);
        acc = add(acc, load_xyzz<field>(window_sums + (uint64_t)(w - 1) * XYZZ_WORDS));
    }
    for (uint32_t e = 0; e < n_extra; e++)
        acc = add(acc, load_xyzz<field>(extra + (uint64_t)e * XYZZ_WORDS));
    store_xyzz(out, acc);
}

// --- fixed-base multiplication (parameter generation) ---------------------------

// out[i] = s_i·G from a table of d·2^(wbits·w)·G, d = 1 .. 2^wbits − 1, laid out
// table[w·(2^wbits − 1) + d − 1] (affine, Montgomery): one mixed addition per
// non-zero digit, no doublings.
extern "C" __global__ void __launch_bounds__(CUZK_BLOCK) fixed_base_mul(
    const uint32_t* table, uint32_t wbits, uint32_t nwin, const uint64_t* scalars, uint32_t n,
    uint32_t* out) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    const scalar_t s = reduce_scalar(load_scalar(scalars + 4 * i));
    const uint32_t row = (1u << wbits) - 1;
    point acc = xyzz_infinity<field>();
    for (uint32_t w = 0; w < nwin; w++) {
        const uint32_t d = scalar_bits(s, w * wbits, wbits);
        if (!d) continue;
        const uint64_t entry = (uint64_t)w * row + d - 1;
        acc = add_affine(acc, load_affine<field>(table + entry * AFFINE_WORDS));
    }
    store_xyzz(out + i * XYZZ_WORDS, acc);
}

// XYZZ (Montgomery) → affine in standard form, `per_thread` consecutive points
// per thread sharing one inversion (Montgomery's trick over the ZZZ values).
// 1/ZZZ comes from the batch; 1/ZZ = (1/ZZZ)^2·ZZ^2 since ZZ^3 = ZZZ^2.
// Infinity becomes all-zero words. scratch holds one field element per point.
extern "C" __global__ void batch_to_affine(const uint32_t* xyzz, uint32_t n, uint32_t per_thread,
                                           uint32_t* scratch, uint32_t* out) {
    const uint64_t t = thread_id();
    const uint64_t lo = t * per_thread;
    if (lo >= n) return;
    uint64_t hi = lo + per_thread;
    if (hi > n) hi = n;
    const int FW = words<field>::n;
    field acc = field_one<field>();
    for (uint64_t j = lo; j < hi; j++) {
        store(scratch + j * FW, acc);
        const field zzz = load_xyzz<field>(xyzz + j * XYZZ_WORDS).ZZZ;
        if (!is_zero(zzz)) acc = mul_call(acc, zzz);
    }
    field inv = inverse(acc);
    for (uint64_t j = hi; j > lo; j--) {
        const point p = load_xyzz<field>(xyzz + (j - 1) * XYZZ_WORDS);
        affine a;
        if (is_infinity(p)) {
            a.x = field_zero<field>();
            a.y = field_zero<field>();
        } else {
            field prefix;
            load(prefix, scratch + (j - 1) * FW);
            const field izzz = mul_call(inv, prefix);
            inv = mul_call(inv, p.ZZZ);
            const field izz = mul_call(sqr_call(izzz), sqr_call(p.ZZ));
            a.x = from_mont(mul_call(p.X, izz));
            a.y = from_mont(mul_call(p.Y, izzz));
        }
        store_affine(out + (j - 1) * AFFINE_WORDS, a);
    }
}

// --- key loading ------------------------------------------------------------------

// Points of a key file (bellperson .params: uncompressed zcash encoding, each
// coordinate 48 big-endian bytes, flags in the top three bits of the first
// byte, G2 as x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0) → affine Montgomery words, as the MSM
// keeps its bases, each point checked. status[i]: LOAD_OK, or why point i is
// unusable (its words are then zero). Every file point is one thread.
#define LOAD_OK 0u
#define LOAD_FLAGS 1u  // a flag bit set: keys hold no infinity and no compressed point
#define LOAD_RANGE 2u  // a coordinate not below q
#define LOAD_CURVE 3u  // y² ≠ x³ + b

static __device__ __forceinline__ uint32_t bswap32(uint32_t x) {
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

// One coordinate's 12 stored words (big-endian bytes) → limbs, least significant first.
static __device__ __forceinline__ fq_t be_coordinate(const uint32_t* p) {
    fq_t a;
#pragma unroll
    for (int w = 0; w < 12; w++) a.l[w] = bswap32(p[11 - w]);
    return a;
}

static __device__ __forceinline__ bool below_q(const fq_t& a) { return eq(reduce_once(a), a); }

static __device__ __forceinline__ fq_t fq_four() {
    fq_t b = fq_zero();
    b.l[0] = 4;
    return to_mont(b);
}

#ifdef CUZK_G2
static __device__ __forceinline__ field curve_b() { return {fq_four(), fq_four()}; }  // 4(1 + u)
static __device__ __forceinline__ field to_mont_field(const field& a) {
    return {to_mont(a.c0), to_mont(a.c1)};
}
#else
static __device__ __forceinline__ field curve_b() { return fq_four(); }
static __device__ __forceinline__ field to_mont_field(const field& a) { return to_mont(a); }
#endif

extern "C" __global__ void load_zcash(const uint32_t* raw, uint32_t n, uint32_t* out,
                                      uint32_t* status) {
    const uint64_t i = thread_id();
    if (i >= n) return;
    const uint32_t* p = raw + i * AFFINE_WORDS;
    const int FQS = AFFINE_WORDS / 12;  // coordinates (Fq elements) per point: 2 or 4
    fq_t c[4];
    uint32_t code = (bswap32(p[0]) >> 29) ? LOAD_FLAGS : LOAD_OK;
    for (int k = 0; k < FQS; k++) {
        c[k] = be_coordinate(p + 12 * k);
        if (k == 0) c[k].l[11] &= 0x1fffffffu;  // the flag bits
        if (!below_q(c[k]) && code == LOAD_OK) code = LOAD_RANGE;
    }
    affine a;
#ifdef CUZK_G2
    a.x = {c[1], c[0]};
    a.y = {c[3], c[2]};
#else
    a.x = c[0];
    a.y = c[1];
#endif
    if (code == LOAD_OK) {
        a.x = to_mont_field(a.x);
        a.y = to_mont_field(a.y);
        const field rhs = add(mul_call(sqr_call(a.x), a.x), curve_b());
        if (!eq(sqr_call(a.y), rhs)) code = LOAD_CURVE;
    }
    if (code != LOAD_OK) {
        a.x = field_zero<field>();
        a.y = field_zero<field>();
    }
    store_affine(out + i * AFFINE_WORDS, a);
    status[i] = code;
}
