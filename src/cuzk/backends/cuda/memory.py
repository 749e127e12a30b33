"""One VRAM budget per device: work is admitted only when its reservation fits.

A lock does not reserve memory; a budget does. Every GPU allocation of cuzk
goes through the device's CuPy memory pool, whose hard limit is the budget,
and every operation first *reserves* its peak use: a reservation that does not
fit fails up front with :class:`cuzk.errors.ResourceError` (or waits, for the
engine's workers) instead of a CUDA out-of-memory error half way through.
Peak use per operation is recorded for reporting.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from cuzk.errors import ResourceError


@dataclass
class DeviceBudget:
    device_id: int
    limit_bytes: int
    reserved_bytes: int = 0
    peak_by_operation: dict[str, int] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def free_bytes(self) -> int:
        return self.limit_bytes - self.reserved_bytes

    def _take(self, nbytes: int, what: str) -> None:
        self.reserved_bytes += nbytes
        self.peak_by_operation[what] = max(self.peak_by_operation.get(what, 0), nbytes)

    def acquire(self, nbytes: int, what: str, wait: bool = False) -> Hold:
        """Take ``nbytes`` of the budget until the returned hold is released.

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
            while self.reserved_bytes + nbytes > self.limit_bytes:
                if not wait:
                    raise ResourceError(
                        f"GPU {self.device_id}: {what} needs {nbytes / 2**30:.2f} GiB, "
                        f"{self.free_bytes / 2**30:.2f} GiB of the budget is free"
                    )
                self._cond.wait()
            self._take(nbytes, what)
        return Hold(self, nbytes, what)

    def _give_back(self, nbytes: int) -> None:
        with self._cond:
            self.reserved_bytes -= nbytes
            self._cond.notify_all()

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


@dataclass
class Hold:
    """A long-lived share of a device budget (see :meth:`DeviceBudget.acquire`)."""

    budget: DeviceBudget
    nbytes: int
    what: str
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.budget._give_back(self.nbytes)


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
        self.budget = DeviceBudget(self.device_id, limit)

    def module(self, name: str, extra: tuple[str, ...] = ()):
        import cupy

        from cuzk.backends.cuda.loader import load_module

        with cupy.cuda.Device(self.device_id):
            return load_module(name, extra)
