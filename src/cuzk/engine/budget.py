"""Memory budgets: host RAM and each device's VRAM, reserved before use.

Every stage reserves the bytes it will hold before it starts and releases
them when done; work that does not fit waits (after asking the key store
to evict idle keys) rather than over-committing. A reservation larger than
the whole budget can never fit and fails at once with ResourceError.

Several parts (a key to load and a partition's working set) are reserved
atomically, all or nothing, so that two workers each holding half of what
they need cannot deadlock.

A device budget is backed by the CUDA backend's
:class:`cuzk.backends.cuda.memory.DeviceBudget`: what the engine reserves
there is what the device's allocator enforces. The work a reservation was
made for runs inside :meth:`Budget.lend`, so that the backend's own
reservations for that work draw from it instead of counting it twice.

A device budget may keep a slice for time-critical work (``kept``: WinningPoSt
and WindowPoSt, CRITICAL and HIGH): a reservation made outside
:func:`time_critical` may not take the budget's last ``kept`` bytes, so such
work never waits behind a PoRep partition's reservation for its working set.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from cuzk.errors import CuzkError, ResourceError

log = logging.getLogger(__name__)

Evictor = Callable[[int], bool]  # shortfall in bytes -> freed something


_urgency = threading.local()


@contextmanager
def time_critical(on: bool = True) -> Iterator[None]:
    """Inside, the calling thread's reservations are time-critical work's: they
    may take a budget's kept slice, and idle keys of time-critical circuits may
    be evicted for them (KeyStore.evict_idle); outside, neither."""
    before = getattr(_urgency, "on", False)
    _urgency.on = on
    try:
        yield
    finally:
        _urgency.on = before


def is_time_critical() -> bool:
    """Whether the calling thread works for a time-critical partition now."""
    return getattr(_urgency, "on", False)


class Cancelled(CuzkError):
    """The work a reservation was waited for has been cancelled."""


class Reservation:
    """Bytes held in a budget until :meth:`release` (idempotent)."""

    __slots__ = ("_released", "_token", "budget", "nbytes", "what")

    def __init__(self, budget: Budget, nbytes: int, what: str, token: Any = None) -> None:
        self.budget = budget
        self.nbytes = nbytes
        self.what = what
        self._token = token
        self._released = False

    def release(self) -> None:
        self.budget._release(self)

    @property
    def released(self) -> bool:
        return self._released

    def unused(self) -> int:
        """Bytes of this reservation that no inner reservation of the backend holds
        now (all of it where there is no device budget behind it)."""
        token = self._token
        return self.nbytes - (token.lent if token is not None else 0)

    def split(self, nbytes: int, what: str) -> Reservation:
        """A reservation of ``nbytes`` carved out of this one's unused bytes (on a
        device: out of the room its backend holds do not use); the two are
        released on their own. ValueError when the unused bytes are fewer."""
        with self.budget._cond:
            if self._released or not 0 <= nbytes <= self.unused():
                raise ValueError(
                    f"{self.what}: cannot split {nbytes} bytes off {self.unused()} unused"
                )
            token = self._token.split(nbytes, what) if self._token is not None else None
            self.nbytes -= nbytes
            return Reservation(self.budget, nbytes, what, token)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Budget:
    """A byte budget with reservations, peak tracking and waiting."""

    def __init__(self, name: str, limit: int, device_budget: Any = None, kept: int = 0) -> None:
        self.name = name
        self.limit = int(limit)
        self.kept = max(0, min(int(kept), self.limit // 2))  # only time-critical work takes it
        self._kept_warned = False
        self.reserved = 0
        self.peak = 0
        self.waits = 0  # reservations that had to wait for memory
        self._device_budget = device_budget
        self._cond = threading.Condition(threading.RLock())

    @property
    def free(self) -> int:
        return self.limit - self.reserved

    def keep(self, nbytes: int) -> None:
        """Keep the budget's last ``nbytes`` for time-critical work (0: none), at
        most half the budget, so that other work always has room to run."""
        with self._cond:
            self.kept = max(0, min(int(nbytes), self.limit // 2))
            self._cond.notify_all()

    def _ceiling(self, total: int = 0) -> int:
        """What the calling thread's reservation of ``total`` bytes may bring
        ``reserved`` up to: the whole limit for time-critical work, the limit
        less the kept slice for other work, unless that work could never fit
        beside the slice (then the slice does not hold it back: it would wait
        for ever; a warning says so once)."""
        if is_time_critical() or not self.kept:
            return self.limit
        if total > self.limit - self.kept:
            if not self._kept_warned:
                self._kept_warned = True
                log.warning(
                    "%s: a reservation of %s does not fit beside the %s kept for "
                    "time-critical proofs and may take it: lower [gpus] time_critical_vram",
                    self.name,
                    _gib(total),
                    _gib(self.kept),
                )
            return self.limit
        return self.limit - self.kept

    def available(self, total: int = 0) -> int:
        """What a reservation can take now: the free budget, or less on a device
        whose backend holds memory of its own beyond the engine's reservations
        (long-lived tables made inside work that has finished): eviction is
        asked for the device's real shortfall, not the engine's view of it."""
        free = self._ceiling(total) - self.reserved
        dev = self._device_budget
        if dev is not None:
            free = min(free, dev.limit_bytes - dev.reserved_bytes)
        return free

    # --- taking and giving back ---------------------------------------------
    def _take(self, nbytes: int, what: str, ceiling: int) -> Reservation | None:
        """Called with the condition held."""
        if self.reserved + nbytes > ceiling:
            return None
        token = None
        if self._device_budget is not None:
            try:
                token = self._device_budget.acquire(nbytes, what, wait=False)
            except ResourceError:
                return None  # something outside the engine holds device memory
        self.reserved += nbytes
        self.peak = max(self.peak, self.reserved)
        return Reservation(self, nbytes, what, token)

    def _release(self, r: Reservation) -> None:
        with self._cond:
            if r._released:
                return
            r._released = True
            self.reserved -= r.nbytes
            if r._token is not None:
                r._token.release()
            self._cond.notify_all()

    def sized_within(self, nbytes: int) -> AbstractContextManager[Any]:
        """Inside, the backend sizes its work (an MSM's workspace and chunks) to at
        most ``nbytes`` of free memory on this device (a final cap; a no-op
        without a device budget or for ``nbytes`` 0)."""
        if self._device_budget is None or nbytes <= 0:
            return nullcontext()
        return self._device_budget.sized_within(nbytes)

    def lend(self, r: Reservation) -> AbstractContextManager[Any]:
        """Run the work ``r`` was reserved for: on a device, the backend's
        reservations made by this thread inside come out of ``r`` first."""
        if self._device_budget is None or r._token is None:
            return nullcontext()
        return self._device_budget.drawing_from(r._token)

    def try_reserve(self, parts: Sequence[tuple[int, str]]) -> list[Reservation] | None:
        """All parts now, or none (without waiting)."""
        with self._cond:
            total = sum(n for n, _ in parts)
            ceiling = self._ceiling(total)
            if self.reserved + total > ceiling:
                return None
            taken: list[Reservation] = []
            for n, what in parts:
                r = self._take(n, what, ceiling)
                if r is None:
                    for t in taken:
                        self._release(t)
                    return None
                taken.append(r)
            return taken

    def reserve(
        self,
        parts: Sequence[tuple[int, str]],
        evict: Evictor | None = None,
        cancelled: Callable[[], bool] | None = None,
        poll_s: float = 0.25,
    ) -> list[Reservation]:
        """All parts, waiting until they fit together.

        ``evict(shortfall)`` is asked to free memory (idle keys) before
        waiting; ``cancelled()`` is polled while waiting and raises Cancelled.
        """
        total = sum(n for n, _ in parts)
        if total > self.limit:
            what = " + ".join(w for _, w in parts)
            raise ResourceError(
                f"{self.name}: {what} needs {_gib(total)}, more than the whole budget of "
                f"{_gib(self.limit)}; raise the budget or use a machine with more memory"
            )
        waited = False
        while True:
            got = self.try_reserve(parts)
            if got is not None:
                return got
            if cancelled is not None and cancelled():
                raise Cancelled("cancelled while waiting for memory")
            if evict is not None and evict(total - self.available(total)):
                continue
            if not waited:
                waited = True
                self.waits += 1
                log.debug("%s: %s waits for %s (free %s)", self.name, parts, total, self.free)
            with self._cond:
                if self.available(total) < total:  # (the device's own holds too: no busy loop)
                    self._cond.wait(poll_s)

    def snapshot(self) -> dict[str, int]:
        """Limit, reserved, peak and waits; for a device also what its allocator
        holds (the engine's reservations and the backend's own long-lived data)
        and the largest overdraw of a reservation by the backend (0 when every
        estimate held: see DeviceBudget.overdrawn_by_operation)."""
        with self._cond:
            snap = {
                "limit_bytes": self.limit,
                "reserved_bytes": self.reserved,
                "peak_bytes": self.peak,
                "waits": self.waits,
                "kept_bytes": self.kept,
            }
        dev = self._device_budget
        if dev is not None:
            snap["device_reserved_bytes"] = int(dev.reserved_bytes)
            snap["overdrawn_bytes"] = max(dev.overdrawn_by_operation.values(), default=0)
        return snap


def _gib(n: int) -> str:
    return f"{n / 2**30:.3f} GiB" if n >= 2**27 else f"{n / 2**20:.1f} MiB"


def wait_until(pred: Callable[[], bool], timeout: float, poll: float = 0.02) -> bool:
    """Poll ``pred`` until it holds or ``timeout`` seconds pass (for shutdown paths)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(poll)
    return pred()
