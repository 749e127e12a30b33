"""Benchmark inputs made on the device: random scalars, bases k·G, and sparse
matrices shaped like a PoRep partition's (the GPU tests use them too)."""

from __future__ import annotations

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends.cuda.fr import FrKernels


def random_scalars_device(n: int, seed: int):
    """n uniformly random scalars below r, made on the GPU: (n, 4) uint64."""
    import cupy

    rng = cupy.random.RandomState(seed)
    words = rng.randint(0, 1 << 32, size=(n, 8), dtype=np.int64).astype(cupy.uint32)
    s = words.view(cupy.uint64).reshape(n, 4)
    # Top limb uniform below r's top limb: every value is < r.
    s[:, 3] %= cupy.uint64(R >> 192)
    return s


def make_bases(engine, group: str, n: int, seed: int):
    """n points k·G (random k) on the GPU, in the (n, 2, 6) / (n, 2, 2, 6) layout."""
    from cuzk.algebra.curves import G1, G2

    ks = random_scalars_device(n, seed)
    if group == "G1":
        return engine.fixed_base_g1(G1.generator, ks, to_host=False)
    return engine.fixed_base_g2(G2.generator, ks, to_host=False)


# Row lengths (lo, hi, probability) per matrix, shaped like a PoRep circuit:
# mostly 1-3 entries, a tail of linear combinations up to a few hundred.
SHAPES = {
    "A": (
        (1, 1, 0.50),
        (2, 2, 0.25),
        (3, 3, 0.10),
        (4, 8, 0.10),
        (9, 16, 0.04),
        (17, 64, 0.009),
        (65, 300, 0.001),
    ),
    "B": ((1, 1, 0.65), (2, 2, 0.25), (3, 8, 0.08), (9, 40, 0.02)),
    "C": ((0, 0, 0.30), (1, 1, 0.30), (2, 2, 0.15), (3, 3, 0.15), (4, 16, 0.08), (17, 100, 0.02)),
}
DICT_SIZE = 4096


def synthetic_csr(eng, fr: FrKernels, shape, nrows: int, ncols: int, seed: int):
    """A Filecoin-like CSR built on the device: local columns, few coefficients.

    85% of entries sit within ±4096 columns of the row's diagonal, 10% are
    column 0 (ONE), 5% anywhere; 70% of coefficients are 1, 25% come from 300
    small constants, 5% from 3795 random ones.
    """
    import cupy as cp

    from cuzk.backends.cuda.spmv import CODE16, DeviceCsr, long_rows_of, split_ones

    rand = cp.random
    rand.seed(seed)
    lo = cp.asarray([s[0] for s in shape], dtype=cp.int64)
    hi = cp.asarray([s[1] for s in shape], dtype=cp.int64)
    cum = cp.asarray(np.cumsum([s[2] for s in shape]), dtype=cp.float64)
    bucket = cp.minimum(cp.searchsorted(cum, rand.random(nrows)), len(shape) - 1)
    span = hi[bucket] - lo[bucket] + 1
    lengths = lo[bucket] + cp.floor(rand.random(nrows) * span).astype(cp.int64)
    del bucket, span
    row_ptr = cp.zeros(nrows + 1, dtype=cp.int64)
    row_ptr[1:] = cp.cumsum(lengths)
    del lengths
    nnz = int(row_ptr[-1])
    cols = cp.empty(nnz, dtype=cp.uint32)
    codes = cp.empty(nnz, dtype=cp.uint16)
    chunk = 1 << 26
    for s in range(0, nnz, chunk):
        e = min(nnz, s + chunk)
        m = e - s
        rows = cp.searchsorted(row_ptr, cp.arange(s, e, dtype=cp.int64), side="right") - 1
        col = cp.clip(rows * ncols // nrows + rand.randint(-4096, 4097, m), 0, ncols - 1)
        del rows
        kind = rand.random(m)
        col = cp.where(kind < 0.10, 0, col)
        col = cp.where(kind > 0.95, rand.randint(0, ncols, m), col)
        cols[s:e] = col.astype(cp.uint32)
        kc = rand.random(m)
        code = cp.where(kc < 0.70, 0, rand.randint(1, 301, m))
        code = cp.where(kc > 0.95, rand.randint(301, DICT_SIZE, m), code)
        codes[s:e] = code.astype(cp.uint16)
        del kind, col, kc, code
    small = [1] + [pow(2, i, R) for i in range(1, 151)] + [R - pow(2, i, R) for i in range(149)]
    dict_std = np.zeros((DICT_SIZE, 4), dtype=np.uint64)
    dict_std[:300] = fr_to_array(small)
    dict_std[300:] = cp.asnumpy(fr.random(DICT_SIZE - 300, seed=seed + 1))
    dictionary = fr.to_mont(cp.asarray(dict_std))
    dev = DeviceCsr(
        nrows,
        ncols,
        nnz,
        row_ptr,
        cols,
        CODE16,
        codes=codes,
        dictionary=dictionary,
        one_code=0,
        long_rows=long_rows_of(cp, row_ptr),
    )
    split_ones(cp, dev)
    return dev, dict_std, (row_ptr, cols, codes)
