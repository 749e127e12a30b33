"""The last hour of the daemon's state, sampled, for the status page's plots.

Every ``[daemon] status_sample_interval`` (5 s) one sample is taken from the
engine: jobs queued and running per proof kind, proofs completed and failed
so far, the latency of the proofs completed since the previous sample, the
host and VRAM budgets' use, and the keys resident. ``GET
/status?history_since=T`` returns the samples taken after T (unix seconds),
so the page fetches the hour once and then only what is new.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any

from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState

log = logging.getLogger(__name__)

WINDOW_S = 3600.0


class StatusHistory:
    def __init__(self, engine: Engine, interval: float, window: float = WINDOW_S) -> None:
        self.engine = engine
        self.interval = interval
        self._samples: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=max(2, int(window / interval) + 1)
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status-history", daemon=True)
        self._last_t = time.time()

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample()
            except Exception:  # a bad sample must not end the history
                log.exception("status history: sample failed")

    def sample(self) -> dict[str, Any]:
        """Take one sample now (also called by the sampling thread)."""
        now = time.time()
        s = self.engine.status()
        since, self._last_t = self._last_t, now
        latencies = [
            j.timings.total_ms / 1000
            for j in self.engine.registry.recently_finished(since)
            if j.state == JobState.COMPLETED
            and j.finished_at is not None
            and since < j.finished_at <= now
        ]
        budgets = s.budgets
        host = budgets.get("host", {})
        sample = {
            "t": round(now, 3),
            "queued": {q.proof_kind: q.pending for q in s.queues},
            "running": {q.proof_kind: q.in_progress for q in s.queues},
            "completed": s.completed,
            "failed": s.failed,
            "latency_s": {
                "n": len(latencies),
                "mean": round(sum(latencies) / len(latencies), 4) if latencies else None,
                "max": round(max(latencies), 4) if latencies else None,
            },
            "host": {
                "reserved": host.get("reserved_bytes", 0),
                "limit": host.get("limit_bytes", 0),
            },
            "vram": {
                name.split(":", 1)[1]: {"reserved": b["reserved_bytes"], "limit": b["limit_bytes"]}
                for name, b in budgets.items()
                if name.startswith("vram:")
            },
            "keys": {
                "resident": sum(1 for e in s.keys if e.tier.name == "HOT"),
                "bytes": sum(e.size_bytes for e in s.keys if e.tier.name == "HOT"),
                "known": len(s.keys),
            },
        }
        with self._lock:
            self._samples.append(sample)
        return sample

    def since(self, t: float) -> list[dict[str, Any]]:
        """The samples taken after ``t`` (unix seconds), oldest first."""
        with self._lock:
            return [x for x in self._samples if x["t"] > t]
