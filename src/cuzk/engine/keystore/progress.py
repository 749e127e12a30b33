"""The log of a key on its way into memory: amount, rate and time left; and
the loads under way now, for ``/status``."""

from __future__ import annotations

import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

# a load that fails drops its ProgressLog, and with it its place here
_under_way: weakref.WeakValueDictionary[int, ProgressLog] = weakref.WeakValueDictionary()
_under_way_lock = threading.Lock()
_ids = itertools.count()


class ProgressLog:
    """``progress(done, total)`` in bytes → a log line at most every ``every``
    seconds, and one at the end: amount, rate and time left. Until its end it
    is one of :func:`under_way`."""

    def __init__(self, what: str, every: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.what = what
        self.every = every
        self.clock = clock
        self.start = clock()
        self.last = self.start
        self.done = self.total = 0
        self._id = next(_ids)

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        self.done, self.total = done, total
        with _under_way_lock:
            if done < total:
                _under_way[self._id] = self
            else:
                _under_way.pop(self._id, None)
        if done < total and now - self.last < self.every:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 else float("inf")
        log.info(
            "%s: %.2f of %.2f GB (%.1f%%), %.2f GB/s, %s",
            self.what,
            done / 1e9,
            total / 1e9,
            100.0 * done / max(total, 1),
            rate / 1e9,
            "done" if done >= total else f"about {left:.0f} s left",
        )

    def snapshot(self) -> dict[str, Any]:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.done / elapsed
        return {
            "what": self.what,
            "done_bytes": self.done,
            "total_bytes": self.total,
            "gb_per_s": round(rate / 1e9, 3),
            "seconds": round(elapsed, 3),
            "seconds_left": round((self.total - self.done) / rate, 1) if rate > 0 else None,
        }


def under_way() -> list[dict[str, Any]]:
    """The loads (and key writes) in progress now, oldest first."""
    with _under_way_lock:
        logs = sorted(_under_way.items())
    return [p.snapshot() for _, p in logs]
