"""The MSM's cost model and window plan: how a pipeline run is shaped before it starts.

:class:`Tuning` holds the overrides of the automatic choices; the rest
computes them: the window c that minimises additions (:func:`choose_window`),
how many windows are sorted and summed together (:func:`group_windows`), the
VRAM an MSM takes besides its bases (:func:`workspace_bytes`) and the tuning
that fits the memory free when it runs (:func:`fit_tuning`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

from cuzk.backends.cuda.msm.spec import SCALAR_BITS, CurveSpec
from cuzk.backends.cuda.tuning import MSM_AFF_BLOCK
from cuzk.errors import InputError

log = logging.getLogger(__name__)


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
    # the XYZZ walk over what is left) or "xyzz" (the XYZZ walk alone, version 1:
    # docs/device-notes/msm.md#sort-and-accumulation).
    method: str = "affine"
    affine_min_pairs: int = 1 << 21  # a list of fewer pairs is summed by the XYZZ walk alone
    # Once started, the rounds go on while a round has at least this many pairs
    # (None: the smaller of affine_min_pairs and 2^18), what is left going to
    # the XYZZ walk. Stopping at 2^21 left a bucket in four with two points in
    # window groups of one or two windows (2^21–2^22 buckets): the walk took
    # 49.5 ms at G1 2^27 against 8.4 in groups of three
    # (docs/device-notes/msm.md#sort-and-accumulation).
    affine_tail_pairs: int | None = None
    affine_threads: int | None = None  # threads a round aims for (m = pairs / threads)
    affine_min_batch: int = 128  # pairs per inversion, at least
    # The counting sort writes each entry's point (sign applied) rather than its
    # index, so the affine rounds' first round runs in place like the later
    # ones instead of gathering random bases (version 6:
    # docs/device-notes/msm.md#sort-and-accumulation);
    # the list takes a point per entry, not an index and half a point.
    # None: chosen per MSM (:func:`choose_sort`): G1's points where they fit
    # in no more window groups than the index sort, at twice the cap (faster
    # there: G1 2^26 483 against 504 ms on the H200, 2^27 −4 %); the index
    # sort otherwise, and always inside a partition's reservation.
    sort_points: bool | None = None
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
# (132 SMs; G1: 8 blocks of 64 per SM, 67584 threads; G2: 4 blocks, 33792).
_AFFINE_THREADS = {"G1": 1 << 16, "G2": 1 << 15}
_AFFINE_BLOCK = MSM_AFF_BLOCK  # msm.cu's CUZK_AFF_BLOCK, from the tuning table


def _affine_threads(spec: CurveSpec, tuning: Tuning) -> int:
    return tuning.affine_threads or _AFFINE_THREADS[spec.name]


def affine_tail_pairs(tuning: Tuning) -> int:
    """The fewest pairs a round after the first runs with."""
    if tuning.affine_tail_pairs is not None:
        return max(1, tuning.affine_tail_pairs)
    return max(1, min(tuning.affine_min_pairs, 1 << 18))


def _uses_affine(entries: int, tuning: Tuning) -> bool:
    """Whether a sorted list of this many entries starts with affine rounds."""
    return tuning.method == "affine" and entries // 2 >= tuning.affine_min_pairs


def slice_length(entries: int, tuning: Tuning) -> int:
    """Entries each thread of the XYZZ accumulation walks: about target_threads
    slices over the sorted list, at least 16 entries each."""
    return tuning.slice_len or max(16, -(-entries // tuning.target_threads))


def _sum_sorted_bytes(
    spec: CurveSpec, entries: int, keys: int, tuning: Tuning, sorted_points: bool = False
) -> int:
    """VRAM of :func:`_sum_sorted` over a list of `entries` in `keys` buckets
    (of indices, or with ``sorted_points`` of points, the list not counted)."""
    T = slice_length(entries, tuning)
    slices = entries // T + 1
    total = spec.xyzz_bytes * keys  # buckets
    total += 4 * (spec.xyzz_bytes + 4) * slices  # slice heads and tails, two levels
    if _uses_affine(entries, tuning):
        if sorted_points:  # round 1 in place: its prefix products need the scratch
            pairs = entries // 2
        else:
            total += spec.affine_bytes * (entries // 2 + keys)  # the list of round 1
            pairs = entries // 4
        scratch = pairs + keys + _affine_threads(spec, tuning) * tuning.affine_min_batch
        total += 4 * spec.field_words * scratch
        total += 6 * 4 * keys  # counts, item ends, offsets of the rounds
    return total


def _group_bytes(spec: CurveSpec, n: int, g: int, nb: int, tuning: Tuning) -> int:
    """VRAM of one group of g windows over n full scalars."""
    entries, keys = n * g, g * nb
    total = 3 * 4 * keys  # counts, prefix sums (ends), cursors
    if tuning.sort_points:
        total += spec.affine_bytes * entries  # the sorted points
    else:
        total += 4 * entries  # vals
    total += _sum_sorted_bytes(spec, entries, keys, tuning, tuning.sort_points)
    total += 2 * spec.xyzz_bytes * g * reduce_segments(nb, g, tuning)  # segment sums, tree
    return total


def reduce_segments(nb: int, g: int, tuning: Tuning) -> int:
    """Segments per window of the bucket reduction (each sums a run of a
    window's nb buckets): one thread each, about target_threads in all."""
    S = tuning.segments or max(1, min(nb, tuning.target_threads // g))
    L = -(-nb // S)
    return -(-nb // L)


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
    spec: CurveSpec,
    n: int,
    scalars_on_host: bool = True,
    tuning: Tuning = Tuning(),
    counts: tuple[int, int] | None = None,
) -> int:
    """An upper bound of the VRAM one MSM of n scalars takes besides its bases.

    ``counts``: (scalars equal to 1, full scalars), once the classification
    has counted them (:func:`classify_bytes` of it is included); without
    them every scalar is taken for both, the bound of any n scalars.
    """
    n_ones, n_full = (n, n) if counts is None else counts
    c = tuning.window or choose_window(n_full, spec)
    nw, nb = num_windows(c), 1 << (c - 1)
    total = classify_bytes(n, scalars_on_host)
    ones = 0
    if n_ones or counts is None:
        ones = 2 * spec.xyzz_bytes * (n // 32 + 1)  # ones partials and their tree
        if _uses_affine(n_ones, tuning):  # popcounts and index list, then the affine sum
            affine = 8 * (n // 32 + 1) + 4 * n_ones + _sum_sorted_bytes(spec, n_ones, 1, tuning)
            ones = max(ones, affine)
    full = 0
    if n_full or counts is None:
        g = group_windows(spec, n_full, c, tuning)
        full = _group_bytes(spec, n_full, g, nb, tuning)
    total += spec.xyzz_bytes * nw  # window sums
    return total + max(ones, full)


def classify_bytes(n: int, scalars_on_host: bool = True) -> int:
    """The part of :func:`workspace_bytes` the classification takes (the
    upload of host scalars, the bitmap of ones, two counters): what is held
    before the counts are known."""
    return (32 * n if scalars_on_host else 0) + 4 * (n // 32 + 1) + 64


# The fewest full scalars the points' sort is chosen for (measured from 2^24 up).
_POINTS_MIN_FULL = 1 << 24


def choose_sort(
    spec: CurveSpec,
    n: int,
    tuning: Tuning,
    room_bytes: int | None,
    scalars_on_host: bool = True,
    counts: tuple[int, int] | None = None,
) -> Tuning:
    """`tuning` with ``sort_points`` decided when it is None: the sort writing
    the points, at twice the workspace cap, for G1 when that takes no more
    window groups than the index sort at the cap and its workspace fits in
    ``room_bytes``; else the index sort. ``room_bytes`` None (work inside a
    reservation whose estimate counts the index sort) is the index sort.

    Measured (docs/device-notes/runs/msm-history.md, versions 6 and 8): the points win
    by 1–4 % at G1 2^24–2^27 with as few groups, lose with more groups, and
    lose in G2 (its 192-byte random writes).
    """
    if tuning.sort_points is not None:
        return tuning
    index = dataclasses.replace(tuning, sort_points=False)
    n_full = n if counts is None else counts[1]
    if room_bytes is None or spec.name != "G1" or tuning.method != "affine":
        return index
    if n_full < _POINTS_MIN_FULL:
        return index
    points = dataclasses.replace(tuning, sort_points=True, workspace_cap=2 * tuning.workspace_cap)
    c = tuning.window or choose_window(n_full, spec)
    nw = num_windows(c)

    def groups(t: Tuning) -> int:
        return -(-nw // group_windows(spec, n_full, c, t))

    if groups(points) > groups(index):
        return index
    if workspace_bytes(spec, n, scalars_on_host, points, counts) > room_bytes:
        return index
    return points


def _least(tuning: Tuning) -> Tuning:
    """The tuning of the smallest workspace: the XYZZ method over an index
    sort, one window at a time."""
    return dataclasses.replace(tuning, method="xyzz", sort_points=False, group_windows=1)


def fit_tuning(
    spec: CurveSpec,
    n: int,
    tuning: Tuning,
    free_bytes: int,
    scalars_on_host: bool = True,
    counts: tuple[int, int] | None = None,
    quiet: bool = False,
) -> Tuning:
    """`tuning`, with a smaller workspace cap (more window groups) or at last
    the XYZZ method, until one MSM of n scalars (of ``counts``, see
    :func:`workspace_bytes`) fits in free_bytes. When nothing fits, the
    smallest: the reservation then says what is missing. ``quiet``: no log
    line for a lowered cap (a planner weighing choices, not an MSM)."""

    def need(t: Tuning) -> int:
        return workspace_bytes(spec, n, scalars_on_host, t, counts)

    cap = tuning.workspace_cap
    for _ in range(8):
        t = dataclasses.replace(tuning, workspace_cap=cap)
        if need(t) <= free_bytes:
            if t != tuning and not quiet:
                log.info(
                    "%s MSM of %d: workspace cap lowered to %.1f GiB", spec.name, n, cap / 2**30
                )
            return t
        cap //= 2
    xyzz = dataclasses.replace(tuning, method="xyzz", sort_points=False)
    for t in (xyzz, _least(tuning)):
        if need(t) <= free_bytes:
            if not quiet:
                log.info(
                    "%s MSM of %d: XYZZ accumulation, too little memory for affine", spec.name, n
                )
            return t
    return _least(tuning)


def entries_per_group(spec: CurveSpec, n: int, tuning: Tuning) -> int:
    """Sorted entries one window group of an MSM of n full scalars sums at
    ``tuning``: n times the windows summed together. What a streamed MSM's
    time follows when its room is short (:func:`.bases.fit_chunk`)."""
    c = tuning.window or choose_window(n, spec)
    return n * group_windows(spec, n, c, tuning)


# --- the whole plan of one MSM -------------------------------------------------

# The fewest scalars a resident MSM is sliced to when memory is short.
SLICE_MIN = 1 << 20


def slice_points(spec: CurveSpec, n: int, on_host: bool, counts: tuple[int, int], free: int) -> int:
    """The largest power-of-two slice of n scalars (with the counts found, pro
    rata) whose affine MSM at one window a group fits ``free`` bytes, at least
    SLICE_MIN; n when slicing would not help."""
    if n <= SLICE_MIN:
        return n
    one = Tuning(group_windows=1)
    part = 1 << (n.bit_length() - 1)
    while part > SLICE_MIN:
        share = (counts[0] * part // n, counts[1] * part // n)
        if workspace_bytes(spec, part, on_host, one, share) + classify_bytes(part, on_host) <= free:
            break
        part //= 2
    return part


@dataclass(frozen=True)
class MsmPlan:
    """Everything one MSM runs with, decided from its size, its scalars' counts
    and the memory free before it starts (:func:`plan_msm`): the window c, how
    many of its windows are sorted and summed together (a group) and so how
    many groups (passes over the scalars), the sort (``"points"`` or
    ``"index"``), the bucket method, the workspace it reserves, and whether it
    runs in slices of ``slice_points`` scalars instead (``sliced``)."""

    group: str
    n: int
    n_full: int
    window: int
    windows: int
    windows_a_group: int
    groups: int
    sort: str
    method: str
    workspace_cap: int
    workspace_bytes: int
    slice_points: int
    cut: bool  # fit_tuning cut the chosen method down to the XYZZ walk
    tuning: Tuning

    @property
    def sliced(self) -> bool:
        return self.slice_points < self.n

    def brief(self) -> str:
        """One line for logs and benchmark rows."""
        if self.n_full == 0:
            return f"{self.group} n={self.n}: no full scalars"
        s = (
            f"{self.group} n={self.n}: c={self.window}, {self.windows} windows in "
            f"{self.groups} group(s) of {self.windows_a_group}, {self.sort} sort, "
            f"{self.method}, cap {self.workspace_cap / 2**30:g} GiB, "
            f"workspace {self.workspace_bytes / 2**30:.2f} GiB"
        )
        return s + (f", sliced by {self.slice_points}" if self.sliced else "")


def plan_msm(
    spec: CurveSpec,
    n: int,
    tuning: Tuning,
    free_bytes: int,
    room_bytes: int | None,
    scalars_on_host: bool = True,
    counts: tuple[int, int] | None = None,
    quiet: bool = False,
) -> MsmPlan:
    """The plan of one MSM of n scalars (``counts``: ones and full scalars, as
    the classification found them; None: n of each), with ``free_bytes`` of
    the device free for its workspace and ``room_bytes`` the room the points'
    sort may take (None inside a reservation: :func:`choose_sort`).

    The sort first (:func:`choose_sort`), then the workspace cap fitted to the
    free memory (:func:`fit_tuning`); where that would cut the affine method
    down to the XYZZ walk, slices of the MSM that keep it
    (:func:`slice_points`) when slicing helps. A pure function of its
    arguments: the same size, counts and memory give the same plan in the
    library, in ``cuzk-bench kernels`` and in ``python -m cuzk.bench.msm
    --explore`` (tests/backends/cuda/test_msm_plan.py).
    """
    n_ones, n_full = (n, n) if counts is None else counts
    chosen = choose_sort(spec, n, tuning, room_bytes, scalars_on_host, counts)
    fitted = fit_tuning(spec, n, chosen, free_bytes, scalars_on_host, counts, quiet)
    cut = fitted.method != chosen.method
    part = n
    if cut:
        part = slice_points(spec, n, scalars_on_host, (n_ones, n_full), free_bytes)
    c = fitted.window or choose_window(max(n_full, 1), spec)
    nw = num_windows(c)
    g = group_windows(spec, n_full, c, fitted) if n_full else nw
    return MsmPlan(
        group=spec.name,
        n=n,
        n_full=n_full,
        window=c,
        windows=nw,
        windows_a_group=g,
        groups=-(-nw // g),
        sort="points" if fitted.sort_points else "index",
        method=fitted.method,
        workspace_cap=fitted.workspace_cap,
        workspace_bytes=workspace_bytes(spec, n, scalars_on_host, fitted, counts),
        slice_points=part,
        cut=cut,
        tuning=fitted,
    )
