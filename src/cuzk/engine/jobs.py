"""Jobs: what a client asked for, where it stands, and the registry of all of them.

A job is one proof request. It is split into partitions (a 32GiB PoRep has
ten) which move through the pipeline independently; the job completes when
every partition proof has been verified, and fails at its first error.

``request_id`` is the client's idempotency key and, as in Curio, the job id
when given: submitting the same request again returns the same job, and
reusing the id for a different request is an error.
"""

from __future__ import annotations

import enum
import hashlib
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from cuzk.errors import CuzkError, InputError, ResourceError


class ProofKind(enum.IntEnum):
    """Wire values of cuzk.v1.ProofKind (Curio's), plus our demo extension."""

    UNSPECIFIED = 0
    POREP_SEAL_COMMIT = 1
    SNAP_DEALS_UPDATE = 2
    WINDOW_POST_PARTITION = 3
    WINNING_POST = 4
    DEMO = 100  # cuzk extension: the built-in demo circuit

    @property
    def label(self) -> str:
        """Short name used in status, metrics and the bench tool's ``-t``."""
        return _KIND_LABELS[self]

    @staticmethod
    def from_label(label: str) -> ProofKind:
        for k, v in _KIND_LABELS.items():
            if v == label:
                return k
        raise InputError("request", "proof_kind", f"unknown proof kind {label!r}")


_KIND_LABELS = {
    ProofKind.UNSPECIFIED: "unspecified",
    ProofKind.POREP_SEAL_COMMIT: "porep",
    ProofKind.SNAP_DEALS_UPDATE: "snap",
    ProofKind.WINDOW_POST_PARTITION: "wpost",
    ProofKind.WINNING_POST: "winning",
    ProofKind.DEMO: "demo",
}


class Priority(enum.IntEnum):
    UNSPECIFIED = 0
    LOW = 1
    NORMAL = 2
    HIGH = 3
    CRITICAL = 4

    @staticmethod
    def default_for(kind: ProofKind) -> Priority:
        """WinningPoSt must land within its epoch; WindowPoSt within its deadline."""
        if kind == ProofKind.WINNING_POST:
            return Priority.CRITICAL
        if kind == ProofKind.WINDOW_POST_PARTITION:
            return Priority.HIGH
        return Priority.NORMAL


class JobState(enum.Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED)


class JobNotFound(CuzkError):
    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(f"no job {job_id!r} (unknown, or finished longer ago than job_retention)")


class RequestConflict(InputError):
    """A request_id reused for a different request."""


class UnsupportedKind(CuzkError):
    """A proof kind this daemon has no circuit for (yet)."""


class ShuttingDown(CuzkError):
    """The daemon is draining and accepts no new work."""


class InUse(ResourceError):
    """A proving key that cannot be evicted because proofs are using it."""


@dataclass(frozen=True)
class ProofRequest:
    """A SubmitProofRequest as the engine sees it (field names as in the .proto)."""

    proof_kind: ProofKind
    request_id: str = ""
    sector_size: int = 0
    registered_proof: int = 0
    priority: Priority = Priority.UNSPECIFIED
    vanilla_proof: bytes = b""
    vanilla_proofs: tuple[bytes, ...] = ()
    sector_number: int = 0
    miner_id: int = 0
    randomness: bytes = b""
    partition_index: int = 0
    comm_r_old: bytes = b""
    comm_r_new: bytes = b""
    comm_d_new: bytes = b""

    def effective_priority(self) -> Priority:
        if self.priority == Priority.UNSPECIFIED:
            return Priority.default_for(self.proof_kind)
        return self.priority

    def digest(self) -> bytes:
        """A hash of the whole request: equal requests, equal digests."""
        h = hashlib.sha256()
        for name in (
            "proof_kind",
            "sector_size",
            "registered_proof",
            "priority",
            "sector_number",
            "miner_id",
            "partition_index",
        ):
            h.update(f"{name}={int(getattr(self, name))};".encode())
        for name in ("vanilla_proof", "randomness", "comm_r_old", "comm_r_new", "comm_d_new"):
            b = getattr(self, name)
            h.update(f"{name}:{len(b)}:".encode())
            h.update(b)
        h.update(f"vanilla_proofs:{len(self.vanilla_proofs)}:".encode())
        for b in self.vanilla_proofs:
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
        return h.digest()


@dataclass
class Timings:
    """Milliseconds per stage, as AwaitProofResponse reports them.

    Each stage figure is wall time during which at least one of the job's
    partitions was in that stage (the union of their intervals, see
    StageClock), so no stage exceeds ``total_ms`` even when partitions overlap
    on several workers; the stages of different kinds may overlap each other.
    """

    queue_wait_ms: float = 0.0
    srs_load_ms: float = 0.0
    synthesis_ms: float = 0.0
    gpu_compute_ms: float = 0.0
    verify_ms: float = 0.0
    total_ms: float = 0.0


class StageClock:
    """Wall time per stage as the union of the intervals partitions spent there.

    Two partitions proven at once on two GPU workers for 1 s each count as
    1 s of ``gpu_compute_ms``, not 2 s. Times are ``time.monotonic()``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[str, list[tuple[float, float]]] = {}

    def add(self, stage: str, start: float, end: float) -> float:
        """Record [start, end] for a stage; returns the stage's covered seconds."""
        with self._lock:
            spans = self._spans.setdefault(stage, [])
            spans.append((start, max(start, end)))
            spans.sort()
            merged: list[tuple[float, float]] = []
            for a, b in spans:
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b))
                else:
                    merged.append((a, b))
            self._spans[stage] = merged
            return sum(b - a for a, b in merged)


@dataclass
class Job:
    job_id: str
    request: ProofRequest
    priority: Priority
    submitted_at: float  # time.time()
    digest: bytes
    state: JobState = JobState.QUEUED
    circuit_id: str = ""
    num_partitions: int = 0
    partition_proofs: dict[int, bytes] = field(default_factory=dict)
    proof: bytes = b""
    error: str = ""
    started_at: float | None = None  # first partition entered synthesis
    finished_at: float | None = None
    timings: Timings = field(default_factory=Timings)
    clock: StageClock = field(default_factory=StageClock, repr=False)
    # time.monotonic() at submission, so durations never see wall-clock steps; a job
    # restored from the journal was submitted before this process and has None
    submitted_mono: float | None = field(default_factory=time.monotonic)
    device: str = ""  # the device proving it now (for status)
    parsed: Any = None  # the kind's parsed request (partitions' inputs)
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def kind(self) -> ProofKind:
        return self.request.proof_kind

    def elapsed_ms(self) -> float:
        """Milliseconds since submission (monotonic; wall clock for a job restored from
        the journal, whose submission predates this process)."""
        if self.submitted_mono is None:
            return max(0.0, (time.time() - self.submitted_at) * 1000)
        return (time.monotonic() - self.submitted_mono) * 1000

    def stage(self, name: str, start: float, end: float) -> None:
        """Account [start, end] (time.monotonic) of one partition in a stage."""
        setattr(self.timings, f"{name}_ms", self.clock.add(name, start, end) * 1000)

    @property
    def cancelled(self) -> bool:
        return self.state == JobState.CANCELLED

    @property
    def finished(self) -> bool:
        return self.state.terminal


@dataclass(frozen=True)
class SubmitResult:
    job_id: str
    queue_position: int
    assigned_gpu: str
    existing: bool  # an idempotent re-submission of a known job


class JobRegistry:
    """Every job the daemon knows, by id; thread safe."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def new_job(self, request: ProofRequest, now: float | None = None) -> tuple[Job, bool]:
        """The job for a request: a new one, or the existing one for its request_id.

        Returns (job, existing). Raises RequestConflict when the request_id is
        known with different content.
        """
        digest = request.digest()
        with self._lock:
            if request.request_id and request.request_id in self._jobs:
                job = self._jobs[request.request_id]
                if job.digest != digest:
                    raise RequestConflict(
                        f"request {request.request_id}",
                        "request_id",
                        "already used for a different request; use a new request_id",
                    )
                return job, True
            job_id = request.request_id or str(uuid.uuid4())
            job = Job(
                job_id=job_id,
                request=request,
                priority=request.effective_priority(),
                submitted_at=time.time() if now is None else now,
                digest=digest,
            )
            return job, False

    def add(self, job: Job) -> None:
        with self._lock:
            self._jobs[job.job_id] = job

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return job

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def prune(self, older_than: float) -> list[str]:
        """Forget finished jobs that ended before ``older_than`` (time.time())."""
        with self._lock:
            gone = [
                j.job_id
                for j in self._jobs.values()
                if j.finished and j.finished_at is not None and j.finished_at < older_than
            ]
            for job_id in gone:
                del self._jobs[job_id]
        return gone
