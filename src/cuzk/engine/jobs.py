"""Jobs: what a client asked for, where it stands, and the registry of all of them.

A job is one proof request. It is split into partitions (a 32GiB PoRep has
ten) which move through the pipeline independently; the job completes when
every partition proof has been verified, and fails at its first error.

``request_id`` is used as Curio uses it, which is not as a unique key: Curio
sends every WindowPoSt partition of a deadline under one id, and retries a
failed PoRep under the id it failed with. So a job answers a request with
the same ``request_id`` *and the same content* (its digest) while it is
queued, running or COMPLETED (within ``job_retention``): a client's retry,
also after a restart, gets that job and its proof once. The same id with
other content is a new job, and so is a retry after FAILED or CANCELLED (a
new attempt). The first job of a request_id takes it as its job id; later
ones take ``<request_id>#2``, ``#3`` …; without a request_id the job id is a
UUID.

With client identities (several named tokens: docs/SERVICE.md, "Client
identities"), a job belongs to the client that submitted it (``Job.client``):
request ids are matched within that client's jobs, a named client's job ids
are ``<client>/<request_id>``, and only that client and an admin see or
cancel the job (others are told there is no such job). Without them every
job belongs to the one anonymous client ``""``, as before.
"""

from __future__ import annotations

import argparse
import enum
import hashlib
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from cuzk.errors import CuzkError, InputError, ResourceError

T = TypeVar("T")


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

    @staticmethod
    def from_name(name: str, source: str = "proof kind") -> ProofKind:
        """A kind by its name (:data:`KIND_NAMES`) or an old spelling of it
        (:data:`KIND_ALIASES`), any case, ``_`` for ``-``."""
        key = name.strip().lower().replace("_", "-")
        key = KIND_ALIASES.get(key, key)
        for k, v in _KIND_LABELS.items():
            if v == key and k != ProofKind.UNSPECIFIED:
                return k
        raise InputError(source, name, f"unknown proof kind; the kinds: {', '.join(KIND_NAMES)}")


def kind_argument(among: Mapping[ProofKind, T]) -> Callable[[str], T]:
    """An argparse ``type`` taking a kind's name or old spelling to its entry in
    ``among`` (the CLIs' circuit catalogs); other kinds are refused naming those
    ``among`` holds."""
    names = ", ".join(_KIND_LABELS[k] for k in among)

    def parse(text: str) -> T:
        try:
            kind = ProofKind.from_name(text)
        except InputError:
            kind = None
        if kind not in among:
            raise argparse.ArgumentTypeError(f"{text!r}: the kinds are {names}")
        return among[kind]

    return parse


_KIND_LABELS = {
    ProofKind.UNSPECIFIED: "unspecified",
    ProofKind.POREP_SEAL_COMMIT: "porep",
    ProofKind.SNAP_DEALS_UPDATE: "snap",
    ProofKind.WINDOW_POST_PARTITION: "wpost",
    ProofKind.WINNING_POST: "winning",
    ProofKind.DEMO: "demo",
}
# One name per proof kind across the CLIs (cuzk-bench -t, gen-params, circuit-info,
# memory-plan), the metrics' proof_kind label and the circuit ids (porep-32g,
# wpost-2k): the labels above. Curio's own names stay where its wire and status
# need them (cuzk.engine.metrics.CURIO_STATUS_NAMES); they and the other old
# spellings are accepted wherever a kind is given by name.
KIND_NAMES = ("porep", "snap", "wpost", "winning", "demo")
KIND_ALIASES = {  # "_" is read as "-": Curio's metric labels (porep_c2 …) are here too
    "porep-c2": "porep",
    "seal-commit": "porep",
    "snap-deals": "snap",
    "snap-update": "snap",
    "update": "snap",
    "window-post": "wpost",
    "windowpost": "wpost",
    "window": "wpost",
    "winning-post": "winning",
    "winningpost": "winning",
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
        shown = repr(job_id) if len(job_id) <= 80 else repr(job_id[:77]) + "..."
        super().__init__(f"no job {shown} (unknown, or finished longer ago than job_retention)")


class UnsupportedKind(CuzkError):
    """A proof kind this daemon has no circuit for (yet)."""


class ShuttingDown(CuzkError):
    """The daemon is draining and accepts no new work."""


class InUse(ResourceError):
    """A proving key that cannot be evicted because proofs are using it."""


# Curio's request ids are short ("porep-1000-7"); this leaves room for any client's
# own and keeps a hostile one from bloating the journal, the log and every answer.
MAX_REQUEST_ID_BYTES = 256


def check_request_id(request_id: str) -> None:
    """InputError unless ``request_id`` is short printable text.

    It becomes the job id and goes into the log, the journal and status: a
    control, format or line-separator character (a newline that forges a log
    line, a right-to-left override that disguises one) has no place in it.
    """
    size = len(request_id.encode("utf-8", errors="surrogatepass"))
    if size > MAX_REQUEST_ID_BYTES:
        raise InputError(
            "request", "request_id", f"{size} bytes, at most {MAX_REQUEST_ID_BYTES} (UTF-8)"
        )
    for i, ch in enumerate(request_id):
        if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp"):
            raise InputError(
                "request",
                "request_id",
                f"control character U+{ord(ch):04X} at {i}: a request id is printable text",
            )


class Completion(threading.Event):
    """A job's end: an Event that also calls back, so that a waiter needs no thread.

    ``add_done_callback(fn)`` calls ``fn()`` once when the event is set (in the
    setting thread), or at once when it is set already; the asyncio server turns
    that into a wake-up of the coroutine awaiting the job.
    """

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []
        self._cb_lock = threading.Lock()

    def set(self) -> None:
        with self._cb_lock:
            super().set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn()

    def add_done_callback(self, fn: Callable[[], None]) -> None:
        with self._cb_lock:
            if not self.is_set():
                self._callbacks.append(fn)
                return
        fn()

    def remove_done_callback(self, fn: Callable[[], None]) -> None:
        with self._cb_lock:
            if fn in self._callbacks:
                self._callbacks.remove(fn)


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


# Where a partition is, in Curio's words (its /status "partitions" states).
PARTITION_STATES = ("pending", "synthesizing", "synth_done", "gpu", "done", "failed")


@dataclass
class PartitionTrace:
    """One partition's state and stage times (time.monotonic()), for /status."""

    state: str = "pending"
    synth_start: float | None = None
    synth_end: float | None = None
    gpu_start: float | None = None
    gpu_end: float | None = None

    def ms(self, start: float | None, end: float | None, now: float) -> int | None:
        """Milliseconds of a stage: finished, or so far; None before it starts."""
        if start is None:
            return None
        return round(((end if end is not None else now) - start) * 1000)


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
    trace: dict[int, PartitionTrace] = field(default_factory=dict, repr=False)
    parsed: Any = None  # the kind's parsed request (partitions' inputs)
    client: str = ""  # the identity that submitted it ("": the one anonymous client)
    done: Completion = field(default_factory=Completion, repr=False)

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

    def partition_state(self, index: int, state: str) -> None:
        """Partition ``index`` entered ``state`` (one of PARTITION_STATES) now."""
        assert state in PARTITION_STATES, state
        now = time.monotonic()
        t = self.trace.setdefault(index, PartitionTrace())
        t.state = state
        if state == "synthesizing":
            t.synth_start = now
        elif state == "synth_done":
            t.synth_end = now
        elif state == "gpu":
            t.gpu_start = now
        elif state == "done":
            t.gpu_end = now

    @property
    def cancelled(self) -> bool:
        return self.state == JobState.CANCELLED

    @property
    def finished(self) -> bool:
        return self.state.terminal


_TIMINGS = tuple(f.name for f in fields(Timings))


def _ended() -> Completion:
    done = Completion()
    done.set()
    return done


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A finished job as the registry retains it, read back from its record.

    The registry keeps each retained job as one plain tuple of strings, bytes and
    numbers (:meth:`record`), which the cyclic collector stops tracking after its
    first pass: a :class:`Job` carries about fourteen tracked objects (its Event,
    Condition, dicts, the clock), and with 12,000 of them kept every full
    collection walked ~170,000 objects, the tail of CancelProof under a status
    flood (issue 32). This view is made when a caller asks for the job; it answers
    what callers read of a finished job (state, proof, error, timings, done).
    """

    job_id: str
    client: str
    kind_value: int
    request_id: str
    priority_value: int
    state_value: str
    error: str
    proof: bytes
    digest: bytes
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    circuit_id: str
    num_partitions: int
    device: str
    # the Timings, flat (a tuple within the record would keep it tracked a pass longer)
    queue_wait_ms: float
    srs_load_ms: float
    synthesis_ms: float
    gpu_compute_ms: float
    verify_ms: float
    total_ms: float

    @staticmethod
    def record(job: Job | FinishedJob) -> tuple[Any, ...]:
        """``job``'s record: a tuple holding nothing the collector tracks."""
        if isinstance(job, FinishedJob):
            return tuple(getattr(job, f.name) for f in fields(FinishedJob))
        t = job.timings
        return (
            job.job_id,
            job.client,
            int(job.kind),
            job.request.request_id,
            int(job.priority),
            job.state.value,
            job.error,
            job.proof,
            job.digest,
            job.submitted_at,
            job.started_at,
            job.finished_at,
            job.circuit_id,
            job.num_partitions,
            job.device,
            *(float(getattr(t, name)) for name in _TIMINGS),
        )

    # what a Job answers, for the readers of a finished one
    DONE = _ended()
    finished = True

    @property
    def state(self) -> JobState:
        return JobState(self.state_value)

    @property
    def kind(self) -> ProofKind:
        return ProofKind(self.kind_value)

    @property
    def priority(self) -> Priority:
        return Priority(self.priority_value)

    @property
    def request(self) -> ProofRequest:
        """The request's kind, id and priority (its payload is gone with its end)."""
        return ProofRequest(self.kind, self.request_id, priority=self.priority)

    @property
    def timings(self) -> Timings:
        return Timings(*(getattr(self, name) for name in _TIMINGS))

    @property
    def done(self) -> Completion:
        return FinishedJob.DONE

    @property
    def cancelled(self) -> bool:
        return self.state_value == JobState.CANCELLED.value

    # what a finished job no longer has: its parsed input, its partitions' proofs
    # (the assembled proof is kept) and their traces
    parsed = None
    submitted_mono = None

    @property
    def partition_proofs(self) -> dict[int, bytes]:
        return {}

    @property
    def trace(self) -> dict[int, PartitionTrace]:
        return {}

    def elapsed_ms(self) -> float:
        return self.total_ms


@dataclass(frozen=True)
class SubmitResult:
    job_id: str
    queue_position: int
    assigned_gpu: str
    existing: bool  # an identical request answered by a job already known


# How long finished jobs are listed apart for status (its pipelines linger 30 s).
RECENT_S = 60.0

# A job in one of these states no longer answers its request: a retry is a new attempt.
RETRYABLE = (JobState.FAILED, JobState.CANCELLED)


class JobRegistry:
    """Every job the daemon knows, by id and by (request_id, content); thread safe.

    Unfinished jobs are kept apart from finished ones, so that what status and
    control calls read costs O(unfinished jobs), however many finished ones are
    retained; finished jobs are kept in the order they ended, at most
    ``max_retained`` of them (the oldest are forgotten first), each as a compact
    record (:class:`FinishedJob`) that costs the cyclic collector nothing."""

    def __init__(self, max_retained: int = 10_000) -> None:
        self.max_retained = max_retained
        self._live: dict[str, Job] = {}  # unfinished, in submission order
        # finished: their records, in the order they ended
        self._finished: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        # finished jobs that had started, ended in the last RECENT_S, in the order they
        # ended, whole: what status lists beside the live ones (a burst of jobs
        # cancelled before they started is not read by every status call)
        self._recent: OrderedDict[str, Job] = OrderedDict()
        # (client, request_id, digest) -> ids of the jobs made for it, oldest first (a
        # tuple: untracked by the collector, as the key is)
        self._by_request: dict[tuple[str, str, bytes], tuple[str, ...]] = {}
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def _lookup(self, job_id: str) -> Job | FinishedJob | None:
        """The job of that id: whole while it is live or recently ended, else its
        record's view. Called with the lock held."""
        job = self._live.get(job_id) or self._recent.get(job_id)
        if job is not None:
            return job
        rec = self._finished.get(job_id)
        return FinishedJob(*rec) if rec is not None else None

    def _known(self, job_id: str) -> bool:
        return job_id in self._live or job_id in self._finished

    def latest(self, request_id: str, digest: bytes, client: str = "") -> Job | FinishedJob | None:
        """The newest job ``client`` made for this request_id with this content,
        whatever its state."""
        with self._lock:
            for job_id in reversed(self._by_request.get((client, request_id, digest), ())):
                job = self._lookup(job_id)
                if job is not None:
                    return job
        return None

    def answering(
        self, request: ProofRequest, digest: bytes | None = None, client: str = ""
    ) -> Job | FinishedJob | None:
        """The job that answers ``client``'s ``request``: the newest one with its
        request_id and content, unless that one FAILED or was CANCELLED. None
        without a request_id."""
        if not request.request_id:
            return None
        job = self.latest(request.request_id, digest or request.digest(), client)
        if job is None or job.state in RETRYABLE:
            return None
        return job

    def new_job(
        self,
        request: ProofRequest,
        now: float | None = None,
        digest: bytes | None = None,
        client: str = "",
    ) -> tuple[Job | FinishedJob, bool]:
        """The job for a request: the one that answers it already, or a new one.

        Returns (job, existing). A new job is not registered until :meth:`add`;
        the caller holds one lock over both, so that its id stays free.
        ``digest``: the request's, when the caller has it already.
        """
        digest = digest or request.digest()
        with self._lock:
            known = self.answering(request, digest, client)
            if known is not None:
                return known, True
            job = Job(
                job_id=self._free_id(request.request_id, client),
                request=request,
                priority=request.effective_priority(),
                submitted_at=time.time() if now is None else now,
                digest=digest,
                client=client,
            )
            return job, False

    def _free_id(self, request_id: str, client: str = "") -> str:
        if not request_id:
            return str(uuid.uuid4())
        if client:  # a named client's ids are its own: no other client's can take them
            request_id = f"{client}/{request_id}"
        if not self._known(request_id):
            return request_id
        n = 2
        while self._known(f"{request_id}#{n}"):
            n += 1
        return f"{request_id}#{n}"

    def add(self, job: Job) -> list[str]:
        """Register a job (a finished one restored from the journal too); the ids of
        finished jobs forgotten to stay within ``max_retained``."""
        with self._lock:
            if job.request.request_id:
                key = (job.client, job.request.request_id, job.digest)
                self._by_request[key] = (*self._by_request.get(key, ()), job.job_id)
            if not job.finished:
                self._live[job.job_id] = job
                return []
            self._finished[job.job_id] = FinishedJob.record(job)
            return self._trim()

    def ended(self, job: Job) -> list[str]:
        """A registered job has reached a terminal state (called with the lock held by
        whoever set it, once its state, error, proof and times are final); the ids of
        finished jobs forgotten to make room."""
        with self._lock:
            if self._live.pop(job.job_id, None) is None:
                return []
            self._finished[job.job_id] = FinishedJob.record(job)
            if job.started_at is not None:
                self._recent[job.job_id] = job
            horizon = time.time() - RECENT_S
            while self._recent:
                first = next(iter(self._recent.values()))
                if first.finished_at is not None and first.finished_at >= horizon:
                    break
                self._recent.popitem(last=False)
            return self._trim()

    def _trim(self) -> list[str]:
        gone = []
        while len(self._finished) > self.max_retained:
            job_id = next(iter(self._finished))
            self._forget(job_id)
            gone.append(job_id)
        return gone

    def _forget(self, job_id: str) -> None:
        rec = self._finished.pop(job_id)
        self._recent.pop(job_id, None)
        job = FinishedJob(*rec)
        key = (job.client, job.request_id, job.digest)
        ids = self._by_request.get(key)
        if ids is not None:
            left = tuple(i for i in ids if i != job_id)
            if left:
                self._by_request[key] = left
            else:
                del self._by_request[key]

    def live(self) -> list[Job]:
        """Unfinished jobs, in submission order: O(their number)."""
        with self._lock:
            return list(self._live.values())

    def recently_finished(self, since: float) -> list[Job]:
        """Finished jobs that had started and ended at ``since`` (time.time(), at most
        RECENT_S ago) or later, newest first: O(their number)."""
        out = []
        with self._lock:
            for job in reversed(self._recent.values()):
                if job.finished_at is None or job.finished_at < since:
                    break
                out.append(job)
        return out

    def finished_count(self) -> int:
        with self._lock:
            return len(self._finished)

    def get(self, job_id: str, client: str | None = None) -> Job | FinishedJob:
        """The job of that id; for ``client`` (None: an admin, who sees every job)
        only its own, another's being as unknown to it as one never made."""
        with self._lock:
            job = self._lookup(job_id)
        if job is None or (client is not None and job.client != client):
            raise JobNotFound(job_id)
        return job

    def all(self) -> list[Job | FinishedJob]:
        with self._lock:
            return [*self._live.values(), *(FinishedJob(*r) for r in self._finished.values())]

    def prune(self, older_than: float) -> list[str]:
        """Forget finished jobs that ended before ``older_than`` (time.time())."""
        with self._lock:
            for job in [j for j in self._live.values() if j.finished]:  # ended unannounced
                self.ended(job)
            at = _FINISHED_AT
            gone = [
                job_id
                for job_id, rec in self._finished.items()
                if rec[at] is not None and rec[at] < older_than
            ]
            for job_id in gone:
                self._forget(job_id)
        return gone


_FINISHED_AT = [f.name for f in fields(FinishedJob)].index("finished_at")
