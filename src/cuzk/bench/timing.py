"""The benchmarks' clocks: CUDA events on the device, wall and CPU seconds on the host."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Any


def time_ms(fn: Callable[[], Any], warmup: int = 1, reps: int = 5) -> list[float]:
    """Milliseconds of each of ``reps`` runs of ``fn`` on the current device
    (CUDA events around each run), after ``warmup`` untimed runs."""
    import cupy

    for _ in range(warmup):
        fn()
    cupy.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(float(cupy.cuda.get_elapsed_time(start, stop)))
    return out


def cpu_seconds(children: bool = False) -> float:
    """User + system CPU seconds of this process (all its threads), or of its
    finished children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class StageClock:
    """Wall seconds per named stage, summed when a stage repeats:
    ``t = clock.mark("compile", t)`` charges the time since ``t`` and returns now."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def mark(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now

    def rounded(self, digits: int = 3) -> dict[str, float]:
        return {k: round(v, digits) for k, v in self.seconds.items()}
