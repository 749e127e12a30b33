"""Admission: how much accepted, unfinished work the daemon takes on.

Every job holds its request (vanilla proofs: ~50 MB for a 32GiB PoRep's
c1.json) in memory and in the journal from submission until it ends. Without
a bound a client can fill the host and the disk with queued requests
(issue 15: eight padded demo requests took the daemon to 1.15 GiB while the
host budget showed nothing reserved). :class:`Admission` counts the jobs and
request bytes pending per proof kind and in total, and refuses a request that
would pass a ``[admission]`` limit with :class:`AdmissionRefused`
(RESOURCE_EXHAUSTED on the wire), naming the limit; what a job holds is given
back when it ends, whatever the end. Jobs resumed from the journal were
accepted before the restart: they are counted, never refused.

A request is counted from before its parse (:meth:`Admission.hold`), not
from after it: sixteen bodies parsed at once count as sixteen. Parsing a
JSON body holds up to :data:`PARSE_EXPANSION` times its size in decoded
objects; :class:`ParseGate` lets only ``max_parsing_bytes`` of that be held
at once (a request waits up to :data:`PARSE_WAIT_S` for room, then is
refused), and :func:`return_memory` gives what a refused body's parse held
back to the system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cuzk.engine.config import AdmissionConfig
from cuzk.engine.jobs import ProofRequest
from cuzk.errors import ResourceError


class AdmissionRefused(ResourceError):
    """A request that would take pending work past an ``[admission]`` limit."""

    def __init__(self, limit: str, value: str, detail: str) -> None:
        self.limit = limit
        super().__init__(
            f"admission: [admission] {limit} = {value} would be exceeded ({detail}); "
            "retry when queued proofs have finished, or raise the limit"
        )


def request_bytes(request: ProofRequest) -> int:
    """The bytes a request holds while its job is pending: its vanilla proofs and the
    other byte fields (the journal stores them all)."""
    return (
        len(request.vanilla_proof)
        + sum(len(v) for v in request.vanilla_proofs)
        + len(request.randomness)
        + len(request.comm_r_old)
        + len(request.comm_r_new)
        + len(request.comm_d_new)
        + len(request.request_id)
    )


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


@dataclass
class _Pending:
    jobs: int = 0
    bytes: int = 0


class Admission:
    def __init__(self, limits: AdmissionConfig) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._by_kind: dict[str, _Pending] = {}
        self._total = _Pending()
        self._jobs: dict[str, tuple[str, int]] = {}  # job id → (kind, bytes) counted
        self._tickets = itertools.count(1)

    def check(self, kind: str, nbytes: int) -> None:
        """Raise AdmissionRefused when one more job of ``kind`` holding ``nbytes`` would
        pass a limit (nothing is taken)."""
        with self._lock:
            self._check(kind, nbytes)

    def admit(self, job_id: str, kind: str, nbytes: int) -> None:
        """:meth:`check`, and count the job as pending until :meth:`release`."""
        with self._lock:
            self._check(kind, nbytes)
            self._add(job_id, kind, nbytes)

    def hold(self, kind: str, nbytes: int) -> str:
        """Count a request about to be parsed, as :meth:`admit` counts a job (refused
        alike); the ticket returned is :meth:`transfer`-ed to its job, or
        :meth:`release`-d when the request is refused."""
        ticket = f"\0parse-{next(self._tickets)}"  # never a job id (no NUL in those)
        self.admit(ticket, kind, nbytes)
        return ticket

    def transfer(self, ticket: str, job_id: str) -> None:
        """What ``ticket`` holds is held by ``job_id`` from now on."""
        with self._lock:
            held = self._jobs.pop(ticket, None)
            if held is not None:
                self._jobs[job_id] = held

    def resume(self, job_id: str, kind: str, nbytes: int) -> None:
        """Count a job accepted before a restart, whatever the limits say."""
        with self._lock:
            self._add(job_id, kind, nbytes)

    def release(self, job_id: str) -> None:
        """A job ended: what it held is given back (once; unknown ids are ignored)."""
        with self._lock:
            held = self._jobs.pop(job_id, None)
            if held is None:
                return
            kind, nbytes = held
            k = self._by_kind[kind]
            k.jobs -= 1
            k.bytes -= nbytes
            self._total.jobs -= 1
            self._total.bytes -= nbytes
            if k.jobs <= 0:
                del self._by_kind[kind]

    def pending(self) -> tuple[int, int]:
        """(jobs, request bytes) pending over all kinds."""
        with self._lock:
            return self._total.jobs, self._total.bytes

    def snapshot(self) -> dict[str, Any]:
        """For /status: the limits and what is pending, per kind and in total."""
        lim = self.limits
        with self._lock:
            return {
                "limits": {
                    "max_pending_jobs": lim.max_pending_jobs,
                    "max_pending_jobs_per_kind": lim.max_pending_jobs_per_kind,
                    "max_pending_bytes": lim.max_pending_bytes,
                    "max_pending_bytes_per_kind": lim.max_pending_bytes_per_kind,
                },
                "pending_jobs": self._total.jobs,
                "pending_bytes": self._total.bytes,
                "by_kind": {
                    k: {"jobs": p.jobs, "bytes": p.bytes} for k, p in sorted(self._by_kind.items())
                },
            }

    # --- with the lock held ---------------------------------------------------------
    def _check(self, kind: str, nbytes: int) -> None:
        lim = self.limits
        k = self._by_kind.get(kind, _Pending())
        t = self._total
        if k.jobs + 1 > lim.max_pending_jobs_per_kind:
            raise AdmissionRefused(
                "max_pending_jobs_per_kind",
                str(lim.max_pending_jobs_per_kind),
                f"{kind} has {k.jobs} pending",
            )
        if t.jobs + 1 > lim.max_pending_jobs:
            raise AdmissionRefused(
                "max_pending_jobs", str(lim.max_pending_jobs), f"{t.jobs} pending, all kinds"
            )
        if k.bytes + nbytes > lim.max_pending_bytes_per_kind:
            raise AdmissionRefused(
                "max_pending_bytes_per_kind",
                _size(lim.max_pending_bytes_per_kind),
                f"{kind} has {_size(k.bytes)} pending, this request {_size(nbytes)}",
            )
        if t.bytes + nbytes > lim.max_pending_bytes:
            raise AdmissionRefused(
                "max_pending_bytes",
                _size(lim.max_pending_bytes),
                f"{_size(t.bytes)} pending over all kinds, this request {_size(nbytes)}",
            )

    def _add(self, job_id: str, kind: str, nbytes: int) -> None:
        if job_id in self._jobs:
            return
        self._jobs[job_id] = (kind, nbytes)
        k = self._by_kind.setdefault(kind, _Pending())
        k.jobs += 1
        k.bytes += nbytes
        self._total.jobs += 1
        self._total.bytes += nbytes


# Decoded JSON holds this many times its text at most: measured 15x for a 2KiB
# PoRep's Phase1Out and 20-26x for bodies of empty arrays, one-key objects,
# two-letter strings or floats (tracemalloc's peak, text included).
PARSE_EXPANSION = 32
# How long a request waits for parsing room before it is refused.
PARSE_WAIT_S = 30.0
# Bodies this large have what their parse held handed back to the system after it.
TRIM_AFTER_BYTES = 1 << 20


class ParseGate:
    """Room for parsing: a request of ``n`` bytes holds ``PARSE_EXPANSION * n`` (at
    most the whole limit, so that any one request can be parsed) while it is parsed."""

    def __init__(self, limit: int, wait_s: float = PARSE_WAIT_S) -> None:
        self.limit = limit
        self.wait_s = wait_s
        self.held = 0
        self._cond = threading.Condition()

    def cost(self, nbytes: int) -> int:
        return min(self.limit, PARSE_EXPANSION * max(nbytes, 1))

    @contextmanager
    def parsing(self, nbytes: int) -> Iterator[None]:
        cost = self.cost(nbytes)
        end = time.monotonic() + self.wait_s
        with self._cond:
            while self.held + cost > self.limit:
                left = end - time.monotonic()
                if left <= 0:
                    raise AdmissionRefused(
                        "max_parsing_bytes",
                        _size(self.limit),
                        f"{_size(self.held)} held by requests being parsed, this one needs "
                        f"{_size(cost)} for {self.wait_s:.0f} s",
                    )
                self._cond.wait(left)
            self.held += cost
        try:
            yield
        finally:
            with self._cond:
                self.held -= cost
                self._cond.notify_all()


_libc: ctypes.CDLL | bool | None = False


def _glibc() -> ctypes.CDLL | None:
    global _libc
    if _libc is False:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else None
            if _libc is not None and not hasattr(_libc, "malloc_trim"):
                _libc = None
        except OSError:
            _libc = None
    return _libc or None


# glibc's mallopt parameter for the number of malloc arenas.
_M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """glibc's malloc arenas held to ``arenas`` (it makes up to eight a core, one for
    each thread that allocates while the others' are busy, and memory freed in one is
    not reused by another: each round of 16 refused 100 MiB bodies, parsed on the
    daemon's threads, left the heap larger). Called before the daemon's threads
    start; False where there is no glibc. The environment's ``MALLOC_ARENA_MAX``
    wins when it is set."""
    import os

    libc = _glibc()
    if libc is None or not hasattr(libc, "mallopt") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))


def return_memory(nbytes: int) -> None:
    """After a parse of ``nbytes`` (at least :data:`TRIM_AFTER_BYTES`): the heap's free
    pages back to the system (glibc keeps freed memory for reuse, and a refused
    100 MiB body's objects left gigabytes behind). Nothing where there is no glibc."""
    if nbytes < TRIM_AFTER_BYTES:
        return
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
