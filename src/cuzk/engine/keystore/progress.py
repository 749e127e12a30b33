"""The log of a key on its way into memory: amount, rate and time left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class ProgressLog:
    """``progress(done, total)`` in bytes → a log line at most every ``every``
    seconds, and one at the end: amount, rate and time left."""

    def __init__(self, what: str, every: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.what = what
        self.every = every
        self.clock = clock
        self.start = clock()
        self.last = self.start

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
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
