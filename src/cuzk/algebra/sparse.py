"""Sparse matrices over Fr in CSR form: the shape of an R1CS's A, B and C.

Row i holds the linear combination of constraint i; column j is variable j
of the full assignment (public inputs first, ONE at index 0, then aux).
Coefficients are Fr elements as ``(nnz, 4)`` uint64 limbs in standard form.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.fields import R


@dataclass(frozen=True, eq=False)
class SparseMatrix:
    indptr: np.ndarray  # int64, rows + 1
    indices: np.ndarray  # int64, nnz: column of each entry
    coeffs: np.ndarray  # (nnz, 4) uint64
    num_cols: int
    _coeff_ints: list[int] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.indptr.ndim != 1 or len(self.indptr) < 1 or self.indptr[0] != 0:
            raise ValueError("CSR indptr must start at 0")
        nnz = int(self.indptr[-1])
        if self.indices.shape != (nnz,) or self.coeffs.shape != (nnz, 4):
            raise ValueError(
                f"CSR with {nnz} entries has indices {self.indices.shape} "
                f"and coefficients {self.coeffs.shape}"
            )
        if nnz:
            low, high = _column_range(self.indices)
            if low < 0 or high >= self.num_cols:
                raise ValueError(f"CSR column index outside [0, {self.num_cols})")

    @property
    def num_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @staticmethod
    def from_rows(rows: list[list[tuple[int, int]]], num_cols: int) -> SparseMatrix:
        """Build from per-row lists of (column, coefficient int)."""
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=indptr[1:])
        cols = [c for row in rows for c, _ in row]
        vals = [v % R for row in rows for _, v in row]
        return SparseMatrix(
            indptr=indptr,
            indices=np.asarray(cols, dtype=np.int64),
            coeffs=fr_to_array(vals) if vals else np.zeros((0, 4), dtype=np.uint64),
            num_cols=num_cols,
        )

    def coeff_ints(self) -> list[int]:
        """The coefficients as Python ints (computed once, then cached)."""
        if self._coeff_ints is None:
            object.__setattr__(self, "_coeff_ints", fr_from_array(self.coeffs))
        return self._coeff_ints

    def column_mask(self) -> np.ndarray:
        """Which columns hold a non-zero entry (a variable's "density")."""
        mask = np.zeros(self.num_cols, dtype=bool)
        for lo, hi in released_spans(self.indices, self.coeffs):
            mask[self.indices[lo:hi][self.coeffs[lo:hi].any(axis=1)]] = True
        return mask

    def row_ids(self) -> np.ndarray:
        """The row of each entry."""
        return np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(self.indptr))

    def rmatvec(self, v: list[int]) -> list[int]:
        """Reference product vᵀ·A over Fr: one value per column."""
        if len(v) != self.num_rows:
            raise ValueError(f"vector of {len(v)} for a matrix of {self.num_rows} rows")
        out = np.zeros(self.num_cols, dtype=object)
        if self.nnz:
            vals = (
                np.array(self.coeff_ints(), dtype=object)
                * np.array(v, dtype=object)[self.row_ids()]
            )
            np.add.at(out, self.indices, vals)
        return [int(x) % R for x in out]

    def matvec(self, w: list[int]) -> list[int]:
        """Reference product A·w over Fr (Python ints in, Python ints out).

        Vectorised with numpy object arrays: one gather, one product per
        entry, one segmented sum per row.
        """
        if len(w) != self.num_cols:
            raise ValueError(f"vector of {len(w)} for a matrix of {self.num_cols} columns")
        if self.nnz == 0:
            return [0] * self.num_rows
        wv = np.array(w, dtype=object)
        prod = np.array(self.coeff_ints(), dtype=object) * wv[self.indices]
        starts = self.indptr[:-1]
        nonempty = self.indptr[1:] > starts
        out = np.zeros(self.num_rows, dtype=object)
        out[nonempty] = np.add.reduceat(prod, starts[nonempty])
        return [int(v) % R for v in out]


def release_rows(a: object, lo: int, hi: int) -> None:
    """Drop rows ``lo``..``hi`` of a file-mapped array (a matrix mapped from the
    circuit cache) from this process's resident set, once they have been read:
    ``MADV_DONTNEED`` on the whole pages they cover. The file's pages stay in
    the page cache and a later read maps them again; the process's RSS then
    counts one chunk of a 30 GiB matrix upload, not all of it. Nothing happens
    for other arrays (in memory, on a device) or where the platform has no
    ``madvise``."""
    mm = getattr(a, "_mmap", None)
    if mm is None or not isinstance(a, np.ndarray) or a.ndim == 0 or hi <= lo:
        return
    with contextlib.suppress(AttributeError, OSError, ValueError, BufferError):
        base = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        first = a.ctypes.data + lo * a.strides[0] - base
        end = a.ctypes.data + hi * a.strides[0] - base
        page = mmap.PAGESIZE
        start = -(-first // page) * page  # pages wholly inside the rows only
        stop = end // page * page
        if stop > start:
            mm.madvise(mmap.MADV_DONTNEED, start, stop - start)


# Bytes of a file-mapped array that a pass over all of it reads at a time.
MAPPED_CHUNK_BYTES = 64 << 20


def released_spans(*arrays: np.ndarray) -> Iterator[tuple[int, int]]:
    """Spans ``(lo, hi)`` over the rows of ``arrays`` (all of one length), about
    ``MAPPED_CHUNK_BYTES`` of the widest at a time. Once the caller is done with
    a span (it asks for the next, or stops), those rows of each file-mapped
    array leave the resident set (:func:`release_rows`): a pass over every
    entry of a mapped 30 GiB matrix holds one chunk of it, not all of it."""
    if not arrays:
        return
    n = len(arrays[0])
    width = max(a.dtype.itemsize * int(np.prod(a.shape[1:])) for a in arrays)
    step = max(1, MAPPED_CHUNK_BYTES // max(1, width))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        try:
            yield lo, hi
        finally:
            for a in arrays:
                release_rows(a, lo, hi)


def _column_range(indices: np.ndarray) -> tuple[int, int]:
    """The smallest and largest column of a non-empty index array, chunk by chunk."""
    low, high = None, None
    for lo, hi in released_spans(indices):
        part = indices[lo:hi]
        a, b = int(part.min()), int(part.max())
        low = a if low is None else min(low, a)
        high = b if high is None else max(high, b)
    assert low is not None and high is not None
    return low, high
