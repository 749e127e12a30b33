"""Development keys of demo sizes (issue 15): every new demo size used to write and keep a
new key, without bound. They are now evicted and deleted least recently used first, within
``[srs] dev_key_disk_budget``; a key in use is never deleted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState, ProofKind, ProofRequest
from cuzk.engine.keystore.devfiles import params_file_bytes
from cuzk.engine.kinds import demo
from cuzk.engine.kinds.base import KeyFiles
from cuzk.errors import ResourceError
from cuzk.groth16 import prover

CIRCUITS = [DemoCircuit(rounds=r, words=1) for r in (20, 21, 22)]
IDS = [demo.circuit_id(c.rounds, c.words) for c in CIRCUITS]


def key_bytes(cid: str) -> int:
    """A development key's two files: the .params and its .vk (the .params' head)."""
    counts = prover.KeyLayout.of(demo.DemoKind().r1cs(cid)).counts
    total = params_file_bytes(counts)
    vk = 3 * 96 + 3 * 192 + 4 + 96 * counts["ic"]
    return total + vk


def engine(tmp_path: Path, budget: int) -> Engine:
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params"), "dev_key_disk_budget": str(budget)},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s"},
        gpus={"backend": "cpu"},
    )
    e = Engine(cfg)
    e.start()
    return e


def prove(e: Engine, circuit: DemoCircuit) -> None:
    req = ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(circuit, 1))
    job, _ = e.await_job(e.submit(req).job_id, 120)
    assert job.state == JobState.COMPLETED, job.error


def on_disk(tmp_path: Path) -> dict[str, int]:
    """circuit id → bytes of its development key files in the cache folder."""
    out: dict[str, int] = {}
    for p in (tmp_path / "params").glob("cuzk-dev-*"):
        cid = p.name.removeprefix("cuzk-dev-").rsplit(".", 1)[0]
        out[cid] = out.get(cid, 0) + p.stat().st_size
    return out


def test_the_least_recently_used_key_goes_when_a_new_one_would_not_fit(tmp_path: Path) -> None:
    sizes = [key_bytes(c) for c in IDS]
    budget = sum(sizes) - min(sizes) // 2  # room for two of the three, never all three
    e = engine(tmp_path, budget)
    try:
        prove(e, CIRCUITS[0])
        prove(e, CIRCUITS[1])
        assert on_disk(tmp_path) == {IDS[0]: sizes[0], IDS[1]: sizes[1]}
        prove(e, CIRCUITS[0])  # A used again: B is now the least recently used
        prove(e, CIRCUITS[2])
        assert on_disk(tmp_path) == {IDS[0]: sizes[0], IDS[2]: sizes[2]}
        assert sum(on_disk(tmp_path).values()) <= budget
        # evicted from memory too: B's key is gone from status and from the host budget
        assert IDS[1] not in {s.circuit_id for s in e.keys.status()}
        prove(e, CIRCUITS[1])  # made again when asked for again (A is the oldest now)
        assert on_disk(tmp_path) == {IDS[1]: sizes[1], IDS[2]: sizes[2]}
        assert all(s.ref_count == 0 for s in e.keys.status())
    finally:
        e.stop()


def test_a_key_in_use_is_never_deleted(tmp_path: Path) -> None:
    sizes = [key_bytes(c) for c in IDS]
    e = engine(tmp_path, sum(sizes) - min(sizes) // 2)
    try:
        lease = e.keys.acquire_host(IDS[0], 1000)  # A pinned, as by a partition in flight
        try:
            prove(e, CIRCUITS[1])
            prove(e, CIRCUITS[2])  # A is the oldest but in use: B goes
            assert set(on_disk(tmp_path)) == {IDS[0], IDS[2]}
        finally:
            e.keys.release_host(lease)
    finally:
        e.stop()


def test_the_order_survives_a_restart(tmp_path: Path) -> None:
    sizes = [key_bytes(c) for c in IDS]
    budget = sum(sizes) - min(sizes) // 2
    e = engine(tmp_path, budget)
    try:
        prove(e, CIRCUITS[0])
        prove(e, CIRCUITS[1])
    finally:
        e.stop()
    # B older than A on disk (as if A had been used last)
    for name in (KeyFiles.development(IDS[1]).params, KeyFiles.development(IDS[1]).vk):
        os.utime(tmp_path / "params" / name, (1_000_000, 1_000_000))
    e = engine(tmp_path, budget)
    try:
        prove(e, CIRCUITS[2])
        assert set(on_disk(tmp_path)) == {IDS[0], IDS[2]}
    finally:
        e.stop()


def test_a_key_larger_than_the_whole_budget_is_refused_naming_it(tmp_path: Path) -> None:
    e = engine(tmp_path, key_bytes(IDS[0]) // 2)
    try:
        req = ProofRequest(ProofKind.DEMO, vanilla_proof=demo.make_vanilla(CIRCUITS[0], 1))
        job, _ = e.await_job(e.submit(req).job_id, 60)
        assert job.state == JobState.FAILED
        assert "[srs] dev_key_disk_budget" in job.error and IDS[0] in job.error
        assert on_disk(tmp_path) == {}
        with pytest.raises(ResourceError, match=r"dev_key_disk_budget"):
            e.keys.preload(IDS[0])
    finally:
        e.stop()
