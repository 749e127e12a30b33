"""The MSM pipeline: the kernels of one Pippenger MSM, launched in order.

The kernels (``kernels/msm.cu``) implement Pippenger's method with signed
c-bit digits; :func:`msm_xyzz` runs one MSM over bases already in Montgomery
form on the device:

1. classify the scalars: zeros are dropped, ones go to a bitmap whose bases
   are summed directly (the 0/1 fast path: most of a SHA-256-heavy Filecoin
   witness is bits), the rest are *full* scalars;
2. choose the window c from the number of full scalars (:func:`choose_window`),
   and how many windows to process together (:func:`group_windows`: all of
   them unless their workspace would pass ``Tuning.workspace_cap``);
3. per group of windows, counting-sort the (bucket, point) pairs on the GPU
   (the point's index and sign, or with ``Tuning.sort_points`` the signed
   point itself, so that every affine round runs in place);
4. sum each bucket (:func:`_sum_sorted`): rounds of batched-affine pair sums
   (one inversion shared by hundreds of pairs) while the rounds are large,
   then XYZZ mixed additions over equal slices of what is left (load
   balanced whatever the bucket sizes), completing buckets split across
   slices; ``Tuning(method="xyzz")`` skips the affine rounds (version 1:
   docs/device-notes/msm.md#sort-and-accumulation);
5. reduce each window's buckets to Σ (k+1)·B_k by running sums, and combine
   windows by Horner's rule on the GPU; one point comes back to the host
   (:func:`xyzz_to_affine`).

The same pipeline runs against any array module ``xp`` and kernel launcher,
so the tests also run it on the CPU (numpy and the kernels compiled as C++).
The choices of steps 2 and 4 are in :mod:`.plan`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Any, Protocol

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.algebra.fields import Fq2, Q
from cuzk.backends.cuda.msm.plan import (
    _AFFINE_BLOCK,
    Tuning,
    _affine_threads,
    _uses_affine,
    affine_tail_pairs,
    choose_window,
    group_windows,
    num_windows,
    reduce_segments,
    slice_length,
)
from cuzk.backends.cuda.msm.spec import _U32, CurveSpec
from cuzk.backends.cuda.tuning import MSM_BLOCK
from cuzk.errors import InputError

NO_KEY = 0xFFFFFFFF


class Kernels(Protocol):
    """Launches kernels of one compiled module: ``threads`` threads in all."""

    def launch(self, name: str, threads: int, args: tuple, block: int = MSM_BLOCK) -> None: ...


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


class _Arena:
    """The large buffers of one MSM's window groups, each allocated once at its
    bound and lent out as a prefix per group.

    Their exact sizes depend on the scalars (the entries of a group are its
    non-zero digits, the items of round 1 depend on every bucket's count), so
    allocated per group they differ from group to group and from MSM to MSM
    by a few entries: each new size larger than every block the memory pool
    caches takes a fresh device allocation, and at the pool's limit every
    cached block is given back first (a device synchronisation and a
    ``cudaFree`` each time; memory.releasing_malloc). Sized by the bound the
    workspace already reserves (:func:`.plan.workspace_bytes`), the same
    blocks serve every group and every MSM of that plan
    (docs/device-notes/msm.md#the-2-plan).
    """

    def __init__(self, xp) -> None:
        self.xp = xp
        self._bufs: dict[str, Any] = {}

    def take(self, name: str, count: int, bound: int):
        """``count`` uint32 words of the buffer ``name`` (allocated with
        ``max(bound, count)`` words the first time, or again if too short)."""
        buf = self._bufs.get(name)
        if buf is None or buf.size < count:
            self._bufs.pop(name, None)
            del buf
            buf = self._bufs[name] = self.xp.empty(max(bound, count), dtype=_U32)
        return buf[:count]


def _sum_sorted(
    xp, k: Kernels, spec: CurveSpec, sorted_, counts, ends, tuning, phases, arena=None, bound=0
):
    """The sum of every bucket of a list sorted by bucket key, as XYZZ words
    (keys with a zero count are left unwritten).

    ``arena`` (an :class:`_Arena`) and ``bound`` (the most entries a list of
    these keys may hold): round 1's list and the rounds' scratch come from
    the arena's buffers, sized by the bound, instead of fresh arrays.

    ``sorted_``: either ``(bases, vals)``, vals being point index · 2 + sign
    per entry, or ``(points,)``, the entries' points themselves (signs
    applied: ``Tuning.sort_points``); ``counts`` / ``ends``: entries per key
    and their inclusive prefix sum. Affine rounds first (when the list is
    long enough), then the XYZZ walk over what they leave.
    """
    xw = spec.xyzz_words
    nkeys = int(counts.size)
    entries = _last(xp, ends)
    buckets = xp.empty(nkeys * xw, dtype=_U32)
    affine = _uses_affine(entries, tuning)
    if len(sorted_) == 1 or affine:  # sorted points: the XYZZ walk reads them in place too
        if len(sorted_) == 1:  # every round in place: the first at stride 1
            (points,) = sorted_
            off, cnt = ends - counts, counts
        else:
            bases, vals = sorted_
            items = (counts + 1) // 2
            iend = xp.cumsum(items, dtype=_U32)
            total = _last(xp, iend)
            m = _affine_batch(total, spec, tuning)
            if arena is None:
                points = xp.empty(total * spec.affine_words, dtype=_U32)
            else:  # items: ⌈count/2⌉ a key, so at most (entries + keys) / 2
                items_bound = (bound + nkeys + 1) // 2
                points = arena.take(
                    "items", total * spec.affine_words, items_bound * spec.affine_words
                )
            k.launch(
                "affine_first",
                -(-total // m),
                (bases, vals, ends, iend, _U32(nkeys), _U32(total), _U32(m), points),
                block=_AFFINE_BLOCK,
            )
            phases.mark("affine_first")
            off = iend - items
            cnt = items
            del iend, items
        stride, scratch, first = 1, None, len(sorted_) == 1
        tail_pairs = affine_tail_pairs(tuning)
        # the rounds' scratch at its bound: round 1's pairs at most
        top = (bound if first else (bound + nkeys + 1) // 2) // 2
        scratch_bound = (top + _affine_batch(top, spec, tuning)) * spec.field_words
        while affine:
            pairs = cnt // 2
            pend = xp.cumsum(pairs, dtype=_U32)
            total = _last(xp, pend)
            if total < tail_pairs:
                break
            m = _affine_batch(total, spec, tuning)
            slots = -(-total // m) * m * spec.field_words
            if arena is not None:
                scratch = arena.take("scratch", slots, scratch_bound)
            elif scratch is None or scratch.size < slots:
                scratch = xp.empty(slots, dtype=_U32)
            k.launch(
                "affine_round",
                -(-total // m),
                (points, off, _U32(stride), pend, _U32(nkeys), _U32(total), _U32(m), scratch),
                block=_AFFINE_BLOCK,
            )
            if first:
                phases.mark("affine_first")
                first = False
            cnt = cnt - pairs
            stride *= 2
            del pend, pairs
        del scratch
        phases.mark("affine_rounds")
        tail_ends = xp.cumsum(cnt, dtype=_U32)
        E = _last(xp, tail_ends)
        T = slice_length(E, tuning)
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
        bases, vals = sorted_
        T = slice_length(entries, tuning)
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
        return _sum_sorted(xp, k, spec, (bases, vals), one, one, tuning, _Phases(xp, None))
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
    plan: Callable[[int, int], tuple[Tuning, AbstractContextManager]] | None = None,
):
    """Σ sᵢ·Pᵢ as one XYZZ point (Montgomery words, an xp array).

    ``bases``: flat uint32 Montgomery affine points (at least n of them);
    ``scalars``: (n, 4) uint64, any 256-bit values (reduced mod r on the GPU).
    ``plan``, when given, is called once the scalars are classified, with the
    counts of ones and of full scalars; it returns the tuning to run with and
    a context held for the rest of the MSM (the engine's reservation of the
    workspace those counts need: :func:`.plan.workspace_bytes`).
    """
    with ExitStack() as held:
        return _msm_xyzz(xp, k, spec, bases, scalars, tuning, timings, plan, held)


def _msm_xyzz(xp, k, spec, bases, scalars, tuning, timings, plan, held):
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
    if plan is not None:
        tuning, hold = plan(n_ones, n_full)
        held.enter_context(hold)

    if n_ones:
        extras.append(_ones_sum(xp, k, spec, bases, bitmap, nwords, n_ones, tuning))
        phases.mark("ones")

    if n_full:
        c = tuning.window or choose_window(n_full, spec)
        nw, nb = num_windows(c), 1 << (c - 1)
        gw = group_windows(spec, n_full, c, tuning)
        arena = _Arena(xp)
        bound = n_full * gw  # a group's entries at most: a digit a full scalar a window
        sums = []
        for w0 in range(0, nw, gw):
            w1 = min(nw, w0 + gw)
            g = w1 - w0
            counts = xp.zeros(g * nb, dtype=_U32)
            k.launch("digits_count", n, (scalars, _U32(n), _U32(c), _U32(w0), _U32(w1), counts))
            ends = xp.cumsum(counts, dtype=_U32)
            phases.mark("digits_count")
            cursor = ends - counts
            digits = (scalars, _U32(n), _U32(c), _U32(w0), _U32(w1), cursor)
            entries = _last(xp, ends)
            if tuning.sort_points:
                aw = spec.affine_words
                sorted_ = (arena.take("sorted", entries * aw, bound * aw),)
                k.launch("digits_scatter_points", n, (*digits, bases, *sorted_))
            else:
                sorted_ = (bases, arena.take("sorted", entries, bound))
                k.launch("digits_scatter", n, (*digits, sorted_[1]))
            del cursor, digits
            phases.mark("digits_scatter")
            buckets = _sum_sorted(xp, k, spec, sorted_, counts, ends, tuning, phases, arena, bound)
            del sorted_, ends
            S = reduce_segments(nb, g, tuning)
            L = -(-nb // S)
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
        del arena
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


def _check_scalars(scalars: Any, n_bases: int, spec: CurveSpec) -> None:
    if scalars.ndim != 2 or scalars.shape[1] != 4 or scalars.dtype != np.uint64:
        raise InputError(f"{spec.name} MSM", "scalars", "expected an (n, 4) uint64 array")
    if scalars.shape[0] > n_bases:
        raise InputError(
            f"{spec.name} MSM",
            "scalars",
            f"{scalars.shape[0]} scalars over {n_bases} bases: the key is too short",
        )
