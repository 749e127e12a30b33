"""Sparse matrix–vector products over Fr on the GPU (kernels in ``spmv.cu``).

A :class:`DeviceCsr` is a CSR matrix made resident once: row pointers
(int64), column indices (uint32) and the coefficients, either as codes into a
dictionary of distinct values (an R1CS has few: 1, −1, powers of two, some
constants) or, when a dictionary would not pay, in full. Coefficients are kept
in Montgomery form, so products with standard-form witness values come out in
standard form.

Two kernels (``kernel=``): ``"warp"`` (a warp per 32 rows, each row summed by
its own lane) and ``"seg"`` (a warp per SEG_ROWS rows, a segmented reduction
over the entries with unreduced sums; see ``kernels/spmv.cu``). The seg
kernel reads a byte per entry (its row mod 256) instead of the row pointers,
made on the device the first time it multiplies a matrix.

A :class:`StreamedCsr` (``from_arrays(..., resident=False)``) keeps the same
arrays in pinned host memory instead, for devices too small to hold a key's
matrices beside a proof: each product uploads them in blocks of whole
256-row spans on a copy stream, overlapped with the seg kernel's work on the
block before, and only the dictionary stays on the device.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk.algebra.sparse import SparseMatrix, release_rows, released_spans
from cuzk.backends.cuda import tuning
from cuzk.backends.cuda.csr_bytes import (
    LONG_ROW,
    STAGE_ALIGN,
    STREAM_BLOCK_ENTRIES,
    STREAM_ROWS,
    UPLOAD_BYTES_PER_ENTRY,
    UPLOAD_CHUNK,
)
from cuzk.backends.cuda.fr import THREADS, FrKernels, fr_rows, grid_for, staged

log = logging.getLogger(__name__)

RAW, CODE16, CODE32 = 0, 1, 2
KERNEL_MODULE = "spmv.cu"  # cuzk.backends.cuda.kernels lists what the backend loads
NO_ONE = 0xFFFFFFFF
KERNELS = ("warp", "seg")
# The segmented kernel: by instruction count several times cheaper per entry
# than the warp kernel (docs/device-notes/ntt.md#sparse-kernels).
DEFAULT_KERNEL = "seg"
SEG_ROWS = tuning.SPMV["SPMV_SEG_ROWS"]
SEG_WARPS = tuning.SPMV["SPMV_SEG_WARPS"]
WARP_THREADS = 32 * tuning.SPMV["SPMV_WARPS"]  # the warp kernel's block
KERNEL_DEFINES = tuning.flags(tuning.SPMV)
SEG_MAX_ROW = 1 << 30  # the seg kernel's unreduced row sums hold fewer entries
NULL = np.uint64(0)
_ONE_LIMBS = np.array([1, 0, 0, 0], dtype=np.uint64)
_PINNED_ARRAYS = ("row_ptr", "cols", "rid", "coeffs", "codes", "one_ptr", "one_cols", "one_rid")


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
    one_rid: Any = None  # seg kernel: row mod 256 of every entry (uint8), per part
    rid: Any = None
    seg_hold: Any = None

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
            self.one_rid,
            self.rid,
        )
        return sum(0 if p is None else int(p.nbytes) for p in parts)

    def release(self) -> None:
        for name in ("hold", "seg_hold"):
            hold = getattr(self, name)
            if hold is not None:
                hold.release()
                setattr(self, name, None)

    def close(self) -> None:
        """Free the device arrays and give their budget back (the matrix is unusable after)."""
        arrays = ("row_ptr", "cols", "coeffs", "codes", "dictionary", "long_rows")
        for name in (*arrays, "one_ptr", "one_cols", "one_rid", "rid"):
            setattr(self, name, None)
        self.release()


@dataclass(eq=False)
class StreamedCsr:
    """A matrix kept in pinned host memory and streamed through the device by each
    product: a :class:`DeviceCsr`'s per-row and per-entry arrays (the seg
    kernel's row ids included) as numpy views of pinned blocks, and its
    dictionary on the device under ``hold``."""

    num_rows: int
    num_cols: int
    nnz: int
    mode: int
    row_ptr: Any
    cols: Any
    one_code: int = NO_ONE
    coeffs: Any = None  # RAW: (nnz, 4) Montgomery form
    codes: Any = None  # CODE16 / CODE32
    rid: Any = None  # None when there are no entries
    one_ptr: Any = None
    one_cols: Any = None
    one_rid: Any = None
    dictionary: Any = None  # on the device
    hold: Any = None  # the dictionary's share of the device budget
    blocks: list = field(default_factory=list, repr=False)  # the pinned allocations
    done: Any = None  # an event after the last product's last kernel

    @property
    def nbytes_pinned(self) -> int:
        """Host bytes of the pinned arrays."""
        arrays = (getattr(self, name) for name in _PINNED_ARRAYS)
        return sum(0 if a is None else int(a.nbytes) for a in arrays)

    @property
    def nbytes(self) -> int:
        """Device bytes it holds between products: the dictionary."""
        return 0 if self.dictionary is None else int(self.dictionary.nbytes)

    def close(self) -> None:
        """Free the pinned arrays and the dictionary and give the budget back (the
        matrix is unusable after)."""
        if self.done is not None:
            self.done.synchronize()  # the last product's uploads read the pinned arrays
        for name in _PINNED_ARRAYS:
            setattr(self, name, None)
        self.dictionary = None
        self.blocks = []
        self.done = None
        if self.hold is not None:
            self.hold.release()
            self.hold = None


def stream_blocks(row_ptr, one_ptr, block_entries: int) -> list[tuple[int, int]]:
    """The row ranges (r0, r1) a streamed product uploads one at a time, from host
    row pointers of the general part and of the ones part (or None): whole
    STREAM_ROWS spans, at most ``block_entries`` entries (both parts) and rows
    each; a span of more entries is a block of its own."""
    rows = len(row_ptr) - 1
    bounds = np.minimum(np.arange(0, rows + STREAM_ROWS, STREAM_ROWS), rows)
    ends = row_ptr[bounds] + (0 if one_ptr is None else one_ptr[bounds])
    most = max(1, block_entries // STREAM_ROWS)  # spans per block
    blocks = []
    s, spans = 0, len(bounds) - 1
    while s < spans:
        t = int(np.searchsorted(ends, ends[s] + block_entries, side="right")) - 1
        t = min(max(t, s + 1), s + most, spans)
        blocks.append((int(bounds[s]), int(bounds[t])))
        s = t
    return blocks


def _block_parts(m: StreamedCsr, r0: int, r1: int) -> list:
    """The pinned slices of rows r0..r1 a block uploads (None: a part the matrix
    lacks): row_ptr, cols, rid, coeffs or codes, one_ptr, one_cols, one_rid."""
    g0, g1 = int(m.row_ptr[r0]), int(m.row_ptr[r1])
    values = m.coeffs if m.mode == RAW else m.codes
    parts = [m.row_ptr[r0 : r1 + 1], m.cols[g0:g1], m.rid[g0:g1], values[g0:g1]]
    if m.one_ptr is None:
        return [*parts, None, None, None]
    o0, o1 = int(m.one_ptr[r0]), int(m.one_ptr[r1])
    return [*parts, m.one_ptr[r0 : r1 + 1], m.one_cols[o0:o1], m.one_rid[o0:o1]]


def _packed(parts: list) -> tuple[list[int], int]:
    """Offsets of ``parts`` in a staging set (each STAGE_ALIGN-aligned) and its size."""
    offsets, end = [], 0
    for a in parts:
        offsets.append(end)
        if a is not None:
            end += -(-int(a.nbytes) // STAGE_ALIGN) * STAGE_ALIGN
    return offsets, end


def _aligned16(cp, a):
    """``a``, or a fresh copy when its device address is not 16-byte aligned
    (the seg kernel reads columns and codes in 8- and 16-byte vectors)."""
    ptr = getattr(getattr(a, "data", None), "ptr", None)
    if ptr is None or ptr % 16 == 0:
        return a
    return cp.array(a, copy=True)


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


def _one_code(cp, dictionary) -> int:
    """The code of the coefficient 1, or NO_ONE."""
    _keys, values = dictionary
    ones = cp.nonzero((values == cp.asarray(_ONE_LIMBS)).all(axis=1))[0]
    return int(ones[0]) if len(ones) else NO_ONE


def _mix64(xp, z):
    """splitmix64's finaliser: a bijection of 64-bit words whose every output bit
    depends on every input bit."""
    z = z ^ (z >> xp.uint64(30))
    z = z * xp.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> xp.uint64(27))
    z = z * xp.uint64(0x94D049BB133111EB)
    return z ^ (z >> xp.uint64(31))


_LIMB_SALTS = (0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89)


def _coefficient_keys(xp, coeffs):
    """A 64-bit hash of each coefficient's four limbs (equal values, equal keys).

    Each limb is mixed with its own salt before it is folded in: a word that
    only multiplies a limb by an odd constant keeps its low zero bits, so 2^62
    in limb 0 and in limb 1 got one key, and the SHA-256 packings' powers of
    two made the 32GiB PoRep's A and C matrices fall back to full coefficients
    (seen 2026-12-02: 11.3 and 10.4 GiB on the GPU instead of 3.9 and 3.5)."""
    k = xp.zeros(len(coeffs), dtype=xp.uint64)
    for i, salt in enumerate(_LIMB_SALTS):
        k = _mix64(xp, k ^ _mix64(xp, coeffs[:, i] ^ xp.uint64(salt)))
    return k


class SpmvEngine:
    """Sparse products on one device with one kernel (``KERNELS``; None: the default)."""

    def __init__(
        self,
        ctx,
        fr: FrKernels,
        kernel: str | None = None,
        block_entries: int = STREAM_BLOCK_ENTRIES,
    ) -> None:
        import cupy

        kernel = kernel or DEFAULT_KERNEL
        if kernel not in KERNELS:
            raise ValueError(f"sparse kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
        self.cp = cupy
        self.ctx = ctx
        self.fr = fr
        self.kernel = kernel
        self.upload_chunk = UPLOAD_CHUNK
        self.block_entries = block_entries  # of a streamed product's blocks
        self.module = ctx.module(KERNEL_MODULE, KERNEL_DEFINES)
        self._rows = self.module.get_function("spmv_warp_kernel")
        self._long = self.module.get_function("spmv_long_kernel")
        self._seg = self.module.get_function("spmv_seg_kernel")
        self._rowid = self.module.get_function("spmv_rowid_kernel")
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

    def from_arrays(
        self, indptr, indices, coeffs, num_cols: int, resident: bool = True
    ) -> DeviceCsr | StreamedCsr:
        """CSR arrays (host or device; coefficients standard form) → DeviceCsr, or
        with ``resident=False`` a StreamedCsr: built on the device the same way,
        then moved to pinned host memory but for its dictionary (a matrix the
        seg kernel cannot take, a row too long, stays resident, with a warning).

        The entries are converted in chunks of ``upload_chunk``: one pass finds
        the dictionary of distinct coefficients, a second checks that it codes
        every entry exactly and counts the ones, a third writes the columns
        and codes of the ones part and the general part. The final arrays are
        reserved before they are allocated, and the passes' temporaries are
        bounded by one chunk (``UPLOAD_BYTES_PER_ENTRY``) and reserved too, so
        a matrix of any size uploads within its budget.
        """
        cp = self.cp
        nrows = len(indptr) - 1
        nnz = len(indices)
        if len(coeffs) != nnz:
            raise ValueError(f"CSR with {nnz} column indices and {len(coeffs)} coefficients")
        if num_cols >= 2**32:
            raise ValueError(f"{num_cols} columns: the GPU CSR holds 32-bit column indices")
        chunk = max(1, min(nnz, self.upload_chunk))
        what = f"CSR {nrows} x {num_cols}"
        with self.ctx.budget.reserve(
            16 * (nrows + 1) + UPLOAD_BYTES_PER_ENTRY * chunk, f"{what} upload"
        ):
            row_ptr = self._row_pointers(indptr)
            long_rows = long_rows_of(cp, row_ptr)
            spans = [(lo, min(nnz, lo + chunk)) for lo in range(0, nnz, chunk)]
            dictionary = self._dictionary(coeffs, spans, nnz) if nnz else None
            ones = None if dictionary is None else self._count_ones(coeffs, spans, dictionary)
            # distinct coefficients of a dictionary that a key collision made unusable
            collided = len(dictionary[0]) if ones is None and dictionary is not None else 0
            if nnz and ones is None:
                dictionary = None  # not worth it, or a key collision: full coefficients
            k = 0 if dictionary is None else len(dictionary[0])
            code_t = cp.uint16 if k <= 1 << 16 else cp.uint32
            n_one = sum(ones) if ones else 0
            # exactly what the arrays below take (DeviceCsr.nbytes without the row ids)
            if dictionary is None:
                final = 8 * (nrows + 1) + 36 * nnz
            else:
                ptrs = 2 if ones else 1  # row_ptr, and one_ptr when the ones are split
                item = np.dtype(code_t).itemsize
                final = 8 * ptrs * (nrows + 1) + 4 * nnz + item * (nnz - n_one) + 32 * k
            final += int(long_rows.nbytes)
            if collided:
                log.warning(
                    "%s: two of its %d distinct coefficients share a 64-bit key; "
                    "it is stored with full coefficients (%.2f GiB)",
                    what,
                    collided,
                    final / 2**30,
                )
            hold = self.ctx.budget.acquire(final, what)
            try:
                if dictionary is None:
                    dev = self._fill_raw(indices, coeffs, spans, nrows, num_cols, row_ptr)
                else:
                    host_ptr = indptr if isinstance(indptr, np.ndarray) else cp.asnumpy(row_ptr)
                    dev = self._fill_coded(
                        indices,
                        coeffs,
                        spans,
                        (row_ptr, host_ptr),
                        num_cols,
                        dictionary,
                        ones,
                        code_t,
                    )
            except BaseException:
                hold.release()
                raise
            finally:  # the searches of _fill_coded read the host pointers again
                release_rows(indptr, 0, len(indptr))
            dev.long_rows = long_rows
            dev.hold = hold
            log.debug("%s, %d entries, %d distinct coefficients (mode %d)", what, nnz, k, dev.mode)
        if not resident:
            return self._streamed(dev, what)
        if self.kernel == "seg":
            self.prepare_seg(dev)
        return dev

    def _streamed(self, dev: DeviceCsr, what: str) -> DeviceCsr | StreamedCsr:
        """``dev`` moved to pinned host memory: its arrays copied there and freed on
        the device, all but the dictionary, whose share of the budget becomes a
        hold of its own; ``dev`` itself when the seg kernel, which streamed
        products use, cannot take it."""
        cp = self.cp
        if dev.num_rows and dev.nnz and not self.prepare_seg(dev):
            log.warning("%s stays resident: the seg kernel cannot take it", what)
            return dev
        blocks = []

        def pinned(a, count: int | None = None):
            if a is None:
                return None
            a = a if count is None else a[:count]
            mem = cp.cuda.alloc_pinned_memory(max(int(a.nbytes), 1))
            host = np.frombuffer(mem, dtype=a.dtype, count=a.size).reshape(a.shape)
            if a.size:
                cp.asnumpy(a, out=host)
            blocks.append(mem)
            return host

        try:
            s = StreamedCsr(
                dev.num_rows,
                dev.num_cols,
                dev.nnz,
                dev.mode,
                pinned(dev.row_ptr),
                pinned(dev.cols),
                one_code=dev.one_code,
                coeffs=pinned(dev.coeffs),
                codes=pinned(dev.codes),
                rid=pinned(dev.rid, len(dev.cols)),  # (a part without entries has one byte)
                one_ptr=pinned(dev.one_ptr),
                one_cols=pinned(dev.one_cols),
                one_rid=pinned(dev.one_rid, None if dev.one_cols is None else len(dev.one_cols)),
                dictionary=dev.dictionary,
                blocks=blocks,
            )
            if dev.dictionary is not None:
                # the dictionary's bytes pass from the matrix's hold to its own:
                # reserved all along, never twice
                with self.ctx.budget.drawing_from(dev.hold):
                    s.hold = self.ctx.budget.acquire(s.nbytes, f"{what} dictionary")
        finally:
            dev.close()
        log.debug("%s streamed from %.3f GiB of pinned memory", what, s.nbytes_pinned / 2**30)
        return s

    def _row_pointers(self, indptr):
        """The row pointers on the device as int64, copied a chunk at a time (a
        mapped host matrix's pages for them leave the process's resident set)."""
        cp = self.cp
        row_ptr = cp.empty(len(indptr), dtype=cp.int64)
        for lo, hi in released_spans(indptr):
            row_ptr[lo:hi] = cp.asarray(indptr[lo:hi], dtype=cp.int64)
        return row_ptr

    def _chunk_coeffs(self, coeffs, lo: int, hi: int):
        """Entries lo..hi's coefficients on the device, reduced mod r (a mapped
        host matrix's pages for them leave the process's resident set)."""
        cp = self.cp
        c = cp.ascontiguousarray(cp.asarray(coeffs[lo:hi], dtype=cp.uint64))
        release_rows(coeffs, lo, hi)
        return self.fr.reduce(c)

    def _chunk_cols(self, indices, lo: int, hi: int):
        """Entries lo..hi's columns on the device as uint32 (as _chunk_coeffs)."""
        cols = self.cp.asarray(indices[lo:hi]).astype(self.cp.uint32)
        release_rows(indices, lo, hi)
        return cols

    def _dictionary(self, coeffs, spans, nnz: int):
        """(sorted keys, values) of the distinct coefficients, or None when a
        dictionary would not pay (more than 7/8 of the full coefficients' size)."""
        cp = self.cp
        keys = cp.empty(0, dtype=cp.uint64)
        values = cp.empty((0, 4), dtype=cp.uint64)
        for lo, hi in spans:
            c = self._chunk_coeffs(coeffs, lo, hi)
            ck, first = cp.unique(_coefficient_keys(cp, c), return_index=True)
            keys, pick = cp.unique(cp.concatenate([keys, ck]), return_index=True)
            values = cp.concatenate([values, c[first]])[pick]
            if len(keys) * 32 >= nnz * 28:
                return None
        return keys, values

    def _codes(self, c, dictionary):
        """Codes of one chunk's (reduced) coefficients; None if the dictionary
        does not reproduce every value (two values with one key)."""
        cp = self.cp
        keys, values = dictionary
        codes = cp.searchsorted(keys, _coefficient_keys(cp, c))
        codes = cp.minimum(codes, len(keys) - 1)
        if not bool((values[codes] == c).all()):
            return None
        return codes

    def _count_ones(self, coeffs, spans, dictionary) -> list[int] | None:
        """Entries with coefficient 1 per chunk ([] when 1 is not a coefficient);
        None when the dictionary does not code every entry exactly."""
        cp = self.cp
        one = _one_code(cp, dictionary)
        counts = []
        for lo, hi in spans:
            codes = self._codes(self._chunk_coeffs(coeffs, lo, hi), dictionary)
            if codes is None:
                return None
            counts.append(0 if one == NO_ONE else int((codes == one).sum()))
        return counts if one != NO_ONE else []

    def _fill_raw(self, indices, coeffs, spans, nrows, num_cols, row_ptr) -> DeviceCsr:
        cp = self.cp
        nnz = len(indices)
        cols = cp.empty(nnz, dtype=cp.uint32)
        mont = cp.empty((nnz, 4), dtype=cp.uint64)
        for lo, hi in spans:
            cols[lo:hi] = self._chunk_cols(indices, lo, hi)
            mont[lo:hi] = self.fr.to_mont(self._chunk_coeffs(coeffs, lo, hi))
        return DeviceCsr(nrows, num_cols, nnz, row_ptr, cols, RAW, coeffs=mont)

    def _fill_coded(
        self, indices, coeffs, spans, ptrs, num_cols, dictionary, ones, code_t
    ) -> DeviceCsr:
        """The coded parts; ``ptrs``: the row pointers on the device and on the host."""
        cp = self.cp
        row_ptr, host_ptr = ptrs
        nrows = len(row_ptr) - 1
        nnz = len(indices)
        one = _one_code(cp, dictionary)
        n_one = sum(ones)
        mode = CODE16 if code_t == cp.uint16 else CODE32
        cols = cp.empty(nnz - n_one, dtype=cp.uint32)
        codes = cp.empty(nnz - n_one, dtype=code_t)
        one_cols = cp.empty(n_one, dtype=cp.uint32) if one != NO_ONE else None
        # ones before each row start: one_ptr[i] = #ones among entries < row_ptr[i]
        one_ptr = cp.zeros(nrows + 1, dtype=cp.int64) if one != NO_ONE else None
        g = o = 0
        for lo, hi in spans:
            ccodes = self._codes(self._chunk_coeffs(coeffs, lo, hi), dictionary)
            ccols = self._chunk_cols(indices, lo, hi)
            if one == NO_ONE:
                cols[lo:hi] = ccols
                codes[lo:hi] = ccodes.astype(code_t)
                continue
            is_one = ccodes == one
            before = cp.cumsum(is_one, dtype=cp.int64)  # ones in [lo, lo + j]
            # rows starting inside (lo, hi], found on the host copy of the pointers
            a = int(np.searchsorted(host_ptr, lo, side="right"))
            b = int(np.searchsorted(host_ptr, hi, side="right"))
            starts = row_ptr[a:b]
            inside = starts - lo - 1
            one_ptr[a:b] = o + before[cp.maximum(inside, 0)] * (inside >= 0)
            k1 = int(before[-1])
            one_cols[o : o + k1] = ccols[is_one]
            keep = ~is_one
            cols[g : g + (hi - lo - k1)] = ccols[keep]
            codes[g : g + (hi - lo - k1)] = ccodes[keep].astype(code_t)
            o += k1
            g += hi - lo - k1
        _keys, values = dictionary
        dev = DeviceCsr(
            nrows,
            num_cols,
            nnz,
            row_ptr if one_ptr is None else row_ptr - one_ptr,
            cols,
            mode,
            codes=codes,
            dictionary=self.fr.to_mont(values),
            one_code=one,
        )
        if one_ptr is not None:
            dev.one_ptr, dev.one_cols = one_ptr, one_cols
        return dev

    def prepare_seg(self, dev: DeviceCsr) -> bool:
        """Make the seg kernel's row-id bytes (once per matrix); False when a row
        is too long for its unreduced sums (the warp kernel then does it)."""
        cp = self.cp
        if dev.rid is not None:
            return True
        if dev.num_rows == 0 or dev.nnz == 0:
            return False
        lengths = cp.diff(dev.row_ptr)
        if dev.one_ptr is not None:
            lengths = lengths + cp.diff(dev.one_ptr)
        if int(lengths.max()) >= SEG_MAX_ROW:
            log.warning("a row of %d entries: sparse product by the warp kernel", lengths.max())
            return False
        del lengths
        dev.cols = _aligned16(cp, dev.cols)
        if dev.codes is not None:
            dev.codes = _aligned16(cp, dev.codes)
        if dev.one_cols is not None:
            dev.one_cols = _aligned16(cp, dev.one_cols)
        parts = [(dev.row_ptr, len(dev.cols))]
        if dev.one_ptr is not None:
            parts.append((dev.one_ptr, len(dev.one_cols)))
        need = sum(n for _, n in parts)
        hold = self.ctx.budget.acquire(need, f"CSR row ids {dev.num_rows} rows")
        rids = []
        for ptr, n in parts:
            rid = cp.empty(max(n, 1), dtype=cp.uint8)
            self._rowid(grid_for(dev.num_rows), (THREADS,), (rid, ptr, np.uint64(dev.num_rows)))
            rids.append(rid)
        dev.rid = rids[0]
        dev.one_rid = rids[1] if len(rids) > 1 else None
        dev.seg_hold = hold
        return True

    def matvec(self, m: DeviceCsr | StreamedCsr, w, out=None):
        """m·w (w standard form, on the host or the device), into ``out[:num_rows]``
        when ``out`` is given (a C-contiguous (R, 4) uint64 device array with
        R ≥ num_rows; its other rows are left as they are), else into a new
        (num_rows, 4) array; returns the array written."""
        cp = self.cp
        if fr_rows(w, "witness") != m.num_cols:
            raise ValueError(f"witness of {len(w)} values for a matrix of {m.num_cols} columns")
        if out is not None:
            shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
            if (
                not isinstance(out, cp.ndarray)
                or dtype != cp.uint64
                or len(shape) != 2
                or shape[1] != 4
                or shape[0] < m.num_rows
                or not out.flags.c_contiguous
            ):
                raise ValueError(
                    f"out: expected a C-contiguous (R, 4) uint64 device array with "
                    f"R >= {m.num_rows}, got {shape} {dtype}"
                )
        out_bytes = 0 if out is not None else m.num_rows * 32
        with staged(self.ctx, "spmv", [w], out_bytes) as (w,):
            if out is None:
                out = cp.empty((m.num_rows, 4), dtype=cp.uint64)
            if m.num_rows == 0:
                return out
            dest = out[: m.num_rows]
            if m.nnz == 0:
                dest[...] = 0
            elif isinstance(m, StreamedCsr):
                self._matvec_streamed(m, w, dest)
            else:
                self._matvec_resident(m, w, dest)
        return out

    def _matvec_resident(self, dev: DeviceCsr, w, out) -> None:
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
        if self.kernel == "seg" and self.prepare_seg(dev):
            groups = -(-dev.num_rows // SEG_ROWS)
            self._seg(
                grid_for(groups, SEG_WARPS),
                (32 * SEG_WARPS,),
                (
                    out,
                    mats[0],
                    mats[1],
                    NULL if dev.one_rid is None else dev.one_rid,
                    mats[2],
                    mats[3],
                    dev.rid,
                    *mats[4:],
                    np.uint64(dev.num_rows),
                    np.uint32(dev.mode),
                ),
            )
            return
        # 32 rows per warp.
        self._rows(
            grid_for(dev.num_rows, WARP_THREADS),
            (WARP_THREADS,),
            (out, *mats, np.uint64(dev.num_rows), np.uint32(dev.mode), np.uint32(LONG_ROW)),
        )
        nlong = len(dev.long_rows)
        if nlong:
            self._long(
                grid_for(nlong * 32),
                (THREADS,),
                (out, *mats, dev.long_rows, np.uint64(nlong), np.uint32(dev.mode)),
            )

    def _matvec_streamed(self, m: StreamedCsr, w, out) -> None:
        """The seg kernel over blocks (:func:`stream_blocks`) uploaded from pinned
        memory into two staging sets on a copy stream: a block's upload waits
        until the kernel that read its set is done, its kernel until the upload
        is, so one block's upload overlaps the kernel of the block before."""
        cp = self.cp
        plans = []
        for r0, r1 in stream_blocks(m.row_ptr, m.one_ptr, self.block_entries):
            parts = _block_parts(m, r0, r1)
            plans.append((r0, r1, parts, *_packed(parts)))
        set_bytes = max(p[4] for p in plans)
        with self.ctx.budget.reserve(2 * set_bytes, f"CSR {m.num_rows} x {m.num_cols} streamed"):
            compute = cp.cuda.get_current_stream()
            copy = cp.cuda.Stream(non_blocking=True)
            sets = [cp.empty(set_bytes, dtype=cp.uint8) for _ in range(2)]
            # the sets' memory may be what the compute stream's queued work just freed
            allocated = cp.cuda.Event(disable_timing=True)
            allocated.record(compute)
            copy.wait_event(allocated)
            views: list = [None, None]
            uploaded: list = [None, None]
            read: list = [None, None]  # after the kernel that read the set

            def upload(i: int) -> None:
                b = i % 2
                _r0, _r1, parts, offsets, _size = plans[i]
                if read[b] is not None:
                    copy.wait_event(read[b])
                views[b] = []
                for a, off in zip(parts, offsets, strict=True):
                    if a is None:
                        views[b].append(NULL)
                        continue
                    v = sets[b][off : off + a.nbytes].view(a.dtype).reshape(a.shape)
                    if a.size:
                        v.set(a, stream=copy)
                    views[b].append(v)
                uploaded[b] = cp.cuda.Event(disable_timing=True)
                uploaded[b].record(copy)

            upload(0)
            for i, (r0, r1, parts, _offsets, _size) in enumerate(plans):
                b = i % 2
                ptr, cols, rid, values, one_ptr, one_cols, one_rid = views[b]
                compute.wait_event(uploaded[b])
                if i + 1 < len(plans):
                    upload(i + 1)
                # the block's entries start at 0 of its staging arrays
                ptr -= np.int64(parts[0][0])
                if m.one_ptr is not None:
                    one_ptr -= np.int64(parts[4][0])
                nr = r1 - r0
                self._seg(
                    grid_for(-(-nr // SEG_ROWS), SEG_WARPS),
                    (32 * SEG_WARPS,),
                    (
                        out[r0:r1],
                        one_ptr,
                        one_cols,
                        one_rid,
                        ptr,
                        cols,
                        rid,
                        values if m.mode == RAW else NULL,
                        NULL if m.mode == RAW else values,
                        NULL if m.dictionary is None else m.dictionary,
                        w,
                        np.uint64(nr),
                        np.uint32(m.mode),
                    ),
                )
                read[b] = cp.cuda.Event(disable_timing=True)
                read[b].record(compute)
            m.done = read[(len(plans) - 1) % 2]


__all__ = [
    "DEFAULT_KERNEL",
    "KERNELS",
    "DeviceCsr",
    "SpmvEngine",
    "StreamedCsr",
]
