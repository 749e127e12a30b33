"""Jobs: default priorities, request digests, the registry's idempotency."""

from __future__ import annotations

import time

import pytest

from cuzk.engine.jobs import (
    JobNotFound,
    JobRegistry,
    JobState,
    Priority,
    ProofKind,
    ProofRequest,
    RequestConflict,
    StageClock,
)


def test_default_priority_by_kind() -> None:
    assert Priority.default_for(ProofKind.WINNING_POST) == Priority.CRITICAL
    assert Priority.default_for(ProofKind.WINDOW_POST_PARTITION) == Priority.HIGH
    assert Priority.default_for(ProofKind.POREP_SEAL_COMMIT) == Priority.NORMAL
    assert Priority.default_for(ProofKind.SNAP_DEALS_UPDATE) == Priority.NORMAL
    assert Priority.default_for(ProofKind.DEMO) == Priority.NORMAL
    r = ProofRequest(ProofKind.WINNING_POST)
    assert r.effective_priority() == Priority.CRITICAL
    assert ProofRequest(ProofKind.WINNING_POST, priority=Priority.LOW).effective_priority() == 1
    assert Priority.CRITICAL > Priority.HIGH > Priority.NORMAL > Priority.LOW


def test_digest_covers_every_field() -> None:
    base = ProofRequest(ProofKind.WINNING_POST, vanilla_proofs=(b"a", b"b"), randomness=b"r")
    variants = [
        ProofRequest(ProofKind.WINDOW_POST_PARTITION, vanilla_proofs=(b"a", b"b"), randomness=b"r"),
        ProofRequest(ProofKind.WINNING_POST, vanilla_proofs=(b"ab",), randomness=b"r"),
        ProofRequest(ProofKind.WINNING_POST, vanilla_proofs=(b"a", b"b"), randomness=b"s"),
        ProofRequest(
            ProofKind.WINNING_POST, vanilla_proofs=(b"a", b"b"), randomness=b"r", miner_id=1
        ),
        ProofRequest(
            ProofKind.WINNING_POST, vanilla_proofs=(b"a", b"b"), randomness=b"r", comm_d_new=b"x"
        ),
    ]
    digests = {base.digest(), *(v.digest() for v in variants)}
    assert len(digests) == 1 + len(variants)
    same = ProofRequest(ProofKind.WINNING_POST, vanilla_proofs=(b"a", b"b"), randomness=b"r")
    assert same.digest() == base.digest()


def test_registry_idempotency_and_conflict() -> None:
    reg = JobRegistry()
    r = ProofRequest(ProofKind.DEMO, request_id="id-1", vanilla_proof=b"x")
    job, existing = reg.new_job(r)
    assert not existing and job.job_id == "id-1"
    reg.add(job)
    again, existing = reg.new_job(r)
    assert existing and again is job
    with pytest.raises(RequestConflict, match="different request"):
        reg.new_job(ProofRequest(ProofKind.DEMO, request_id="id-1", vanilla_proof=b"y"))
    anon1, _ = reg.new_job(ProofRequest(ProofKind.DEMO))
    anon2, _ = reg.new_job(ProofRequest(ProofKind.DEMO))
    assert anon1.job_id != anon2.job_id  # no request_id: a fresh uuid each time
    with pytest.raises(JobNotFound):
        reg.get("nope")


def test_prune_forgets_only_old_finished_jobs() -> None:
    reg = JobRegistry()
    old, _ = reg.new_job(ProofRequest(ProofKind.DEMO, request_id="old"))
    new, _ = reg.new_job(ProofRequest(ProofKind.DEMO, request_id="new"))
    live, _ = reg.new_job(ProofRequest(ProofKind.DEMO, request_id="live"))
    for j in (old, new, live):
        reg.add(j)
    old.state, old.finished_at = JobState.COMPLETED, 100.0
    new.state, new.finished_at = JobState.FAILED, 300.0
    assert reg.prune(200.0) == ["old"]
    assert {j.job_id for j in reg.all()} == {"new", "live"}


def test_stage_clock_counts_overlapping_partitions_once() -> None:
    clock = StageClock()
    assert clock.add("gpu_compute", 10.0, 11.0) == pytest.approx(1.0)
    # a second worker proving at the same time adds only what it extends
    assert clock.add("gpu_compute", 10.5, 11.5) == pytest.approx(1.5)
    # a disjoint span adds in full; one arriving out of order merges in place
    assert clock.add("gpu_compute", 20.0, 21.0) == pytest.approx(2.5)
    assert clock.add("gpu_compute", 11.4, 20.1) == pytest.approx(11.0)
    # stages are separate; an inverted span counts as empty
    assert clock.add("verify", 5.0, 4.0) == 0.0


def test_job_stages_never_exceed_total() -> None:
    reg = JobRegistry()
    job, _ = reg.new_job(ProofRequest(ProofKind.WINNING_POST, vanilla_proofs=(b"a",)))
    t0 = job.submitted_mono
    assert t0 is not None
    for start in (0.0, 0.001, 0.002):  # three partitions on two workers, overlapping
        job.stage("gpu_compute", t0 + start, t0 + start + 0.004)
    assert job.timings.gpu_compute_ms == pytest.approx(6.0)
    time.sleep(0.01)
    assert job.elapsed_ms() >= job.timings.gpu_compute_ms
