"""Synthesis in worker processes: witnesses on every core.

A witness is Python and numpy work that mostly holds the interpreter lock,
so synthesis threads of the daemon take turns on one core. With ``[pipeline]
synthesis_processes = N`` the synthesis workers hand each partition to a
pool of N processes instead and wait (without the lock) for its witness.

The assignment comes back through a file in ``/dev/shm`` (memory, not disk;
the system's temporary directory where there is none): the child writes it
as a ``.npy`` file, the parent maps it and unlinks the name at once, so the
memory lives exactly as long as the parent's array and no copy crosses a
pipe. Errors raised in a child (an InputError naming the bad field) reach
the parent as themselves. A child that dies (killed for memory, say) fails
only its partition: the pool is made anew for the next one.

The handler object is sent with each partition (its class is imported by
name in the child), and the pool starts its children from a clean server
process (``forkserver``): forking the daemon itself, which runs gRPC and
worker threads, is not safe.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import tempfile
import threading
import uuid
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from cuzk.engine.admission import request_bytes, return_memory
from cuzk.engine.jobs import ProofRequest
from cuzk.engine.kinds import parse_checked
from cuzk.engine.kinds.base import ParsedRequest, PartitionInput, ProofKindHandler, Witness
from cuzk.errors import ResourceError

log = logging.getLogger(__name__)

PREFIX = "cuzk-witness-"


def scratch_dir() -> Path:
    """Where children leave witnesses for the parent: memory-backed when possible."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


class SynthesisPool:
    def __init__(self, processes: int, scratch: Path | None = None) -> None:
        if processes < 1:
            raise ValueError("a synthesis pool needs at least one process")
        self.processes = processes
        self.scratch = scratch or scratch_dir()
        self._lock = threading.Lock()
        self._pool = self._new_pool()
        self._remove_stale()

    def _new_pool(self) -> ProcessPoolExecutor:
        ctx = multiprocessing.get_context("forkserver")
        return ProcessPoolExecutor(self.processes, mp_context=ctx)

    def _remove_stale(self) -> None:
        """Witness files whose writer died before handing them over."""
        for path in self.scratch.glob(f"{PREFIX}*.npy"):
            try:
                pid = int(path.name[len(PREFIX) :].split("-", 1)[0])
            except ValueError:
                continue
            if not _alive(pid):
                path.unlink(missing_ok=True)

    def synthesize(
        self, handler: ProofKindHandler, circuit_id: str, partition: PartitionInput
    ) -> Witness:
        """One partition's witness, made in a worker process."""
        path, public_inputs = self._call(
            _child_synthesize, handler, circuit_id, partition, str(self.scratch)
        )
        try:
            assignment = np.load(path, mmap_mode="r")
        finally:
            os.unlink(path)  # the mapping keeps the memory until the array goes
        return Witness(assignment=assignment, public_inputs=tuple(public_inputs))

    def witness_hints(
        self, handler: ProofKindHandler, circuit_id: str, partition: PartitionInput
    ) -> Witness:
        """One partition checked and its hint table made in a worker process (for
        a witness the device makes: :meth:`ProofKindHandler.witness_hints`); the
        table is small and comes back through the pool's pipe."""
        return self._call(_child_hints, handler, circuit_id, partition)

    def parse(self, handler: ProofKindHandler, request: ProofRequest) -> ParsedRequest:
        """The request split into partitions by ``handler`` in a worker process.

        A request's parse is Python from end to end (a 32GiB c1.json: 2.7 s
        on one core, its envelope check as long again); in the daemon's
        process it would hold the interpreter that the GPU workers launch
        their kernels from (seen 2026-12-02: each job's intake there slowed a
        partition's msm_h from 1.39 to 5.3 s). The raw request goes to the
        child, is checked and parsed there, and its partitions come back (12
        MB for a 32GiB PoRep job), an InputError as itself."""
        return self._run(
            _child_parse, (handler, request), f"parsing a {handler.kind.label} request"
        )

    def warm_plan(self, handler: ProofKindHandler, circuit_id: str) -> list[Future]:
        """Each process loads ``circuit_id``'s static witness plan (if the circuit
        cache holds it) before a request needs it: one task a process, queued
        behind nothing when the daemon is idle (a preloaded key), so a first
        job's partitions go straight to their checks. Best effort: a process
        that takes two tasks leaves another to load its plan at its first
        partition, as it would have anyway."""
        futures = [self._submit(_child_warm, handler, circuit_id)[1] for _ in range(self.processes)]
        for f in futures:
            f.add_done_callback(functools.partial(_warmed, circuit_id))
        return futures

    def _call(self, fn, handler, circuit_id: str, partition: PartitionInput, *more):
        what = f"partition {partition.index} of {circuit_id}"
        return self._run(fn, (handler, circuit_id, partition, *more), what)

    def _submit(self, fn, *args) -> tuple[ProcessPoolExecutor, Future]:
        """``fn(*args)`` submitted to the pool, made anew first where a task no
        caller waits on (a warm-up's) left it broken."""
        with self._lock:
            pool = self._pool
        try:
            return pool, pool.submit(fn, *args)
        except BrokenProcessPool:
            pool = self._renew(pool)
            return pool, pool.submit(fn, *args)

    def _renew(self, pool: ProcessPoolExecutor) -> ProcessPoolExecutor:
        """A fresh pool in place of the broken ``pool`` (once, whoever sees it first)."""
        with self._lock:
            if self._pool is pool:
                pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
            return self._pool

    def _run(self, fn, args: tuple, what: str):
        pool, future = self._submit(fn, *args)
        try:
            return future.result()
        except BrokenProcessPool as e:
            self._renew(pool)
            raise ResourceError(
                f"the synthesis worker process for {what} died (out of memory?): {e}"
            ) from e

    def close(self) -> None:
        with self._lock:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _child_parse(handler: ProofKindHandler, request: ProofRequest) -> ParsedRequest:
    try:
        return parse_checked(handler, request)
    finally:  # this process parses the next request too: what this one held goes back
        return_memory(request_bytes(request))


def _warmed(circuit_id: str, future: Future) -> None:
    """A warm-up's failure logged (no caller waits on it)."""
    if not future.cancelled() and future.exception() is not None:
        log.warning(
            "%s: a synthesis process failed loading its witness plan ahead: %s",
            circuit_id,
            future.exception(),
        )


def _child_warm(handler: ProofKindHandler, circuit_id: str) -> bool:
    """The plan loaded in this process; False when there is none to load yet."""
    try:
        handler.witness_plan(circuit_id)
    except RuntimeError:  # no plan cached: the first partition's hints record it
        return False
    return True


def _child_hints(handler: ProofKindHandler, circuit_id: str, partition: PartitionInput) -> Witness:
    return handler.witness_hints(circuit_id, partition)


def _child_synthesize(
    handler: ProofKindHandler, circuit_id: str, partition: PartitionInput, scratch: str
) -> tuple[str, tuple[int, ...]]:
    w = handler.synthesize(circuit_id, partition)
    path = Path(scratch) / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex}.npy"
    try:
        out = np.lib.format.open_memmap(
            path, mode="w+", dtype=w.assignment.dtype, shape=w.assignment.shape
        )
        out[...] = w.assignment
        out.flush()
        del out
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return str(path), tuple(w.public_inputs)
