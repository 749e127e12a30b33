"""The SRS manager: dev-key cache, tiers, reference counts, LRU eviction within the budget."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest

from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.budget import Budget, Cancelled
from cuzk.engine.devices import Device
from cuzk.engine.jobs import InUse, ProofKind, ProofRequest
from cuzk.engine.kinds import KindRegistry, demo
from cuzk.engine.kinds.base import key_gpu_setup_bytes, key_host_bytes, key_raw_bytes
from cuzk.engine.srs import DEV_KEY_DIR, SrsManager, Tier, load_key
from cuzk.errors import InputError, ResourceError
from cuzk.groth16 import prover, verifier

A = demo.circuit_id(20, 1)
B = demo.circuit_id(24, 1)


class FakePost(demo.DemoKind):
    """A kind that chains verify (no dev keys without the operator's consent)."""

    kind = ProofKind.WINNING_POST
    dev_keys_by_default = False

    def owns(self, cid: str) -> bool:
        return cid == "winning-test"

    def _circuit(self, cid: str) -> DemoCircuit:
        return DemoCircuit(5, 1)


def manager(tmp_path: Path, limit: int = 1 << 30, min_idle: float = 0.0, dev: bool = False):
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    reg.register(FakePost())
    budget = Budget("host", limit)
    cpu = Device(0, "cpu", CpuBackend(), 0, None)
    return SrsManager(tmp_path, reg, budget, [cpu], min_idle, dev), budget


def status(m: SrsManager, cid: str):
    (s,) = [s for s in m.status() if s.circuit_id == cid]
    return s


def test_dev_key_is_generated_once_and_cached(tmp_path: Path) -> None:
    m, _ = manager(tmp_path)
    vk = m.verifying_key(A)
    meta = json.loads((tmp_path / DEV_KEY_DIR / A / "meta.json").read_text())
    assert meta["insecure_development_key"] is True and meta["circuit_id"] == A
    m2, _ = manager(tmp_path)
    m2.discover_cached()
    assert status(m2, A).tier == Tier.COLD and status(m2, A).size_bytes > 0
    assert m2.verifying_key(A) == vk
    assert json.loads((tmp_path / DEV_KEY_DIR / A / "meta.json").read_text()) == meta
    pk = load_key(tmp_path / DEV_KEY_DIR / A, mmap=False)
    kind = demo.DemoKind()
    key = prover.prepare(pk, kind.r1cs(A), CpuBackend())
    part = kind.parse(
        type("R", (), {"vanilla_proof": demo.make_vanilla(DemoCircuit(20, 1), 1)})()
    ).partitions[0]
    w = kind.synthesize(A, part)
    assert verifier.verify(vk, list(w.public_inputs), prover.prove(key, kind.r1cs(A), w.assignment))


def test_tiers_refcounts_and_evict(tmp_path: Path) -> None:
    m, budget = manager(tmp_path)
    lease = m.acquire_host(A, 1000)
    s = status(m, A)
    assert s.tier == Tier.HOT and s.ref_count == 1 and s.devices == (0,)
    with pytest.raises(InUse, match="in use by 1 partition"):
        m.evict(A)
    key_bytes = key_host_bytes(demo.DemoKind().r1cs(A))
    assert budget.reserved == key_bytes + 1000
    m.release_host(lease)
    assert status(m, A).ref_count == 0 and budget.reserved == key_bytes
    assert m.evict(A) == (True, key_bytes)
    assert status(m, A).tier == Tier.WARM and budget.reserved == 0
    assert m.evict(A) == (False, 0)
    assert status(m, A).tier == Tier.COLD
    assert m.preload(A)[0] is False
    assert m.preload(A) == (True, 0.0)
    assert status(m, A).tier == Tier.HOT


def test_lru_eviction_under_pressure(tmp_path: Path) -> None:
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, budget = manager(tmp_path, limit=max(ka, kb) + 4096)
    m.release_host(m.acquire_host(A, 100))
    assert status(m, A).tier == Tier.HOT
    m.release_host(m.acquire_host(B, 100))  # A is idle: evicted to make room
    assert status(m, A).tier == Tier.WARM
    assert status(m, B).tier == Tier.HOT
    assert budget.peak <= budget.limit


def test_keys_idle_less_than_min_idle_are_kept(tmp_path: Path) -> None:
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, _ = manager(tmp_path, limit=max(ka, kb) + 4096, min_idle=3600)
    m.release_host(m.acquire_host(A, 100))
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled):
        m.acquire_host(B, 100, cancelled=stop.is_set)
    assert status(m, A).tier == Tier.HOT
    assert status(m, B).ref_count == 0  # the failed acquisition left no pin behind


def test_a_key_in_use_is_never_evicted_for_another(tmp_path: Path) -> None:
    ka = key_host_bytes(demo.DemoKind().r1cs(A))
    kb = key_host_bytes(demo.DemoKind().r1cs(B))
    m, _ = manager(tmp_path, limit=max(ka, kb) + 4096)
    lease = m.acquire_host(A, 100)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled):
        m.acquire_host(B, 100, cancelled=stop.is_set)
    assert status(m, A).tier == Tier.HOT
    m.release_host(lease)


def test_filecoin_kinds_need_consent_for_dev_keys(tmp_path: Path) -> None:
    m, _ = manager(tmp_path)
    with pytest.raises(ResourceError, match=r"no proving key for winning-test.*generate_dev_keys"):
        m.acquire_host("winning-test", 100)
    assert status(m, "winning-test").ref_count == 0
    m2, _ = manager(tmp_path, dev=True)
    m2.release_host(m2.acquire_host("winning-test", 100))
    with pytest.raises(InputError, match="no registered proof kind"):
        m.preload("porep-32g")


def test_dev_keys_are_made_on_the_gpu_when_the_devices_are_cuda(
    tmp_path: Path, monkeypatch
) -> None:
    """With a CUDA device the key's points come from setup_gpu, bound to that
    device's context (here a stand-in engine computes them on the CPU)."""
    from types import SimpleNamespace

    from cuzk.algebra import pairing
    from cuzk.algebra.arrays import fr_from_array, g1_to_array, g2_to_array
    from cuzk.groth16 import setup_gpu

    ctx = SimpleNamespace(device_id=0)
    gpu = Device(
        0, "fake gpu", SimpleNamespace(name="cuda", ctx=ctx), 1 << 30, Budget("v", 1 << 30)
    )
    monkeypatch.setattr(Device, "activate", lambda self: contextlib.nullcontext())
    engines = []

    class CpuFixedBase:  # MsmEngine's fixed-base interface, computed with the pairing library
        def __init__(self, c) -> None:
            engines.append(c)

        def fixed_base_g1(self, point, scalars):
            return g1_to_array([pairing.g1_mul(point, k) for k in fr_from_array(scalars)])

        def fixed_base_g2(self, point, scalars):
            return g2_to_array([pairing.g2_mul(point, k) for k in fr_from_array(scalars)])

    import cuzk.backends.cuda.msm as msm

    monkeypatch.setattr(msm, "MsmEngine", CpuFixedBase)
    calls = []
    real = setup_gpu.setup_gpu
    monkeypatch.setattr(
        setup_gpu, "setup_gpu", lambda r1cs, **kw: calls.append(kw) or real(r1cs, **kw)
    )
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    host = Budget("host", 1 << 30)
    m = SrsManager(tmp_path, reg, host, [gpu], 0.0, False)
    vk = m.verifying_key(A)
    assert engines == [ctx] and len(calls) == 1
    # the host held raw points and scalars, not the CPU backend's prepared key
    r1cs_a = demo.DemoKind().r1cs(A)
    pk = load_key(tmp_path / DEV_KEY_DIR / A)
    raw = key_raw_bytes(r1cs_a.num_constraints, r1cs_a.num_aux, len(pk.a), len(pk.b_g1))
    assert raw == pk.nbytes()  # the model is the key's exact size
    assert host.peak == key_gpu_setup_bytes(r1cs_a.num_constraints, raw) < key_host_bytes(r1cs_a)
    # The key proves: a CPU proof with it verifies.
    kind = demo.DemoKind()
    r1cs = kind.r1cs(A)
    body = demo.make_vanilla(DemoCircuit(20, 1))
    w = kind.synthesize(
        A, kind.parse(ProofRequest(ProofKind.DEMO, vanilla_proof=body)).partitions[0]
    )
    key = prover.prepare(load_key(tmp_path / DEV_KEY_DIR / A), r1cs, CpuBackend())
    assert verifier.verify(vk, list(w.public_inputs), prover.prove(key, r1cs, w.assignment))


class BuildCounting(demo.DemoKind):
    """The demo kind, its matrices taking ``build`` bytes to build, builds counted."""

    def __init__(self, build: int) -> None:
        self.build = build
        self.builds: list[str] = []

    def r1cs_build_bytes(self, cid: str) -> int:
        return self.build

    def r1cs(self, cid: str):
        self.builds.append(cid)
        return super().r1cs(cid)


def test_matrices_are_built_once_within_the_host_budget(tmp_path: Path) -> None:
    kind = BuildCounting(5000)
    reg = KindRegistry()
    reg.register(kind)
    host = Budget("host", 1 << 30)
    m = SrsManager(tmp_path, reg, host, [Device(0, "cpu", CpuBackend(), 0, None)], 0.0, False)
    threads = [threading.Thread(target=m.ensure_r1cs, args=(A,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert kind.builds == [A]  # four callers at once: one build
    assert host.peak == 5000 and host.reserved == 0  # reserved while building only
    m.ensure_r1cs(A)
    assert kind.builds == [A]


def test_matrices_too_big_for_the_budget_are_refused_with_the_reason(tmp_path: Path) -> None:
    kind = BuildCounting(2 << 30)
    reg = KindRegistry()
    reg.register(kind)
    m = SrsManager(
        tmp_path, reg, Budget("host", 1 << 30), [Device(0, "cpu", CpuBackend(), 0, None)]
    )
    with pytest.raises(ResourceError, match=f"matrices of {A} needs"):
        m.ensure_r1cs(A)
    assert kind.builds == []
