"""Jobs: default priorities, request digests, request_id as Curio uses it."""

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


def _add(reg: JobRegistry, request: ProofRequest) -> tuple[str, bool]:
    job, existing = reg.new_job(request)
    if not existing:
        reg.add(job)
    return job.job_id, existing


@pytest.mark.parametrize("state", [JobState.QUEUED, JobState.RUNNING, JobState.COMPLETED])
def test_an_identical_request_is_answered_by_its_job(state: JobState) -> None:
    reg = JobRegistry()
    r = ProofRequest(ProofKind.DEMO, request_id="porep-1000-5", vanilla_proof=b"x")
    assert _add(reg, r) == ("porep-1000-5", False)
    reg.get("porep-1000-5").state = state
    assert _add(reg, r) == ("porep-1000-5", True)
    assert reg.answering(r) is reg.get("porep-1000-5")
    assert len(reg.all()) == 1


@pytest.mark.parametrize("state", [JobState.FAILED, JobState.CANCELLED])
def test_a_retry_after_failed_or_cancelled_is_a_new_attempt(state: JobState) -> None:
    reg = JobRegistry()
    r = ProofRequest(ProofKind.DEMO, request_id="porep-1000-5", vanilla_proof=b"x")
    _add(reg, r)
    reg.get("porep-1000-5").state = state
    assert reg.answering(r) is None
    assert _add(reg, r) == ("porep-1000-5#2", False)
    assert reg.answering(r) is reg.get("porep-1000-5#2")  # the newest attempt answers now
    assert _add(reg, r) == ("porep-1000-5#2", True)
    reg.get("porep-1000-5#2").state = state
    assert _add(reg, r) == ("porep-1000-5#3", False)
    assert reg.get("porep-1000-5").state == state  # earlier attempts stay answerable by id


def test_the_same_id_with_other_content_is_another_job() -> None:
    # Curio's WindowPoSt: every partition of a deadline under one request_id.
    reg = JobRegistry()
    rid = "wdpost-1000-0-[1 2 3 4 5 6 7 8]"
    a = ProofRequest(ProofKind.WINDOW_POST_PARTITION, request_id=rid, vanilla_proofs=(b"s1",))
    b = ProofRequest(ProofKind.WINDOW_POST_PARTITION, request_id=rid, vanilla_proofs=(b"s2",))
    assert _add(reg, a) == (rid, False)
    assert _add(reg, b) == (f"{rid}#2", False)
    assert _add(reg, a) == (rid, True)
    assert _add(reg, b) == (f"{rid}#2", True)
    assert reg.get(rid).request is a and reg.get(f"{rid}#2").request is b
    anon1, _ = reg.new_job(ProofRequest(ProofKind.DEMO))
    anon2, _ = reg.new_job(ProofRequest(ProofKind.DEMO))
    assert anon1.job_id != anon2.job_id  # no request_id: a fresh uuid each time
    assert reg.answering(ProofRequest(ProofKind.DEMO)) is None
    with pytest.raises(JobNotFound):
        reg.get("nope")


def test_a_pruned_job_no_longer_answers() -> None:
    reg = JobRegistry()
    r = ProofRequest(ProofKind.DEMO, request_id="snap-1000-9", vanilla_proof=b"x")
    _add(reg, r)
    job = reg.get("snap-1000-9")
    job.state, job.finished_at = JobState.COMPLETED, 100.0
    assert reg.prune(200.0) == ["snap-1000-9"]
    assert reg.answering(r) is None
    assert _add(reg, r) == ("snap-1000-9", False)  # past job_retention: proven afresh


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
