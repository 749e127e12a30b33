"""Log lines about resource exhaustion, rate-limited.

A flood (thousands of refused requests, connections past a limit, a file
descriptor table full) must not become a flood of log lines: each kind of
line is written at most :data:`PER_MINUTE` times a minute, and the next one
written says how many were left out meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

PER_MINUTE = 10


class RateLimitedLog:
    """``log(key, level, msg, *args)`` writes at most ``per_minute`` lines of one
    ``key`` a minute (a sliding budget refilled continuously)."""

    def __init__(
        self,
        logger: logging.Logger,
        per_minute: int = PER_MINUTE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.per_minute = per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._budget: dict[str, tuple[float, float, int]] = {}  # key → (tokens, at, left out)

    def allow(self, key: str) -> int | None:
        """None when a line of ``key`` is left out now; else the lines left out since
        the last one written (counted as written)."""
        now = self._clock()
        with self._lock:
            tokens, at, skipped = self._budget.get(key, (float(self.per_minute), now, 0))
            tokens = min(float(self.per_minute), tokens + (now - at) * self.per_minute / 60.0)
            if tokens < 1.0:
                self._budget[key] = (tokens, now, skipped + 1)
                return None
            self._budget[key] = (tokens - 1.0, now, 0)
            return skipped

    def log(self, key: str, level: int, msg: str, *args: object, exc_info: bool = False) -> bool:
        """Write the line unless ``key`` is over its budget; whether it was written."""
        skipped = self.allow(key)
        if skipped is None:
            return False
        if skipped:
            msg += f" ({skipped} similar line(s) left out)"
        self.logger.log(level, msg, *args, exc_info=exc_info)
        return True

    def warning(self, key: str, msg: str, *args: object) -> bool:
        return self.log(key, logging.WARNING, msg, *args)
