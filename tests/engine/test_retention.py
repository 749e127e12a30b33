"""Retained finished jobs (issue 32, item 4): capped, and never a cost of status or of
control calls, which read the unfinished jobs only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import Job, JobNotFound, JobRegistry, JobState, ProofKind, ProofRequest
from cuzk.engine.journal import FORGET_BATCH
from cuzk.engine.kinds import demo

C = DemoCircuit(rounds=20, words=1)


def finished(reg: JobRegistry, job_id: str, at: float) -> Job:
    job, _ = reg.new_job(ProofRequest(ProofKind.DEMO, request_id=job_id))
    reg.add(job)
    with reg.lock:
        job.state, job.started_at, job.finished_at = JobState.COMPLETED, at - 1, at
        reg.ended(job)
    return job


def test_the_registry_keeps_at_most_max_retained_finished_jobs() -> None:
    reg = JobRegistry(max_retained=3)
    live, _ = reg.new_job(ProofRequest(ProofKind.DEMO, request_id="live"))
    reg.add(live)
    now = time.time()
    for i in range(5):
        finished(reg, f"f{i}", now - 10 + i)
    assert reg.finished_count() == 3
    for gone in ("f0", "f1"):
        with pytest.raises(JobNotFound):
            reg.get(gone)
    assert [j.job_id for j in reg.live()] == ["live"]  # an unfinished job is never dropped
    assert [j.job_id for j in reg.recently_finished(now - 7)] == ["f4", "f3"]
    never_started, _ = reg.new_job(ProofRequest(ProofKind.DEMO, request_id="c"))
    reg.add(never_started)
    with reg.lock:  # cancelled before it started: not among those status lists
        never_started.state, never_started.finished_at = JobState.CANCELLED, now
        reg.ended(never_started)
    assert [j.job_id for j in reg.recently_finished(now - 7)] == ["f4", "f3"]
    # a forgotten request id is free again: proven afresh
    again, known = reg.new_job(ProofRequest(ProofKind.DEMO, request_id="f0"))
    assert not known and again.job_id == "f0"


def test_status_costs_the_same_with_many_finished_jobs_retained(tmp_path: Path) -> None:
    """Issue 32: GetStatus grew with retained jobs (12,020: p99 57 ms). 20,000 retained
    jobs now cost status nothing: it reads the live ones and the last 30 s's."""
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB"},
        gpus={"backend": "cpu"},
    )
    e = Engine(cfg)
    e.start()
    try:

        def cost() -> float:
            t0 = time.perf_counter()
            for _ in range(20):
                e.status()
            return (time.perf_counter() - t0) / 20

        before = cost()
        old = time.time() - 3600
        for i in range(20_000):
            finished(e.registry, f"old-{i}", old + i * 0.01)
        after = cost()
        assert after < before * 3 + 0.002, (before, after)  # reading them all: ~6 ms
    finally:
        e.stop()


def test_max_retained_jobs_bounds_the_journal_and_a_restart(tmp_path: Path) -> None:
    cfg = Config().with_overrides(
        daemon={
            "journal": str(tmp_path / "j.sqlite"),
            "listen": ["unix:///unused"],
            "max_retained_jobs": 3,
        },
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB"},
        gpus={"backend": "cpu"},
        scheduler={"max_batch_size": 64, "max_batch_wait_ms": 600_000},
    )
    body = demo.make_vanilla(C, 1)
    e = Engine(cfg)
    e.start()
    try:
        for i in range(6):
            res = e.submit(ProofRequest(ProofKind.DEMO, request_id=f"r{i}", vanilla_proof=body))
            e.cancel(res.job_id)
        assert e.registry.finished_count() == 3
        assert e.totals[JobState.CANCELLED] == 6
        # a cancel is one statement: the jobs it forgets wait (FORGET_BATCH at
        # most) for the next write that is a transaction anyway
        assert 3 <= len(e.journal.records()) <= 3 + FORGET_BATCH
    finally:
        e.stop()
    e = Engine(cfg)
    e.start()
    try:
        assert sorted(j.job_id for j in e.registry.all()) == ["r3", "r4", "r5"]
        assert sorted(r.job_id for r in e.journal.records()) == ["r3", "r4", "r5"]  # pruned
    finally:
        e.stop()


def test_retained_jobs_cost_the_cyclic_collector_nothing() -> None:
    """Issue 32: each retained Job carried ~14 objects the collector tracks; 12,000
    of them made full passes of 60+ ms. A finished job is kept as one plain tuple,
    which a collection untracks, and read back whole."""
    import gc

    reg = JobRegistry(max_retained=1000)
    now = time.time()
    for i in range(200):
        finished(reg, f"f{i}", now - 3600 + i)  # long ended: not among the recent ones
    gc.collect()
    assert not any(gc.is_tracked(rec) for rec in reg._finished.values())
    assert not any(gc.is_tracked(ids) for ids in reg._by_request.values())
    job = reg.get("f7")
    assert (job.job_id, job.state, job.finished_at, job.kind) == (
        "f7",
        JobState.COMPLETED,
        now - 3600 + 7,
        ProofKind.DEMO,
    )
    assert job.done.is_set() and job.finished and job.request.request_id == "f7"
    assert reg.answering(ProofRequest(ProofKind.DEMO, request_id="f7")) == job
