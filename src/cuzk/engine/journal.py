"""The job journal: every accepted job, durably, in SQLite.

A job is written (and fsynced) before its submission is acknowledged, and
updated when it ends. After a crash or SIGKILL the daemon reads the journal
at start: finished jobs stay answerable, and every job that had not
finished is resumed from its stored request, or failed with the reason it
cannot be. No accepted job vanishes.

A job's inputs (its vanilla proofs, up to ~50 MB for a 32GiB PoRep) are kept
only while it is unfinished: every terminal state drops them, and a restart
reads back the inputs of unfinished jobs only. The file (and SQLite's -wal and
-shm beside it, which take its mode) is readable by its owner only: it holds
every request and proof.

Records are keyed by job id. Schema 2 (this one) may hold several jobs of one
request_id (a retry after FAILED or CANCELLED, or another request under the
same id: see :mod:`cuzk.engine.jobs`); schema 1 journals, where the job id
was the request_id, are read as they are and marked 2 on open. A journal of
a newer schema than this code knows is refused rather than misread.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from cuzk.engine.jobs import Job, JobState, Priority, ProofKind, ProofRequest, Timings
from cuzk.errors import InputError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
_COLUMNS = {
    "job_id",
    "request_id",
    "digest",
    "proof_kind",
    "priority",
    "meta",
    "vanilla_proof",
    "vanilla_list",
    "state",
    "submitted_at",
    "finished_at",
    "error",
    "proof",
    "timings",
}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id        TEXT PRIMARY KEY,
    request_id    TEXT NOT NULL,
    digest        BLOB NOT NULL,
    proof_kind    INTEGER NOT NULL,
    priority      INTEGER NOT NULL,
    meta          TEXT NOT NULL,
    vanilla_proof BLOB NOT NULL,
    vanilla_list  BLOB NOT NULL,
    state         TEXT NOT NULL,
    submitted_at  REAL NOT NULL,
    finished_at   REAL,
    error         TEXT NOT NULL DEFAULT '',
    proof         BLOB NOT NULL DEFAULT x'',
    timings       TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
"""
_TERMINAL = "('COMPLETED','FAILED','CANCELLED')"
# Dropped payloads are given back to the file system once this many bytes are free.
COMPACT_AFTER_BYTES = 4 << 20
# Finished jobs past max_retained_jobs that cancels leave for a later write to delete.
FORGET_BATCH = 256
WAL_LIMIT = 64 << 20


@dataclass(frozen=True)
class JournalRecord:
    job_id: str
    request: ProofRequest
    digest: bytes
    priority: Priority
    state: JobState
    submitted_at: float
    finished_at: float | None
    error: str
    proof: bytes
    timings: Timings
    client: str = ""  # the identity that submitted it


def _pack_list(items: tuple[bytes, ...]) -> bytes:
    return b"".join(len(b).to_bytes(8, "little") + b for b in items)


def _unpack_list(blob: bytes) -> tuple[bytes, ...]:
    out, i = [], 0
    while i < len(blob):
        n = int.from_bytes(blob[i : i + 8], "little")
        out.append(bytes(blob[i + 8 : i + 8 + n]))
        i += 8 + n
    return tuple(out)


def _private(path: Path) -> None:
    """Create ``path`` readable by its owner only, or make it so (an earlier version's
    journal was 0644). SQLite gives the -wal and -shm files the journal's mode."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            os.fchmod(fd, 0o600)
            log.warning("journal %s was readable by others (%o); made private (600)", path, mode)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        try:
            if stat.S_IMODE(side.stat().st_mode) & 0o077:
                side.chmod(0o600)
        except FileNotFoundError:
            pass


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        _private(self.path)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        # freed pages go back to the file system (a dropped payload's space)
        self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # acknowledged means on disk
        # the -wal file is cut back to this after a checkpoint (a 50 MB request
        # passes through it on its way into the file)
        self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
        self._freed = 0  # payload bytes dropped since the last compaction
        try:
            self._open_schema()
            if not fresh:
                self._migrate_vacuum()
        except Exception:
            self._db.close()
            raise
        # Cancels are written through a connection of their own that never fsyncs
        # (:meth:`finish`): one statement, no pragma switched back and forth, so a
        # cancel waits for the interpreter's lock once, not six times, while another
        # thread computes (issue 32's CancelProof tail under a CPU-bound prover).
        self._unsynced = sqlite3.connect(
            str(self.path), check_same_thread=False, isolation_level=None
        )
        self._unsynced.execute("PRAGMA synchronous=NORMAL")
        self._forget: list[str] = []  # finished jobs past the cap, not deleted yet

    def _migrate_vacuum(self) -> None:
        """A journal made before incremental vacuum kept every dropped payload's pages
        (a 2 GiB file stayed 2 GiB with no job in it): rebuilt once so that it can
        give them back."""
        if self._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
            return
        before = self.path.stat().st_size
        self._db.execute("VACUUM")  # takes the auto_vacuum set above
        self._compact()  # the rebuilt pages out of the -wal file
        log.info(
            "journal %s: rebuilt to give back dropped requests' space (%d → %d bytes)",
            self.path,
            before,
            self.path.stat().st_size,
        )

    def _open_schema(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise InputError(
                str(self.path),
                "user_version",
                f"journal schema {version} is newer than this cuzk's ({SCHEMA_VERSION}); "
                "run the cuzk that wrote it, or move the file away to start an empty journal",
            )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
        if columns and not _COLUMNS.issubset(columns):
            raise InputError(
                str(self.path),
                "jobs",
                f"not a cuzk journal (missing columns {', '.join(sorted(_COLUMNS - columns))})",
            )
        if columns and version < SCHEMA_VERSION:
            # Schema 1 → 2: the rows are valid as they are (job ids are unique; the
            # first job of a request_id keeps the request_id as its id); only the
            # meaning widens, so that several jobs may share a request_id.
            log.info(
                "journal %s: schema %d → %d (request_id no longer unique: a retry after "
                "FAILED or CANCELLED, or another request under the same id, is a new job)",
                self.path,
                max(version, 1),
                SCHEMA_VERSION,
            )
        self._db.executescript(_SCHEMA)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        # Earlier versions kept a FAILED or CANCELLED job's inputs: drop them now.
        dropped = self._db.execute(
            f"UPDATE jobs SET vanilla_proof=x'', vanilla_list=x'' WHERE state IN {_TERMINAL} "
            "AND (length(vanilla_proof) > 0 OR length(vanilla_list) > 0)"
        ).rowcount
        if dropped:
            log.info("journal %s: dropped the inputs of %d finished job(s)", self.path, dropped)
            self.compact()

    def compact(self) -> None:
        """Give freed pages back to the file system, and the -wal file's too."""
        with self._lock:
            self._compact()

    def _compact(self) -> None:
        # the pragma frees one page a step and execute() steps once; a script is
        # stepped to its end
        self._db.executescript("PRAGMA incremental_vacuum;")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        self._freed = 0

    def file_bytes(self) -> int:
        """The journal's size on disk, its -wal file included."""
        wal = self.path.with_name(self.path.name + "-wal")
        return self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

    def close(self) -> None:
        with self._lock:
            self._unsynced.close()
            self._db.close()

    def insert(self, job: Job) -> None:
        r = job.request
        meta = {
            "request_id": r.request_id,
            "sector_size": r.sector_size,
            "registered_proof": r.registered_proof,
            "priority": int(r.priority),
            "sector_number": r.sector_number,
            "miner_id": r.miner_id,
            "randomness": r.randomness.hex(),
            "partition_index": r.partition_index,
            "comm_r_old": r.comm_r_old.hex(),
            "comm_r_new": r.comm_r_new.hex(),
            "comm_d_new": r.comm_d_new.hex(),
            "client": job.client,
        }
        with self._lock:
            self._db.execute(
                # Plain INSERT: a job id is never reused while its record exists.
                "INSERT INTO jobs (job_id, request_id, digest, proof_kind, priority, "
                "meta, vanilla_proof, vanilla_list, state, submitted_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.job_id,
                    r.request_id,
                    job.digest,
                    int(r.proof_kind),
                    int(job.priority),
                    json.dumps(meta),
                    r.vanilla_proof,
                    _pack_list(r.vanilla_proofs),
                    job.state.value,
                    job.submitted_at,
                ),
            )

    def finish(self, job: Job, forget: list[str] | tuple[str, ...] = ()) -> None:
        """Record a job's end, and forget the finished jobs ``forget`` (past
        ``max_retained_jobs``) in the same transaction.

        A cancel is written to the file (it survives the daemon being killed) but
        not fsynced: the next fsynced write (a submission, any other end) or
        checkpoint makes it durable. A cancel answers a client at once, and an
        fsync took up to ~110 ms on a busy disk (issue 32's CancelProof tail);
        what a power cut in that moment can cost is a cancelled job resumed and
        proven after the restart, never a lost or wrong answer. A cancel is one
        statement: the jobs it forgets wait (up to FORGET_BATCH of them) for the
        next write that is a transaction anyway; a daemon killed meanwhile prunes
        them when it starts (:meth:`prune`, ``keep``)."""
        t = job.timings
        timings = {k: getattr(t, k) for k in t.__dataclass_fields__}
        r = job.request
        payload = len(r.vanilla_proof) + sum(len(v) for v in r.vanilla_proofs)
        cancel = job.state.value == "CANCELLED"
        with self._lock:
            self._forget.extend(forget)
            if cancel and len(self._forget) < FORGET_BATCH:
                forget = ()
            else:
                forget, self._forget = self._forget, []
            self._finish(self._unsynced if cancel else self._db, job, forget, timings)
            self._freed += payload
            if self._freed >= COMPACT_AFTER_BYTES:  # the file shrinks as payloads go
                self._compact()

    @staticmethod
    def _finish(
        db: sqlite3.Connection,
        job: Job,
        forget: list[str] | tuple[str, ...],
        timings: dict[str, float],
    ) -> None:
        # Every terminal state drops the inputs: a retry after FAILED or CANCELLED
        # carries its own, and only the result stays answerable.
        update = (
            "UPDATE jobs SET state=?, finished_at=?, error=?, proof=?, timings=?, "
            "vanilla_proof=x'', vanilla_list=x'' WHERE job_id=?",
            (
                job.state.value,
                job.finished_at,
                job.error,
                job.proof,
                json.dumps(timings),
                job.job_id,
            ),
        )
        if not forget:  # one statement is its own transaction
            db.execute(*update)
            return
        db.execute("BEGIN")
        try:
            db.execute(*update)
            db.executemany(
                f"DELETE FROM jobs WHERE job_id=? AND state IN {_TERMINAL}",
                [(job_id,) for job_id in forget],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def prune(self, older_than: float, keep: int | None = None) -> int:
        """Forget finished jobs that ended before ``older_than``, and all but the
        ``keep`` newest finished ones; how many were forgotten."""
        with self._lock:
            cur = self._db.execute(
                f"DELETE FROM jobs WHERE state IN {_TERMINAL} AND finished_at < ?",
                (older_than,),
            )
            n = cur.rowcount
            if keep is not None:
                n += self._db.execute(
                    f"DELETE FROM jobs WHERE state IN {_TERMINAL} AND job_id NOT IN "
                    f"(SELECT job_id FROM jobs WHERE state IN {_TERMINAL} "
                    "ORDER BY finished_at DESC LIMIT ?)",
                    (keep,),
                ).rowcount
            return n

    def records(self) -> list[JournalRecord]:
        """Every job, oldest submission first."""
        with self._lock:
            # A finished job's inputs are never read back (they are dropped, and an
            # older journal's are dropped on open): only unfinished ones are resumed.
            rows = self._db.execute(
                "SELECT job_id, digest, proof_kind, priority, meta, "
                f"CASE WHEN state IN {_TERMINAL} THEN x'' ELSE vanilla_proof END, "
                f"CASE WHEN state IN {_TERMINAL} THEN x'' ELSE vanilla_list END, "
                "state, submitted_at, finished_at, error, proof, timings FROM jobs "
                "ORDER BY submitted_at, rowid"
            ).fetchall()
        out = []
        for row in rows:
            (job_id, digest, kind, prio, meta, vp, vl, state, sub, fin, err, proof, tim) = row
            m = json.loads(meta)
            try:
                proof_kind = ProofKind(kind)
            except ValueError:
                proof_kind = ProofKind.UNSPECIFIED
            request = ProofRequest(
                proof_kind=proof_kind,
                request_id=m["request_id"],
                sector_size=m["sector_size"],
                registered_proof=m["registered_proof"],
                priority=Priority(m["priority"]),
                vanilla_proof=bytes(vp),
                vanilla_proofs=_unpack_list(bytes(vl)),
                sector_number=m["sector_number"],
                miner_id=m["miner_id"],
                randomness=bytes.fromhex(m["randomness"]),
                partition_index=m["partition_index"],
                comm_r_old=bytes.fromhex(m["comm_r_old"]),
                comm_r_new=bytes.fromhex(m["comm_r_new"]),
                comm_d_new=bytes.fromhex(m["comm_d_new"]),
            )
            out.append(
                JournalRecord(
                    job_id=job_id,
                    request=request,
                    digest=bytes(digest),
                    priority=Priority(prio),
                    state=JobState(state),
                    submitted_at=sub,
                    finished_at=fin,
                    error=err,
                    proof=bytes(proof),
                    timings=Timings(**json.loads(tim)),
                    client=m.get("client", ""),  # absent before client identities
                )
            )
        return out
