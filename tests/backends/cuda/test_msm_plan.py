"""The plan one MSM runs with (msm/plan.plan_msm) and the buffers it takes.

The library, ``cuzk-bench kernels`` and ``python -m cuzk.bench.msm --explore``
plan an MSM by the same pure function of its size, its scalars' counts and
the memory free: outside a reservation, with the room an H200 has, every
size gets the plan the explore rows measured fastest (the points' sort at
twice the cap, as few window groups as fit, no slices). The large buffers of
its window groups are taken once an MSM at their bound, so the device pool
sees the same sizes whatever the scalars (docs/device-notes/msm.md#the-2-plan).
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.curves import G1
from cuzk.algebra.fields import R
from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.backends.cuda.msm import (
    G1_SPEC,
    G2_SPEC,
    MsmEngine,
    Tuning,
    classify_bytes,
    msm_xyzz,
    plan_msm,
    xyzz_to_affine,
)

GIB = 1 << 30
# The H200's budget: 0.9 of the 140.4 GiB it reports.
H200_BUDGET = int(0.9 * 140.4 * GIB)

# What the explore rows measured fastest (docs/device-notes/msm.md, versions 9
# and 10: the default "v2" row beside "index" at G1 2^24, 2^26, 2^27): c, the
# windows a group, the groups.
EXPLORE_BEST = {24: (20, 13, 1), 26: (22, 4, 3), 27: (22, 3, 4)}


class _Pool:
    """CuPy's memory pool as MsmEngine._sort_room reads it."""

    def __init__(self, limit: int, used: int) -> None:
        self.limit, self.used = limit, used

    def get_limit(self) -> int:
        return self.limit

    def used_bytes(self) -> int:
        return self.used


@dataclass
class _Context:
    """A DeviceContext's stand-in: a real budget, a pool of given use."""

    budget: DeviceBudget
    pool: _Pool
    device_id: int = 0


def engine_plan(ctx: _Context, spec, n: int, counts=None):
    """The plan MsmEngine._msm_whole makes for resident bases and device
    scalars in ``ctx`` (its inputs computed as it computes them)."""
    eng = MsmEngine(ctx)
    counts = counts or (0, n)
    first = classify_bytes(n, False)
    with ctx.budget.reserve(first, "scalars"):
        free = ctx.budget.free_bytes + first
        return plan_msm(spec, n, eng.tuning, free, eng._sort_room(free, first), False, counts)


def context(bases_bytes: int, live_bytes: int = 0, reserved_else: int = 0) -> _Context:
    """The H200's budget with resident bases (reserved and in the pool) and
    ``live_bytes`` of arrays held without a reservation (scalars, a
    benchmark's other inputs); ``reserved_else``: other reservations."""
    budget = DeviceBudget(0, H200_BUDGET)
    budget.acquire(bases_bytes, "bases")
    if reserved_else:
        budget.acquire(reserved_else, "other")
    return _Context(budget, _Pool(H200_BUDGET, bases_bytes + live_bytes))


@pytest.mark.parametrize("lg", [24, 26, 27])
def test_plan_outside_a_reservation_is_the_explore_best(lg):
    n = 1 << lg
    c, g, groups = EXPLORE_BEST[lg]
    # explore: bases of n points and one scalar set
    explore = engine_plan(context(96 * n, 32 * n), G1_SPEC, n)
    # cuzk-bench kernels: bases of 2^26 points (2^27 at its own row), this
    # size's scalars and the earlier sizes' scalars still referenced
    kernels = engine_plan(context(96 * max(n, 1 << 26), 32 * n + (2 << 30)), G1_SPEC, n)
    # the library with about 100 GiB free (a daemon's key resident beside it)
    hundred_free = context(96 * n, 32 * n, reserved_else=H200_BUDGET - 100 * GIB)
    library = engine_plan(hundred_free, G1_SPEC, n)
    assert explore == kernels == library
    p = library
    assert (p.window, p.windows_a_group, p.groups) == (c, g, groups)
    assert p.sort == "points" and p.method == "affine" and not p.sliced
    assert p.workspace_cap == 2 * Tuning().workspace_cap
    assert p.workspace_bytes <= 100 * GIB


@pytest.mark.parametrize("spec", [G1_SPEC, G2_SPEC], ids=["G1", "G2"])
@pytest.mark.parametrize("lg", [16, 20, 22, 24, 26, 27])
def test_ample_room_never_slices_or_adds_passes(spec, lg):
    """With 100 GiB free no plan slices, cuts the method, or takes more window
    groups than with all the memory in the world: ample room never costs a pass."""
    n = 1 << lg
    counts = (0, n)
    ample = plan_msm(spec, n, Tuning(), 100 * GIB, 100 * GIB, False, counts, quiet=True)
    unbounded = plan_msm(spec, n, Tuning(), 1 << 50, 1 << 50, False, counts, quiet=True)
    assert not ample.sliced and not ample.cut and ample.method == "affine"
    assert ample.groups == unbounded.groups and ample == unbounded
    if spec is G2_SPEC or n < 1 << 24:
        assert ample.sort == "index"  # measured: the points win only for G1 from 2^24


def test_a_reservation_plans_the_index_sort_and_short_memory_slices():
    n = 1 << 26
    inside = plan_msm(G1_SPEC, n, Tuning(), 100 * GIB, None, False, (0, n))
    assert inside.sort == "index" and not inside.sliced and inside.groups == 3
    short = plan_msm(G1_SPEC, n, Tuning(), 4 * GIB, 4 * GIB, False, (0, n), quiet=True)
    assert short.cut and short.sliced and short.slice_points < n
    assert "sliced by" in short.brief() and "index sort" in short.brief()


class _Allocations:
    """numpy as the pipeline's array module, noting the size of every array
    allocated (the device pool's view of an MSM)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __getattr__(self, name: str):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn

        def call(*a, **k):
            out = fn(*a, **k)
            if isinstance(out, np.ndarray) and out.base is None:
                self.sizes.append(out.nbytes)
            return out

        return call


@pytest.mark.parametrize("sort_points", [True, False], ids=["points", "index"])
def test_an_msms_large_buffers_are_taken_once_at_their_bound(sort_points, host_kernels):
    """Window groups of the same MSM and MSMs of other scalars ask the pool for
    the same large blocks (the sorted list, round 1's items, the rounds'
    scratch), each once an MSM, though every group's entries differ."""
    from test_msm import random_points, reference, to_array

    spec, n = G1_SPEC, 600
    rng = np.random.default_rng(33)
    bases = to_array(G1, random_points(G1, 6, rng) * 100)
    words = np.ascontiguousarray(bases).view(np.uint32).reshape(-1).copy()
    k = host_kernels("msm.cu", spec.defines)
    k.launch("to_montgomery", len(words) // 12, (words, np.uint64(len(words) // 12)))
    tuning = Tuning(
        window=4,
        group_windows=3,
        affine_min_batch=2,
        affine_min_pairs=1,
        affine_threads=1 << 20,
        sort_points=sort_points,
    )
    large = []
    for seed in (1, 2):
        values = [int(v) % R for v in np.random.default_rng(seed).integers(2, 2**63, size=n)]
        values[seed::8] = [0] * len(values[seed::8])  # as many zeros, elsewhere
        scalars = fr_to_array(values)
        xp = _Allocations()
        plan = lambda ones, full: (tuning, contextlib.nullcontext())  # noqa: E731
        out = msm_xyzz(xp, k, spec, words, scalars, tuning, plan=plan)
        assert xyzz_to_affine(out, spec) == reference(G1, bases, scalars)
        # the lists of a 3-window group of 525 full scalars (4 bytes or a
        # point an entry, 12 words a pair of scratch): the only arrays over
        # 15000 bytes here (buckets, slices and sums are 4608 at most)
        large.append(sorted(s for s in xp.sizes if s > 15000))
    # the sorted points and the scratch | round 1's items and the scratch
    # (the index sort's list, 4 bytes an entry, is under the line here)
    assert len(large[0]) == 2
    assert large[0] == large[1]


# --- on the GPU: the default against the explore's best ----------------------------


@pytest.mark.gpu
def test_gpu_default_msm_within_a_tenth_of_the_explore_best():
    """G1 2^24 through the library's default entry point (MsmEngine.msm_g1, a
    fresh scalar set each run, after other sizes have used the pool) against
    the best explore variant's time (default, the index sort, the points'
    sort forced) on the same bases: at most 1.1x."""
    import cupy

    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.bench.inputs import make_bases, random_scalars_device

    ctx = DeviceContext()
    n = 1 << 24
    default = MsmEngine(ctx)
    variants = {
        "default": default,
        "index": MsmEngine(ctx, Tuning(sort_points=False)),
        "points": MsmEngine(ctx, Tuning(sort_points=True)),
    }
    handle = default.prepare_g1(make_bases(default, "G1", n, seed=5))
    # the pool as a benchmark leaves it: smaller MSMs and another set before
    for lg in (20, 22):
        small = random_scalars_device(1 << lg, seed=lg)
        default.msm_g1(handle, small)
    sets = [random_scalars_device(n, seed=100 + i) for i in range(4)]

    def median_ms(eng) -> float:
        eng.msm_g1(handle, sets[0])  # warm-up
        times = []
        for s in sets:
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            eng.msm_g1(handle, s)
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop))
        return statistics.median(times)

    times = {name: median_ms(eng) for name, eng in variants.items()}
    best = min(times.values())
    assert default.last_plan is not None and not default.last_plan.sliced
    assert times["default"] <= 1.1 * best, (times, default.last_plan.brief())
    handle.close()
