"""Synthesis in worker processes: the same witnesses, errors that name their field,
a dead worker failing only its partition, and the engine proving through the pool."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import PartitionInput
from cuzk.engine.synthpool import PREFIX, SynthesisPool
from cuzk.errors import EncodingError, InputError, ResourceError

C = DemoCircuit(rounds=20, words=2)
CID = demo.circuit_id(C.rounds, C.words)


class TroubledKind(demo.DemoKind):
    """The demo kind, but partition 1's input is bad and partition 2 kills its worker."""

    def synthesize(self, cid, partition):
        if partition.index == 1:
            raise InputError("demo vanilla proof", "partitions[1].x", "is not a field element")
        if partition.index == 2:
            os._exit(9)
        return super().synthesize(cid, partition)


def partitions(kind, n: int):
    req = ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, n))
    return kind.parse(req).partitions


def test_errors_cross_the_process_boundary_whole() -> None:
    e = pickle.loads(pickle.dumps(InputError("c1.json", "[2].comm_d", "wrong length")))
    assert (e.source, e.field, e.problem) == ("c1.json", "[2].comm_d", "wrong length")
    assert str(e) == "c1.json: [2].comm_d: wrong length"
    g = pickle.loads(pickle.dumps(EncodingError(EncodingError.OFF_CURVE, "not on the curve")))
    assert g.reason == EncodingError.OFF_CURVE and str(g) == "not on the curve"


def test_pool_witnesses_equal_in_process_ones(tmp_path: Path) -> None:
    kind = demo.DemoKind()
    pool = SynthesisPool(2, scratch=tmp_path)
    try:
        for part in partitions(kind, 3):
            here = kind.synthesize(CID, part)
            there = pool.synthesize(kind, CID, part)
            assert np.array_equal(there.assignment, here.assignment)
            assert there.public_inputs == here.public_inputs
        assert not list(tmp_path.iterdir())  # every hand-over file unlinked
    finally:
        pool.close()


def test_bad_input_and_a_dead_worker_fail_only_their_partition(tmp_path: Path) -> None:
    kind = TroubledKind()
    parts = partitions(kind, 3)
    stale = tmp_path / f"{PREFIX}999999999-0.npy"  # left by a writer that died
    stale.write_bytes(b"x")
    pool = SynthesisPool(1, scratch=tmp_path)
    try:
        assert not stale.exists()
        with pytest.raises(InputError, match=r"partitions\[1\]\.x: is not a field element"):
            pool.synthesize(kind, CID, parts[1])
        with pytest.raises(ResourceError, match=r"worker process .* died"):
            pool.synthesize(kind, CID, parts[2])
        w = pool.synthesize(kind, CID, parts[0])  # a fresh pool took over
        assert w.assignment.shape[1] == 4
    finally:
        pool.close()


def engine_with_processes(tmp_path: Path, processes: int) -> Engine:
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "2GiB"},
        pipeline={"synthesis_processes": processes},
    )
    e = Engine(cfg)
    e.start()
    return e


def test_engine_proves_through_worker_processes(tmp_path: Path) -> None:
    e = engine_with_processes(tmp_path, 2)
    try:
        assert e.pipeline.synth_pool is not None
        ids = [
            e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 2))).job_id
            for _ in range(3)
        ]
        jobs = [e.await_job(j, 120)[0] for j in ids]
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
    finally:
        e.stop()


class WhereParsed(demo.DemoKind):
    """The demo kind, its partitions tagged with the process that parsed them."""

    def parse(self, request):
        parsed = super().parse(request)
        tagged = tuple(PartitionInput(p.index, (p.data, os.getpid())) for p in parsed.partitions)
        return dataclasses.replace(parsed, partitions=tagged)


def test_requests_are_parsed_in_a_worker_process(tmp_path: Path) -> None:
    """The daemon's interpreter drives its GPUs: a request's parse (all Python,
    2.7 s for a 32GiB c1.json) runs in the pool, its partitions and its input
    errors come back whole."""
    kind = WhereParsed()
    req = ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 3))
    pool = SynthesisPool(1, scratch=tmp_path)
    try:
        there, here = pool.parse(kind, req), kind.parse(req)
        assert there.circuit_id == here.circuit_id
        assert [p.data[0] for p in there.partitions] == [p.data[0] for p in here.partitions]
        assert {p.data[1] for p in there.partitions} != {os.getpid()}
        bad = ProofRequest(ProofKind.DEMO, vanilla_proof=b'{"rounds": 20, "words": 2}')
        with pytest.raises(InputError, match="instances: expected a list"):
            pool.parse(kind, bad)
    finally:
        pool.close()


class PoRepLike(demo.DemoKind):
    """The demo kind registered for PoRep requests (their c1.json envelope)."""

    kind = ProofKind.POREP_SEAL_COMMIT


def test_a_c1_envelope_is_checked_in_the_worker_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 32GiB c1.json's envelope check decodes its 51 MB of JSON: with a pool it
    runs there, not in the daemon's interpreter, and its errors still name the
    field (a request whose kind is not registered is checked here: nothing else
    would refuse it)."""
    from cuzk.engine import kinds

    def not_here(request):
        raise AssertionError("the envelope was checked in the daemon's process")

    registry = kinds.KindRegistry()
    pool = SynthesisPool(1, scratch=tmp_path)
    try:
        c1 = b'{"SectorNum": 1, "SectorSize": 2048}'
        registry.register(PoRepLike())
        monkeypatch.setattr(kinds, "check_envelope", not_here)
        with pytest.raises(InputError, match=r"Phase1Out.*missing"):
            registry.parse(ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=c1), pool.parse)
        with pytest.raises(AssertionError, match="daemon's process"):  # no handler: here
            registry.parse(ProofRequest(ProofKind.WINNING_POST), pool.parse)
    finally:
        pool.close()


def test_engine_refuses_bad_input_parsed_in_a_worker(tmp_path: Path) -> None:
    e = engine_with_processes(tmp_path, 1)
    try:
        with pytest.raises(InputError, match=r"demo.*instances"):
            e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=b'{"rounds": 20, "words": 2}'))
        good = e.submit(ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(C, 1)))
        assert e.await_job(good.job_id, 120)[0].state == JobState.COMPLETED
    finally:
        e.stop()


def test_partition_input_pickles() -> None:
    part = partitions(demo.DemoKind(), 1)[0]
    assert pickle.loads(pickle.dumps(part)) == PartitionInput(part.index, part.data)


class DiesWarming(demo.DemoKind):
    """The demo kind, but loading its witness plan kills the worker process."""

    def witness_plan(self, circuit_id, hints=None):
        os._exit(9)


def test_a_worker_dying_while_warming_does_not_break_the_pool(tmp_path: Path) -> None:
    """The plan's warm-up tasks (SynthesisPool.warm_plan) have no caller waiting
    on them: a worker killed during one leaves the pool broken with nobody to
    see it, and the next partition finds the pool fresh, not broken."""
    from concurrent.futures import wait

    kind = DiesWarming()
    pool = SynthesisPool(1, scratch=tmp_path)
    try:
        wait(pool.warm_plan(kind, CID), timeout=60)
        w = pool.synthesize(kind, CID, partitions(kind, 1)[0])
        assert w.assignment.shape[1] == 4
        assert pool.warm_plan(kind, CID)  # a broken pool takes warm-ups again too
    finally:
        pool.close()
