"""Sparse matrix–vector products over Fr on the GPU (kernels in ``spmv.cu``).

A :class:`DeviceCsr` is a CSR matrix made resident once: row pointers
(int64), column indices (uint32) and the coefficients, either as codes into a
dictionary of distinct values (an R1CS has few: 1, −1, powers of two, some
constants) or, when a dictionary would not pay, in full. Coefficients are kept
in Montgomery form, so products with standard-form witness values come out in
standard form.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends.cuda.fr import THREADS, FrKernels, fr_rows, grid_for, staged

log = logging.getLogger(__name__)

RAW, CODE16, CODE32 = 0, 1, 2
NO_ONE = 0xFFFFFFFF
LONG_ROW = 32  # rows with more entries go one warp per row
NULL = np.uint64(0)
_ONE_LIMBS = np.array([1, 0, 0, 0], dtype=np.uint64)


@dataclass
class DeviceCsr:
    """A resident matrix: the entries with coefficient 1 (``one_ptr``,
    ``one_cols``; None when not split) and the others (``row_ptr``, ``cols``
    and ``codes`` or ``coeffs``), two CSR parts over the same rows."""

    num_rows: int
    num_cols: int
    nnz: int
    row_ptr: Any
    cols: Any
    mode: int
    coeffs: Any = None  # RAW: (nnz, 4) Montgomery form
    codes: Any = None  # CODE16 / CODE32
    dictionary: Any = None  # (k, 4) Montgomery form
    one_code: int = NO_ONE
    long_rows: Any = None  # int64 ids of rows with more than LONG_ROW entries
    one_ptr: Any = None
    one_cols: Any = None
    hold: Any = None  # its share of the device budget

    @property
    def nbytes(self) -> int:
        parts = (
            self.row_ptr,
            self.cols,
            self.coeffs,
            self.codes,
            self.dictionary,
            self.long_rows,
            self.one_ptr,
            self.one_cols,
        )
        return sum(0 if p is None else int(p.nbytes) for p in parts)

    def release(self) -> None:
        if self.hold is not None:
            self.hold.release()
            self.hold = None


def long_rows_of(cp, row_ptr):
    """int64 ids of the rows with more than LONG_ROW entries."""
    if len(row_ptr) - 1 >= 1 << 40:
        raise ValueError(f"{len(row_ptr) - 1} rows: too many for one GPU CSR")
    return cp.nonzero(cp.diff(row_ptr) > LONG_ROW)[0].astype(cp.int64)


def split_ones(cp, dev: DeviceCsr) -> None:
    """Move the entries whose code is ``one_code`` into the ones part."""
    if dev.mode == RAW or dev.one_code == NO_ONE or dev.one_ptr is not None:
        return
    ones = dev.codes == dev.one_code
    before = cp.zeros(dev.nnz + 1, dtype=cp.int64)
    before[1:] = cp.cumsum(ones)
    dev.one_ptr = before[dev.row_ptr]
    dev.one_cols = dev.cols[ones]
    general = ~ones
    dev.row_ptr = dev.row_ptr - dev.one_ptr
    dev.cols = dev.cols[general]
    dev.codes = dev.codes[general]


def _coefficient_keys(xp, coeffs):
    """A 64-bit mix of each coefficient's limbs (equal values, equal keys)."""
    k = coeffs[:, 0].copy()
    for i, mult in ((1, 0x9E3779B97F4A7C15), (2, 0xC2B2AE3D27D4EB4F), (3, 0x165667B19E3779F9)):
        k ^= coeffs[:, i] * xp.uint64(mult)
        k ^= k >> xp.uint64(29)
    return k


class SpmvEngine:
    def __init__(self, ctx, fr: FrKernels, options: tuple[str, ...] = ()) -> None:
        import cupy

        self.cp = cupy
        self.ctx = ctx
        self.fr = fr
        self.module = ctx.module("spmv.cu", options)
        self._rows = self.module.get_function("spmv_warp_kernel")
        self._long = self.module.get_function("spmv_long_kernel")
        self._resident: weakref.WeakKeyDictionary[SparseMatrix, DeviceCsr] = (
            weakref.WeakKeyDictionary()
        )

    def upload(self, m: SparseMatrix) -> DeviceCsr:
        """The matrix made resident on the device (cached per matrix object)."""
        dev = self._resident.get(m)
        if dev is None:
            dev = self.from_arrays(m.indptr, m.indices, m.coeffs, m.num_cols)
            self._resident[m] = dev
            weakref.finalize(m, dev.release)
        return dev

    def from_arrays(self, indptr, indices, coeffs, num_cols: int) -> DeviceCsr:
        """CSR arrays (host or device; coefficients standard form) → DeviceCsr."""
        cp = self.cp
        nrows = len(indptr) - 1
        nnz = len(indices)
        if num_cols >= 2**32:
            raise ValueError(f"{num_cols} columns: the GPU CSR holds 32-bit column indices")
        row_ptr = cp.asarray(indptr, dtype=cp.int64)
        cols = cp.asarray(indices).astype(cp.uint32)
        coeffs = cp.ascontiguousarray(cp.asarray(coeffs, dtype=cp.uint64))
        if nnz:
            coeffs = self.fr.reduce(coeffs)
        dev = DeviceCsr(
            nrows, num_cols, nnz, row_ptr, cols, RAW, long_rows=long_rows_of(cp, row_ptr)
        )
        if nnz:
            keys = _coefficient_keys(cp, coeffs)
            ukeys, first, inverse = cp.unique(keys, return_index=True, return_inverse=True)
            dictionary = coeffs[first]
            # Keys are a hash: accept the dictionary only if it reproduces every value.
            exact = bool((dictionary[inverse.ravel()] == coeffs).all())
            k = len(ukeys)
            if exact and k * 32 < nnz * 28:
                codes = inverse.ravel().astype(cp.uint16 if k <= 1 << 16 else cp.uint32)
                ones = cp.nonzero((dictionary == cp.asarray(_ONE_LIMBS)).all(axis=1))[0]
                dev.mode = CODE16 if k <= 1 << 16 else CODE32
                dev.codes = codes
                dev.dictionary = self.fr.to_mont(dictionary)
                dev.one_code = int(ones[0]) if len(ones) else NO_ONE
                split_ones(cp, dev)
            else:
                dev.coeffs = self.fr.to_mont(coeffs)
            log.debug("CSR %d x %d, %d entries, %d distinct coefficients", nrows, num_cols, nnz, k)
        dev.hold = self.ctx.budget.acquire(dev.nbytes, f"CSR {nrows} x {num_cols}")
        return dev

    def matvec(self, dev: DeviceCsr, w):
        cp = self.cp
        if fr_rows(w, "witness") != dev.num_cols:
            raise ValueError(f"witness of {len(w)} values for a matrix of {dev.num_cols} columns")
        with staged(self.ctx, "spmv", [w], dev.num_rows * 32) as (w,):
            out = cp.empty((dev.num_rows, 4), dtype=cp.uint64)
            if dev.num_rows == 0:
                return out
            if dev.nnz == 0:
                out[...] = 0
                return out
            mats = (
                NULL if dev.one_ptr is None else dev.one_ptr,
                NULL if dev.one_cols is None else dev.one_cols,
                dev.row_ptr,
                dev.cols,
                NULL if dev.coeffs is None else dev.coeffs,
                NULL if dev.codes is None else dev.codes,
                NULL if dev.dictionary is None else dev.dictionary,
                w,
            )
            # 32 rows per warp, 8 warps per block.
            self._rows(
                grid_for(dev.num_rows),
                (THREADS,),
                (out, *mats, np.uint64(dev.num_rows), np.uint32(dev.mode), np.uint32(LONG_ROW)),
            )
            nlong = len(dev.long_rows)
            if nlong:
                self._long(
                    grid_for(nlong * 32),
                    (THREADS,),
                    (out, *mats, dev.long_rows, np.uint64(nlong), np.uint32(dev.mode)),
                )
        return out


__all__ = ["DeviceCsr", "SpmvEngine"]
