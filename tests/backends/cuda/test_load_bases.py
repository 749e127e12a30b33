"""Loading key points from their file encoding: the CUDA engine's ``load_zcash``
path (on the kernels' CPU twin, and on the GPU) against the CPU backend's.

Both backends take the same stream (uncompressed zcash points, as a
bellperson .params file holds them), keep the same Montgomery words, find
the same first bad point, and make bases that give the same MSMs as the
arrays path (``prepare_g1``).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import twin_cupy
from test_msm import random_points, reference, to_array

from cuzk.algebra.arrays import fr_random, to_zcash
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import Q
from cuzk.backends.cpu import CpuBackend
from cuzk.errors import BadPoint, EncodingError

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
