"""A job's first proof does not wait for the whole job: its first partition
proves while later partitions are still being checked, and its circuit's
witness plan loads while its partitions are checked, not after the first
reaches the prover (issue 33, the first proof's latency).

Ordered by events, not by timing: each hook waits for the event the property
says comes first, and a pipeline that serialised them would leave it unset.
"""

from __future__ import annotations

import threading
import types
from pathlib import Path
from typing import Any

import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.kinds import KindRegistry, demo
from cuzk.engine.kinds.base import PartitionInput, Witness
from cuzk.engine.pipeline import gpu as gpu_stage

C = DemoCircuit(rounds=20, words=1)
PARTITIONS = 4
WAIT_S = 30.0  # a pipeline that serialised the two would leave the event unset this long


def config(tmp_path: Path, **pipeline: Any) -> Config:
    return Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"backend": "cpu"},
        pipeline=pipeline,
    )


def engine_with(tmp_path: Path, kind: demo.DemoKind, **pipeline: Any) -> Engine:
    reg = KindRegistry()
    reg.register(kind)
    e = Engine(config(tmp_path, **pipeline), kinds=reg)
    e.start()
    return e


def request(partitions: int) -> ProofRequest:
    return ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, partitions))


class LastCheckWaits(demo.DemoKind):
    """The last partition's check (its synthesis) finishes only once partition
    0 has started proving."""

    def __init__(self, first_proving: threading.Event, order: list[str]) -> None:
        super().__init__()
        self.first_proving, self.order = first_proving, order

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        w = super().synthesize(cid, partition)
        if partition.index == PARTITIONS - 1:
            seen = self.first_proving.wait(WAIT_S)
            self.order.append(f"last check done, partition 0 proving: {seen}")
        return w


def test_the_first_partition_proves_before_the_last_partitions_check_ends(
    tmp_path: Path, monkeypatch
) -> None:
    first_proving = threading.Event()
    order: list[str] = []
    real = gpu_stage.prove_partition

    def prove(key, circuit, witness, inputs, **kw):
        if kw.get("partition") == 0:
            order.append("partition 0 proving")
            first_proving.set()
        return real(key, circuit, witness, inputs, **kw)

    monkeypatch.setattr(gpu_stage, "prove_partition", prove)
    e = engine_with(tmp_path, LastCheckWaits(first_proving, order))
    try:
        job, _ = e.await_job(e.submit(request(PARTITIONS)).job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        assert order == ["partition 0 proving", "last check done, partition 0 proving: True"]
    finally:
        e.stop()


class DevicePlanned(demo.DemoKind):
    """A kind whose partitions take the device-witness path of the pipeline
    (its checks are witness_hints, its plan witness_plan) while still proving
    from a host assignment: the first partition's check waits for the plan to
    be loaded, which only a load begun at acceptance can satisfy."""

    device_witness = True

    def __init__(self, loaded: threading.Event, loads: list[str]) -> None:
        super().__init__()
        self.loaded, self.loads = loaded, loads

    def witness_plan(self, circuit_id: str, hints: Any = None) -> Any:
        self.loads.append(threading.current_thread().name)
        self.loaded.set()
        return "plan"

    def witness_hints(self, cid: str, partition: PartitionInput) -> Witness:
        if partition.index == 0:
            self.loads.append(f"partition 0 checked, plan loaded: {self.loaded.wait(WAIT_S)}")
        return self.synthesize(cid, partition)

    def hints_bytes(self, circuit_id: str) -> int:
        return self.working_bytes(circuit_id)


def test_the_witness_plan_loads_while_the_partitions_are_checked(tmp_path: Path) -> None:
    loaded = threading.Event()
    loads: list[str] = []
    e = engine_with(tmp_path, DevicePlanned(loaded, loads), witness="device")
    try:
        job, _ = e.await_job(e.submit(request(2)).job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        cid = demo.circuit_id(C.rounds, C.words)
        assert loads[0] == f"warm-plan-{cid}"  # loaded at acceptance, in the background
        assert "partition 0 checked, plan loaded: True" in loads
    finally:
        e.stop()


def test_no_plan_is_loaded_ahead_for_host_witnesses(tmp_path: Path) -> None:
    e = engine_with(tmp_path, demo.DemoKind())
    try:
        handler = e.kinds.for_circuit(demo.circuit_id(C.rounds, C.words))
        assert e.pipeline.warm_plan(handler, "demo-r20-w1") is None
    finally:
        e.stop()


def test_a_warm_up_that_cannot_start_leaves_the_job_scheduled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading the plan ahead is best effort: a job accepted (journalled) when
    its warm-up thread cannot start is still scheduled and proved (its plan
    loaded by its first partition, as before the warm-up)."""
    from cuzk.engine.pipeline import witness_plans

    class NoThreads(threading.Thread):
        def start(self) -> None:
            raise RuntimeError("can't start new thread")

    loaded = threading.Event()
    loaded.set()  # partition 0's check does not wait for a load ahead
    loads: list[str] = []
    e = engine_with(tmp_path, DevicePlanned(loaded, loads), witness="device")
    try:
        here = types.SimpleNamespace(Thread=NoThreads, Lock=threading.Lock)
        monkeypatch.setattr(witness_plans, "threading", here)
        submitted = e.submit(request(1))
        monkeypatch.undo()
        job, _ = e.await_job(submitted.job_id, 120)
        assert job.state == JobState.COMPLETED, job.error
        cid = demo.circuit_id(C.rounds, C.words)
        assert f"warm-plan-{cid}" not in loads  # (nothing was loaded ahead)
    finally:
        e.stop()
