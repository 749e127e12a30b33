"""One VRAM budget per device: work is admitted only when its reservation fits.

A lock does not reserve memory; a budget does. Every GPU allocation of cuzk
goes through the device's CuPy memory pool, whose hard limit is the budget,
and every operation first *reserves* its peak use: a reservation that does not
fit fails up front with :class:`cuzk.errors.ResourceError` (or waits, for the
engine's workers) instead of a CUDA out-of-memory error half way through.
Peak use per operation is recorded for reporting.

Envelopes: a hold can be lent to the work it was taken for. Inside
``budget.drawing_from(hold)`` the calling thread's reservations come out of
that hold first and out of the free budget only for what the hold lacks, so
the engine reserves a key's or a partition's memory once and the backend's
own reservations for the same memory do not count it again. Releasing an
envelope gives back what its inner holds do not use; those stay reserved
until they are released themselves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from cuzk.errors import ResourceError

log = logging.getLogger(__name__)


@dataclass
class DeviceBudget:
    device_id: int
    limit_bytes: int
    reserved_bytes: int = 0
    peak_by_operation: dict[str, int] = field(default_factory=dict)
    overdrawn_by_operation: dict[str, int] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _local: threading.local = field(default_factory=threading.local, repr=False)

    @property
    def free_bytes(self) -> int:
        """What the calling thread can reserve now: the free budget, plus what its
        envelope (see :meth:`drawing_from`) has not lent yet. Backends size their
        work by it (resident or streamed bases, an MSM's window)."""
        env = self._envelope()
        spare = 0 if env is None else env.nbytes - env.lent
        free = self.limit_bytes - self.reserved_bytes + spare
        cap = getattr(self._local, "cap", None)
        return free if cap is None or cap.lifted else min(free, cap.nbytes)

    @contextmanager
    def capped(self, cap: Cap) -> Iterator[Cap]:
        """Inside, :attr:`free_bytes` tells the calling thread at most ``cap.nbytes``
        until the cap is lifted: work that sizes itself by it (an MSM's tuning)
        stays within what its caller set aside for it while the caller's own
        work still needs the rest. Reservations are not refused by the cap;
        only the sizing reads it (and :meth:`await_lift` waits on it)."""
        before = getattr(self._local, "cap", None)
        self._local.cap = cap
        try:
            yield cap
        finally:
            self._local.cap = before

    def branch_cap(self, nbytes: int) -> Cap:
        """The cap of a line of work the calling thread hands ``nbytes`` of its
        room to (a branch beside it: :meth:`capped` in the branch's thread),
        given back by :meth:`rejoin` in the calling thread.

        Where the calling thread sizes its work within a final cap (a fixed
        room, :meth:`sized_within`), the share comes out of that room: the
        branch's cap is final too (at most the room), and the calling
        thread's own cap is lowered to the rest until :meth:`rejoin`, so
        the two lines together size their work within the room. Else the
        branch's cap is lifted at the rejoin (the caller's work is done)."""
        outer = getattr(self._local, "cap", None)
        if outer is None or not outer.final:
            return Cap(nbytes)
        cap = Cap(min(nbytes, outer.nbytes), final=True)
        cap.narrowed = outer
        self._local.cap = Cap(outer.nbytes - cap.nbytes, final=True)
        return cap

    def rejoin(self, cap: Cap) -> None:
        """The calling thread's end of :meth:`branch_cap`: its own cap given back
        whole, or the branch's lifted."""
        if cap.narrowed is not None:
            self._local.cap, cap.narrowed = cap.narrowed, None
        elif not cap.final:
            cap.lift()

    def sized_within(self, nbytes: int) -> AbstractContextManager[Cap]:
        """:meth:`capped` by a final cap of ``nbytes`` (never lifted, never waited for)."""
        return self.capped(Cap(nbytes, final=True))

    def await_lift(self) -> bool:
        """Under a cap not lifted yet, wait until it is (work the cap would cut
        down too far waits for its full share instead); True if it waited."""
        cap = getattr(self._local, "cap", None)
        if cap is None or cap.lifted or cap.final:
            return False
        cap.wait()
        return True

    def envelope(self) -> Hold | None:
        """The calling thread's envelope now (see :meth:`drawing_from`), for work it
        hands to another thread, which enters the same envelope."""
        return self._envelope()

    def _envelope(self) -> Hold | None:
        for hold in reversed(getattr(self._local, "stack", ())):
            if not hold.released:
                return hold
        return None

    @contextmanager
    def drawing_from(self, envelope: Hold) -> Iterator[None]:
        """This thread's reservations draw from ``envelope`` first (see the module doc)."""
        if envelope.budget is not self:
            raise ValueError(f"{envelope.what} is a hold on GPU {envelope.budget.device_id}")
        stack = self._local.__dict__.setdefault("stack", [])
        stack.append(envelope)
        try:
            yield
        finally:
            stack.remove(envelope)

    def acquire(self, nbytes: int, what: str, wait: bool = False, own: bool = False) -> Hold:
        """Take ``nbytes`` of the budget until the returned hold is released.

        ``own``: from the free budget even inside an envelope (data that
        outlives the work the envelope was reserved for: a device's NTT power
        tables, shared by every proof of their size, must not keep a
        partition's room after it ends).

        For memory that outlives one call (resident tables, prepared bases);
        :meth:`reserve` is the scoped form. Raises (or, with ``wait=True``,
        blocks) exactly as :meth:`reserve` does.
        """
        if nbytes > self.limit_bytes:
            raise ResourceError(
                f"GPU {self.device_id}: {what} needs {nbytes / 2**30:.2f} GiB, "
                f"the device budget is {self.limit_bytes / 2**30:.2f} GiB"
            )
        with self._cond:
            env = None if own else self._envelope()
            lent = 0 if env is None else min(nbytes, env.nbytes - env.lent)
            outside = nbytes - lent
            while self.reserved_bytes + outside > self.limit_bytes:
                if not wait:
                    raise ResourceError(
                        f"GPU {self.device_id}: {what} needs {nbytes / 2**30:.2f} GiB"
                        + (f" ({outside / 2**30:.2f} beyond {env.what})" if env else "")
                        + f", {self.free_bytes / 2**30:.2f} GiB of the budget is free"
                    )
                self._cond.wait()
                env = None if own else self._envelope()  # (released meanwhile?)
                lent = 0 if env is None else min(nbytes, env.nbytes - env.lent)
                outside = nbytes - lent
            self.reserved_bytes += outside
            self.peak_by_operation[what] = max(self.peak_by_operation.get(what, 0), nbytes)
            if env is not None:
                env.lent += lent
                if outside:
                    # the envelope's estimate fell short: reported for calibration,
                    # logged the first time and whenever it grows by half and 64 MiB
                    before = self.overdrawn_by_operation.get(env.what)
                    self.overdrawn_by_operation[env.what] = max(before or 0, outside)
                    if before is None or outside >= max(1.5 * before, before + (64 << 20)):
                        log.warning(
                            "GPU %d: %s needs %.3f GiB beyond the %s reservation of "
                            "%.3f GiB (its estimate is short; taken from the free "
                            "budget); it has lent: %s",
                            self.device_id,
                            what,
                            outside / 2**30,
                            env.what,
                            env.nbytes / 2**30,
                            env.ledger(),
                        )
            hold = Hold(self, nbytes, what, envelope=env, from_envelope=lent)
            if env is not None:
                env.borrowers.add(hold)
            return hold

    def _release(self, hold: Hold) -> None:
        with self._cond:
            if hold.released:
                return
            hold.released = True
            # What this hold lent to inner holds still in use stays reserved.
            back = hold.nbytes - hold.from_envelope - hold.lent
            env = hold.envelope
            if env is not None:
                env.borrowers.discard(hold)
            if env is not None and hold.from_envelope:
                if env.released:
                    back += hold.from_envelope  # its envelope is gone: the bytes are ours
                else:
                    env.lent -= hold.from_envelope
            self.reserved_bytes -= back
            self._cond.notify_all()

    def _split(self, hold: Hold, nbytes: int, what: str) -> Hold:
        with self._cond:
            if hold.released or hold.from_envelope:
                raise ValueError(f"{hold.what}: only a live hold of its own splits")
            if not 0 <= nbytes <= hold.nbytes - hold.lent:
                raise ValueError(
                    f"{hold.what}: {nbytes} bytes do not fit its unused "
                    f"{hold.nbytes - hold.lent} bytes"
                )
            hold.nbytes -= nbytes
            self.peak_by_operation[what] = max(self.peak_by_operation.get(what, 0), nbytes)
            return Hold(self, nbytes, what)

    @contextmanager
    def reserve(self, nbytes: int, what: str, wait: bool = False) -> Iterator[None]:
        """Hold ``nbytes`` of this device's budget for the duration of ``what``.

        With ``wait=False`` a reservation that does not fit now raises; with
        ``wait=True`` it blocks until enough is released (it still raises if it
        could never fit).
        """
        hold = self.acquire(nbytes, what, wait)
        try:
            yield
        finally:
            hold.release()


class Cap:
    """A thread's bound on what :attr:`DeviceBudget.free_bytes` tells it, until
    another thread lifts it (:meth:`DeviceBudget.capped`). A ``final`` cap is
    never lifted: work under it sizes itself to it and does not wait (a lean
    partition's MSMs work within the room its estimate gave them, the rest
    of its reservation being held by its live vectors)."""

    def __init__(self, nbytes: int, final: bool = False) -> None:
        self.nbytes = nbytes
        self.final = final
        self.narrowed: Cap | None = None  # the forking thread's cap it came out of
        self._lifted = threading.Event()

    @property
    def lifted(self) -> bool:
        return self._lifted.is_set()

    def lift(self) -> None:
        self._lifted.set()

    def wait(self) -> None:
        self._lifted.wait()


@dataclass(eq=False)
class Hold:
    """A long-lived share of a device budget (see :meth:`DeviceBudget.acquire`)."""

    budget: DeviceBudget
    nbytes: int
    what: str
    envelope: Hold | None = None  # the hold this one drew from, if any
    from_envelope: int = 0  # bytes of this hold that came out of ``envelope``
    lent: int = 0  # bytes of this hold lent to inner holds now
    released: bool = False
    # the inner holds drawing from this one now (an envelope's, for its overdraw report)
    borrowers: set[Hold] = field(default_factory=set, repr=False)

    def release(self) -> None:
        self.budget._release(self)

    def split(self, nbytes: int, what: str) -> Hold:
        """A new hold of ``nbytes`` carved out of this one's room that no inner
        hold uses: a key's load draws its temporaries from the room its first
        partition will take, which is split off once the load is done. Only a
        hold that drew nothing from an envelope splits."""
        return self.budget._split(self, nbytes, what)

    def ledger(self) -> str:
        """What the holds drawing from this one take now, by operation, largest
        first: "G1 bases (resident) 37.840 GiB (4 holds), CSR … upload 5.941 GiB"."""
        by_what: dict[str, list[int]] = {}
        for h in list(self.borrowers):
            count_bytes = by_what.setdefault(h.what, [0, 0])
            count_bytes[0] += 1
            count_bytes[1] += h.nbytes
        rows = sorted(by_what.items(), key=lambda kv: -kv[1][1])
        return (
            ", ".join(
                f"{what} {b / 2**30:.3f} GiB" + (f" ({n} holds)" if n > 1 else "")
                for what, (n, b) in rows
            )
            or "nothing"
        )


_allocator_lock = threading.Lock()
_allocator_owner: object = None  # the cupy module whose allocator is ours
pool_releases = 0  # times releasing_malloc gave back cached blocks (this process)


def releasing_malloc(size: int):
    """CuPy's pool allocation, which at the pool's limit first gives back the
    blocks it caches for other streams and tries again.

    The pool keeps freed blocks per stream and, at its limit, raises without
    looking at the other streams' cached blocks (it releases them only when
    cudaMalloc itself fails). The prover and the witness work on streams of
    their own (``CudaBackend.work_stream``), so memory one has freed could
    otherwise refuse the other an allocation its reservation covers.
    """
    import cupy

    pool = cupy.get_default_memory_pool()
    try:
        return pool.malloc(size)
    except cupy.cuda.memory.OutOfMemoryError:
        cached = pool.free_bytes()
        if not cached:
            raise
        global pool_releases
        with _allocator_lock:
            pool_releases += 1
            count = pool_releases
        # each release waits for the device (cudaFree): logged at the 1st, 2nd,
        # 4th, 8th … so a run that keeps hitting the limit shows it
        level = logging.INFO if count & (count - 1) == 0 else logging.DEBUG
        log.log(
            level,
            "pool at its limit: releasing %.3f GiB of cached blocks (%d releases so far)",
            cached / 2**30,
            count,
        )
        pool.free_all_blocks()
        return pool.malloc(size)


def install_releasing_allocator() -> None:
    """Make :func:`releasing_malloc` CuPy's allocator (once a process)."""
    global _allocator_owner
    import cupy

    with _allocator_lock:
        if _allocator_owner is not cupy:
            cupy.cuda.set_allocator(releasing_malloc)
            _allocator_owner = cupy


@dataclass
class DeviceContext:
    """A GPU as cuzk uses it: its id, its budget, and its memory pool.

    ``budget_fraction`` of the device's total memory (or ``limit_bytes``) is
    the budget; the CuPy pool of the device gets the same hard limit, so an
    allocation outside any reservation still cannot exceed it.
    """

    device_id: int = 0
    limit_bytes: int | None = None
    budget_fraction: float = 0.9
    budget: DeviceBudget = field(init=False)

    def __post_init__(self) -> None:
        import cupy

        with cupy.cuda.Device(self.device_id):
            _free, total = cupy.cuda.runtime.memGetInfo()
            limit = self.limit_bytes or int(total * self.budget_fraction)
            self.pool = cupy.get_default_memory_pool()
            self.pool.set_limit(size=limit)
        install_releasing_allocator()
        self.budget = DeviceBudget(self.device_id, limit)

    def module(self, name: str, extra: tuple[str, ...] = ()):
        import cupy

        from cuzk.backends.cuda.loader import load_module

        with cupy.cuda.Device(self.device_id):
            return load_module(name, extra)
