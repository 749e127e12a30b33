"""The engine in process: journal recovery, and failures that must never return a proof."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import Job, JobState, ProofKind, ProofRequest, ShuttingDown
from cuzk.engine.journal import Journal
from cuzk.engine.kinds import KindRegistry, demo
from cuzk.engine.kinds.base import PartitionInput, Witness, key_host_bytes
from cuzk.errors import SynthesisError

C = DemoCircuit(rounds=20, words=1)


def config(tmp_path: Path, **memory: str) -> Config:
    return Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB", "eviction_min_idle": "0s", **memory},
        gpus={"backend": "cpu"},
    )


def request(partitions: int = 1, request_id: str = "") -> ProofRequest:
    return ProofRequest(
        ProofKind.DEMO, request_id=request_id, vanilla_proof=demo.make_vanilla(C, partitions)
    )


class Lying(demo.DemoKind):
    """Synthesizes a witness for different public inputs than it claims."""

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        w = super().synthesize(cid, partition)
        if partition.index == 1:
            x, out = w.public_inputs
            return Witness(w.assignment, (x, out + 1))
        return w


class Broken(demo.DemoKind):
    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        if partition.data[0] % 2:
            raise SynthesisError("the witness cannot be built: odd x")
        return super().synthesize(cid, partition)


def engine_with(tmp_path: Path, kind: demo.DemoKind, **memory: str) -> Engine:
    reg = KindRegistry()
    reg.register(kind)
    e = Engine(config(tmp_path, **memory), kinds=reg)
    e.start()
    return e


def test_a_proof_that_does_not_verify_is_never_returned(tmp_path: Path) -> None:
    e = engine_with(tmp_path, Lying())
    try:
        job, _ = e.await_job(e.submit(request(3)).job_id, 60)
        assert job.state == JobState.FAILED
        assert "partition 1: the proof did not verify (not returned)" in job.error
        assert job.proof == b""
        ok, _ = e.await_job(e.submit(request(1)).job_id, 60)  # partition 0 only: honest
        assert ok.state == JobState.COMPLETED and len(ok.proof) == 192
    finally:
        e.stop()


def test_synthesis_errors_fail_their_job_only(tmp_path: Path) -> None:
    e = engine_with(tmp_path, Broken())
    try:
        ids = [e.submit(request(1)).job_id for _ in range(6)]
        jobs = [e.await_job(i, 60)[0] for i in ids]
        assert all(j.request.vanilla_proof == b"" for j in jobs)  # dropped when finished
        failed = [j for j in jobs if j.state == JobState.FAILED]
        done = [j for j in jobs if j.state == JobState.COMPLETED]
        assert len(failed) + len(done) == 6
        for j in failed:
            assert j.error == "partition 0: the witness cannot be built: odd x"
        # Every partition's working set came back; only the hot key stays reserved.
        cid = demo.circuit_id(C.rounds, C.words)
        assert e.host_budget.reserved == key_host_bytes(Broken().r1cs(cid))
        assert all(s.ref_count == 0 for s in e.keys.status())
    finally:
        e.stop()


def test_a_partition_larger_than_the_budget_fails_with_the_reason(tmp_path: Path) -> None:
    e = engine_with(tmp_path, demo.DemoKind(), total_budget="64KiB")
    try:
        job, _ = e.await_job(e.submit(request(1)).job_id, 60)
        assert job.state == JobState.FAILED
        assert "more than the whole budget" in job.error
    finally:
        e.stop()


def test_journal_recovery_resumes_or_fails_every_unfinished_job(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite")
    good = request(2, "good")
    bad = ProofRequest(ProofKind.DEMO, request_id="bad", vanilla_proof=b"{garbage")
    gone_kind = ProofRequest(ProofKind.WINNING_POST, request_id="post", vanilla_proofs=(b"v",))
    done = request(1, "done")
    for r in (good, bad, gone_kind, done):
        j.insert(Job(r.request_id, r, r.effective_priority(), time.time(), r.digest()))
    finished = Job("done", done, done.effective_priority(), time.time(), done.digest())
    finished.state, finished.finished_at, finished.proof = JobState.COMPLETED, time.time(), b"p"
    j.finish(finished)
    j.close()

    e = Engine(config(tmp_path))
    e.start()
    try:
        resumed, _ = e.await_job("good", 60)
        assert resumed.state == JobState.COMPLETED and len(resumed.proof) == 2 * 192
        failed, _ = e.await_job("bad", 1)
        assert failed.state == JobState.FAILED
        assert failed.error.startswith("could not be resumed after a restart: demo vanilla proof")
        post, _ = e.await_job("post", 1)
        assert post.state == JobState.FAILED
        assert "randomness" in post.error
        old, _ = e.await_job("done", 1)
        assert old.state == JobState.COMPLETED and old.proof == b"p"
        # Idempotency survives the restart.
        assert e.submit(good).job_id == "good"
    finally:
        e.stop()
    states = {r.job_id: r.state for r in Journal(tmp_path / "j.sqlite").records()}
    assert states == {
        "good": JobState.COMPLETED,
        "bad": JobState.FAILED,
        "post": JobState.FAILED,
        "done": JobState.COMPLETED,
    }


# The jobs table as schema 1 created it (request_id was the job id, unique).
SCHEMA_1 = """
CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY, request_id TEXT NOT NULL, digest BLOB NOT NULL,
    proof_kind INTEGER NOT NULL, priority INTEGER NOT NULL, meta TEXT NOT NULL,
    vanilla_proof BLOB NOT NULL, vanilla_list BLOB NOT NULL, state TEXT NOT NULL,
    submitted_at REAL NOT NULL, finished_at REAL, error TEXT NOT NULL DEFAULT '',
    proof BLOB NOT NULL DEFAULT x'', timings TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX jobs_state ON jobs(state);
PRAGMA user_version=1;
"""


def test_a_schema_1_journal_answers_retries_as_curio_sends_them(tmp_path: Path) -> None:
    import json
    import sqlite3

    path = tmp_path / "j.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_1)
    done, failed = request(1, "porep-1000-1"), request(1, "porep-1000-2")
    meta = {
        "sector_size": 0,
        "registered_proof": 0,
        "priority": 0,
        "sector_number": 0,
        "miner_id": 0,
        "randomness": "",
        "partition_index": 0,
        "comm_r_old": "",
        "comm_r_new": "",
        "comm_d_new": "",
    }
    now = time.time()
    for r, state, proof, error in (
        (done, "COMPLETED", b"p" * 192, ""),
        (failed, "FAILED", b"", "x"),
    ):
        db.execute(
            "INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,'{}')",
            (
                r.request_id,
                r.request_id,
                r.digest(),
                int(r.proof_kind),
                2,
                json.dumps({**meta, "request_id": r.request_id}),
                b"" if state == "COMPLETED" else r.vanilla_proof,
                b"",
                state,
                now - 10,
                now - 5,
                error,
                proof,
            ),
        )
    db.commit()
    db.close()

    e = Engine(config(tmp_path))
    e.start()
    try:
        # COMPLETED within retention: the same job, its proof, nothing proven again.
        again = e.submit(done)
        assert again.existing and again.job_id == "porep-1000-1"
        assert e.registry.get("porep-1000-1").proof == b"p" * 192
        # FAILED: the retry is a new attempt, and it is proven.
        retry = e.submit(failed)
        assert not retry.existing and retry.job_id == "porep-1000-2#2"
        job, _ = e.await_job(retry.job_id, 60)
        assert job.state == JobState.COMPLETED and len(job.proof) == 192
        assert e.registry.get("porep-1000-2").state == JobState.FAILED  # history kept
        assert e.totals[JobState.COMPLETED] == 1
    finally:
        e.stop()
    j = Journal(path)
    states = {r.job_id: r.state for r in j.records()}
    j.close()
    assert states == {
        "porep-1000-1": JobState.COMPLETED,
        "porep-1000-2": JobState.FAILED,
        "porep-1000-2#2": JobState.COMPLETED,
    }
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 2


# --- under attack (issue 15, items 1 and 6) ---------------------------------------------------
def test_one_engine_per_journal_the_second_names_the_first_pid(tmp_path: Path) -> None:
    import os

    import pytest

    from cuzk.errors import CuzkError

    first = Engine(config(tmp_path))
    first.start()
    try:
        job_id = first.submit(request(1, "before")).job_id
        second = Engine(config(tmp_path))
        with pytest.raises(
            CuzkError, match=rf"in use by another cuzk-daemon \(pid {os.getpid()}\)"
        ):
            second.start()
        # The first is untouched: its job finishes, its journal is its own.
        job, _ = first.await_job(job_id, 60)
        assert job.state == JobState.COMPLETED
        assert first.submit(request(1, "after")).job_id == "after"
    finally:
        first.stop()
    third = Engine(config(tmp_path))  # the lock went with the first engine
    third.start()
    try:
        assert third.registry.get("before").state == JobState.COMPLETED
    finally:
        third.stop()


def test_request_ids_that_forge_log_lines_or_bloat_the_journal_are_refused(tmp_path: Path):
    import pytest

    from cuzk.errors import InputError

    e = Engine(config(tmp_path))
    e.start()
    try:
        refused = {
            "x" * (1 << 20): r"^request: request_id: 1048576 bytes, at most 256",
            "porep-1\n2026-12-01 INFO forged": r"request_id: control character U\+000A at 7",
            "tab\there": r"control character U\+0009 at 3",
            "nul\x00": r"control character U\+0000 at 3",
            "sep\u2028": r"control character U\+2028 at 3",
            "rtl\u202e": r"control character U\+202E at 3",
        }
        for rid, message in refused.items():
            with pytest.raises(InputError, match=message):
                e.submit(request(1, rid))
        assert e.registry.all() == []  # nothing of them was accepted or journalled
        assert e.journal is not None and e.journal.records() == []
        for rid in ("porep-1000-7", "wdpost-1000-0#x", "secteur-é-12", "x" * 256):
            assert e.submit(request(1, rid)).job_id == rid
    finally:
        e.stop()


def test_drain_waits_for_a_submission_under_way(tmp_path: Path) -> None:
    """A submission journalling its job while the drain starts: the drain waits for
    that job (it was accepted), and a later submission is refused."""
    e = engine_with(tmp_path, demo.DemoKind())
    try:
        assert e.journal is not None
        insert, journalling, go_on = e.journal.insert, threading.Event(), threading.Event()

        def slow_insert(job: Job) -> None:
            journalling.set()
            assert go_on.wait(60)
            insert(job)

        e.journal.insert = slow_insert
        accepted: list = []
        t = threading.Thread(target=lambda: accepted.append(e.submit(request(1))))
        t.start()
        assert journalling.wait(60)
        drained: list[bool] = []
        d = threading.Thread(target=lambda: drained.append(e.drain(120)))
        d.start()
        go_on.set()
        t.join(60)
        d.join(120)
        assert drained == [True] and len(accepted) == 1
        job = e.registry.get(accepted[0].job_id)
        assert job.state == JobState.COMPLETED, job.error  # drained, not left behind
        with pytest.raises(ShuttingDown):
            e.submit(request(1))
    finally:
        e.stop()
