"""The SQLite journal: what it stores comes back, finished jobs are pruned."""

from __future__ import annotations

import sqlite3
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cuzk.engine import journal as journal_module
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
    # every terminal state drops the inputs (issue 15): only the result stays answerable
    assert (
        recs["failed"].request.vanilla_proofs == () and recs["failed"].request.vanilla_proof == b""
    )
    assert recs["live"].request.vanilla_proofs == live.request.vanilla_proofs
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


# --- under attack (issue 15, items 2 and 7) -------------------------------------------------
def payload_lengths(path: Path) -> dict[str, tuple[int, int]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT job_id, length(vanilla_proof), length(vanilla_list) FROM jobs"
        ).fetchall()
    finally:
        db.close()
    return {job_id: (a, b) for job_id, a, b in rows}


def test_payloads_are_dropped_at_every_terminal_state(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    jobs = {state: make_job(state.value) for state in JobState}
    for job in jobs.values():
        j.insert(job)
    for state, job in jobs.items():
        if state.terminal:
            job.state, job.finished_at = state, 10.0
            j.finish(job)
    lengths = payload_lengths(path)
    for state, job in jobs.items():
        if state.terminal:
            assert lengths[job.job_id] == (0, 0), state
        else:  # an unfinished job keeps what it needs to be resumed
            assert lengths[job.job_id] == (3, 2 + 0 + 2000 + 3 * 8), state
    j.close()


def test_a_restart_reads_no_finished_payload_back(tmp_path: Path) -> None:
    """A journal written before payloads were dropped at FAILED and CANCELLED: opening it
    drops them, and records() never reads a finished job's payload."""
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    old, live = make_job("cancelled-long-ago"), make_job("live")
    j.insert(old)
    j.insert(live)
    j.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE jobs SET state='CANCELLED', finished_at=5 WHERE job_id='cancelled-long-ago'")
    db.commit()
    db.close()
    assert payload_lengths(path)["cancelled-long-ago"] != (0, 0)
    j = Journal(path)
    recs = {r.job_id: r for r in j.records()}
    assert recs["cancelled-long-ago"].request.vanilla_proofs == ()
    assert recs["live"].request == live.request
    j.close()
    assert payload_lengths(path)["cancelled-long-ago"] == (0, 0)


def test_the_journal_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    j.insert(make_job("a"))  # the WAL and its index exist once written
    files = [path, path.with_name("j.sqlite-wal"), path.with_name("j.sqlite-shm")]
    assert all(p.exists() for p in files)
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o600 for p in files}
    j.close()
    # A journal that an earlier version left world-readable is made private on open.
    for p in files:
        if p.exists():
            p.chmod(0o644)
    Journal(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --- the file shrinks (issue 32, item 2) ---------------------------------------------------
def _big(job_id: str, size: int) -> Job:
    job = make_job(job_id)
    job.request = replace(job.request, vanilla_proof=b"{" * size)
    return job


def test_the_file_shrinks_when_payloads_are_dropped(tmp_path: Path) -> None:
    """Issue 32: after 20 padded requests were cancelled the journal stayed 2 GiB, also
    across a restart. Dropped payloads now give their pages back (scaled down: 6 x 2 MiB)."""
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    empty = j.file_bytes()
    jobs = [_big(f"j{i}", 2 << 20) for i in range(6)]
    for job in jobs:
        j.insert(job)
    full = j.file_bytes()
    assert full > 12 << 20
    for job in jobs:
        job.state, job.finished_at = JobState.CANCELLED, 10.0
        j.finish(job)
    assert j.file_bytes() < empty + (5 << 20)  # at most what waits for the next compaction
    j.compact()
    assert j.file_bytes() < empty + (1 << 20)
    j.close()


def test_a_journal_made_without_incremental_vacuum_is_rebuilt_once(tmp_path: Path) -> None:
    """A journal written before auto_vacuum kept every dropped payload's pages: opening
    it rebuilds it, after which it gives them back like a new one."""
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    j.close()
    db = sqlite3.connect(path)  # as an earlier version left it: no auto_vacuum
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("PRAGMA auto_vacuum=NONE")
    db.execute("VACUUM")
    db.execute(
        "INSERT INTO jobs (job_id, request_id, digest, proof_kind, priority, meta, vanilla_proof,"
        " vanilla_list, state, submitted_at, finished_at) SELECT 'x', 'x', x'', 2, 2, '{}', "
        "zeroblob(8388608), x'', 'CANCELLED', 1, 2"
    )
    db.commit()
    assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    db.close()
    assert path.stat().st_size > 8 << 20
    j = Journal(path)  # drops the finished payload and rebuilds the file
    assert j.file_bytes() < 1 << 20
    j.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    db.close()


def test_a_cancel_is_written_without_an_fsync_and_kept(tmp_path: Path) -> None:
    """A cancel is answered without waiting for the disk (issue 32's CancelProof tail
    was an fsync), in one statement (each statement waits for the interpreter's lock
    again); it is in the file at once (a killed daemon reads it back), and every
    other write still fsyncs."""
    j = Journal(tmp_path / "j.sqlite")
    job, other = make_job("c"), make_job("d")
    j.insert(job)
    j.insert(other)
    seen: list[tuple[str, int]] = []
    for db in (j._db, j._unsynced):

        def trace(sql: str, db: sqlite3.Connection = db) -> None:
            if sql.split()[0] in ("BEGIN", "UPDATE", "DELETE", "COMMIT"):
                seen.append((sql.split()[0], db.execute("PRAGMA synchronous").fetchone()[0]))

        db.set_trace_callback(trace)
    job.state, job.finished_at = JobState.CANCELLED, 1.0
    j.finish(job)
    other.state, other.finished_at = JobState.FAILED, 2.0
    j.finish(other)
    for db in (j._db, j._unsynced):
        db.set_trace_callback(None)
    # NORMAL (1) for the cancel, FULL (2) for the failure: one statement each
    assert seen == [("UPDATE", 1), ("UPDATE", 2)]
    # read by another connection, as a daemon started after a kill reads it
    states = dict(sqlite3.connect(tmp_path / "j.sqlite").execute("SELECT job_id, state FROM jobs"))
    assert states == {"c": "CANCELLED", "d": "FAILED"}
    j.close()


def test_jobs_a_cancel_forgets_are_deleted_by_a_later_write(tmp_path: Path) -> None:
    """A cancel leaves the finished jobs it forgets (past max_retained_jobs) for a
    later write, at most FORGET_BATCH of them: the next fsynced end deletes them
    all, and a daemon killed meanwhile prunes them when it starts."""
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    old = [make_job(f"old{i}") for i in range(3)]
    for n, job in enumerate(old):
        j.insert(job)
        job.state, job.finished_at = JobState.COMPLETED, float(n)
        j.finish(job)
    c, d = make_job("c"), make_job("d")
    j.insert(c)
    j.insert(d)
    c.state, c.finished_at = JobState.CANCELLED, 10.0
    j.finish(c, forget=["old0", "old1"])

    def ids() -> set[str]:
        return {r[0] for r in sqlite3.connect(path).execute("SELECT job_id FROM jobs")}

    assert ids() == {"old0", "old1", "old2", "c", "d"}  # the cancel was one statement
    assert j.prune(0.0, keep=2) == 2  # what a restart does: the newest two kept
    assert ids() == {"old2", "c", "d"}
    d.state, d.finished_at = JobState.FAILED, 11.0
    j.finish(d, forget=["old2"])  # and old0, old1, already gone: harmless
    assert ids() == {"c", "d"}
    j.close()


def test_a_run_of_cancels_deletes_its_forgotten_jobs_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "FORGET_BATCH", 8)
    j = Journal(tmp_path / "j.sqlite")
    olds = [make_job(f"old{i}") for i in range(8 + 1)]
    for job in olds:
        j.insert(job)
        job.state, job.finished_at = JobState.COMPLETED, 1.0
        j.finish(job)
    for i, old in enumerate(olds):
        job = make_job(f"c{i}")
        j.insert(job)
        job.state, job.finished_at = JobState.CANCELLED, 2.0
        j.finish(job, forget=[old.job_id])
    left = j._db.execute("SELECT count(*) FROM jobs WHERE job_id LIKE 'old%'").fetchone()[0]
    assert left == 1  # FORGET_BATCH (8) deleted together; the last one waits
    j.close()
