"""The SQLite journal: what it stores comes back, finished jobs are pruned."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from cuzk.engine.jobs import Job, JobState, Priority, ProofKind, ProofRequest
from cuzk.engine.journal import Journal


def make_job(job_id: str, **kw) -> Job:
    req = ProofRequest(
        ProofKind.SNAP_DEALS_UPDATE,
        request_id=job_id,
        sector_size=32 << 30,
        registered_proof=3,
        priority=Priority.HIGH,
        vanilla_proof=b"\x00c1",
        vanilla_proofs=(b"p0", b"", b"p2" * 1000),
        sector_number=17,
        miner_id=1000,
        randomness=bytes(range(32)),
        partition_index=2,
        comm_r_old=b"\x01" * 32,
        comm_r_new=b"\x02" * 32,
        comm_d_new=b"\x03" * 32,
        **kw,
    )
    return Job(job_id, req, req.effective_priority(), time.time(), req.digest())


def test_round_trip(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite")
    job = make_job("a")
    j.insert(job)
    j.close()
    (rec,) = Journal(tmp_path / "j.sqlite").records()
    assert rec.request == job.request
    assert rec.digest == job.digest == rec.request.digest()
    assert rec.state == JobState.QUEUED and rec.priority == Priority.HIGH
    assert rec.submitted_at == job.submitted_at and rec.finished_at is None


def test_finish_and_prune(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite")
    done, failed, live = make_job("done"), make_job("failed"), make_job("live")
    for x in (done, failed, live):
        j.insert(x)
    done.state, done.finished_at, done.proof = JobState.COMPLETED, 100.0, b"\x07" * 192
    done.timings.gpu_compute_ms = 12.5
    failed.state, failed.finished_at, failed.error = JobState.FAILED, 300.0, "partition 1: bad"
    j.finish(done)
    j.finish(failed)
    recs = {r.job_id: r for r in j.records()}
    assert recs["done"].proof == b"\x07" * 192 and recs["done"].timings.gpu_compute_ms == 12.5
    assert recs["done"].request.vanilla_proofs == ()  # inputs of a completed job are dropped
    assert recs["failed"].error == "partition 1: bad"
    assert recs["failed"].request.vanilla_proofs == live.request.vanilla_proofs
    assert j.prune(200.0) == 1
    assert {r.job_id for r in j.records()} == {"failed", "live"}


def test_several_jobs_of_one_request_id_and_a_newer_schema_refused(tmp_path: Path) -> None:
    import sqlite3

    import pytest

    from cuzk.errors import InputError

    j = Journal(tmp_path / "j.sqlite")
    first = make_job("wdpost-1000-0")
    other = replace(first.request, vanilla_proofs=(b"another partition's sectors",))
    second = Job("wdpost-1000-0#2", other, other.effective_priority(), time.time(), other.digest())
    j.insert(first)
    j.insert(second)
    recs = j.records()
    assert [r.job_id for r in recs] == ["wdpost-1000-0", "wdpost-1000-0#2"]
    assert [r.request for r in recs] == [first.request, other]
    assert {r.request.request_id for r in recs} == {"wdpost-1000-0"}
    with pytest.raises(sqlite3.IntegrityError):
        j.insert(first)  # a job id is never reused while its record exists
    j.close()
    db = sqlite3.connect(tmp_path / "j.sqlite")
    db.execute("PRAGMA user_version=3")
    db.close()
    with pytest.raises(InputError, match=r"j.sqlite: user_version: journal schema 3 is newer"):
        Journal(tmp_path / "j.sqlite")
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE jobs (job_id TEXT)")
    db.close()
    with pytest.raises(InputError, match="not a cuzk journal"):
        Journal(other)
