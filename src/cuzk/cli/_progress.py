"""A progress line on a terminal for a command that waits: what it is doing and
for how long, rewritten in place on stderr about once a second; nothing when
stderr is not a terminal (a pipe or a log keeps only the command's result)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Ticker:
    """``with Ticker("proving"):`` shows ``  … proving: 12 s`` while the block runs."""

    def __init__(self, what: str, stream: TextIO | None = None, interval: float = 1.0) -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = 0.0

    @property
    def live(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _write(self) -> None:
        el = time.perf_counter() - self.t0
        self.stream.write(f"\r\033[K  … {self.what}: {el:.0f} s")
        self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._write()

    def __enter__(self) -> Ticker:
        self.t0 = time.perf_counter()
        if self.live:
            self._write()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self.stream.write("\r\033[K")
            self.stream.flush()
