"""Device health: a device whose backend failed takes no new work until a probe passes.

A device failure is an exception that blames the device rather than the work
it was given: the project's :class:`~cuzk.errors.DeviceError` (raised by a
backend, or by the failure injection of :mod:`cuzk.engine.faults`), or one of
CuPy's CUDA errors (a runtime or driver error: an illegal address, an ECC
error, a lost device; or an out-of-memory error, which the budgets rule out
unless something outside the engine holds the memory), itself or as the cause
of the exception raised. Any other exception (a bad key file, a witness that
does not fit the circuit, a budget that cannot hold the work) fails the job as
on one device: another device would fail it the same way.

The pipeline retries the partition of a device failure on another device and
marks the device unhealthy: it takes no new work, and the keys it holds are
dropped (nothing it held is trusted). Recovery rule: the device is probed
``[gpus] recovery_probe_interval`` after the failure, and again that long
after each failed probe; the probe is a small computation on the device
checked on the host (:meth:`cuzk.engine.devices.Device.probe`). When it
passes the device takes work again and loads keys afresh as they are needed.
A device that is really lost never passes and stays out of service until the
daemon restarts, while the other devices carry the work; a queued partition
that no device in service may prove fails its job at the next failed probe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from cuzk.errors import DeviceError

# CuPy's exceptions that blame the device (by name: the engine does not import CuPy).
CUDA_DEVICE_ERRORS = frozenset({"CUDARuntimeError", "CUDADriverError", "OutOfMemoryError"})


def is_device_failure(e: BaseException) -> bool:
    """Whether ``e`` (or an exception it was raised from) says the device failed."""
    seen = 0
    cur: BaseException | None = e
    while cur is not None and seen < 8:
        if isinstance(cur, DeviceError):
            return True
        t = type(cur)
        if t.__module__.split(".")[0] in ("cupy", "cupy_backends") and (
            t.__name__ in CUDA_DEVICE_ERRORS
        ):
            return True
        cur, seen = cur.__cause__, seen + 1
    return False


@dataclass(frozen=True)
class DeviceRecord:
    """One device's health, and the failures that made it unhealthy."""

    ordinal: int
    healthy: bool = True
    failures: int = 0  # device failures seen since the daemon started
    failed_over: int = 0  # partitions moved off this device to another by them
    probes_failed: int = 0
    last_failure: str = ""  # the last failure's message ("" before any)
    unhealthy_since: float | None = None  # the clock's time it was taken out of service
    next_probe: float | None = None  # the clock's time of its next probe (unhealthy only)


class DeviceHealth:
    """Which devices take work (thread safe); ``clock`` is ``time.monotonic``
    unless a test gives its own; ``on_change()`` is called after every change
    of a device's health (the pipeline re-offers its queued work then)."""

    def __init__(
        self,
        ordinals: Iterable[int],
        probe_interval: float,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.probe_interval = probe_interval
        self.clock = clock
        self.on_change = on_change
        self._records = {o: DeviceRecord(o) for o in ordinals}
        self._probing: set[int] = set()
        self._lock = threading.Lock()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def healthy(self, ordinal: int) -> bool:
        with self._lock:
            return self._records[ordinal].healthy

    def record(self, ordinal: int) -> DeviceRecord:
        with self._lock:
            return self._records[ordinal]

    def snapshot(self) -> dict[int, DeviceRecord]:
        with self._lock:
            return dict(self._records)

    def failed(self, ordinal: int, reason: str) -> bool:
        """A device failure on ``ordinal``; True when it took the device out of
        service (it was healthy), False when it was out already."""
        with self._lock:
            r = self._records[ordinal]
            now = self.clock()
            newly = r.healthy
            self._records[ordinal] = replace(
                r,
                healthy=False,
                failures=r.failures + 1,
                last_failure=reason,
                unhealthy_since=now if newly else r.unhealthy_since,
                next_probe=now + self.probe_interval if newly else r.next_probe,
            )
        if newly:
            self._changed()
        return newly

    def failed_over(self, ordinal: int, partitions: int = 1) -> None:
        """Partitions of ``ordinal`` given to other devices after its failure."""
        with self._lock:
            r = self._records[ordinal]
            self._records[ordinal] = replace(r, failed_over=r.failed_over + partitions)

    def seconds_to_probe(self, ordinal: int) -> float | None:
        """Until the device's next probe (0 when due); None while it is healthy."""
        with self._lock:
            r = self._records[ordinal]
            if r.healthy or r.next_probe is None:
                return None
            return max(0.0, r.next_probe - self.clock())

    def claim_probe(self, ordinal: int) -> bool:
        """True for the one caller that should probe the device now (it is
        unhealthy, its probe is due, and no one else is probing it)."""
        with self._lock:
            r = self._records[ordinal]
            if r.healthy or ordinal in self._probing:
                return False
            if r.next_probe is not None and self.clock() < r.next_probe:
                return False
            self._probing.add(ordinal)
            return True

    def probe_passed(self, ordinal: int) -> None:
        with self._lock:
            self._probing.discard(ordinal)
            r = self._records[ordinal]
            self._records[ordinal] = replace(r, healthy=True, unhealthy_since=None, next_probe=None)
        self._changed()

    def probe_failed(self, ordinal: int, reason: str) -> None:
        with self._lock:
            self._probing.discard(ordinal)
            r = self._records[ordinal]
            self._records[ordinal] = replace(
                r,
                probes_failed=r.probes_failed + 1,
                last_failure=f"probe: {reason}",
                next_probe=self.clock() + self.probe_interval,
            )
