"""Multi-scalar multiplication on the GPU: Σ sᵢ·Pᵢ over G1 and G2.

The kernels (``kernels/msm.cu``) implement Pippenger's method with signed
c-bit digits; this module sizes and orders their launches. The pipeline of
one MSM (:func:`msm_xyzz`):

1. classify the scalars: zeros are dropped, ones go to a bitmap whose bases
   are summed directly (the 0/1 fast path: most of a SHA-256-heavy Filecoin
   witness is bits), the rest are *full* scalars;
2. choose the window c from the number of full scalars (:func:`choose_window`),
   and how many windows to process together (:func:`group_windows`: all of
   them unless their workspace would pass ``Tuning.workspace_cap``);
3. per group of windows, counting-sort the (bucket, point) pairs on the GPU;
4. sum each bucket (:func:`_sum_sorted`): rounds of batched-affine pair sums
   (one inversion shared by hundreds of pairs) while the rounds are large,
   then XYZZ mixed additions over equal slices of what is left (load
   balanced whatever the bucket sizes), completing buckets split across
   slices; ``Tuning(method="xyzz")`` skips the affine rounds (version 1,
   docs/device-notes/msm.md#design-as-first-built-v1);
5. reduce each window's buckets to Σ (k+1)·B_k by running sums, and combine
   windows by Horner's rule on the GPU; one point comes back to the host.

The same pipeline runs against any array module ``xp`` and kernel launcher,
so the tests also run it on the CPU (numpy and the kernels compiled as C++).

Bases are converted once to Montgomery form and kept in VRAM when they fit
the device budget (:meth:`MsmEngine.prepare_g1`); otherwise they stay in
pinned host memory and each MSM streams them in chunks, the upload of the
next chunk overlapping the arithmetic on the current one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.algebra.fields import Fq2, Q
from cuzk.errors import BadPoint, EncodingError, InputError

log = logging.getLogger(__name__)

_U32 = np.uint32
SCALAR_BITS = 255
NO_KEY = 0xFFFFFFFF


@dataclass(frozen=True)
class CurveSpec:
    """What the pipeline needs to know of a group: sizes and compile flags."""

    name: str
    field_words: int  # 32-bit words per coordinate
    defines: tuple[str, ...]

    @property
    def affine_words(self) -> int:
        return 2 * self.field_words

    @property
    def xyzz_words(self) -> int:
        return 4 * self.field_words

    @property
    def affine_bytes(self) -> int:
        return 4 * self.affine_words

    @property
    def xyzz_bytes(self) -> int:
        return 4 * self.xyzz_words


G1_SPEC = CurveSpec("G1", 12, ())
G2_SPEC = CurveSpec("G2", 24, ("-DCUZK_G2",))


class Kernels(Protocol):
    """Launches kernels of one compiled module: ``threads`` threads in all."""

    def launch(self, name: str, threads: int, args: tuple, block: int = 128) -> None: ...


@dataclass(frozen=True)
class Tuning:
    """Overrides of the automatic choices (tests force small slices and windows)."""

    window: int | None = None  # c
    slice_len: int | None = None  # T, sorted entries per accumulate thread
    segments: int | None = None  # S, bucket segments per window
    ones_words_per_thread: int | None = None
    partials_per_slice: int = 8  # T of the levels that sum split buckets
    target_threads: int = 1 << 17
    # Bucket accumulation: "affine" (rounds of batched-affine pair sums, then
    # the XYZZ walk over what is left) or "xyzz" (the XYZZ walk alone: v1).
    method: str = "affine"
    affine_min_pairs: int = 1 << 21  # a round of fewer pairs hands over to the XYZZ walk
    affine_threads: int | None = None  # threads a round aims for (m = pairs / threads)
    affine_min_batch: int = 128  # pairs per inversion, at least
    group_windows: int | None = None  # windows sorted and summed together (None: by the cap)
    workspace_cap: int = 24 << 30  # bytes one window group may take

    def __post_init__(self) -> None:
        if self.method not in ("affine", "xyzz"):
            raise InputError("MSM tuning", "method", f"{self.method!r} is not affine or xyzz")


# --- choices ---------------------------------------------------------------

# Relative cost of one bucket's share of the reduction (two XYZZ additions,
# 14 products each) against one mixed addition (10 products).
_REDUCE_COST_PER_BUCKET = 2.8


def num_windows(c: int) -> int:
    """Windows of c bits for signed digits of a 255-bit scalar (the last holds the carry)."""
    return SCALAR_BITS // c + 1


def choose_window(n_full: int, spec: CurveSpec, max_bucket_bytes: int | None = None) -> int:
    """The c minimising additions: one mixed addition per non-zero digit, plus
    the bucket reduction, whose cost grows as nw·2^(c−1)."""
    best_c, best_cost = 2, math.inf
    for c in range(2, 24):
        nw, nb = num_windows(c), 1 << (c - 1)
        if max_bucket_bytes is not None and nw * nb * spec.xyzz_bytes > max_bucket_bytes and c > 2:
            break
        cost = n_full * SCALAR_BITS / c + nw * nb * _REDUCE_COST_PER_BUCKET
        if cost < best_cost:
            best_c, best_cost = c, cost
    return best_c


# Threads of one affine round: one wave at the kernels' occupancy on an H200
# (132 SMs; G1: 8 blocks of 64 per SM, 67584 threads; G2: 6 blocks, 50688).
# Their blocks are 64 threads (CUZK_AFF_BLOCK in msm.cu).
_AFFINE_THREADS = {"G1": 1 << 16, "G2": 3 << 14}
_AFFINE_BLOCK = 64


def _affine_threads(spec: CurveSpec, tuning: Tuning) -> int:
    return tuning.affine_threads or _AFFINE_THREADS[spec.name]


def _uses_affine(entries: int, tuning: Tuning) -> bool:
    """Whether a sorted list of this many entries starts with affine rounds."""
    return tuning.method == "affine" and entries // 2 >= tuning.affine_min_pairs


def _sum_sorted_bytes(spec: CurveSpec, entries: int, keys: int, tuning: Tuning) -> int:
    """VRAM of :func:`_sum_sorted` over a list of `entries` in `keys` buckets."""
    T = tuning.slice_len or max(16, entries // tuning.target_threads)
    slices = entries // T + 1
    total = spec.xyzz_bytes * keys  # buckets
    total += 4 * (spec.xyzz_bytes + 4) * slices  # slice heads and tails, two levels
    if _uses_affine(entries, tuning):
        total += spec.affine_bytes * (entries // 2 + keys)  # the list of round 1
        scratch = entries // 4 + keys + _affine_threads(spec, tuning) * tuning.affine_min_batch
        total += 4 * spec.field_words * scratch
        total += 6 * 4 * keys  # counts, item ends, offsets of the rounds
    return total


def _group_bytes(spec: CurveSpec, n: int, g: int, nb: int, tuning: Tuning) -> int:
    """VRAM of one group of g windows over n full scalars."""
    entries, keys = n * g, g * nb
    total = 3 * 4 * keys  # counts, prefix sums (ends), cursors
    total += 4 * entries  # vals
    total += _sum_sorted_bytes(spec, entries, keys, tuning)
    total += 2 * spec.xyzz_bytes * g * (tuning.segments or tuning.target_threads)
    return total


def group_windows(spec: CurveSpec, n: int, c: int, tuning: Tuning = Tuning()) -> int:
    """Windows per group: all of them when they fit the workspace cap, else the
    fewest groups that do, of nearly equal size (each group pays its own
    rounds, whose last ones are small)."""
    nw, nb = num_windows(c), 1 << (c - 1)
    if tuning.group_windows:
        return max(1, min(nw, tuning.group_windows))
    g = nw
    while g > 1 and _group_bytes(spec, n, g, nb, tuning) > tuning.workspace_cap:
        g -= 1
    return -(-nw // -(-nw // g))


def workspace_bytes(
    spec: CurveSpec, n: int, scalars_on_host: bool = True, tuning: Tuning = Tuning()
) -> int:
    """An upper bound of the VRAM one MSM of n scalars takes besides its bases."""
    c = tuning.window or choose_window(n, spec)
    nw, nb = num_windows(c), 1 << (c - 1)
    total = 32 * n if scalars_on_host else 0
    total += 4 * (n // 32 + 1) + 64
    ones = 2 * spec.xyzz_bytes * (n // 32 + 1)  # ones partials and their tree
    if _uses_affine(n, tuning):  # popcounts and index list, then the affine sum
        ones = max(ones, 8 * (n // 32 + 1) + 4 * n + _sum_sorted_bytes(spec, n, 1, tuning))
    g = group_windows(spec, n, c, tuning)
    total += spec.xyzz_bytes * nw  # window sums
    total += max(ones, _group_bytes(spec, n, g, nb, tuning))
    return total


def _least(tuning: Tuning) -> Tuning:
    """The tuning of the smallest workspace: the XYZZ method, one window at a time."""
    return dataclasses.replace(tuning, method="xyzz", group_windows=1)


def fit_tuning(
    spec: CurveSpec, n: int, tuning: Tuning, free_bytes: int, scalars_on_host: bool = True
) -> Tuning:
    """`tuning`, with a smaller workspace cap (more window groups) or at last
    the XYZZ method, until one MSM of n scalars fits in free_bytes. When
    nothing fits, the smallest: the reservation then says what is missing."""
    cap = tuning.workspace_cap
    for _ in range(8):
        t = dataclasses.replace(tuning, workspace_cap=cap)
        if workspace_bytes(spec, n, scalars_on_host, t) <= free_bytes:
            if t != tuning:
                log.info(
                    "%s MSM of %d: workspace cap lowered to %.1f GiB", spec.name, n, cap / 2**30
                )
            return t
        cap //= 2
    for t in (dataclasses.replace(tuning, method="xyzz"), _least(tuning)):
        if workspace_bytes(spec, n, scalars_on_host, t) <= free_bytes:
            log.info("%s MSM of %d: XYZZ accumulation, too little memory for affine", spec.name, n)
            return t
    return _least(tuning)


# --- the pipeline ------------------------------------------------------------


def _tree_sum(xp, k: Kernels, spec: CurveSpec, arr, groups: int, count: int):
    """Sum each of `groups` runs of `count` XYZZ points: groups points back."""
    while count > 1:
        count_out = (count + 1) // 2
        out = xp.empty(groups * count_out * spec.xyzz_words, dtype=_U32)
        k.launch("sum_pairs", groups * count_out, (arr, out, _U32(groups), _U32(count)))
        arr, count = out, count_out
    return arr


def _last(xp, a) -> int:
    return int(_to_host(a[-1:])[0])


def _affine_batch(pairs: int, spec: CurveSpec, tuning: Tuning) -> int:
    """Pairs per thread (and per inversion) in a round of `pairs`."""
    return max(tuning.affine_min_batch, -(-pairs // _affine_threads(spec, tuning)), 1)


def _sum_sorted(xp, k: Kernels, spec: CurveSpec, bases, vals, counts, ends, tuning, phases):
    """The sum of every bucket of a list sorted by bucket key, as XYZZ words
    (keys with a zero count are left unwritten).

    ``vals``: point index · 2 + sign per entry; ``counts`` / ``ends``: entries
    per key and their inclusive prefix sum. Affine rounds first (when the
    list is long enough), then the XYZZ walk over what they leave.
    """
    xw = spec.xyzz_words
    nkeys = int(counts.size)
    entries = _last(xp, ends)
    buckets = xp.empty(nkeys * xw, dtype=_U32)
    if _uses_affine(entries, tuning):
        items = (counts + 1) // 2
        iend = xp.cumsum(items, dtype=_U32)
        total = _last(xp, iend)
        m = _affine_batch(total, spec, tuning)
        points = xp.empty(total * spec.affine_words, dtype=_U32)
        k.launch(
            "affine_first",
            -(-total // m),
            (bases, vals, ends, iend, _U32(nkeys), _U32(total), _U32(m), points),
            block=_AFFINE_BLOCK,
        )
        off = iend - items
        cnt = items
        del iend, items
        stride, scratch = 1, None
        while True:
            pairs = cnt // 2
            pend = xp.cumsum(pairs, dtype=_U32)
            total = _last(xp, pend)
            if total < max(1, tuning.affine_min_pairs):
                break
            m = _affine_batch(total, spec, tuning)
            slots = -(-total // m) * m * spec.field_words
            if scratch is None or scratch.size < slots:
                scratch = xp.empty(slots, dtype=_U32)
            k.launch(
                "affine_round",
                -(-total // m),
                (points, off, _U32(stride), pend, _U32(nkeys), _U32(total), _U32(m), scratch),
                block=_AFFINE_BLOCK,
            )
            cnt = cnt - pairs
            stride *= 2
        del scratch, pend, pairs
        phases.mark("affine_rounds")
        tail_ends = xp.cumsum(cnt, dtype=_U32)
        E = _last(xp, tail_ends)
        T = tuning.slice_len or max(16, -(-E // tuning.target_threads))
        nslices = -(-E // T)
        parts = _SliceOutputs(xp, nslices, xw)
        k.launch(
            "accumulate_strided",
            nslices,
            (
                *(points, off, _U32(stride), tail_ends, _U32(nkeys), _U32(E), _U32(T)),
                *(_U32(nslices), buckets, *parts.args()),
            ),
        )
        del points, off, cnt, tail_ends
    else:
        T = tuning.slice_len or max(16, -(-entries // tuning.target_threads))
        nslices = -(-entries // T)
        parts = _SliceOutputs(xp, nslices, xw)
        k.launch(
            "accumulate",
            nslices,
            (
                *(bases, vals, ends, _U32(nkeys), _U32(entries), _U32(T), _U32(nslices)),
                *(buckets, *parts.args()),
            ),
        )
    phases.mark("accumulate")
    # Buckets cut by slice boundaries: sum their partials by the same slicing
    # (partials_per_slice at a time) until none is left.
    T2 = max(4, tuning.partials_per_slice)  # a slice of >= 4 leaves <= 2: m shrinks
    while True:
        pts, pkeys = parts.pending(xp)
        m = int(pkeys.size)
        if m == 0:
            break
        nslices = -(-m // T2)
        parts = _SliceOutputs(xp, nslices, xw)
        k.launch(
            "accumulate_partials",
            nslices,
            (pts, pkeys, _U32(m), _U32(T2), _U32(nslices), buckets, *parts.args()),
        )
    phases.mark("partials")
    return buckets


def _ones_sum(xp, k: Kernels, spec: CurveSpec, bases, bitmap, nwords: int, n_ones: int, tuning):
    """Σ of the bases whose scalar is 1, as one XYZZ point (words)."""
    xw = spec.xyzz_words
    if _uses_affine(n_ones, tuning):
        pc = xp.empty(nwords, dtype=_U32)
        k.launch("bitmap_popc", nwords, (bitmap, _U32(nwords), pc))
        start = xp.cumsum(pc, dtype=_U32) - pc
        vals = xp.empty(n_ones, dtype=_U32)
        k.launch("ones_list", nwords, (bitmap, _U32(nwords), start, vals))
        del pc, start
        one = xp.full(1, n_ones, dtype=_U32)
        return _sum_sorted(xp, k, spec, bases, vals, one, one, tuning, _Phases(xp, None))
    wpt = tuning.ones_words_per_thread or max(1, -(-nwords // tuning.target_threads))
    threads = -(-nwords // wpt)
    partial = xp.empty(threads * xw, dtype=_U32)
    k.launch("ones_partial", threads, (bases, bitmap, _U32(nwords), _U32(wpt), partial))
    return _tree_sum(xp, k, spec, partial, 1, threads)


def msm_xyzz(
    xp,
    k: Kernels,
    spec: CurveSpec,
    bases,
    scalars,
    tuning: Tuning = Tuning(),
    timings: dict | None = None,
):
    """Σ sᵢ·Pᵢ as one XYZZ point (Montgomery words, an xp array).

    ``bases``: flat uint32 Montgomery affine points (at least n of them);
    ``scalars``: (n, 4) uint64, any 256-bit values (reduced mod r on the GPU).
    """
    phases = _Phases(xp, timings)
    n = int(scalars.shape[0])
    xw = spec.xyzz_words
    nwords = (n + 31) // 32
    extras = []
    window_sums = xp.zeros(xw, dtype=_U32)
    nw = c = 0
    if n:
        bitmap = xp.empty(nwords, dtype=_U32)
        counters = xp.zeros(2, dtype=_U32)
        k.launch("classify", nwords, (scalars, _U32(n), bitmap, counters))
        n_ones, n_full = (int(v) for v in _to_host(counters))
        phases.mark("classify")
    else:
        n_ones = n_full = 0

    if n_ones:
        extras.append(_ones_sum(xp, k, spec, bases, bitmap, nwords, n_ones, tuning))
        phases.mark("ones")

    if n_full:
        c = tuning.window or choose_window(n_full, spec)
        nw, nb = num_windows(c), 1 << (c - 1)
        gw = group_windows(spec, n_full, c, tuning)
        sums = []
        for w0 in range(0, nw, gw):
            w1 = min(nw, w0 + gw)
            g = w1 - w0
            counts = xp.zeros(g * nb, dtype=_U32)
            k.launch("digits_count", n, (scalars, _U32(n), _U32(c), _U32(w0), _U32(w1), counts))
            ends = xp.cumsum(counts, dtype=_U32)
            phases.mark("digits_count")
            cursor = ends - counts
            vals = xp.empty(_last(xp, ends), dtype=_U32)
            k.launch(
                "digits_scatter",
                n,
                (scalars, _U32(n), _U32(c), _U32(w0), _U32(w1), cursor, vals),
            )
            del cursor
            phases.mark("digits_scatter")
            buckets = _sum_sorted(xp, k, spec, bases, vals, counts, ends, tuning, phases)
            del vals, ends
            S = tuning.segments or max(1, min(nb, tuning.target_threads // g))
            L = -(-nb // S)
            S = -(-nb // L)
            seg = xp.empty(g * S * xw, dtype=_U32)
            k.launch(
                "bucket_reduce",
                g * S,
                (buckets, counts, _U32(nb), _U32(g), _U32(S), _U32(L), seg),
            )
            phases.mark("bucket_reduce")
            del buckets, counts
            sums.append(_tree_sum(xp, k, spec, seg, g, S))
            phases.mark("window_tree")
        window_sums = xp.concatenate(sums) if len(sums) > 1 else sums[0]

    extra = xp.concatenate(extras) if extras else xp.zeros(xw, dtype=_U32)
    out = xp.empty(xw, dtype=_U32)
    k.launch(
        "finalize",
        1,
        (window_sums, _U32(nw), _U32(c), extra, _U32(len(extras)), out),
        block=1,
    )
    phases.mark("finalize")
    phases.finish()
    return out


class _SliceOutputs:
    """Head and tail partial sums of one level of slices."""

    def __init__(self, xp, nslices: int, xw: int) -> None:
        self.nslices, self.xw = nslices, xw
        self.head = xp.empty(nslices * xw, dtype=_U32)
        self.tail = xp.empty(nslices * xw, dtype=_U32)
        self.head_key = xp.empty(nslices, dtype=_U32)
        self.tail_key = xp.empty(nslices, dtype=_U32)

    def args(self) -> tuple:
        return (self.head, self.head_key, self.tail, self.tail_key)

    def pending(self, xp):
        """The partials in slice order (each slice's head, then its tail), compacted."""
        keys = xp.stack([self.head_key, self.tail_key], axis=1).reshape(-1)
        keep = xp.flatnonzero(keys != NO_KEY)
        pts = xp.stack(
            [self.head.reshape(-1, self.xw), self.tail.reshape(-1, self.xw)], axis=1
        ).reshape(-1, self.xw)
        return xp.ascontiguousarray(pts[keep]).reshape(-1), xp.ascontiguousarray(keys[keep])


class _Phases:
    """Optional per-phase GPU timings of one MSM (events; nothing on the CPU twin)."""

    def __init__(self, xp, out: dict | None) -> None:
        self.out = out if (out is not None and xp is not np) else None
        self.events: list[tuple[str, Any]] = []
        if self.out is not None:
            self.mark("start")

    def mark(self, name: str) -> None:
        if self.out is None:
            return
        import cupy

        ev = cupy.cuda.Event()
        ev.record()
        self.events.append((name, ev))

    def finish(self) -> None:
        if self.out is None or not self.events:
            return
        import cupy

        self.events[-1][1].synchronize()
        for (_, a), (name, b) in zip(self.events, self.events[1:], strict=False):
            self.out[name] = self.out.get(name, 0.0) + cupy.cuda.get_elapsed_time(a, b)


def _to_host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


# --- fixed-base multiplication (parameter generation) -------------------------------

FIXED_BASE_WINDOW = 10
_AFFINE_PER_THREAD = 16  # points sharing one inversion in batch_to_affine


def fixed_base_windows(wbits: int = FIXED_BASE_WINDOW) -> int:
    return -(-SCALAR_BITS // wbits)


def fixed_base_table(point: Affine, spec: CurveSpec, wbits: int = FIXED_BASE_WINDOW) -> np.ndarray:
    """d·2^(wbits·w)·P for every window w and digit d ≥ 1, affine in standard form,
    as the flat uint32 words fixed_base_mul reads (computed with arkworks)."""
    from cuzk.algebra import pairing

    base = pairing.g1_to_ark(point) if spec is G1_SPEC else pairing.g2_to_ark(point)
    rows = []
    for _ in range(fixed_base_windows(wbits)):
        acc = base
        for _d in range((1 << wbits) - 1):
            rows.append(acc.to_xy_bytes_le())
            acc = acc + base
        base = acc  # 2^wbits times the window's base
    return np.frombuffer(b"".join(rows), dtype="<u4").copy()


def fixed_base_affine(
    xp, k: Kernels, spec: CurveSpec, table, scalars, wbits: int = FIXED_BASE_WINDOW
):
    """sᵢ·P for every scalar, as flat uint32 affine words in standard form (zeros =
    infinity): the (n, 2, 6) / (n, 2, 2, 6) layout of cuzk.algebra.arrays."""
    n = int(scalars.shape[0])
    xyzz = xp.empty(n * spec.xyzz_words, dtype=_U32)
    k.launch(
        "fixed_base_mul",
        n,
        (table, _U32(wbits), _U32(fixed_base_windows(wbits)), scalars, _U32(n), xyzz),
    )
    scratch = xp.empty(n * spec.field_words, dtype=_U32)
    out = xp.empty(n * spec.affine_words, dtype=_U32)
    threads = -(-n // _AFFINE_PER_THREAD)
    k.launch("batch_to_affine", threads, (xyzz, _U32(n), _U32(_AFFINE_PER_THREAD), scratch, out))
    return out


# --- conversions at the boundary ------------------------------------------------


def _words_to_int(w: np.ndarray) -> int:
    return int.from_bytes(np.ascontiguousarray(w, dtype="<u4").tobytes(), "little")


def xyzz_to_affine(words: np.ndarray, spec: CurveSpec) -> Affine:
    """An XYZZ point in Montgomery words → an affine point of cuzk.algebra.curves.

    x = X/ZZ and y = Y/ZZZ: the Montgomery factor R cancels in each ratio.
    """
    fw = spec.field_words
    w = np.asarray(words, dtype=np.uint32).reshape(4, fw)
    if spec.field_words == 12:
        X, Y, ZZ, ZZZ = (_words_to_int(w[i]) for i in range(4))
        if ZZ == 0:
            return None
        return (X * pow(ZZ, -1, Q) % Q, Y * pow(ZZZ, -1, Q) % Q)
    X, Y, ZZ, ZZZ = (Fq2(_words_to_int(w[i, :12]), _words_to_int(w[i, 12:])) for i in range(4))
    if ZZ.is_zero():
        return None
    return (X * ZZ.inverse(), Y * ZZZ.inverse())


def _check_bases(bases: Any, spec: CurveSpec) -> Any:
    shape = (2, 6) if spec is G1_SPEC else (2, 2, 6)
    if getattr(bases, "ndim", 0) != 1 + len(shape) or tuple(bases.shape[1:]) != shape:
        raise InputError(
            f"{spec.name} MSM", "bases", f"expected an (n, {', '.join(map(str, shape))}) array"
        )
    if bases.dtype != np.uint64:
        raise InputError(f"{spec.name} MSM", "bases", f"expected uint64 limbs, not {bases.dtype}")
    return bases


def _check_scalars(scalars: Any, n_bases: int, spec: CurveSpec) -> None:
    if scalars.ndim != 2 or scalars.shape[1] != 4 or scalars.dtype != np.uint64:
        raise InputError(f"{spec.name} MSM", "scalars", "expected an (n, 4) uint64 array")
    if scalars.shape[0] > n_bases:
        raise InputError(
            f"{spec.name} MSM",
            "scalars",
            f"{scalars.shape[0]} scalars over {n_bases} bases: the key is too short",
        )


# --- the engine --------------------------------------------------------------------


class _CupyKernels:
    def __init__(self, module) -> None:
        self._module = module
        self._functions: dict[str, Any] = {}

    def launch(self, name: str, threads: int, args: tuple, block: int = 128) -> None:
        f = self._functions.get(name)
        if f is None:
            f = self._functions[name] = self._module.get_function(name)
        if threads <= 0:
            return
        f((-(-threads // block),), (block,), args)


@dataclass(eq=False)
class PreparedBases:
    """Bases made ready for repeated MSMs: resident in VRAM or pinned on the host."""

    spec: CurveSpec
    n: int
    device: Any = None  # flat uint32 Montgomery affine words (cupy), when resident
    pinned: np.ndarray | None = None  # (n, affine_words) uint32, when streamed
    pinned_montgomery: bool = False  # the pinned words are in Montgomery form already
    chunk: int = 0  # points per streamed chunk
    _hold: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    @property
    def resident(self) -> bool:
        return self.device is not None

    def __len__(self) -> int:
        return self.n

    def close(self) -> None:
        """Give the VRAM (or pinned memory) back."""
        self.device = None
        self.pinned = None
        self._hold.close()


# Bytes of key points per chunk while loading (two pinned host buffers of this).
LOAD_CHUNK_BYTES = 192 << 20


def load_staging_bytes(chunk_bytes: int = LOAD_CHUNK_BYTES) -> int:
    """Device bytes a load of bases holds besides them: two raw chunks, their
    status words, and one converted chunk when the bases are streamed."""
    points = chunk_bytes // 96  # G1 points per chunk: the most status words
    return 3 * chunk_bytes + 2 * 4 * points


# msm.cu's load_zcash status codes → (EncodingError reason, problem).
_LOAD_PROBLEMS = {
    1: (EncodingError.FLAGS, "flag bits set (infinity, compressed or sign) in a key point"),
    2: (EncodingError.NON_CANONICAL, "a coordinate is not below q"),
    3: (EncodingError.OFF_CURVE, "not on the {group} curve"),
}


class MsmEngine:
    """G1 / G2 MSMs on one device, all memory through its :class:`DeviceContext` budget."""

    def __init__(
        self,
        ctx,
        tuning: Tuning = Tuning(),
        stream_chunk: int | None = None,
        defines: tuple[str, ...] = (),
        load_chunk: int | None = None,
    ) -> None:
        self.ctx = ctx
        self._load_chunk = load_chunk  # points per chunk while loading bases (tests)
        self.tuning = tuning
        self.defines = defines  # extra compile flags (kernel variants, for measurements)
        self._stream_chunk = stream_chunk  # forces streaming with this chunk (tests)
        self._kernels: dict[str, _CupyKernels] = {}
        self._tables: dict[tuple[str, str], Any] = {}

    def kernels(self, spec: CurveSpec) -> _CupyKernels:
        k = self._kernels.get(spec.name)
        if k is None:
            module = self.ctx.module("msm.cu", spec.defines + self.defines)
            k = self._kernels[spec.name] = _CupyKernels(module)
        return k

    # --- bases ----------------------------------------------------------------
    def prepare_g1(self, bases: np.ndarray) -> PreparedBases:
        return self._prepare(_check_bases(bases, G1_SPEC), G1_SPEC)

    def prepare_g2(self, bases: np.ndarray) -> PreparedBases:
        return self._prepare(_check_bases(bases, G2_SPEC), G2_SPEC)

    def _prepare(self, bases: np.ndarray, spec: CurveSpec) -> PreparedBases:
        import cupy

        n = len(bases)
        nbytes = n * spec.affine_bytes
        on_device = not isinstance(bases, np.ndarray)
        if on_device:
            words = cupy.ascontiguousarray(bases).view(_U32).reshape(n, spec.affine_words)
        else:
            words = np.ascontiguousarray(bases).view(_U32).reshape(n, spec.affine_words)
        handle = PreparedBases(spec, n)
        budget = self.ctx.budget
        # Resident when the bases and the workspace of an MSM over all of them fit
        # (the smallest workspace, the XYZZ method's: an MSM fits its method to
        # the memory free when it runs, see fit_tuning).
        least = workspace_bytes(spec, max(n, 1), tuning=_least(self.tuning))
        fits = nbytes + least <= budget.free_bytes
        if fits and self._stream_chunk is None:
            handle._hold.enter_context(budget.reserve(nbytes, f"{spec.name} bases (resident)"))
            with cupy.cuda.Device(self.ctx.device_id):
                dev = cupy.array(words.reshape(-1), copy=True)  # never convert a caller's array
                self._to_montgomery(spec, dev, n)
            handle.device = dev
            log.info("%s bases resident: %d points, %.2f GiB", spec.name, n, nbytes / 2**30)
            return handle
        handle.chunk = self._stream_chunk or self._fit_chunk(spec, n)
        mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
        pinned = np.frombuffer(mem, dtype=np.uint32, count=n * spec.affine_words)
        pinned = pinned.reshape(n, spec.affine_words)
        pinned[:] = words.get() if on_device else words
        handle.pinned = pinned
        handle._hold.callback(lambda: mem)  # keep the pinned block alive with the handle
        log.info(
            "%s bases streamed from pinned host memory: %d points in chunks of %d",
            spec.name,
            n,
            handle.chunk,
        )
        return handle

    # --- bases from a key file ------------------------------------------------------
    def load_g1(self, count: int, read, progress=None) -> PreparedBases:
        """G1 bases streamed from ``read`` (the backend contract's ``load_g1``)."""
        return self._load(G1_SPEC, count, read, progress)

    def load_g2(self, count: int, read, progress=None) -> PreparedBases:
        return self._load(G2_SPEC, count, read, progress)

    def _load(self, spec: CurveSpec, n: int, read, progress) -> PreparedBases:
        """Read, upload and convert the bases a chunk at a time (kernel ``load_zcash``).

        Two pinned host buffers of one chunk each are the only host memory: the
        next chunk is read from the file while the device converts the last.
        Resident when the bases (and the smallest workspace of an MSM over
        them) fit the free budget, as :meth:`_prepare` decides; else the
        converted words go to pinned host memory and MSMs stream them.
        """
        import cupy

        aw, psize = spec.affine_words, spec.affine_bytes
        chunk = max(1, min(n, self._load_chunk or LOAD_CHUNK_BYTES // psize))
        staging = 2 * chunk * (psize + 4)  # raw chunks and their status words, two of each
        nbytes = n * psize
        budget = self.ctx.budget
        least = workspace_bytes(spec, max(n, 1), tuning=_least(self.tuning))
        resident = self._stream_chunk is None and nbytes + staging + least <= budget.free_bytes
        handle = PreparedBases(spec, n)
        try:
            with (
                cupy.cuda.Device(self.ctx.device_id),
                budget.reserve(
                    staging + (0 if resident else chunk * psize), f"{spec.name} bases loading"
                ),
            ):
                if resident:
                    handle._hold.enter_context(
                        budget.reserve(nbytes, f"{spec.name} bases (resident)")
                    )
                    dest = cupy.empty(max(n, 1) * aw, dtype=_U32)
                else:
                    mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
                    handle._hold.callback(lambda: mem)
                    handle.pinned = np.frombuffer(mem, dtype=_U32, count=n * aw).reshape(n, aw)
                    handle.pinned_montgomery = True
                    handle.chunk = self._stream_chunk or self._fit_chunk(spec, n)
                    dest = cupy.empty(chunk * aw, dtype=_U32)
                self._load_chunks(spec, n, chunk, read, progress, dest, handle, resident)
                if resident:
                    handle.device = dest
        except BaseException:
            handle.close()
            raise
        log.info(
            "%s bases loaded: %d points, %.2f GiB, %s",
            spec.name,
            n,
            nbytes / 2**30,
            "resident" if resident else f"streamed in chunks of {handle.chunk}",
        )
        return handle

    def _load_chunks(self, spec, n, chunk, read, progress, dest, handle, resident) -> None:
        import cupy

        aw, psize = spec.affine_words, spec.affine_bytes
        k = self.kernels(spec)
        host = []
        for _ in range(2):
            mem = cupy.cuda.alloc_pinned_memory(chunk * psize)
            host.append(
                np.frombuffer(mem, dtype=np.uint8, count=chunk * psize).reshape(chunk, psize)
            )
        raw = [cupy.empty(chunk * aw, dtype=_U32) for _ in range(2)]
        status = [cupy.empty(chunk, dtype=_U32) for _ in range(2)]
        stream = cupy.cuda.Stream(non_blocking=True)

        def finish(lo: int, hi: int, b: int) -> None:
            stream.synchronize()
            bad = cupy.flatnonzero(status[b][: hi - lo])
            if len(bad):
                i = int(bad[0])
                code = int(status[b][i])
                reason, problem = _LOAD_PROBLEMS[code]
                raise BadPoint(lo + i, reason, problem.format(group=spec.name))
            if not resident:
                handle.pinned[lo:hi] = dest[: (hi - lo) * aw].reshape(hi - lo, aw).get()
            if progress is not None:
                progress(hi)

        pending = None
        for i, lo in enumerate(range(0, n, chunk)):
            hi = min(n, lo + chunk)
            b = i % 2
            read(lo, hi, host[b][: hi - lo])  # the file read overlaps the last chunk's upload
            if pending is not None:
                finish(*pending)
            with stream:
                raw[b][: (hi - lo) * aw].set(
                    host[b][: hi - lo].view(_U32).reshape(-1), stream=stream
                )
                out = dest[lo * aw : hi * aw] if resident else dest
                k.launch("load_zcash", hi - lo, (raw[b], _U32(hi - lo), out, status[b]))
            pending = (lo, hi, b)
        if pending is not None:
            finish(*pending)

    def _fit_chunk(self, spec: CurveSpec, n: int) -> int:
        free = self.ctx.budget.free_bytes
        chunk = max(1, n)
        least = _least(self.tuning)
        # Two staging buffers plus one chunk's workspace must fit.
        while chunk > 1024 and (
            2 * chunk * spec.affine_bytes + workspace_bytes(spec, chunk, tuning=least) > free
        ):
            chunk //= 2
        return chunk

    def _to_montgomery(self, spec: CurveSpec, dev, n_points: int) -> None:
        count = n_points * spec.affine_words // 12
        self.kernels(spec).launch("to_montgomery", count, (dev, np.uint64(count)))

    # --- MSMs -------------------------------------------------------------------
    def msm_g1(self, handle: PreparedBases, scalars, timings: dict | None = None) -> Affine:
        return self._msm(handle, scalars, G1_SPEC, timings)

    def msm_g2(self, handle: PreparedBases, scalars, timings: dict | None = None) -> Affine:
        return self._msm(handle, scalars, G2_SPEC, timings)

    def msm_xyzz(self, handle: PreparedBases, scalars, timings: dict | None = None):
        """The MSM as XYZZ Montgomery words on the device (no host conversion).

        ``timings``, when given, receives milliseconds per pipeline phase.
        """
        import cupy

        spec = handle.spec
        _check_scalars(scalars, handle.n, spec)
        n = int(scalars.shape[0])
        on_host = isinstance(scalars, np.ndarray)
        k = self.kernels(spec)
        with cupy.cuda.Device(self.ctx.device_id):
            if handle.resident:
                free = self.ctx.budget.free_bytes
                tuning = fit_tuning(spec, n, self.tuning, free, scalars_on_host=on_host)
                need = workspace_bytes(spec, n, scalars_on_host=on_host, tuning=tuning)
                with self.ctx.budget.reserve(need, f"msm_{spec.name.lower()} workspace"):
                    if on_host:  # a pageable upload: the prover gathers on the device instead
                        t = time.perf_counter()
                        s = cupy.asarray(np.ascontiguousarray(scalars))
                        if timings is not None:
                            cupy.cuda.get_current_stream().synchronize()
                            up = (time.perf_counter() - t) * 1000
                            timings["upload_scalars"] = timings.get("upload_scalars", 0.0) + up
                    else:
                        s = scalars
                    return msm_xyzz(cupy, k, spec, handle.device, s, tuning, timings)
            return self._msm_streamed(handle, scalars, n, k)

    def _msm(
        self, handle: PreparedBases, scalars, spec: CurveSpec, timings: dict | None = None
    ) -> Affine:
        if handle.spec is not spec:
            raise InputError(f"{spec.name} MSM", "bases", f"prepared for {handle.spec.name}")
        return xyzz_to_affine(_to_host(self.msm_xyzz(handle, scalars, timings)), spec)

    # --- fixed-base multiples (parameter generation) -------------------------------
    def fixed_base_g1(self, point: Affine, scalars, to_host: bool = True):
        """sᵢ·P for every scalar: an (n, 2, 6) uint64 array of affine points."""
        return self._fixed_base(G1_SPEC, point, scalars, to_host)

    def fixed_base_g2(self, point: Affine, scalars, to_host: bool = True):
        """sᵢ·Q for every scalar: an (n, 2, 2, 6) uint64 array."""
        return self._fixed_base(G2_SPEC, point, scalars, to_host)

    def _fixed_base(self, spec: CurveSpec, point: Affine, scalars, to_host: bool):
        import cupy

        _check_scalars(scalars, scalars.shape[0], spec)
        n = int(scalars.shape[0])
        shape = (n, 2, 6) if spec is G1_SPEC else (n, 2, 2, 6)
        key = (spec.name, repr(point))
        k = self.kernels(spec)
        out = np.empty(shape, dtype=np.uint64) if to_host else cupy.empty(shape, dtype=np.uint64)
        if n == 0:
            return out
        # Chunks bound the XYZZ intermediates; each costs ~2.3x its affine output.
        chunk = max(1, min(n, 1 << 22))
        per_point = 32 + spec.xyzz_bytes + 4 * spec.field_words + spec.affine_bytes
        with cupy.cuda.Device(self.ctx.device_id):
            table = self._tables.get(key)
            if table is None:
                table = cupy.asarray(fixed_base_table(point, spec))
                self._to_montgomery(spec, table, len(table) // spec.affine_words)
                self._tables = {key: table}  # one table at a time: they are 2.5-5 MiB
            flat = out.reshape(n, -1).view(_U32)
            with self.ctx.budget.reserve(chunk * per_point, f"fixed-base {spec.name}"):
                for lo in range(0, n, chunk):
                    hi = min(n, lo + chunk)
                    part = scalars[lo:hi]
                    s = (
                        cupy.asarray(np.ascontiguousarray(part))
                        if isinstance(part, np.ndarray)
                        else part
                    )
                    words = fixed_base_affine(cupy, k, spec, table, s)
                    if to_host:
                        flat[lo:hi] = words.reshape(hi - lo, -1).get()
                    else:
                        flat[lo:hi] = words.reshape(hi - lo, -1)
        return out

    def _msm_streamed(self, handle: PreparedBases, scalars, n: int, k: _CupyKernels):
        import cupy

        spec = handle.spec
        chunk = handle.chunk
        xw = spec.xyzz_words
        starts = list(range(0, n, chunk))
        if not starts:
            return msm_xyzz(cupy, k, spec, cupy.zeros(1, dtype=_U32), _empty_scalars(cupy))
        staging_bytes = 2 * chunk * spec.affine_bytes
        free = self.ctx.budget.free_bytes - staging_bytes
        tuning = fit_tuning(spec, chunk, self.tuning, free)
        need = staging_bytes + workspace_bytes(spec, chunk, tuning=tuning)
        with self.ctx.budget.reserve(need, f"msm_{spec.name.lower()} streamed"):
            copy_stream = cupy.cuda.Stream(non_blocking=True)
            compute = cupy.cuda.get_current_stream()
            staging = [cupy.empty(chunk * spec.affine_words, dtype=_U32) for _ in range(2)]
            free_again = [None, None]  # compute-stream events: staging buffer no longer read
            uploaded = [None, None]
            results = []

            def upload(i: int) -> None:
                b = i % 2
                lo = starts[i]
                hi = min(lo + chunk, n)
                with copy_stream:
                    if free_again[b] is not None:
                        copy_stream.wait_event(free_again[b])
                    staging[b][: (hi - lo) * spec.affine_words].set(
                        handle.pinned[lo:hi].reshape(-1), stream=copy_stream
                    )
                    uploaded[b] = copy_stream.record()

            upload(0)
            for i, lo in enumerate(starts):
                hi = min(lo + chunk, n)
                b = i % 2
                compute.wait_event(uploaded[b])
                if i + 1 < len(starts):
                    upload(i + 1)  # overlaps the arithmetic below
                if not handle.pinned_montgomery:
                    self._to_montgomery(spec, staging[b], hi - lo)
                part = scalars[lo:hi]
                s = (
                    cupy.asarray(np.ascontiguousarray(part))
                    if isinstance(part, np.ndarray)
                    else part
                )
                results.append(msm_xyzz(cupy, k, spec, staging[b], s, tuning))
                free_again[b] = compute.record()
            extra = cupy.concatenate(results)
            out = cupy.empty(xw, dtype=_U32)
            k.launch(
                "finalize",
                1,
                (cupy.zeros(xw, dtype=_U32), _U32(0), _U32(0), extra, _U32(len(results)), out),
                block=1,
            )
            compute.synchronize()
            return out


def _empty_scalars(xp):
    return xp.zeros((0, 4), dtype=np.uint64)
