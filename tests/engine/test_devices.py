"""Several devices with their own budgets (the N-GPU path, run here on CPU backends)."""

from __future__ import annotations

import contextlib
import sys
import time
import types
from pathlib import Path

import pytest
from gpu_stand_ins import BudgetedCpuBackend, fake_gpu

from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.budget import Budget
from cuzk.engine.config import Config, GpusConfig
from cuzk.engine.devices import Device
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import key_raw_bytes
from cuzk.errors import DeviceError, InputError

A = DemoCircuit(rounds=20, words=1)
B = DemoCircuit(rounds=26, words=1)


def test_two_devices_each_within_its_budget(tmp_path: Path) -> None:
    kind = demo.DemoKind()
    devs = [fake_gpu(0, 0), fake_gpu(1, 0)]
    ra, rb = (kind.r1cs(demo.circuit_id(c.rounds, c.words)) for c in (A, B))
    pk_bytes = 4 * max(ra.num_variables, rb.num_variables) * 600  # generous bound of a key
    # Small device budgets: a key or two and a couple of partitions each.
    limit = pk_bytes + 2 * devs[0].working_bytes(rb)
    for d in devs:
        d.budget = Budget(f"vram:{d.ordinal}", limit)
        d.total_bytes = limit
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"gpu_workers_per_device": 2},
    )
    e = Engine(cfg, devices=devs)
    e.start()
    try:
        ids = []
        for i in range(12):
            c = A if i % 2 else B
            req = ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(c, 2))
            ids.append(e.submit(req).job_id)
        jobs = [e.await_job(j, 120)[0] for j in ids]
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        assert {j.device for j in jobs} == {"cpu:0", "cpu:1"}  # both devices proved
        for d in devs:
            snap = d.budget.snapshot()
            assert 0 < snap["peak_bytes"] <= snap["limit_bytes"]
        # Host memory held only working sets: keys live on the devices.
        assert e.host_budget.reserved == 0
        st = e.status()
        assert [d.name for d in st.devices] == ["fake GPU 0", "fake GPU 1"]
        assert set(st.budgets) == {"host", "vram:0", "vram:1"}
        assert st.gpu_workers == 4
        resident = {s.circuit_id: s.devices for s in st.keys}
        assert any(resident.values())
        # Evicting frees each device's copy.
        for cid, on in resident.items():
            if on:
                was, freed = e.evict(cid)
                assert was and freed > 0
        end = time.monotonic() + 5
        while any(d.budget.reserved for d in devs):
            assert time.monotonic() < end
            time.sleep(0.01)
    finally:
        e.stop()


def test_backend_reservations_draw_from_the_engines(tmp_path: Path) -> None:
    """The engine reserves a key and each partition once on a device; the backend's own
    reservations for them come out of those (not on top), and evicting the key gives
    every byte back. A budget of one key and one partition: counted twice, the
    backend's holds would not fit and the proofs would fail."""
    kind = demo.DemoKind()
    cid = demo.circuit_id(B.rounds, B.words)
    r1cs = kind.r1cs(cid)
    probe = fake_gpu(0, 0)
    csr = sum(8 * (m.num_rows + 1) + 40 * m.nnz for m in (r1cs.a, r1cs.b, r1cs.c))
    a_points, b_points = kind.query_sizes(cid)
    pk_bytes = key_raw_bytes(r1cs.num_constraints, r1cs.num_aux, a_points, b_points)
    limit = pk_bytes + csr + probe.working_bytes(r1cs)  # not a byte to spare
    vram = DeviceBudget(0, limit)
    dev = Device(0, "budgeted GPU", BudgetedCpuBackend(vram), limit, None)
    dev.budget = Budget("vram:0", limit, device_budget=vram)
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"gpu_workers_per_device": 2},
    )
    e = Engine(cfg, devices=[dev])
    e.start()
    try:
        ids = [
            e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(B, 3))).job_id
            for _ in range(3)
        ]
        jobs = [e.await_job(j, 120)[0] for j in ids]
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        # every backend hold fitted inside the engine's reservations
        assert vram.overdrawn_by_operation == {}
        snap = e.status().budgets["vram:0"]
        assert snap["overdrawn_bytes"] == 0 and snap["device_reserved_bytes"] > 0  # the key
        ops = {"G1 bases", "G2 bases", "CSR", "spmv", "msm_g1 workspace"}
        assert ops <= set(vram.peak_by_operation)
        was, freed = e.evict(cid)
        assert was and freed > 0
        assert vram.reserved_bytes == 0 and dev.budget.reserved == 0
        assert e.status().budgets["vram:0"]["device_reserved_bytes"] == 0
    finally:
        e.stop()


def test_overdrawn_reservations_show_in_status_and_metrics(tmp_path: Path) -> None:
    """A backend that needs more than the engine reserved for a partition takes the
    rest from the free budget; /status and the metrics say by how much."""

    cid = demo.circuit_id(A.rounds, A.words)
    r1cs = demo.DemoKind().r1cs(cid)

    class Greedy(BudgetedCpuBackend):
        def msm_g1(self, bases, scalars, phases=None):
            # more than the partition's whole reservation
            with self.vram.reserve(probe.working_bytes(r1cs) + 1, "msm_g1 extra"):
                return super().msm_g1(bases, scalars, phases)

    probe = fake_gpu(0, 0)
    vram = DeviceBudget(0, 1 << 30)
    dev = Device(0, "greedy GPU", Greedy(vram), 1 << 30, Budget("vram:0", 1 << 30, vram))
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB"},
    )
    e = Engine(cfg, devices=[dev])
    e.start()
    try:
        job = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(A, 1)))
        done, _ = e.await_job(job.job_id, 120)
        assert done.state == JobState.COMPLETED, done.error
        snap = e.status().budgets["vram:0"]
        assert snap["overdrawn_bytes"] > 0
        assert 'cuzk_memory_overdrawn_bytes{budget="vram:0"}' in e.metrics_text()
    finally:
        e.stop()


def stand_in_gpu(ordinal: int, limit_bytes: int) -> CpuBackend:
    """What :func:`cuzk.backends.open_gpu` gives, for discovery's tests: a backend
    with a device budget of its own (the CPU's arithmetic)."""
    from cuzk.backends.cuda.memory import DeviceBudget

    be = CpuBackend()
    be.device_budget = DeviceBudget(ordinal, limit_bytes)
    return be


def fake_cupy(count: int) -> types.ModuleType:
    """Just what device discovery asks of CuPy, for a host of ``count`` GPUs of 141 GB."""

    class Pool:
        def set_limit(self, size: int) -> None:
            self.limit = size

    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: count,
        getDeviceProperties=lambda i: {"name": f"Fake H200 #{i}".encode()},
        memGetInfo=lambda: (140 * 10**9, 141 * 10**9),
    )
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(
        runtime=runtime,
        Device=lambda i: contextlib.nullcontext(),
        set_allocator=lambda allocator=None: None,
    )
    cupy.get_default_memory_pool = Pool
    return cupy


def test_gpus_devices_selects_a_subset_and_refuses_an_unknown_ordinal(monkeypatch) -> None:
    import cuzk.engine.devices as devices

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(2))
    monkeypatch.setattr(devices, "_open_gpu", stand_in_gpu)
    both = devices.discover(GpusConfig(backend="auto"))
    assert [(d.ordinal, d.name) for d in both] == [(0, "Fake H200 #0"), (1, "Fake H200 #1")]
    assert all(d.budget is not None and d.budget.limit == int(141e9 * 0.9) for d in both)
    (second,) = devices.discover(GpusConfig(devices=(1,), backend="cuda"))
    assert second.ordinal == 1 and second.budget.name == "GPU 1 VRAM"
    with pytest.raises(InputError, match=r"gpus.devices: no GPU 2 on this host: it has 2"):
        devices.discover(GpusConfig(devices=(0, 2)))
    assert devices.select_ordinals((), 3) == [0, 1, 2]
    assert devices.select_ordinals((2, 0), 3) == [2, 0]
    with pytest.raises(InputError, match=r"gpus\.devices: no GPU is visible"):
        devices.select_ordinals((0,), 0)


def test_a_device_probe_is_a_computation_checked_on_the_host() -> None:
    fake_gpu(0, 1 << 20).probe()  # a working backend passes

    class Broken(CpuBackend):
        def intt(self, a):
            out = super().intt(a).copy()
            out[3, 0] ^= 1  # one bit wrong
            return out

    dev = Device(1, "broken", Broken(), 0, Budget("vram:1", 1 << 20))
    with pytest.raises(DeviceError, match="GPU 1: probe: an NTT and its inverse"):
        dev.probe()


def test_gpu_workers_asking_at_once_share_one_witness_maker(monkeypatch) -> None:
    """A device's witness maker holds the plans uploaded to it: two GPU workers
    that start together must get the same one (two makers uploaded the plan
    twice, the second time inside a partition's witness share)."""
    import threading

    import cuzk.engine.devices as devices

    made = []

    def slow_maker(backend):
        time.sleep(0.05)  # both workers are inside before either has its maker
        made.append(object())
        return made[-1]

    monkeypatch.setattr(devices, "witness_device_for", slow_maker)
    dev = Device(0, "cpu", CpuBackend(), 0, None)
    got = []
    workers = [threading.Thread(target=lambda: got.append(dev.witness_device())) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(made) == 1 and all(g is made[0] for g in got)
