"""Scheduling: priority queues of partitions, and the batch collector.

Work moves through the pipeline as partitions, each queue ordered by
(priority, then order of release, then partition index): a CRITICAL job
released after a NORMAL one overtakes the NORMAL job's partitions that are
still queued, at every stage. Within one priority, jobs run in the order
they were released (FIFO).

The batch collector holds batchable jobs (same circuit) until
``max_batch_size`` of them are there, ``max_batch_wait_ms`` has passed since
the first, or work of a higher priority arrives; then it releases them
together, and a GPU worker proves consecutive same-circuit partitions with
one key lease.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuzk.engine.jobs import Job, Priority


@dataclass(eq=False)
class WorkItem:
    """One partition of one job on its way through the pipeline."""

    job: Job
    index: int  # partition index
    data: Any  # the kind's partition input
    seq: int  # release order of its job
    lease: Any = None  # HostLease, from synthesis until the proof is made
    witness: Any = None
    public_inputs: tuple[int, ...] = ()
    proof: Any = None
    enqueued_at: float = field(default_factory=time.monotonic)
    device: int | None = None  # the ordinal of the device that proved it
    failed_on: set[int] = field(default_factory=set)  # devices that failed proving it
    failures: list[str] = field(default_factory=list)  # what each of them said

    @property
    def light(self) -> bool:
        """Synthesized into a hint table, its assignment to be made on the device:
        a few MB, so it does not count against a queue's capacity."""
        w = self.witness
        return w is not None and getattr(w, "assignment", None) is None

    @property
    def urgent(self) -> bool:
        """Time-critical (HIGH or CRITICAL: WinningPoSt, WindowPoSt by default): it
        has workers, a VRAM slice and a stream priority of its own."""
        return self.job.priority >= Priority.HIGH

    @property
    def sort_key(self) -> tuple[int, int, int]:
        return (-int(self.job.priority), self.seq, self.index)


class Closed(Exception):
    """The queue was closed: the pipeline is stopping."""


class PartitionQueue:
    """A priority queue of WorkItems, optionally bounded, with removal by job.

    The capacity bounds the items that hold a host-made assignment; light
    items (:attr:`WorkItem.light`: a hint table for a witness made on the
    device) pass it, so synthesis can check vanilla proofs ahead of the GPUs
    on every core (the host budget still bounds what they hold)."""

    def __init__(self, name: str, capacity: int = 0) -> None:
        self.name = name
        self.capacity = capacity  # 0 = unbounded
        self._items: list[tuple[tuple[int, int, int], int, WorkItem]] = []
        self._tie = itertools.count()
        self._cond = threading.Condition()
        self._closed = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def put(self, item: WorkItem, block: bool = True) -> None:
        """Queue ``item``; while the queue is at its capacity, wait (``block``) or
        queue it beyond the capacity (a partition given back by a failed device
        must never wait on the workers that take it). Time-critical items pass
        the capacity: they never wait behind partitions queued for a GPU."""
        with self._cond:
            while (
                self.capacity
                and not item.light
                and not item.urgent
                and self._heavy() >= self.capacity
            ):
                if self._closed or not block:
                    break
                self._cond.wait(0.5)
            if self._closed:
                raise Closed(self.name)
            bisect.insort(self._items, (item.sort_key, next(self._tie), item))
            item.enqueued_at = time.monotonic()
            self._cond.notify_all()

    def _heavy(self) -> int:
        return sum(1 for _, _, it in self._items if not it.light)

    def get(self, timeout: float | None = None) -> WorkItem | None:
        """The first item; None on timeout. Raises Closed once closed and empty."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                if self._closed:
                    raise Closed(self.name)
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left if left is not None else 0.5)
            item = self._items.pop(0)[2]
            self._cond.notify_all()
            return item

    def get_batch(
        self,
        max_items: int,
        timeout: float | None = None,
        select: Callable[[list[WorkItem]], list[int]] | None = None,
        claim: Callable[[list[WorkItem]], None] | None = None,
    ) -> list[WorkItem]:
        """The first item and up to ``max_items − 1`` more of its circuit and priority.

        ``select(items)``, given the queued items in order, picks the positions to
        take instead (none: wait for a change); it is asked again whenever the
        queue changes or :meth:`poke` is called. ``claim(batch)`` runs before the
        lock is let go, so that whoever selects next sees the batch taken.
        Raises Closed once closed (with ``select``, whatever is left queued).
        """
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed and (select is not None or not self._items):
                    raise Closed(self.name)
                items = [e[2] for e in self._items]
                if select is not None:
                    chosen = select(items) if items else []
                else:
                    chosen = _same_circuit(items, max_items)
                if chosen:
                    break
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return []
                self._cond.wait(min(left, 0.5) if left is not None else 0.5)
            batch = [items[i] for i in chosen]
            taken = set(chosen)
            self._items = [e for i, e in enumerate(self._items) if i not in taken]
            if claim is not None:
                claim(batch)
            self._cond.notify_all()
        return batch

    def outranks(self, priority: Priority) -> bool:
        """Whether an item of a higher priority than ``priority`` is queued."""
        with self._cond:
            return bool(self._items) and self._items[0][2].job.priority > priority

    def poke(self) -> None:
        """Wake the waiting takers: what their ``select`` depends on has changed."""
        with self._cond:
            self._cond.notify_all()

    def remove_job(self, job_id: str) -> list[WorkItem]:
        with self._cond:
            gone = [e[2] for e in self._items if e[2].job.job_id == job_id]
            if gone:
                self._items = [e for e in self._items if e[2].job.job_id != job_id]
                self._cond.notify_all()
            return gone

    def take_where(self, pred: Callable[[WorkItem], bool]) -> list[WorkItem]:
        """Remove and return the queued items ``pred`` holds for."""
        with self._cond:
            gone = [e[2] for e in self._items if pred(e[2])]
            if gone:
                self._items = [e for e in self._items if not pred(e[2])]
                self._cond.notify_all()
            return gone

    def items(self) -> list[WorkItem]:
        with self._cond:
            return [e[2] for e in self._items]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def _same_circuit(items: list[WorkItem], max_items: int) -> list[int]:
    """The first item and up to ``max_items − 1`` more of its circuit and priority."""
    if not items:
        return []
    first = items[0]
    return [
        i
        for i, it in enumerate(items)
        if it.job.circuit_id == first.job.circuit_id and it.job.priority == first.job.priority
    ][: max(1, max_items)]


@dataclass
class _PendingBatch:
    circuit_id: str
    priority: Priority
    jobs: list[Job]
    first_at: float


class BatchCollector:
    """Holds batchable jobs until their batch is full, old enough, or outranked."""

    def __init__(
        self, max_batch_size: int, max_batch_wait_ms: int, release: Callable[[list[Job]], None]
    ) -> None:
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_batch_wait_ms / 1000.0
        self._release = release
        self._pending: dict[str, _PendingBatch] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._timer, name="batch-timer", daemon=True)
        self._thread.start()

    def add(self, job: Job, batchable: bool) -> None:
        to_release: list[list[Job]] = []
        with self._cond:
            # Higher-priority work flushes what lower-priority batches hold.
            for cid, b in list(self._pending.items()):
                if b.priority < job.priority:
                    to_release.append(self._pending.pop(cid).jobs)
            # Latency-critical work (HIGH, CRITICAL) is never held back to fill a batch.
            if not batchable or self.max_batch_size <= 1 or job.priority > Priority.NORMAL:
                to_release.append([job])
            else:
                b = self._pending.get(job.circuit_id)
                if b is None or b.priority != job.priority:
                    if b is not None:
                        to_release.append(self._pending.pop(job.circuit_id).jobs)
                    b = _PendingBatch(job.circuit_id, job.priority, [], time.monotonic())
                    self._pending[job.circuit_id] = b
                b.jobs.append(job)
                if len(b.jobs) >= self.max_batch_size:
                    to_release.append(self._pending.pop(job.circuit_id).jobs)
            self._cond.notify_all()
        for jobs in to_release:
            self._release(jobs)

    def remove(self, job_id: str) -> bool:
        with self._cond:
            for b in self._pending.values():
                for j in b.jobs:
                    if j.job_id == job_id:
                        b.jobs.remove(j)
                        return True
        return False

    def pending_jobs(self) -> list[Job]:
        with self._cond:
            return [j for b in self._pending.values() for j in b.jobs]

    def flush_all(self) -> None:
        with self._cond:
            batches = [b.jobs for b in self._pending.values()]
            self._pending.clear()
        for jobs in batches:
            if jobs:
                self._release(jobs)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _timer(self) -> None:
        while True:
            due: list[list[Job]] = []
            with self._cond:
                if self._stopped:
                    return
                now = time.monotonic()
                wait = None
                for cid, b in list(self._pending.items()):
                    left = b.first_at + self.max_wait_s - now
                    if left <= 0 or not b.jobs:
                        due.append(self._pending.pop(cid).jobs)
                    else:
                        wait = left if wait is None else min(wait, left)
                if not due:
                    self._cond.wait(wait if wait is not None else 1.0)
                    continue
            for jobs in due:
                if jobs:
                    self._release(jobs)
