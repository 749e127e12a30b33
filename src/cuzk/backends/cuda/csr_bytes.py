"""The bytes a GPU CSR matrix of :mod:`cuzk.backends.cuda.spmv` holds, counted
without a GPU: resident on the device, pinned on the host when it streams,
on the device while a streamed product runs and while an upload converts it;
and, for a host matrix, the counts these need (its long rows, a sample of its
coefficients). The backend's memory model (:mod:`cuzk.backends.cuda.model`)
and the planner place a key's matrices by them.
"""

from __future__ import annotations

import numpy as np

from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix, release_rows, released_spans

LONG_ROW = 32  # rows with more entries go one warp per row (warp kernel)
# Uploads convert this many entries at a time; each entry of a chunk costs at
# most UPLOAD_BYTES_PER_ENTRY of temporaries (coefficients raw and reduced,
# keys and their sort, codes, the exactness check, the split's masks and sums).
UPLOAD_CHUNK = 1 << 24
UPLOAD_BYTES_PER_ENTRY = 256
# Streamed products go in blocks of whole STREAM_ROWS spans (the seg kernel's
# row-id bytes are row mod 256, so a block must start at a multiple of 256),
# each of at most STREAM_BLOCK_ENTRIES entries and as many rows: two staging
# sets of 0.72 GiB together at 16-bit codes, uploads of ~0.2 GiB that keep
# the copy engine busy far beyond a launch's overhead.
STREAM_ROWS = 256
STREAM_BLOCK_ENTRIES = 1 << 24
STAGE_ALIGN = 16  # staged arrays' offsets (the seg kernel's 16-byte vector loads)
STAGED_ARRAYS = 7  # row_ptr, cols, rid, codes or coeffs, one_ptr, one_cols, one_rid


def resident_bytes(rows: int, nnz: int, distinct: int, long_rows: int = 0) -> int:
    """Device bytes :meth:`spmv.SpmvEngine.from_arrays` holds for a matrix of this shape
    with ``distinct`` different coefficients (row ids of the seg kernel included;
    the ones part counted at the general part's width, an upper bound)."""
    if nnz == 0:
        return 8 * (rows + 1) + 8 * long_rows
    extra = nnz + 8 * long_rows  # the seg kernel's row-id bytes, the long-row list
    if distinct * 32 < nnz * 28:
        width = 2 if distinct <= 1 << 16 else 4
        return 16 * (rows + 1) + (4 + width) * nnz + 32 * distinct + extra
    return 8 * (rows + 1) + 36 * nnz + extra


def _code_width(nnz: int, distinct: int) -> int:
    """Bytes of a code when ``distinct`` coefficients pay for a dictionary, else 0."""
    if nnz == 0 or distinct * 32 >= nnz * 28:
        return 0
    return 2 if distinct <= 1 << 16 else 4


def pinned_bytes(rows: int, nnz: int, distinct: int, long_rows: int = 0) -> int:
    """Host bytes of a :class:`spmv.StreamedCsr` of this shape: :func:`resident_bytes`
    without the dictionary and the long-row list (an upper bound likewise)."""
    dictionary = 32 * distinct if _code_width(nnz, distinct) else 0
    return resident_bytes(rows, nnz, distinct, long_rows) - dictionary - 8 * long_rows


def streamed_bytes(
    rows: int,
    nnz: int,
    distinct: int,
    block_entries: int = STREAM_BLOCK_ENTRIES,
    longest_span: int = 0,
) -> int:
    """Device bytes a streamed product holds besides w and out: the dictionary and
    two staging sets for the largest block (``longest_span``: the most entries
    of any STREAM_ROWS span, where it passes ``block_entries``)."""
    if rows == 0 or nnz == 0:
        return 0
    r = min(rows, max(STREAM_ROWS, block_entries // STREAM_ROWS * STREAM_ROWS))
    e = min(nnz, max(block_entries, longest_span))
    width = _code_width(nnz, distinct)
    if width:  # both parts' pointers, the ones counted at the general part's width
        staging, dictionary = 16 * (r + 1) + (4 + width + 1) * e, 32 * distinct
    else:
        staging, dictionary = 8 * (r + 1) + 37 * e, 0
    return dictionary + 2 * (staging + STAGE_ALIGN * STAGED_ARRAYS)


def upload_bytes(rows: int, nnz: int, chunk: int = UPLOAD_CHUNK) -> int:
    """Device bytes :meth:`spmv.SpmvEngine.from_arrays` holds while it converts a matrix,
    beside the matrix itself: the row pointers and one chunk's temporaries
    (seen 2026-12-01: a 32GiB PoRep key's estimate without them fell 2.85 GiB
    short)."""
    return 16 * (rows + 1) + UPLOAD_BYTES_PER_ENTRY * max(1, min(nnz, chunk))


def long_row_count(indptr: np.ndarray) -> int:
    """Rows with more than LONG_ROW entries, from host row pointers read a chunk
    at a time (a mapped matrix's pages leave the resident set as they are read)."""
    count = 0
    for lo, hi in released_spans(indptr):
        count += int((np.diff(indptr[lo : hi + 1]) > LONG_ROW).sum())
    return count


def sampled_coefficients(coeffs: np.ndarray, step: int) -> np.ndarray:
    """``coeffs[::step]``, copied a chunk at a time: a strided read of a mapped
    array maps a 64 KiB window of the file around each entry (the kernel's
    fault-around), which is all of it for the key's strides; each chunk's
    pages leave the resident set once its samples are taken."""
    parts = [np.zeros((0, *coeffs.shape[1:]), dtype=coeffs.dtype)]
    for lo, hi in released_spans(coeffs):
        first = -(-lo // step) * step
        parts.append(np.array(coeffs[first:hi:step]))
    return np.concatenate(parts)


def resident_bytes_exact(m: SparseMatrix, chunk: int = 1 << 22) -> int:
    """What :meth:`spmv.SpmvEngine.from_arrays` and :meth:`spmv.SpmvEngine.prepare_seg`
    hold for a host matrix, counted on the host: its distinct coefficients
    (mod r), the entries equal to 1 and the long rows, laid out as the upload
    lays them out. Reads every entry (minutes for a 32GiB PoRep matrix): for
    calibrating :func:`resident_bytes_estimate`, not for the daemon's path. A
    64-bit key collision in the upload's dictionary (never seen) would make it
    store full coefficients instead."""
    nnz, rows = m.nnz, m.num_rows
    long_rows = long_row_count(m.indptr)

    def coefficient_rows():  # each chunk's coefficients, one 32-byte item an entry
        for lo in range(0, nnz, chunk):
            part = np.ascontiguousarray(m.coeffs[lo : lo + chunk], dtype="<u8")
            release_rows(m.coeffs, lo, min(nnz, lo + chunk))  # copied: a mapped matrix's pages go
            yield part.view(np.dtype((np.void, 32))).ravel()

    raw = np.unique(np.concatenate([np.unique(c) for c in coefficient_rows()] or [[]]))
    values = [int.from_bytes(bytes(v), "little") % R for v in raw]
    k = len(set(values))
    if nnz == 0 or k * 32 >= nnz * 28:  # (full coefficients: a dictionary would not pay)
        return resident_bytes(rows, nnz, k, long_rows)
    ones_raw = np.array([v for v, reduced in zip(raw, values, strict=True) if reduced == 1])
    ones = sum(int(np.isin(c, ones_raw).sum()) for c in coefficient_rows()) if len(ones_raw) else 0
    item = 2 if k <= 1 << 16 else 4
    ptrs = 2 if ones else 1  # row_ptr, and one_ptr when the ones are split
    final = 8 * ptrs * (rows + 1) + 4 * nnz + item * (nnz - ones) + 32 * k + 8 * long_rows
    return final + nnz  # the seg kernel's row-id bytes


def resident_bytes_estimate(m: SparseMatrix, sample: int = 1 << 16) -> int:
    """:func:`resident_bytes` of a host matrix, judging its coefficients by a sample.

    A full count of distinct values would read every entry; an evenly strided
    sample with few distinct values is taken to mean codes, counted at the
    32-bit width with a dictionary of up to 2^16 values, and otherwise the full
    32-byte coefficients. A matrix whose unsampled entries hold many more
    distinct values can take more; the device budget's overdraw report
    (``DeviceBudget.overdrawn_by_operation``) shows it.
    """
    nnz = m.nnz
    long_rows = long_row_count(m.indptr)
    if nnz == 0:
        return resident_bytes(m.num_rows, 0, 0, long_rows)
    picked = sampled_coefficients(m.coeffs, max(1, nnz // sample))
    distinct = len(np.unique(picked, axis=0))
    # few: the 32-bit width and a 2 MiB dictionary; many: full coefficients
    distinct = max(distinct, (1 << 16) + 1) if distinct * 8 <= len(picked) else nnz
    return resident_bytes(m.num_rows, nnz, distinct, long_rows)
