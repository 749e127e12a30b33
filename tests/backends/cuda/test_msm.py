"""The whole Pippenger pipeline of kernels/msm.cu on the CPU twin, against arkworks.

The twin runs exactly the kernels and launch sequence the GPU runs
(cuzk.backends.cuda.msm.msm_xyzz with numpy as the array module), so these
tests pin the pipeline's logic: windows, signed digits, the counting sort,
slices split across buckets, the reductions and the 0/1 path. Small windows
and slices force every boundary case at small n.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections import Counter

import numpy as np
import pytest

from cuzk.algebra import pairing
from cuzk.algebra.arrays import fr_random, fr_to_array, g1_to_array, g2_to_array
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda.msm import (
    G1_SPEC,
    G2_SPEC,
    Tuning,
    choose_window,
    msm_xyzz,
    num_windows,
    xyzz_to_affine,
)

CPU = CpuBackend()


def random_points(group, n: int, rng: np.random.Generator) -> list:
    ks = [int(x) for x in rng.integers(1, 2**62, size=n)]
    if group is G1:
        fb = pairing.FixedBase(pairing.g1_to_ark(G1.generator))
        return [pairing.g1_from_ark(fb.mul(k)) for k in ks]
    fb = pairing.FixedBase(pairing.g2_to_ark(G2.generator))
    return [pairing.g2_from_ark(fb.mul(k)) for k in ks]


class Recorder:
    """A kernel launcher that notes which kernels ran (and how often)."""

    def __init__(self, k) -> None:
        self.k, self.launched = k, Counter()

    def launch(self, name: str, threads: int, args: tuple, block: int = 128) -> None:
        self.launched[name] += 1
        self.k.launch(name, threads, args, block)


def twin_msm(
    host_kernels,
    group,
    bases: np.ndarray,
    scalars: np.ndarray,
    tuning: Tuning,
    launched=None,
):
    spec = G1_SPEC if group is G1 else G2_SPEC
    k = Recorder(host_kernels("msm.cu", spec.defines))
    words = np.ascontiguousarray(bases).view(np.uint32).reshape(-1).copy()
    count = len(words) // 12
    k.launch("to_montgomery", count, (words, np.uint64(count)))
    out = msm_xyzz(np, k, spec, words, np.ascontiguousarray(scalars), tuning)
    if launched is not None:
        launched.update(k.launched)
    return xyzz_to_affine(out, spec)


def reference(group, bases: np.ndarray, scalars: np.ndarray):
    if group is G1:
        return CPU.msm_g1(CPU.prepare_g1(bases), scalars)
    return CPU.msm_g2(CPU.prepare_g2(bases), scalars)


def to_array(group, points):
    return g1_to_array(points) if group is G1 else g2_to_array(points)


def edge_case_inputs(group, rng):
    """Bases with repeats, negations and infinities; scalars with every special value."""
    pts = random_points(group, 12, rng)
    p0, p1 = pts[0], pts[1]
    bases = [*pts, p0, p0, group.neg(p0), None, p1, group.neg(p1), None, p0]
    specials = [0, 1, R - 1, 2, 3, R - 2, 1, 0, 5, 5, (R - 1) // 2, 1 << 254]
    specials += [7, 7, 7, 123456789, 9, 9, 2**64, 1 << 128]
    assert len(specials) == len(bases)
    return to_array(group, bases), fr_to_array(specials)


# Tunings that force the batched-affine rounds at small n: every round runs
# (min_pairs 1), a few pairs per inversion so batches straddle bucket
# boundaries, windows in groups.
AFFINE = dict(affine_min_pairs=1, affine_threads=1 << 20)


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
@pytest.mark.parametrize(
    "tuning",
    [
        Tuning(window=3, slice_len=1, segments=2, method="xyzz"),
        Tuning(window=4, slice_len=2, segments=1, method="xyzz", group_windows=5),
        Tuning(window=5, slice_len=3, segments=3, ones_words_per_thread=1),
        Tuning(),
        Tuning(window=3, slice_len=1, segments=2, affine_min_batch=3, **AFFINE),
        Tuning(window=4, slice_len=2, affine_min_batch=1, group_windows=7, **AFFINE),
        Tuning(window=5, affine_min_batch=5, affine_min_pairs=3, group_windows=1),
        # The sort writing the points (version 6): every round in place.
        Tuning(window=3, slice_len=1, segments=2, affine_min_batch=3, sort_points=True, **AFFINE),
        Tuning(window=4, affine_min_batch=1, group_windows=7, sort_points=True, **AFFINE),
        Tuning(window=4, slice_len=2, method="xyzz", sort_points=True),
        Tuning(sort_points=True),
    ],
    ids=[
        *("xyzz-c3-T1", "xyzz-c4-g5", "c5-T3", "auto", "aff-c3-m3", "aff-c4-m1-g7", "aff-c5-p3"),
        *("pts-aff-c3-m3", "pts-aff-c4-m1-g7", "pts-xyzz-c4", "pts-auto"),
    ],
)
def test_edge_cases_match_cpu(group, tuning, host_kernels):
    rng = np.random.default_rng(5)
    bases, scalars = edge_case_inputs(group, rng)
    launched: Counter = Counter()
    got = twin_msm(host_kernels, group, bases, scalars, tuning, launched)
    assert got == reference(group, bases, scalars)
    # The variant under test ran: affine rounds only where forced; the sorted
    # points are summed in place (no index list, no gathering first round).
    forced = tuning.affine_min_pairs <= 3 and tuning.method == "affine"
    pts = tuning.sort_points
    assert launched["digits_scatter_points" if pts else "digits_scatter"] > 0
    assert launched["digits_scatter" if pts else "digits_scatter_points"] == 0
    if pts:  # round 1 is an in-place round; only the ones' list is gathered
        assert (launched["affine_round"] > 0) == forced and launched["accumulate"] == 0
        assert launched["affine_first"] <= 1
    else:
        assert (launched["affine_first"] > 0) == forced
        assert (launched["accumulate_strided"] > 0) == forced
    if tuning.group_windows:
        assert launched["digits_count"] == -(-num_windows(tuning.window) // tuning.group_windows)


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_random_scalars_match_cpu(group, host_kernels):
    rng = np.random.default_rng(17)
    n = 77  # not a power of two
    bases = to_array(group, random_points(group, n, rng))
    scalars = fr_random(n, rng)
    want = reference(group, bases, scalars)
    # Windows of 6 bits: some buckets hold several points, slices of 4 split many.
    tuning = Tuning(window=6, slice_len=4, segments=5, method="xyzz")
    assert twin_msm(host_kernels, group, bases, scalars, tuning) == want
    affine = Tuning(window=6, slice_len=4, affine_min_batch=7, group_windows=3, **AFFINE)
    assert twin_msm(host_kernels, group, bases, scalars, affine) == want
    pts = dataclasses.replace(affine, sort_points=True)
    assert twin_msm(host_kernels, group, bases, scalars, pts) == want


def test_rounds_go_on_below_the_start_threshold(host_kernels):
    """Rounds start only for lists of affine_min_pairs pairs or more, then go on
    down to affine_tail_pairs (by default the smaller of that and 2^18)."""
    from cuzk.backends.cuda.msm.plan import affine_tail_pairs

    assert affine_tail_pairs(Tuning()) == 1 << 18
    assert affine_tail_pairs(Tuning(affine_min_pairs=40)) == 40
    rng = np.random.default_rng(29)
    n = 120
    bases = to_array(G1, random_points(G1, n, rng))
    scalars = fr_random(n, rng)
    want = reference(G1, bases, scalars)
    rounds = []
    for tail in (None, 8):
        tuning = Tuning(window=4, affine_min_pairs=600, affine_tail_pairs=tail, affine_min_batch=3)
        launched: Counter = Counter()
        assert twin_msm(host_kernels, G1, bases, scalars, tuning, launched) == want
        rounds.append(launched["affine_round"])
    assert rounds[1] > rounds[0]


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_hot_buckets_over_many_slices(group, host_kernels):
    """One scalar value repeated: every window's digit lands in one bucket per
    window, cut into dozens of slices and summed over several partial levels."""
    rng = np.random.default_rng(23)
    n = 150 if group is G1 else 60
    bases = to_array(group, random_points(group, n, rng))
    value = int.from_bytes(rng.bytes(32), "little") % R
    scalars = fr_to_array([value] * (n - 2) + [3, R - 1])
    want = reference(group, bases, scalars)
    tuning = Tuning(window=8, slice_len=2, partials_per_slice=4, segments=7, method="xyzz")
    assert twin_msm(host_kernels, group, bases, scalars, tuning) == want
    # Affine rounds stop below 7n pairs (32 windows of one hot bucket, ~n/4
    # points each by then): the XYZZ walk gets hot buckets at a stride.
    affine = Tuning(window=8, slice_len=2, partials_per_slice=4, affine_min_pairs=7 * n)
    for tuning in (affine, dataclasses.replace(affine, sort_points=True)):
        launched: Counter = Counter()
        assert twin_msm(host_kernels, group, bases, scalars, tuning, launched) == want
        assert launched["affine_round"] > 0 and launched["accumulate_partials"] > 0


def test_fewer_scalars_than_bases_and_tiny_n(host_kernels):
    rng = np.random.default_rng(3)
    bases = to_array(G1, random_points(G1, 9, rng))
    for n in (0, 1, 2, 5):
        scalars = fr_random(n, rng)
        got = twin_msm(host_kernels, G1, bases, scalars, Tuning(window=4, slice_len=2))
        assert got == reference(G1, bases[:n], scalars)


def test_scalars_at_or_above_r_act_modulo_r(host_kernels):
    rng = np.random.default_rng(4)
    bases = to_array(G1, random_points(G1, 6, rng))
    big = [R, R + 1, R + 2, 2**256 - 1, 2 * R + 5, 2**255]
    scalars = np.frombuffer(b"".join(v.to_bytes(32, "little") for v in big), dtype="<u8")
    scalars = scalars.reshape(-1, 4).copy()
    reduced = fr_to_array([v % R for v in big])
    got = twin_msm(host_kernels, G1, bases, scalars, Tuning(window=5, slice_len=2))
    assert got == reference(G1, bases, reduced)


def test_only_zeros_and_ones(host_kernels):
    rng = np.random.default_rng(8)
    pts = random_points(G1, 40, rng)
    bases = to_array(G1, pts)
    bits = rng.integers(0, 2, size=40)
    scalars = fr_to_array([int(b) for b in bits])
    want = G1.sum([p for p, b in zip(pts, bits, strict=True) if b])
    got = twin_msm(host_kernels, G1, bases, scalars, Tuning(ones_words_per_thread=1))
    assert got == want
    # The ones through the affine rounds (one bucket), rounds stopping early or not.
    for pairs, batch in ((1, 2), (4, 3)):
        tuning = Tuning(affine_min_pairs=pairs, affine_min_batch=batch, slice_len=2)
        launched: Counter = Counter()
        assert twin_msm(host_kernels, G1, bases, scalars, tuning, launched) == want
        assert launched["ones_list"] == 1 and launched["affine_round"] > 0
        assert launched["ones_partial"] == 0
    assert twin_msm(host_kernels, G1, bases, fr_to_array([0] * 40), Tuning()) is None


def test_result_is_infinity_when_terms_cancel(host_kernels):
    rng = np.random.default_rng(9)
    p = random_points(G1, 1, rng)[0]
    bases = to_array(G1, [p, G1.neg(p), p, p])
    scalars = fr_to_array([5, 5, 3, R - 3])
    assert twin_msm(host_kernels, G1, bases, scalars, Tuning(window=3, slice_len=1)) is None


def test_window_choice_grows_with_n():
    cs = [choose_window(1 << k, G1_SPEC) for k in range(4, 27, 2)]
    assert cs == sorted(cs)
    assert 19 <= choose_window(1 << 24, G1_SPEC) <= 21
    assert 21 <= choose_window(1 << 26, G1_SPEC) <= 23
    # The last window holds the final carry: nw·c covers 256 bits.
    for c in range(2, 24):
        assert num_windows(c) * c >= 256
    # A memory cap shrinks the window.
    capped = choose_window(1 << 26, G1_SPEC, max_bucket_bytes=1 << 30)
    assert num_windows(capped) * (1 << (capped - 1)) * G1_SPEC.xyzz_bytes <= 1 << 30


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_fixed_base_matches_arkworks(group, host_kernels):
    from cuzk.backends.cuda.msm import fixed_base_affine, fixed_base_table

    spec = G1_SPEC if group is G1 else G2_SPEC
    k = host_kernels("msm.cu", spec.defines)
    rng = np.random.default_rng(21)
    point = random_points(group, 1, rng)[0]
    wbits = 4  # a small table keeps the twin quick; the GPU uses the default
    table = fixed_base_table(point, spec, wbits)
    assert len(table) == -(-255 // wbits) * 15 * spec.affine_words
    k.launch("to_montgomery", len(table) // 12, (table, np.uint64(len(table) // 12)))
    values = [0, 1, 2, R - 1, R, 2**256 - 1] + [int(x) for x in rng.integers(1, 2**63, size=4)]
    values += [int.from_bytes(rng.bytes(32), "little") % R for _ in range(23)]
    scalars = np.frombuffer(b"".join(v.to_bytes(32, "little") for v in values), dtype="<u8")
    words = fixed_base_affine(np, k, spec, table, scalars.reshape(-1, 4).copy(), wbits)
    mul = pairing.g1_mul if group is G1 else pairing.g2_mul
    want = to_array(group, [mul(point, v % R) for v in values])
    assert np.array_equal(words.view("<u8").reshape(want.shape), want)


# --- on the GPU: the engine as CudaBackend uses it --------------------------------


@pytest.fixture(scope="module")
def gpu_engine():
    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.msm import MsmEngine

    return MsmEngine(DeviceContext())


def gpu_msm(engine, group, bases, scalars):
    if group is G1:
        return engine.msm_g1(engine.prepare_g1(bases), scalars)
    return engine.msm_g2(engine.prepare_g2(bases), scalars)


@pytest.mark.gpu
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_gpu_edge_cases_match_cpu(group, gpu_engine):
    from cuzk.backends.cuda.msm import MsmEngine

    rng = np.random.default_rng(50)
    bases, scalars = edge_case_inputs(group, rng)
    want = reference(group, bases, scalars)
    assert gpu_msm(gpu_engine, group, bases, scalars) == want
    small = MsmEngine(gpu_engine.ctx, Tuning(window=3, slice_len=1, segments=2))
    assert gpu_msm(small, group, bases, scalars) == want


@pytest.mark.gpu
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
@pytest.mark.parametrize("n", [1, 4099])
def test_gpu_random_scalars_match_cpu(group, n, gpu_engine):
    rng = np.random.default_rng(n)
    bases = to_array(group, random_points(group, n, rng))
    scalars = fr_random(n, rng)
    assert gpu_msm(gpu_engine, group, bases, scalars) == reference(group, bases, scalars)


@pytest.mark.gpu
def test_gpu_zero_one_bitmap_path_matches_cpu(gpu_engine):
    rng = np.random.default_rng(51)
    n = 6000
    bases = to_array(G1, random_points(G1, n, rng))
    kind = rng.integers(0, 10, size=n)  # mostly 0 and 1, a few full scalars
    full = fr_random(n, rng)
    scalars = np.where((kind < 5)[:, None], 0, np.where((kind < 9)[:, None], 0, full))
    scalars[(kind >= 5) & (kind < 9), 0] = 1
    scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
    assert gpu_msm(gpu_engine, G1, bases, scalars) == reference(G1, bases, scalars)


@pytest.mark.gpu
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_gpu_streamed_bases_match_resident(group, gpu_engine):
    import cupy

    from cuzk.backends.cuda.msm import MsmEngine

    rng = np.random.default_rng(52)
    n = 2500
    bases = to_array(group, random_points(group, n, rng))
    scalars = fr_random(n - 7, rng)
    scalars[:100] = fr_to_array([1] * 100)
    streamed = MsmEngine(gpu_engine.ctx, stream_chunk=1000)
    h = streamed.prepare_g1(bases) if group is G1 else streamed.prepare_g2(bases)
    assert not h.resident and h.chunk == 1000
    want = reference(group, bases[: n - 7], scalars)
    msm = streamed.msm_g1 if group is G1 else streamed.msm_g2
    assert msm(h, scalars) == want
    assert msm(h, cupy.asarray(scalars)) == want  # scalars already on the device
    h.close()


@pytest.mark.gpu
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_gpu_msm_many_streamed_matches_resident(group, gpu_engine):
    """Several scalar sets in one pass over pinned bases (chunks of 2^16, the
    sets' lengths not multiples of it, host and device scalars, one shorter
    than a chunk, one empty) give each set's MSM over resident bases."""
    import cupy

    from cuzk.backends.cuda.msm import MsmEngine, streamed_msm_bytes
    from cuzk.bench.inputs import make_bases, random_scalars_device

    name = "G1" if group is G1 else "G2"
    spec = G1_SPEC if group is G1 else G2_SPEC
    n, chunk = (300_000, 1 << 16) if group is G1 else (200_000, 1 << 15)
    bases = make_bases(gpu_engine, name, n, seed=60)
    prepare = "prepare_g1" if group is G1 else "prepare_g2"
    resident = getattr(gpu_engine, prepare)(bases, resident=True)
    streamer = MsmEngine(gpu_engine.ctx, stream_chunk=chunk)
    streamed = getattr(streamer, prepare)(bases, resident=False)
    assert resident.resident and not streamed.resident and streamed.chunk == chunk
    assert streamed.pinned_bytes == n * spec.affine_bytes and streamed.device_bytes == 0
    bits = cupy.zeros((n - 12_345, 4), dtype=cupy.uint64)
    rand = cupy.random.RandomState(61).randint(0, 2, size=n - 12_345, dtype=np.int64)
    bits[:, 0] = rand.astype(cupy.uint64)
    sets = [
        random_scalars_device(n, seed=62),
        random_scalars_device(n - 70_001, seed=63).get(),  # from the host, a chunk at a time
        bits,
        random_scalars_device(4099, seed=64),
        cupy.zeros((0, 4), dtype=cupy.uint64),
    ]
    budget = gpu_engine.ctx.budget
    before = budget.reserved_bytes
    timings: dict = {}
    got = streamer.msm_many(streamed, sets, timings)
    assert budget.reserved_bytes == before
    assert budget.peak_by_operation[f"msm_{name.lower()} streamed"] <= streamed_msm_bytes(
        spec, chunk, len(sets), on_host=True
    )
    assert timings["arithmetic"] > 0 and timings["upload_wait"] >= 0
    assert got == gpu_engine.msm_many(resident, sets)
    msm = gpu_engine.msm_g1 if group is G1 else gpu_engine.msm_g2
    assert got[0] == msm(resident, sets[0]) and got[4] is None
    assert got[3] == reference(group, bases[:4099].get(), sets[3].get())
    resident.close()
    streamed.close()


@pytest.mark.gpu
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_gpu_fixed_base_matches_arkworks(group, gpu_engine):
    rng = np.random.default_rng(53)
    point = random_points(group, 1, rng)[0]
    values = [0, 1, R - 1, R] + [int.from_bytes(rng.bytes(32), "little") % R for _ in range(300)]
    scalars = np.frombuffer(b"".join(v.to_bytes(32, "little") for v in values), dtype="<u8")
    scalars = scalars.reshape(-1, 4).copy()
    fb = gpu_engine.fixed_base_g1 if group is G1 else gpu_engine.fixed_base_g2
    mul = pairing.g1_mul if group is G1 else pairing.g2_mul
    assert np.array_equal(fb(point, scalars), to_array(group, [mul(point, v % R) for v in values]))


@pytest.mark.gpu
def test_gpu_budget_is_released(gpu_engine):
    budget = gpu_engine.ctx.budget
    before = budget.reserved_bytes
    rng = np.random.default_rng(54)
    bases = to_array(G1, random_points(G1, 64, rng))
    h = gpu_engine.prepare_g1(bases)
    assert budget.reserved_bytes == before + 64 * 96
    gpu_engine.msm_g1(h, fr_random(64, rng))
    assert budget.reserved_bytes == before + 64 * 96
    h.close()
    assert budget.reserved_bytes == before


@pytest.mark.gpu
@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_gpu_affine_rounds_match_cpu(group, gpu_engine):
    """Version 2's batched-affine rounds forced at small n, on the device."""
    from cuzk.backends.cuda.msm import MsmEngine

    rng = np.random.default_rng(55)
    bases, scalars = edge_case_inputs(group, rng)
    want = reference(group, bases, scalars)
    forced = MsmEngine(gpu_engine.ctx, Tuning(affine_min_batch=3, group_windows=2, **AFFINE))
    assert gpu_msm(forced, group, bases, scalars) == want
    n = 4099
    bases = to_array(group, random_points(group, n, rng))
    scalars = fr_random(n, rng)
    scalars[: n // 4] = fr_to_array([1] * (n // 4))
    want = reference(group, bases, scalars)
    for pts in (False, True):
        tuning = Tuning(affine_min_pairs=64, affine_min_batch=5, sort_points=pts)
        assert gpu_msm(MsmEngine(gpu_engine.ctx, tuning), group, bases, scalars) == want


@pytest.mark.gpu
def test_gpu_version_2_matches_version_1_at_scale(gpu_engine):
    """2^20 points, a quarter of the scalars 1: the default pipeline (affine
    rounds, window groups) and version 1 (XYZZ) give the same point."""
    from cuzk.backends.cuda.msm import MsmEngine
    from cuzk.bench.inputs import make_bases, random_scalars_device

    n = 1 << 20
    bases = make_bases(gpu_engine, "G1", n, seed=56)
    scalars = random_scalars_device(n, seed=57)
    scalars[: n // 4] = 0
    scalars[: n // 4, 0] = 1
    ctx = gpu_engine.ctx
    v1 = MsmEngine(ctx, Tuning(method="xyzz"))
    v2 = MsmEngine(ctx, Tuning(affine_min_pairs=1 << 16, group_windows=5))
    h = v2.prepare_g1(bases)
    want = v1.msm_g1(h, scalars)
    assert gpu_engine.msm_g1(h, scalars) == want
    assert v2.msm_g1(h, scalars) == want
    pts = MsmEngine(ctx, Tuning(affine_min_pairs=1 << 16, group_windows=4, sort_points=True))
    assert pts.msm_g1(h, scalars) == want
    h.close()


def test_workspace_fits_the_free_memory():
    from cuzk.backends.cuda.msm import fit_tuning, group_windows, workspace_bytes

    n = 1 << 24
    full = workspace_bytes(G1_SPEC, n, tuning=Tuning())
    assert fit_tuning(G1_SPEC, n, Tuning(), full) == Tuning()
    # Less memory: a lower cap, more window groups, still the affine method.
    tight = fit_tuning(G1_SPEC, n, Tuning(), full // 2)
    assert tight.method == "affine" and workspace_bytes(G1_SPEC, n, tuning=tight) <= full // 2
    c = choose_window(n, G1_SPEC)
    assert group_windows(G1_SPEC, n, c, tight) < group_windows(G1_SPEC, n, c, Tuning())
    # Far less: the XYZZ method, whose workspace is smallest.
    least = fit_tuning(G1_SPEC, n, Tuning(), 1 << 30)
    assert least.method == "xyzz"
    # Groups are of nearly equal size: the last short by less than their count.
    nw = num_windows(c)
    for cap in (2 << 30, 5 << 30, 9 << 30):
        g = group_windows(G1_SPEC, n, c, Tuning(workspace_cap=cap))
        groups = -(-nw // g)
        last = nw - (groups - 1) * g
        assert groups > 1 and last > 0 and g - last < groups


class _LiveBytes:
    """numpy as the MSM pipeline's array module, counting the bytes of the arrays
    it allocates while they live (the twin's stand-in for device memory)."""

    def __init__(self) -> None:
        self.live = self.peak = 0

    def _track(self, a):
        if isinstance(a, np.ndarray) and a.base is None and a.nbytes:
            self.live += a.nbytes
            self.peak = max(self.peak, self.live)
            weakref.finalize(a, self._free, a.nbytes)
        return a

    def _free(self, nbytes: int) -> None:
        self.live -= nbytes

    def __getattr__(self, name: str):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn
        return lambda *a, **k: self._track(fn(*a, **k))


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
@pytest.mark.parametrize(
    "n, tuning",
    [
        (700, Tuning(window=5, affine_min_batch=3, **AFFINE)),
        (700, Tuning(window=6, affine_min_batch=2, group_windows=3, **AFFINE)),
        (700, Tuning(window=4, method="xyzz")),
        (520, Tuning(affine_min_pairs=1, affine_threads=64)),  # the ones as one bucket
        (700, Tuning(window=5, affine_min_batch=3, sort_points=True, **AFFINE)),
        (700, Tuning(window=6, affine_min_batch=2, group_windows=3, sort_points=True, **AFFINE)),
        (700, Tuning(window=4, method="xyzz", sort_points=True)),
    ],
    ids=["affine-c5", "affine-c6-g3", "xyzz-c4", "ones", "pts-c5", "pts-c6-g3", "pts-xyzz-c4"],
)
def test_workspace_bounds_what_the_pipeline_allocates(group, n, tuning, host_kernels):
    """workspace_bytes is what the engine reserves for an MSM (and, through
    CudaBackend.prove_device_bytes, what a partition's reservation counts):
    the arrays the pipeline allocates never exceed it at any moment."""
    from cuzk.backends.cuda.msm import workspace_bytes

    spec = G1_SPEC if group is G1 else G2_SPEC
    rng = np.random.default_rng(n)
    bases = to_array(group, random_points(group, 8, rng) * (n // 8 + 1))[:n]
    if n == 520:  # mostly zeros and ones, a few full scalars
        values = [int(v) for v in rng.integers(0, 2, size=n)]
        values[::50] = [int(x) for x in rng.integers(2, 2**62, size=len(values[::50]))]
    else:
        values = [int(x) % R for x in rng.integers(0, 2**63, size=n)]
    scalars = fr_to_array(values)
    k = host_kernels("msm.cu", spec.defines)
    words = np.ascontiguousarray(bases).view(np.uint32).reshape(-1).copy()
    k.launch("to_montgomery", len(words) // 12, (words, np.uint64(len(words) // 12)))
    xp = _LiveBytes()
    planned = []

    def plan(n_ones, n_full):  # the engine's hook: the counts, then its reservation
        planned.append((n_ones, n_full))
        return tuning, contextlib.nullcontext()

    out = msm_xyzz(xp, k, spec, words, np.ascontiguousarray(scalars), tuning, plan=plan)
    assert xyzz_to_affine(out, spec) == reference(group, bases, scalars)
    assert 0 < xp.peak <= workspace_bytes(spec, n, scalars_on_host=False, tuning=tuning)
    ones = sum(1 for v in values if v % R == 1)
    full = sum(1 for v in values if v % R > 1)
    assert planned == [(ones, full)]
    # the bound of the counts the classification found holds as well
    assert xp.peak <= workspace_bytes(spec, n, False, tuning, counts=(ones, full))
    if n == 520:  # mostly zeros and ones: far less than the bound of any 520 scalars
        assert workspace_bytes(spec, n, False, tuning, (ones, full)) < workspace_bytes(
            spec, n, False, tuning
        )


def test_a_partition_reservation_covers_its_largest_msm():
    from cuzk.backends.base import proof_working_bytes
    from cuzk.backends.cuda.backend import CudaBackend
    from cuzk.backends.cuda.msm import workspace_bytes

    # 2KiB PoRep's shape: the MSM step is the larger (the G2 MSM's workspace)
    nc, nv = 2_687_961, 2_685_713
    m = 1 << 22
    need = CudaBackend.prove_device_bytes(nc, nv)
    for spec, n in ((G1_SPEC, m), (G1_SPEC, nv), (G2_SPEC, nv)):
        assert need >= 32 * (3 * nv + m) + workspace_bytes(spec, n, scalars_on_host=False)
    assert need > proof_working_bytes(nc, nv)
    # the side branch (L, A, B) beside H's steps, at its share (CudaBackend.fork)
    side = CudaBackend.side_workspace_bytes(m, nv)
    assert need >= 32 * (7 * m + 3 * nv) + side
    assert need >= 32 * (3 * nv + m) + workspace_bytes(G1_SPEC, m, scalars_on_host=False) + side
    # 32GiB PoRep's: the domain-sized vectors of H's step and the side's share
    nc, nv, m = 130_278_869, 130_170_271, 1 << 27
    side = CudaBackend.side_workspace_bytes(m, nv)
    assert side == 64 * m
    need = CudaBackend.prove_device_bytes(nc, nv)
    assert need == 32 * (7 * m + 3 * nv) + side + (64 << 20) > proof_working_bytes(nc, nv)


def test_the_points_sort_is_chosen_where_it_was_measured_faster():
    """G1 from 2^24 full scalars, with as few window groups at twice the cap
    and room for its workspace; never in G2, never inside a reservation
    (room None), never below 2^24, and never over an explicit choice."""
    from cuzk.backends.cuda.msm import choose_sort, group_windows, workspace_bytes

    G = 1 << 30
    for lg in (24, 26, 27):
        n = 1 << lg
        t = choose_sort(G1_SPEC, n, Tuning(), 110 * G, False)
        assert t.sort_points is True and t.workspace_cap == 2 * Tuning().workspace_cap
        c = choose_window(n, G1_SPEC)
        nw = num_windows(c)
        index = dataclasses.replace(Tuning(), sort_points=False)
        assert -(-nw // group_windows(G1_SPEC, n, c, t)) <= -(
            -nw // group_windows(G1_SPEC, n, c, index)
        )
        assert workspace_bytes(G1_SPEC, n, False, t) <= 110 * G
    n = 1 << 26
    need = workspace_bytes(G1_SPEC, n, False, choose_sort(G1_SPEC, n, Tuning(), 110 * G, False))
    assert choose_sort(G1_SPEC, n, Tuning(), need - 1, False).sort_points is False  # no room
    assert choose_sort(G1_SPEC, n, Tuning(), None, False).sort_points is False  # a reservation
    assert choose_sort(G2_SPEC, n, Tuning(), 110 * G, False).sort_points is False
    assert choose_sort(G1_SPEC, 1 << 22, Tuning(), 110 * G, False).sort_points is False
    # mostly bits: the full scalars decide
    assert choose_sort(G1_SPEC, n, Tuning(), 110 * G, False, (n // 2, n // 64)).sort_points is False
    assert choose_sort(G1_SPEC, n, Tuning(sort_points=False), 110 * G, False).sort_points is False
    assert choose_sort(G1_SPEC, 1 << 20, Tuning(sort_points=True), None, False).sort_points is True
    # the XYZZ method has no affine list to sort points into
    assert choose_sort(G1_SPEC, n, Tuning(method="xyzz"), 110 * G, False).sort_points is False
