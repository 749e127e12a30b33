"""A backend branch (``start(fn)``, ``join()``) on a plain thread named "side":
what a forking backend gives the prover, for the CPU tests of the side branch."""

from __future__ import annotations

import threading


class ThreadBranch:
    def call(self, fn):
        """Runs the branch's work on its thread (a subclass wraps it)."""
        return fn()

    def start(self, fn) -> None:
        self.out: dict = {}

        def run():
            try:
                self.out["value"] = self.call(fn)
            except BaseException as e:
                self.out["error"] = e

        self.thread = threading.Thread(target=run, name="side")
        self.thread.start()

    def join(self):
        self.thread.join()
        if "error" in self.out:
            raise self.out["error"]
        return self.out["value"]
