"""An asyncio event loop in a thread of its own, for the servers at the daemon's edge.

The gRPC servers (grpc.aio) and the HTTP status listener wait for their
clients as coroutines on such a loop: a caller waiting on its proof, or an
idle connection, costs a coroutine, never a thread. Work that blocks (parsing
a request, journalling it, reading the engine's status) goes to thread pools
sized by the config.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any


class LoopThread:
    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coro`` on the loop and wait for its result (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if not self._started or self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10.0)
        if not self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                self.loop.close()

    @property
    def running(self) -> bool:
        return self._started and self._thread.is_alive()
