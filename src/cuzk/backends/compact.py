"""Compact scalar sets: a query's scalars kept as what they are, zero, one or full.

The scalars of L, A and B are a witness's values, mostly bits (46 % ones
and 3 % full scalars at 32GiB PoRep): a :class:`Compact` set holds two
bitmaps (the ones, the full scalars) and the full values alone, about a
tenth of the dense (n, 4) array. Kept in host memory (pinned on a GPU), a
partition's sets outlive its assignment on the device, so that one pass over
streamed bases can serve several partitions' L, A and B
(:meth:`cuzk.backends.base.Backend.msm_g1_many`); each pass expands a chunk's
entries at a time where the MSM runs (:func:`expand`).

Bits are packed little-endian within a byte (entry i is bit i % 8 of byte
i // 8), as ``packbits(…, bitorder="little")`` packs them. A scalar is a one
when its limbs are exactly (1, 0, 0, 0) and full when it is neither that
nor zero: full values are kept as given (a value ≡ 0 or 1 mod r that is not
canonical stays full; the MSM reduces it), so expansion gives back the
dense array bit for bit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# Entries a block of the full scalars' running count covers: the first full
# value of any entry is found in O(BLOCK) (a count, then ≤ 64 bytes' bits).
BLOCK = 512
# Entries classified a step: the device holds a step's rows and masks at once.
CLASSIFY_STEP = 1 << 20

_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

# alloc(nbytes) → a host buffer of that many bytes (pinned on a GPU), kept alive
# by the set that views it.
HostAlloc = Callable[[int], Any]


@dataclass(frozen=True, eq=False)
class Compact:
    """A scalar set of ``n`` entries as zeros, ones and full values, in host
    memory (see the module docstring); made by :func:`classify`, taken by
    ``msm_g1_many`` / ``msm_g2_many`` like the dense array it stands for."""

    n: int
    ones: np.ndarray  # uint8, (n + 7) // 8: entry i is 1
    full: np.ndarray  # uint8, (n + 7) // 8: entry i is neither 0 nor 1
    values: np.ndarray  # (n_full, 4) uint64: the full entries, in order
    full_before: np.ndarray  # int64, n // BLOCK + 2 entries: full entries before BLOCK·k
    n_ones: int = 0
    holds: tuple = ()  # the buffers the arrays view (pinned memory), kept alive with them

    def __len__(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, 4)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> Any:
        return np.dtype(np.uint64)

    @property
    def n_full(self) -> int:
        return len(self.values)

    @property
    def nbytes(self) -> int:
        """Host bytes the set holds."""
        arrays = (self.ones, self.full, self.values, self.full_before)
        return int(sum(a.nbytes for a in arrays))

    def rank(self, i: int) -> int:
        """Full entries before entry ``i`` (0 ≤ i ≤ n): where entry i's full
        value would be in ``values``."""
        if not 0 <= i <= self.n:
            raise IndexError(f"entry {i} of a set of {self.n}")
        k = i // BLOCK
        count = int(self.full_before[k])
        lo, whole = k * BLOCK // 8, i // 8
        if whole > lo:
            count += int(_POPCOUNT[self.full[lo:whole]].sum(dtype=np.int64))
        if i % 8:
            count += bin(int(self.full[whole]) & ((1 << (i % 8)) - 1)).count("1")
        return count

    def most_full(self, chunk: int) -> int:
        """The most full entries any chunk of ``chunk`` entries holds (from 0 on)."""
        edges = [self.rank(lo) for lo in range(0, self.n, max(1, chunk))] + [self.n_full]
        return max((b - a for a, b in itertools.pairwise(edges)), default=0)

    def dense(self) -> np.ndarray:
        """The whole set as the (n, 4) uint64 array it stands for (host memory)."""
        return expand(np, self, 0, self.n)


def compact_bytes(n: int, n_full: int) -> int:
    """Host bytes of a compact set of ``n`` entries, ``n_full`` of them full."""
    return 2 * ((n + 7) // 8) + 32 * n_full + 8 * (n // BLOCK + 2)


def expand_bytes(chunk: int, n_full: int) -> int:
    """Device bytes :func:`expand` holds beside its (chunk, 4) result: a bitmap's
    slice and its bits, the chunk's full values and their positions."""
    return chunk // 8 + 2 + chunk + 40 * n_full


def classify_step_bytes(step: int = CLASSIFY_STEP) -> int:
    """Device bytes one step of :func:`classify` holds at most: the step's rows,
    its masks and packed bits, and (every entry full, the bound) the full
    rows and their positions."""
    return 96 * step + 64


def classify_step(n: int, room: int) -> int:
    """Entries a step of :func:`classify` takes for a set of ``n`` entries in
    ``room`` free bytes: at most :data:`CLASSIFY_STEP` and the set (rounded up
    to a block), halved while a step would hold more than half the room, at
    least one block."""
    step = min(CLASSIFY_STEP, max(BLOCK, -(-n // BLOCK) * BLOCK))
    while step > BLOCK and classify_step_bytes(step) > room // 2:
        step = max(BLOCK, step // 2 // BLOCK * BLOCK)
    return step


def _host(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _buffer(alloc: HostAlloc | None, nbytes: int, holds: list) -> np.ndarray:
    """A uint8 host array of ``nbytes`` (from ``alloc`` when given)."""
    if alloc is None:
        return np.empty(nbytes, dtype=np.uint8)
    mem = alloc(max(nbytes, 1))
    holds.append(mem)
    return np.frombuffer(mem, dtype=np.uint8, count=nbytes)


def classify(
    xp,
    values: Any,
    index: Any = None,
    start: int = 0,
    alloc: HostAlloc | None = None,
    step: int = CLASSIFY_STEP,
) -> Compact:
    """The compact set of ``values[index]`` (a query's rows by its selection)
    or, without an index, of ``values[start:]``, classified where ``values``
    live (``xp``: numpy, or CuPy for device arrays) ``step`` entries at a
    time (a multiple of ``BLOCK``) and kept in host memory from ``alloc``
    (None: numpy's). Linear in the entries; the device holds one step's rows
    and masks at a time, the host the set and, until the end, its full values
    once more."""
    if step % BLOCK:
        raise ValueError(f"classify: step {step} is not a multiple of {BLOCK}")
    n = len(index) if index is not None else max(0, len(values) - start)
    nbytes = (n + 7) // 8
    holds: list = []
    bits = _buffer(alloc, 2 * nbytes, holds)
    ones, full = bits[:nbytes], bits[nbytes:]
    parts = []
    n_ones = 0
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        if index is not None:
            rows = xp.take(values, index[lo:hi], axis=0)
        else:
            rows = values[start + lo : start + hi]
        high_zero = (rows[:, 1] | rows[:, 2] | rows[:, 3]) == 0
        low = rows[:, 0]
        is_one = high_zero & (low == 1)
        is_full = ~(high_zero & (low <= 1))
        ones[lo // 8 : (hi + 7) // 8] = _host(xp.packbits(is_one, bitorder="little"))
        full[lo // 8 : (hi + 7) // 8] = _host(xp.packbits(is_full, bitorder="little"))
        n_ones += int(is_one.sum())
        parts.append(_host(rows[xp.flatnonzero(is_full)]))
        del rows, high_zero, low, is_one, is_full
    # the full entries before each block: popcounts of its 64 bytes, summed
    per_byte = _POPCOUNT[full]
    blocks = -(-nbytes // (BLOCK // 8))
    padded = np.zeros(blocks * (BLOCK // 8), dtype=np.uint8)
    padded[:nbytes] = per_byte
    del per_byte
    counts = padded.reshape(blocks, BLOCK // 8).sum(axis=1, dtype=np.int64)
    del padded
    before = np.zeros(n // BLOCK + 2, dtype=np.int64)
    np.cumsum(counts, out=before[1 : blocks + 1])
    before[blocks + 1 :] = before[blocks]
    n_full = int(before[-1])
    out = _buffer(alloc, 32 * n_full, holds).view(np.uint64).reshape(n_full, 4)
    at = 0
    for p in parts:
        out[at : at + len(p)] = p
        at += len(p)
    return Compact(n, ones, full, out, before, n_ones, tuple(holds))


def expand(xp, c: Compact, lo: int, hi: int, upload: Callable[[np.ndarray], Any] | None = None):
    """Entries lo … hi − 1 of a compact set as a dense (hi − lo, 4) uint64 xp
    array, bit for bit the array it stands for: zeros, a one's low limb set,
    the full values scattered to their entries (found in O(1) by
    :meth:`Compact.rank`). ``upload`` moves a host slice to ``xp``'s memory
    (None: ``xp.asarray``). Holds :func:`expand_bytes` beside the result."""
    upload = upload or xp.asarray
    m = hi - lo
    out = xp.zeros((m, 4), dtype=np.uint64)
    if m <= 0:
        return out
    b0, b1, shift = lo // 8, (hi + 7) // 8, lo % 8
    bits = xp.unpackbits(upload(c.ones[b0:b1]), bitorder="little")[shift : shift + m]
    out[:, 0] = bits
    del bits
    f0, f1 = c.rank(lo), c.rank(hi)
    if f1 > f0:
        bits = xp.unpackbits(upload(c.full[b0:b1]), bitorder="little")[shift : shift + m]
        out[xp.flatnonzero(bits)] = upload(c.values[f0:f1])
    return out
