// Neptune's Poseidon over Fr (BLS12-381 scalars), in its optimised schedule:
// compressed round constants added after the S-boxes, a pre-sparse matrix
// before the partial rounds and one sparse matrix per partial round. The
// constants of one arity are a flat table (cuzk.hashers.poseidon_constants.
// flat_table), here in Montgomery form: domain tag, 2*half*t + partial
// compressed constants, the MDS and pre-sparse matrices (t*t, m[i][j] at
// i*t + j), then per partial round w_hat (t) and v_rest (t - 1). A table is
// described by a header of four words: offset, t, half full rounds, partial
// rounds. Values are in Montgomery form throughout. CPU twin:
// cuzk.hashers.poseidon.hash_ints.
#pragma once
#include "fr.cuh"

#define POSEIDON_MAX_WIDTH 17

CUZK_HD fr_t poseidon_sbox(const fr_t& x) {
    const fr_t x2 = fr_mul(x, x);
    return fr_mul(fr_mul(x2, x2), x);
}

// s <- s * M for a dense t x t matrix (row vector times matrix).
CUZK_HD void poseidon_dense(fr_t* s, int t, const uint4* m) {
    fr_t out[POSEIDON_MAX_WIDTH];
    for (int j = 0; j < t; j++) {
        fr_t acc = fr_zero();
        for (int i = 0; i < t; i++) acc = fr_add(acc, fr_mul(s[i], fr_load(m, i * t + j)));
        out[j] = acc;
    }
    for (int j = 0; j < t; j++) s[j] = out[j];
}

// The sparse matrix of one partial round: s0' = sum_i s_i w_hat_i,
// s_j' = s_j + s_0 v_rest_{j-1}.
CUZK_HD void poseidon_sparse(fr_t* s, int t, const uint4* sp) {
    fr_t first = fr_zero();
    for (int i = 0; i < t; i++) first = fr_add(first, fr_mul(s[i], fr_load(sp, i)));
    for (int j = 1; j < t; j++) s[j] = fr_add(s[j], fr_mul(s[0], fr_load(sp, t + j - 1)));
    s[0] = first;
}

// Poseidon of in[0 .. t-2] (Montgomery form) with the table at `table`
// (already offset) of width t.
CUZK_HD fr_t poseidon_hash(const fr_t* in, const uint4* table, int t, int half, int partial) {
    fr_t s[POSEIDON_MAX_WIDTH];
    const uint4* crc = table;  // crc[0] is the domain tag
    s[0] = fr_load(crc, 0);
    for (int i = 1; i < t; i++) s[i] = in[i - 1];
    crc = table + 2;  // one Fr value is two uint4
    const int n_crc = 2 * half * t + partial;
    const uint4* mds = crc + 2 * n_crc;
    const uint4* pre = mds + 2 * t * t;
    const uint4* sparse = pre + 2 * t * t;
    for (int i = 0; i < t; i++) s[i] = fr_add(s[i], fr_load(crc, i));
    int k = t;
    int rnd = 0;
    // product(rnd): the pre-sparse matrix at half - 1, sparse ones in the
    // partial rounds, the MDS matrix elsewhere
    for (int r = 0; r < half; r++) {
        for (int i = 0; i < t; i++) s[i] = fr_add(poseidon_sbox(s[i]), fr_load(crc, k + i));
        k += t;
        poseidon_dense(s, t, rnd == half - 1 ? pre : mds);
        rnd++;
    }
    for (int r = 0; r < partial; r++) {
        s[0] = fr_add(poseidon_sbox(s[0]), fr_load(crc, k));
        k++;
        poseidon_sparse(s, t, sparse + 2 * (rnd - half) * (2 * t - 1));
        rnd++;
    }
    for (int r = 0; r < half - 1; r++) {
        for (int i = 0; i < t; i++) s[i] = fr_add(poseidon_sbox(s[i]), fr_load(crc, k + i));
        k += t;
        poseidon_dense(s, t, mds);
        rnd++;
    }
    for (int i = 0; i < t; i++) s[i] = poseidon_sbox(s[i]);
    poseidon_dense(s, t, mds);
    return s[1];
}
