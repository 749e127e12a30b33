"""Placement: which device proves a partition (the rule, then two stand-in GPUs
sharing the partitions of one job, each within its own budget)."""

from __future__ import annotations

from pathlib import Path

from gpu_stand_ins import circuit_bytes, engine_config, stand_in_gpus, wait_for

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.engine.placement import DeviceLoad, may_take

X = "demo-x"
GIB = 1 << 30


def dev(
    ordinal: int,
    keys: tuple[str, ...] = (),
    held: int = 0,
    workers: int = 2,
    free: int = 10 * GIB,
    healthy: bool = True,
) -> DeviceLoad:
    return DeviceLoad(
        ordinal=ordinal,
        healthy=healthy,
        workers=workers,
        held=held,
        free_workers=max(0, workers - held),
        free_bytes=free,
        keys=frozenset(keys),
    )


def takers(devices: list[DeviceLoad], waiting: int = 1, failed_on: tuple[int, ...] = ()):
    """The devices that would take the partition if a free worker of each asked."""
    return [
        d.ordinal for d in devices if d.free_workers and may_take(d, devices, X, waiting, failed_on)
    ]


def test_a_key_nobody_holds_goes_to_the_device_with_the_most_free_budget() -> None:
    assert takers([dev(0, free=5 * GIB), dev(1, free=8 * GIB)]) == [1]
    assert takers([dev(0), dev(1)]) == [0]  # a tie: the lower ordinal
    # a device with no free worker does not count
    assert takers([dev(0, held=2, free=5 * GIB), dev(1, free=4 * GIB)]) == [1]


def test_a_holder_with_a_free_worker_takes_it() -> None:
    assert takers([dev(0), dev(1, keys=(X,), free=GIB)]) == [1]
    assert takers([dev(0, keys=(X,), held=1), dev(1)], waiting=9) == [0]


def test_the_least_loaded_holder_takes_it() -> None:
    assert takers([dev(0, keys=(X,), held=1), dev(1, keys=(X,))]) == [1]
    assert takers([dev(0, keys=(X,)), dev(1, keys=(X,))]) == [0]
    assert takers([dev(0, keys=(X,), held=2), dev(1, keys=(X,), held=1)]) == [1]


def test_no_second_copy_of_a_key_for_what_its_holder_takes_soon() -> None:
    busy = dev(0, keys=(X,), held=2)
    # one partition (or as many as the holder's workers): it waits for the holder
    assert takers([busy, dev(1)], waiting=1) == []
    assert takers([busy, dev(1)], waiting=2) == []
    # a backlog (a 32GiB PoRep's ten partitions): the second device loads the key
    assert takers([busy, dev(1)], waiting=8) == [1]
    # ... the one of several with the most free budget
    assert takers([busy, dev(1, free=GIB), dev(2, free=2 * GIB)], waiting=8) == [2]


def test_unhealthy_devices_take_nothing_and_hold_nothing() -> None:
    assert takers([dev(0, keys=(X,), healthy=False), dev(1)]) == [1]
    assert not may_take(dev(0, healthy=False), [dev(0, healthy=False)], X, 1)


def test_a_partition_is_tried_once_on_each_device() -> None:
    assert takers([dev(0, keys=(X,)), dev(1)], failed_on=(0,)) == [1]
    assert takers([dev(0, keys=(X,)), dev(1)], failed_on=(0, 1)) == []


def test_the_partitions_of_one_job_spread_over_two_gpus(tmp_path: Path) -> None:
    """One job of six partitions on two stand-in GPUs, each budget one key and two
    partitions: both devices prove some, the key is resident on each, no budget
    is overdrawn, every partition is proven (and verified) exactly once."""
    c = DemoCircuit(rounds=20, words=1)
    cid = demo.circuit_id(c.rounds, c.words)
    key, part = circuit_bytes(cid)
    devices, gpus = stand_in_gpus(2, key + 2 * part)
    # GPU 0 holds its proofs until GPU 1 has taken a partition: the backlog is what
    # makes GPU 1 load a second copy of the key (placement's rule 3).
    gpus[0].gate.clear()
    e = Engine(engine_config(tmp_path), devices=devices)
    e.start()
    try:
        job_id = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(c, 6)))
        wait_for(lambda: e.pipeline.device_loads()[1].held > 0, "GPU 1 takes a partition")
        gpus[0].gate.set()
        job, _ = e.await_job(job_id.job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        st = e.status()
        proven = [d.partitions_proven for d in st.devices]
        assert sum(proven) == 6 and min(proven) > 0, proven
        assert sum(g.proofs for g in gpus) == 6  # none proven twice
        assert 'cuzk_partitions_proven_total{proof_kind="demo"} 6.0' in e.metrics_text()
        (entry,) = [s for s in st.keys if s.circuit_id == cid]
        assert entry.devices == (0, 1)  # resident on each
        for d, g in zip(st.devices, gpus, strict=True):
            assert d.resident_keys == ((cid, entry.device_bytes[d.ordinal]),)
            assert 0 < d.budget_peak <= d.budget_limit
            assert g.vram.overdrawn_by_operation == {}  # every hold within the engine's
        was, _ = e.evict(cid)
        assert was
        assert all(g.vram.reserved_bytes == 0 for g in gpus)
    finally:
        e.stop()


def test_a_one_partition_job_waits_for_the_busy_holder(tmp_path: Path) -> None:
    """GPU 0 holds the key and is busy; a one-partition job of the same circuit
    waits for it rather than loading the key on GPU 1."""
    c = DemoCircuit(rounds=20, words=1)
    cid = demo.circuit_id(c.rounds, c.words)
    key, part = circuit_bytes(cid)
    devices, gpus = stand_in_gpus(2, key + 2 * part)
    gpus[0].gate.clear()
    e = Engine(engine_config(tmp_path), devices=devices)
    e.start()
    try:
        first = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(c, 2)))
        wait_for(lambda: e.pipeline.device_loads()[0].held == 2, "GPU 0 takes both")
        second = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(c, 1)))
        wait_for(lambda: len(e.pipeline.synthesized) == 1, "the one partition is ready")
        loads = e.pipeline.device_loads()
        assert not may_take(loads[1], list(loads.values()), cid, 1)
        gpus[0].gate.set()
        for r in (first, second):
            job, _ = e.await_job(r.job_id, 120)
            assert job.state == JobState.COMPLETED, job.error
        st = e.status()
        assert [d.partitions_proven for d in st.devices] == [3, 0]
        assert [s.devices for s in st.keys if s.circuit_id == cid] == [(0,)]
    finally:
        e.stop()


def test_preload_makes_the_key_resident_on_every_healthy_gpu(tmp_path: Path) -> None:
    c = DemoCircuit(rounds=20, words=1)
    cid = demo.circuit_id(c.rounds, c.words)
    key, part = circuit_bytes(cid)
    devices, gpus = stand_in_gpus(3, key + 2 * part)
    e = Engine(engine_config(tmp_path), devices=devices)
    e.start()
    try:
        e.pipeline.health.failed(2, "GPU 2: lost")
        assert e.preload(cid)[0] is False
        st = e.status()
        assert [s.devices for s in st.keys if s.circuit_id == cid] == [(0, 1)]
        assert [len(d.resident_keys) for d in st.devices] == [1, 1, 0]
        assert e.preload(cid) == (True, 0.0)  # on every healthy GPU already
        assert all(g.vram.overdrawn_by_operation == {} for g in gpus)
    finally:
        e.stop()


def test_each_gpu_keeps_its_keys_within_its_own_budget(tmp_path: Path) -> None:
    """Unequal budgets: GPU 0 cannot hold both keys with two partitions in flight,
    GPU 1 can. Jobs of two circuits alternate: each GPU reserves, evicts and waits
    within its own budget, none is overdrawn or exceeded, every proof completes."""
    small, big = DemoCircuit(rounds=20, words=1), DemoCircuit(rounds=26, words=1)
    cids = [demo.circuit_id(c.rounds, c.words) for c in (small, big)]
    (key_s, _), (key_b, part_b) = (circuit_bytes(c) for c in cids)
    devices, gpus = stand_in_gpus(2, 0)
    limits = [key_b + 2 * part_b, key_s + key_b + 2 * part_b]
    for d, g, limit in zip(devices, gpus, limits, strict=True):
        g.vram.limit_bytes = d.budget.limit = d.total_bytes = limit
    e = Engine(engine_config(tmp_path), devices=devices)
    e.start()
    try:
        ids = [
            e.submit(
                ProofRequest(
                    ProofKind.DEMO, vanilla_proof=demo.make_vanilla((small, big)[i % 2], 2)
                )
            ).job_id
            for i in range(8)
        ]
        jobs = [e.await_job(j, 120)[0] for j in ids]
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        st = e.status()
        assert sum(d.partitions_proven for d in st.devices) == 16
        assert sum(g.proofs for g in gpus) == 16
        for d, g in zip(st.devices, gpus, strict=True):
            assert 0 < d.budget_peak <= d.budget_limit
            assert max(g.vram.peak_by_operation.values()) <= g.vram.limit_bytes
            assert g.vram.overdrawn_by_operation == {}
        # what GPU 0 could not have held at once, had its budget not been its own
        assert key_s + key_b + 2 * part_b > limits[0]
    finally:
        e.stop()
