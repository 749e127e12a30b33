"""Loading key points from their file encoding: the CUDA engine's ``load_zcash``
path (on the kernels' CPU twin, and on the GPU) against the CPU backend's.

Both backends take the same stream (uncompressed zcash points, as a
bellperson .params file holds them), keep the same Montgomery words, find
the same first bad point, and make bases that give the same MSMs as the
arrays path (``prepare_g1``).
"""

from __future__ import annotations

import importlib.util
import weakref

import numpy as np
import pytest
import twin_cupy
from test_msm import random_points, reference, to_array

from cuzk.algebra.arrays import fr_random, to_zcash
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import Q
from cuzk.backends.cpu import CpuBackend
from cuzk.errors import BadPoint, EncodingError, InputError

GROUPS = [pytest.param(G1, id="G1"), pytest.param(G2, id="G2")]


def _name(group) -> str:
    return "G1" if group is G1 else "G2"


def stream(group, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n random points as limbs and as their (n, size) zcash encoding."""
    limbs = to_array(group, random_points(group, n, np.random.default_rng(seed)))
    return limbs, to_zcash(limbs, _name(group))


def reader(raw: np.ndarray, calls: list | None = None):
    def read(lo: int, hi: int, out: np.ndarray) -> None:
        if calls is not None:
            calls.append((lo, hi))
        out[...] = raw[lo:hi]

    return read


def load(backend, group, raw: np.ndarray, progress=None):
    fn = backend.load_g1 if group is G1 else backend.load_g2
    return fn(len(raw), reader(raw), progress)


def corrupt(raw: np.ndarray, index: int, how: str) -> np.ndarray:
    bad = raw.copy()
    if how == "flip":  # one bit of y: off the curve
        bad[index, -1] ^= 1
    elif how == "infinity":
        bad[index, 0] |= 0x40
    elif how == "range":  # x = q + (x mod small): not below q
        size = bad.shape[1]
        x = (int.from_bytes(bad[index, :48].tobytes(), "big") & ((1 << 381) - 1)) % 1000 + Q
        bad[index, :48] = np.frombuffer(x.to_bytes(48, "big"), np.uint8)
        assert size in (96, 192)
    return bad


EXPECTED_REASON = {
    "flip": EncodingError.OFF_CURVE,
    "infinity": EncodingError.FLAGS,
    "range": EncodingError.NON_CANONICAL,
}


# --- the CPU backend --------------------------------------------------------------


@pytest.mark.parametrize("group", GROUPS)
def test_cpu_load_matches_prepare(group, monkeypatch):
    import cuzk.backends.cpu as cpu

    monkeypatch.setattr(cpu, "LOAD_CHUNK", 7)  # several chunks and a short last one
    limbs, raw = stream(group, 30, seed=1)
    be = CpuBackend()
    done: list[int] = []
    loaded = load(be, group, raw, done.append)
    prepared = be.prepare_g1(limbs) if group is G1 else be.prepare_g2(limbs)
    assert np.array_equal(loaded.native, prepared.native)
    assert done == [7, 14, 21, 28, 30]


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("how", ["flip", "infinity", "range"])
def test_cpu_load_names_the_first_bad_point(group, how, monkeypatch):
    import cuzk.backends.cpu as cpu

    monkeypatch.setattr(cpu, "LOAD_CHUNK", 8)
    _, raw = stream(group, 20, seed=2)
    with pytest.raises(BadPoint) as e:
        load(CpuBackend(), group, corrupt(raw, 13, how))
    assert (e.value.index, e.value.reason) == (13, EXPECTED_REASON[how])


def test_cpu_python_twin_checks_points_too():
    _, raw = stream(G1, 5, seed=3)
    be = CpuBackend(native=False)
    loaded = load(be, G1, raw)
    assert len(loaded) == 5
    with pytest.raises(BadPoint) as e:
        load(be, G1, corrupt(raw, 4, "flip"))
    assert e.value.index == 4


# --- the CUDA engine on the kernels' CPU twin ----------------------------------------


@pytest.fixture
def twin_engine(monkeypatch, host_kernels):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("the real CuPy is installed: the GPU tests below cover the engine")
    twin_cupy.install(monkeypatch)
    from cuzk.backends.cuda.msm import MsmEngine

    ctx = twin_cupy.TwinContext(host_kernels)
    return lambda **kw: MsmEngine(ctx, **kw)


@pytest.mark.parametrize("group", GROUPS)
def test_twin_load_keeps_the_cpu_backends_words(group, twin_engine):
    _, raw = stream(group, 23, seed=4)
    engine = twin_engine(load_chunk=5)
    done: list[int] = []
    h = load(engine, group, raw, done.append)
    want = load(CpuBackend(), group, raw).native
    assert h.resident
    assert np.array_equal(np.asarray(h.device).view("<u8").reshape(want.shape), want)
    assert done == [5, 10, 15, 20, 23]
    assert engine.ctx.budget.reserved_bytes == h.n * (96 if group is G1 else 192)
    h.close()
    assert engine.ctx.budget.reserved_bytes == 0


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("how", ["flip", "infinity", "range"])
def test_twin_load_names_the_first_bad_point(group, how, twin_engine):
    _, raw = stream(group, 12, seed=5)
    engine = twin_engine(load_chunk=4)
    with pytest.raises(BadPoint) as e:
        load(engine, group, corrupt(raw, 9, how))
    assert (e.value.index, e.value.reason) == (9, EXPECTED_REASON[how])
    assert engine.ctx.budget.reserved_bytes == 0  # nothing of the failed load stays


def test_twin_msm_many_refuses_bases_of_the_other_group(twin_engine):
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC

    limbs, raw = stream(G1, 20, seed=16)
    engine = twin_engine(load_chunk=8)
    h = load(engine, G1, raw)
    scalars = fr_random(20, np.random.default_rng(17))
    with pytest.raises(InputError, match="G2 MSM: bases: prepared for G1"):
        engine.msm_many(h, [scalars], spec=G2_SPEC)
    assert engine.msm_many(h, [scalars], spec=G1_SPEC) == [reference(G1, limbs, scalars)]


def test_twin_loaded_bases_give_the_msm_streamed_or_resident(twin_engine):
    limbs, raw = stream(G1, 40, seed=6)
    scalars = fr_random(37, np.random.default_rng(7))
    want = reference(G1, limbs[:37], scalars)
    resident = twin_engine(load_chunk=16)
    h = load(resident, G1, raw)
    assert resident.msm_g1(h, scalars) == want
    streamed = twin_engine(load_chunk=16, stream_chunk=10)
    s = load(streamed, G1, raw)
    assert not s.resident and s.pinned_montgomery
    assert streamed.msm_g1(s, scalars) == want


# --- on the GPU ---------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("group", GROUPS)
def test_gpu_load_matches_cpu_and_msm(group):
    from cuzk.backends.cuda.memory import DeviceContext
    from cuzk.backends.cuda.msm import MsmEngine

    _, raw = stream(group, 3000, seed=8)
    engine = MsmEngine(DeviceContext(), load_chunk=1000)
    h = load(engine, group, raw)
    want = load(CpuBackend(), group, raw).native
    assert np.array_equal(h.device.get().view("<u8").reshape(want.shape), want)
    scalars = fr_random(2999, np.random.default_rng(9))
    msm = engine.msm_g1 if group is G1 else engine.msm_g2
    cpu = CpuBackend()
    cpu_bases = load(cpu, group, raw)
    cpu_msm = cpu.msm_g1 if group is G1 else cpu.msm_g2
    assert msm(h, scalars) == cpu_msm(cpu_bases, scalars)
    for how in ("flip", "infinity", "range"):
        with pytest.raises(BadPoint) as e:
            load(engine, group, corrupt(raw, 2001, how))
        assert (e.value.index, e.value.reason) == (2001, EXPECTED_REASON[how])
    h.close()


# --- MSMs of several scalar sets in one pass over streamed bases (CPU twin) ----------


def scalar_sets(n: int, lengths: list[int], seed: int) -> list[np.ndarray]:
    """Random scalars of the given lengths, with runs of ones and zeros (the bitmap path)."""
    rng = np.random.default_rng(seed)
    out = []
    for m in lengths:
        s = fr_random(m, rng)
        s[: m // 5] = 0
        s[: m // 5, 0] = rng.integers(0, 2, size=m // 5)
        out.append(s)
    return out


def count_uploads(handle) -> list:
    """The slices of the pinned bases read from now on (one per uploaded chunk)."""
    seen: list = []

    class Counting(np.ndarray):
        def __getitem__(self, key):
            seen.append(key)
            return np.asarray(self)[key]

    handle.pinned = handle.pinned.view(Counting)
    return seen


def record_reservations(budget) -> list[tuple[int, str]]:
    """(bytes, what) of every reservation the budget (a test's own) is asked for from now on."""
    held: list[tuple[int, str]] = []
    acquire = budget.acquire

    def recording(nbytes: int, what: str, wait: bool = False):
        held.append((nbytes, what))
        return acquire(nbytes, what, wait)

    budget.acquire = recording
    return held


def _prepare(engine, group, limbs, resident=None):
    fn = engine.prepare_g1 if group is G1 else engine.prepare_g2
    return fn(limbs, resident=resident)


def _device(s: np.ndarray):
    return s.view(twin_cupy.DevArray)  # the twin's device array


# (group, bases, lengths of the sets): full, not a multiple of any chunk,
# shorter than one chunk, empty; and chunk sizes from many chunks to one.
MANY_CASES = [
    pytest.param(G1, 70, [70, 57, 5, 0, 33], (7, 16, 64), id="G1"),
    pytest.param(G2, 30, [30, 23, 3, 0], (4, 11, 64), id="G2"),
]


@pytest.mark.parametrize("group, n, lengths, chunks", MANY_CASES)
def test_twin_msm_many_streamed_matches_resident_and_cpu(group, n, lengths, chunks, twin_engine):
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC, streamed_msm_bytes

    spec = G1_SPEC if group is G1 else G2_SPEC
    limbs, _ = stream(group, n, seed=20)
    sets = scalar_sets(n, lengths, seed=21)
    want = [reference(group, limbs[: len(s)], s) for s in sets]
    resident = twin_engine()
    h = _prepare(resident, group, limbs)
    assert h.resident
    assert resident.msm_many(h, sets) == want
    msm = resident.msm_g1 if group is G1 else resident.msm_g2
    assert [msm(h, s) for s in sets] == want
    h.close()
    # host and device scalars mixed; then all on the device
    mixed = [s if j % 2 else _device(s) for j, s in enumerate(sets)]
    budget = resident.ctx.budget
    held = record_reservations(budget)
    for chunk in chunks:
        engine = twin_engine(stream_chunk=chunk)
        s = _prepare(engine, group, limbs)
        assert not s.resident and s.chunk == chunk and not s.pinned_montgomery
        before = budget.reserved_bytes
        held.clear()
        for scalars, on_host in ((mixed, True), ([_device(x) for x in sets], False)):
            uploads = count_uploads(s)
            timings: dict = {}
            assert engine.msm_many(s, scalars, timings) == want
            step = min(chunk, max(lengths))
            assert uploads == [slice(lo, min(lo + step, max(lengths))) for lo in range(0, n, step)]
            assert budget.reserved_bytes == before
            assert {"upload_wait", "arithmetic", "upload"} <= timings.keys()
            passes = [b for b, what in held if what.endswith("streamed")]
            assert len(passes) == 1  # one reservation for the pass: its chunk's memory
            # at the default tuning the pass holds exactly what a planner reserves for it
            assert passes[0] == streamed_msm_bytes(spec, step, len(sets), on_host=on_host)
            held.clear()
        s.close()


@pytest.mark.parametrize("group", GROUPS)
def test_twin_msm_many_streams_loaded_bases_under_a_tight_budget(group, twin_engine):
    """Bases loaded into pinned memory (Montgomery words already); a budget too
    small for the default tuning: the pass cuts its tuning down, reserves less
    than the planner's figure, and still gives every set's sum."""
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC, Tuning, streamed_msm_bytes
    from cuzk.backends.cuda.msm.plan import _least

    spec = G1_SPEC if group is G1 else G2_SPEC
    n, chunk = (48, 10) if group is G1 else (20, 6)
    limbs, raw = stream(group, n, seed=22)
    lengths = [n, n - 3, 1, 0]
    sets = scalar_sets(n, lengths, seed=23)
    want = [reference(group, limbs[: len(x)], x) for x in sets]
    engine = twin_engine(load_chunk=7, stream_chunk=chunk)
    budget = engine.ctx.budget
    fn = engine.load_g1 if group is G1 else engine.load_g2
    h = fn(n, reader(raw), resident=False)
    assert not h.resident and h.pinned_montgomery and h.device_bytes == 0
    full = streamed_msm_bytes(spec, chunk, len(sets), on_host=True)
    least = streamed_msm_bytes(spec, chunk, len(sets), _least(Tuning()), on_host=True)
    assert least < full
    budget.limit_bytes = (least + full) // 2
    held = record_reservations(budget)
    uploads = count_uploads(h)
    assert engine.msm_many(h, sets) == want
    assert len(uploads) == -(-n // chunk)
    passes = [b for b, what in held if what.endswith("streamed")]
    assert len(passes) == 1 and least <= passes[0] <= budget.limit_bytes < full
    assert budget.reserved_bytes == 0
    # the one-set MSM is the same pass
    msm = engine.msm_g1 if group is G1 else engine.msm_g2
    uploads.clear()
    assert msm(h, sets[1]) == want[1]
    assert len(uploads) == -(-(n - 3) // chunk)
    assert engine.msm_many(h, []) == []
    assert engine.msm_many(h, [sets[3], sets[3]]) == [None, None]  # nothing to stream
    h.close()


class DeviceBytes:
    """The twin's device memory in use: the bytes of the arrays its CuPy
    stand-in makes (``empty``, ``zeros``, …), while they live; arrays made
    before (``known``) and arithmetic on arrays are not counted."""

    MAKERS = ("empty", "zeros", "full", "array", "asarray", "ascontiguousarray")
    MAKERS += ("cumsum", "concatenate", "stack", "flatnonzero", "take")

    def __init__(self, cp, monkeypatch, known=()) -> None:
        self.live = self.peak = 0
        self.seen = {id(self._owner(a)) for a in known}
        for name in self.MAKERS:
            monkeypatch.setattr(cp, name, self._tracking(getattr(cp, name)))

    @staticmethod
    def _owner(a):
        while isinstance(a.base, np.ndarray):
            a = a.base
        return a

    def _tracking(self, fn):
        def made(*args, **kwargs):
            out = fn(*args, **kwargs)
            owner = self._owner(out) if isinstance(out, np.ndarray) else None
            if owner is not None and id(owner) not in self.seen and owner.nbytes:
                self.seen.add(id(owner))
                self.live += owner.nbytes
                self.peak = max(self.peak, self.live)
                weakref.finalize(owner, self._free, id(owner), owner.nbytes)
            return out

        return made

    def _free(self, key: int, nbytes: int) -> None:
        self.seen.discard(key)
        self.live -= nbytes


@pytest.mark.parametrize("group", GROUPS)
def test_twin_pass_allocates_within_its_reservation(group, twin_engine, monkeypatch):
    """What a pass over streamed bases allocates (staging, the chunk MSMs,
    the sets' sums) never exceeds what it reserved."""
    import sys

    n, chunk = (64, 9) if group is G1 else (24, 5)
    limbs, _ = stream(group, n, seed=26)
    sets = [_device(x) for x in scalar_sets(n, [n, n - 4, 2, 0, n], seed=27)]
    engine = twin_engine(stream_chunk=chunk)
    h = _prepare(engine, group, limbs)
    held = record_reservations(engine.ctx.budget)
    live = DeviceBytes(sys.modules["cupy"], monkeypatch, known=sets)
    want = [reference(group, limbs[: len(x)], x) for x in sets]
    assert engine.msm_many(h, sets) == want
    (need,) = [b for b, what in held if what.endswith("streamed")]
    assert 2 * chunk * (96 if group is G1 else 192) < live.peak <= need
    h.close()


# (group, bases, lengths of the gathered sets, chunk): the values several
# times longer than the bases, sets full, partial, of one row and empty.
GATHER_CASES = [
    pytest.param(G1, 40, [40, 27, 1, 0], 9, id="G1"),
    pytest.param(G2, 18, [18, 11, 0], 5, id="G2"),
]


@pytest.mark.parametrize("group, n, lengths, chunk", GATHER_CASES)
def test_twin_gathered_sets_are_their_gathered_arrays(
    group, n, lengths, chunk, twin_engine, monkeypatch
):
    """A Gathered set (an assignment's rows by a query's index) gives the MSM of
    the gathered array bit for bit: beside resident bases gathered whole, one
    set at a time; beside streamed ones a chunk's rows at a time (one take of
    the index's slice a chunk, never the whole set), within the pass's
    reservation for scalars made a chunk at a time; host values too."""
    import sys

    from cuzk.backends.base import Gathered
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC, streamed_msm_bytes

    spec = G1_SPEC if group is G1 else G2_SPEC
    limbs, _ = stream(group, n, seed=30)
    rng = np.random.default_rng(31)
    (values,) = scalar_sets(3 * n, [3 * n], seed=32)
    indexes = [rng.permutation(3 * n)[:m].astype(np.int32) for m in lengths]
    plain = [values[idx] for idx in indexes]
    want = [reference(group, limbs[: len(x)], x) for x in plain]
    dev_values = _device(values)
    sets = [Gathered(dev_values, _device(idx)) for idx in indexes]
    cp = sys.modules["cupy"]
    takes: list[int] = []
    take = cp.take

    def counting(a, idx, axis=None):
        takes.append(len(idx))
        return take(a, idx, axis=axis)

    monkeypatch.setattr(cp, "take", counting)
    resident = twin_engine()
    h = _prepare(resident, group, limbs)
    assert h.resident
    assert resident.msm_many(h, sets) == want == resident.msm_many(h, plain)
    assert takes == [m for m in lengths]  # each set gathered whole, once
    h.close()

    engine = twin_engine(stream_chunk=chunk)
    s = _prepare(engine, group, limbs)
    assert not s.resident
    held = record_reservations(engine.ctx.budget)
    live = DeviceBytes(cp, monkeypatch, known=[dev_values, *(x.index for x in sets)])
    takes.clear()
    timings: dict = {}
    assert engine.msm_many(s, sets, timings) == want
    assert takes == [
        min(chunk, m - lo) for lo in range(0, n, chunk) for m in lengths if m > lo
    ]  # chunk by chunk, each set's rows of the chunk
    assert max(takes) <= chunk < max(lengths) and "gather" in timings
    (need,) = [b for b, what in held if what.endswith("streamed")]
    assert need == streamed_msm_bytes(spec, chunk, len(sets), on_host=True)
    assert live.peak <= need
    # values on the host: taken there, uploaded a chunk at a time
    host_sets = [Gathered(values, idx) for idx in indexes]
    assert engine.msm_many(s, host_sets) == want
    s.close()


@pytest.mark.parametrize("group", GROUPS)
def test_twin_residency_is_the_callers_choice(group, twin_engine):
    from cuzk.errors import ResourceError

    n = 12
    psize = 96 if group is G1 else 192
    limbs, raw = stream(group, n, seed=24)
    scalars = fr_random(n, np.random.default_rng(25))
    want = reference(group, limbs, scalars)
    engine = twin_engine()
    budget = engine.ctx.budget
    load_fn = engine.load_g1 if group is G1 else engine.load_g2
    msm = engine.msm_g1 if group is G1 else engine.msm_g2
    # False: pinned though the bases fit the budget
    for make in (
        lambda: _prepare(engine, group, limbs, False),
        lambda: load_fn(n, reader(raw), resident=False),
    ):
        h = make()
        assert not h.resident and h.pinned_bytes == n * psize and h.device_bytes == 0
        assert budget.reserved_bytes == 0
        assert msm(h, scalars) == want
        h.close()
        assert h.pinned_bytes == 0
    # True: resident though the engine would stream them
    streaming = twin_engine(stream_chunk=5)
    for make in (
        lambda: _prepare(streaming, group, limbs, True),
        lambda: (streaming.load_g1 if group is G1 else streaming.load_g2)(
            n, reader(raw), resident=True
        ),
    ):
        h = make()
        assert h.resident and h.device_bytes == n * psize and h.pinned_bytes == 0
        assert budget.reserved_bytes == n * psize
        assert (streaming.msm_g1 if group is G1 else streaming.msm_g2)(h, scalars) == want
        h.close()
        assert budget.reserved_bytes == 0 and h.device_bytes == 0
    # True where they do not fit: refused up front, naming the bases and their bytes
    budget.limit_bytes = n * psize - 1
    calls: list = []
    for make in (
        lambda: _prepare(engine, group, limbs, True),
        lambda: load_fn(n, reader(raw, calls), resident=True),
    ):
        with pytest.raises(ResourceError) as e:
            make()
        assert f"{_name(group)} bases" in str(e.value) and f"{n * psize:,} bytes" in str(e.value)
        assert budget.reserved_bytes == 0
    assert calls == []  # nothing was read of the file
    # None: by the free budget, streamed here
    h = _prepare(engine, group, limbs)
    assert not h.resident
    h.close()


def test_stream_chunks_are_bounded_and_fit_the_room():
    from types import SimpleNamespace

    from cuzk.backends.cuda.memory import DeviceBudget
    from cuzk.backends.cuda.msm import (
        G1_SPEC,
        G2_SPEC,
        STREAM_CHUNK_BYTES,
        STREAM_CHUNK_MAX,
        Tuning,
        fit_chunk,
        fit_tuning,
        streamed_msm_bytes,
        workspace_bytes,
    )
    from cuzk.backends.cuda.msm.bases import _pass_fixed_bytes
    from cuzk.backends.cuda.msm.plan import _least, entries_per_group

    assert STREAM_CHUNK_BYTES == 1536 << 20
    assert STREAM_CHUNK_MAX == {"G1": 1 << 24, "G2": 1 << 23}
    for spec in (G1_SPEC, G2_SPEC):
        c = STREAM_CHUNK_MAX[spec.name]
        work = workspace_bytes(spec, c, False, Tuning())
        fixed = 2 * c * spec.affine_bytes + 2 * 10 * spec.xyzz_bytes
        assert streamed_msm_bytes(spec, c, sets=10) == fixed + work
        assert streamed_msm_bytes(spec, c, 10, on_host=True) > streamed_msm_bytes(spec, c, 10)
        tuned = Tuning(window=8)
        assert streamed_msm_bytes(spec, c, 1, tuned) - streamed_msm_bytes(spec, c) == (
            workspace_bytes(spec, c, False, tuned) - work
        )
    engine = SimpleNamespace(ctx=SimpleNamespace(budget=DeviceBudget(0, 1 << 40)), tuning=Tuning())
    assert fit_chunk(engine, G1_SPEC, 1 << 27) == 1 << 24  # the cap, not the whole key
    assert fit_chunk(engine, G2_SPEC, 1 << 27) == 1 << 23
    assert fit_chunk(engine, G1_SPEC, 3000) == 3000  # small bases: one chunk
    room = 2 << 30
    chunk = fit_chunk(engine, G1_SPEC, 1 << 27, room=room)
    # the largest chunk whose pass fits at one window a group (the affine
    # method's least), or half / a quarter of it when that one's MSM is cut
    # down to one-window groups and the smaller one's sums several
    one = Tuning(group_windows=1)
    top = 1 << 24
    while streamed_msm_bytes(G1_SPEC, top, 1, one, on_host=True) > room:
        top //= 2
    assert streamed_msm_bytes(G1_SPEC, 2 * top, 1, _least(Tuning()), on_host=True) <= room
    assert chunk in (top, top // 2, top // 4) and chunk < 1 << 24

    def windows(c: int) -> int:
        t = fit_tuning(G1_SPEC, c, Tuning(), room - _pass_fixed_bytes(G1_SPEC, c, 1), quiet=True)
        return entries_per_group(G1_SPEC, c, t) // c if t.method == "affine" else 0

    assert streamed_msm_bytes(G1_SPEC, chunk, 1, one, on_host=True) <= room
    if chunk < top:
        assert windows(top) <= 1 < windows(chunk)
    engine.ctx.budget.limit_bytes = room  # the free budget is the default room
    assert fit_chunk(engine, G1_SPEC, 1 << 27) == chunk


def test_a_short_room_takes_a_smaller_chunk_in_wider_window_groups():
    """The case measured on the H200 (G1 2^26 over streamed bases, device
    scalars, 2026-12-04): in 3.2 GiB a chunk of 2^23 fits only one-window
    groups (101 ms per 2^22 points), one of 2^22 groups of three (83 ms)."""
    from types import SimpleNamespace

    from cuzk.backends.cuda.memory import DeviceBudget
    from cuzk.backends.cuda.msm import G1_SPEC, Tuning, fit_chunk

    engine = SimpleNamespace(ctx=SimpleNamespace(budget=DeviceBudget(0, 1 << 40)), tuning=Tuning())
    gib = 1 << 30
    assert fit_chunk(engine, G1_SPEC, 1 << 26, room=int(3.2 * gib), on_host=False) == 1 << 22
    assert fit_chunk(engine, G1_SPEC, 1 << 26, room=int(1.6 * gib), on_host=False) == 1 << 22
    # with room to spare the largest chunk stays
    assert fit_chunk(engine, G1_SPEC, 1 << 26, room=12 * gib, on_host=False) == 1 << 24
    assert fit_chunk(engine, G1_SPEC, 1 << 26, room=40 * gib, on_host=False) == 1 << 24


def test_a_pass_fits_its_chunk_with_what_it_holds_beside_in_the_room():
    """fit_chunk(beside=…): the pass's chunk fits the room with the bytes held
    beside one set's pass (a shared pass's other sets and its compact sets'
    expansion): in a room (a side branch's share) that holds a chunk of
    LEAN_CHUNK alone but not with a PoRep group's expansion beside it, a
    smaller chunk is taken instead of drawing beyond the room."""
    from types import SimpleNamespace

    from cuzk.backends.compact import expand_bytes
    from cuzk.backends.cuda.memory import DeviceBudget
    from cuzk.backends.cuda.model import LEAN_CHUNK
    from cuzk.backends.cuda.msm import G1_SPEC, Tuning, fit_chunk, streamed_msm_bytes
    from cuzk.backends.cuda.msm.bases import _pass_fixed_bytes

    engine = SimpleNamespace(ctx=SimpleNamespace(budget=DeviceBudget(0, 1 << 40)), tuning=Tuning())
    one = Tuning(group_windows=1)

    def alone(c: int) -> int:
        return streamed_msm_bytes(G1_SPEC, c, 1, one, on_host=True)

    def beside(c: int) -> int:  # ten partitions' B sets, 12 % full (the plan's 32GiB bound)
        more = _pass_fixed_bytes(G1_SPEC, c, 10) - _pass_fixed_bytes(G1_SPEC, c, 1)
        return more + expand_bytes(c, c * 12 // 100)

    room = alone(LEAN_CHUNK) + beside(LEAN_CHUNK) - (1 << 20)
    assert fit_chunk(engine, G1_SPEC, 1 << 27, room=room) == LEAN_CHUNK  # would overdraw
    chunk = fit_chunk(engine, G1_SPEC, 1 << 27, room=room, beside=beside)
    assert chunk < LEAN_CHUNK and alone(chunk) + beside(chunk) <= room
    # with room for both, the chunk stays
    roomy = alone(LEAN_CHUNK) + beside(LEAN_CHUNK)
    assert fit_chunk(engine, G1_SPEC, 1 << 27, room=roomy, beside=beside) == LEAN_CHUNK


# (group, bases, lengths of the compact sets, chunk): chunks that split the
# bitmaps' bytes (not multiples of 8), sets full, partial, of one entry,
# empty, all zeros and all ones.
COMPACT_CASES = [
    pytest.param(G1, 45, [45, 29, 1, 0, 45, 45], 11, id="G1"),
    pytest.param(G2, 19, [19, 13, 0, 19], 5, id="G2"),
]


def compact_sets(lengths: list[int], seed: int) -> list[np.ndarray]:
    """Dense sets with PoRep-like proportions of ones and full scalars; the
    fifth all zeros and the sixth all ones (G1), the fourth all ones (G2)."""
    rng = np.random.default_rng(seed)
    out = []
    for j, m in enumerate(lengths):
        u = rng.random(m)
        x = np.zeros((m, 4), dtype=np.uint64)
        x[u < 0.46, 0] = 1
        full = u > 0.9 - 0.05 * j
        x[full] = fr_random(int(full.sum()), rng)
        out.append(x)
    if len(out) == 6:
        out[4][:] = 0
        out[5][:] = 0
        out[5][:, 0] = 1
    else:
        out[3][:] = 0
        out[3][:, 0] = 1
    return out


@pytest.mark.parametrize("group, n, lengths, chunk", COMPACT_CASES)
def test_twin_compact_sets_are_their_dense_arrays(
    group, n, lengths, chunk, twin_engine, monkeypatch
):
    """A Compact set (zeros, ones and full values in host memory) gives the MSM
    of the dense array bit for bit: beside resident bases expanded whole;
    beside streamed ones a chunk at a time on the device (its bits and full
    values uploaded, never the dense set), within the pass's reservation for
    scalars made a chunk at a time plus the expansion's own bytes."""
    import sys

    from cuzk.backends.compact import classify, expand_bytes
    from cuzk.backends.cuda.msm import G1_SPEC, G2_SPEC, streamed_msm_bytes

    spec = G1_SPEC if group is G1 else G2_SPEC
    limbs, _ = stream(group, n, seed=40)
    plain = compact_sets(lengths, seed=41)
    want = [reference(group, limbs[: len(x)], x) for x in plain]
    sets = [classify(np, x, step=512) for x in plain]
    resident = twin_engine()
    h = _prepare(resident, group, limbs)
    assert resident.msm_many(h, sets) == want
    h.close()

    cp = sys.modules["cupy"]
    engine = twin_engine(stream_chunk=chunk)
    s = _prepare(engine, group, limbs)
    assert not s.resident
    held = record_reservations(engine.ctx.budget)
    live = DeviceBytes(cp, monkeypatch)
    monkeypatch.setattr(cp, "unpackbits", live._tracking(cp.unpackbits))
    uploads = count_uploads(s)
    timings: dict = {}
    assert engine.msm_many(s, sets, timings) == want
    assert len(uploads) == -(-n // chunk)  # one pass for every set
    assert "expand" in timings
    (need,) = [b for b, what in held if what.endswith("streamed")]
    most = max(x.most_full(chunk) for x in sets)
    plan = streamed_msm_bytes(spec, chunk, len(sets), on_host=True)
    assert need == plan + expand_bytes(chunk, most)
    assert 2 * chunk * spec.affine_bytes < live.peak <= need
    # beside dense and gathered sets in the same pass
    from cuzk.backends.base import Gathered

    rng = np.random.default_rng(42)
    idx = rng.permutation(n)[: n - 2]
    both = [sets[0], _device(plain[0]), Gathered(_device(plain[0]), _device(idx))]
    got = engine.msm_many(s, both)
    assert got == [want[0], want[0], reference(group, limbs[: n - 2], plain[0][idx])]
    s.close()


@pytest.mark.gpu
@pytest.mark.parametrize("group", GROUPS)
def test_gpu_compact_sets_over_streamed_and_resident_bases(group):
    """On the GPU: compact sets classified on the device (CudaBackend.compact,
    pinned host memory) give the CPU's MSMs of their dense arrays, in one pass
    over streamed bases with chunks that split the bitmaps' bytes, and beside
    resident bases."""
    from cuzk.backends.cuda import CudaBackend

    n = 5000 if group is G1 else 2000
    limbs, _ = stream(group, n, seed=43)
    plain = compact_sets([n, n - 7, 1, 0, n, n] if group is G1 else [n, 999, 0, n], seed=44)
    want = [reference(group, limbs[: len(x)], x) for x in plain]
    be = CudaBackend()
    sets = [be.compact(be.asarray(x)) for x in plain]
    assert all(np.array_equal(c.dense(), x) for c, x in zip(sets, plain, strict=True))
    many = be.msm_g1_many if group is G1 else be.msm_g2_many
    for resident in (True, False):
        engine = be._msm_engine()
        engine.stream_chunk = None if resident else 1237
        fn = be.prepare_g1 if group is G1 else be.prepare_g2
        h = fn(limbs, resident)
        assert many(h, sets) == want
        h.close()
    assert be.ctx.budget.overdrawn_by_operation == {}
