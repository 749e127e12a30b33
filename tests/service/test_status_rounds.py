"""GetStatus calls share their answers (issue 32, item 4): calls that arrive while a
status is being computed are answered together by the next one, begun after they
arrived; a flood of N callers costs about one status a round, not N."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuzk.bench.hardening import daemon, stub
from cuzk.service.proto import proving_pb2 as pb


def test_status_calls_arriving_during_one_share_the_next(tmp_path: Path, monkeypatch) -> None:
    with daemon(tmp_path) as (engine, addr):
        real = engine.status
        entered, release = threading.Event(), threading.Event()
        calls = []

        def slow_status():
            calls.append(time.monotonic())
            if len(calls) == 1:  # the first round is held while the others arrive
                entered.set()
                release.wait(10)
            return real()

        monkeypatch.setattr(engine, "status", slow_status)
        s = stub(addr)
        with ThreadPoolExecutor(17) as pool:
            first = pool.submit(s.GetStatus, pb.GetStatusRequest(), timeout=20)
            assert entered.wait(10)
            arrived = time.monotonic()
            rest = [pool.submit(s.GetStatus, pb.GetStatusRequest(), timeout=20) for _ in range(16)]
            time.sleep(0.3)  # all sixteen are at the daemon, waiting
            release.set()
            answers = [f.result() for f in [first, *rest]]
        assert all(a.uptime_seconds >= 0 for a in answers)
        assert len(calls) == 2  # one round for the first call, one for the sixteen
        assert calls[1] > arrived  # read after they arrived: nothing stale
