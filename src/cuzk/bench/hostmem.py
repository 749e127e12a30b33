"""Host memory of this process and its descendants, sampled while a command runs.

``ru_maxrss`` gives the peak of one process; a prover with witness workers
needs the peak of their sum. A thread reads ``/proc/<pid>/status`` of the
process tree every ``interval`` seconds and keeps the largest total of
``RssAnon`` (private memory: what an out-of-memory killer counts against us)
and of ``VmRSS`` (which adds mapped file pages, such as a memory-mapped
constraint cache, that the kernel can drop). Its two other parts are kept
too, each at the peak of ``VmRSS``: ``RssFile`` (mapped files) and
``RssShmem`` (shared memory, where pinned host buffers of the GPU driver
count), so a report says which part a peak was made of.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path


def status_kib(pid: int | str, *fields: str) -> tuple[int, ...]:
    """Fields of ``/proc/<pid>/status`` in KiB (``VmRSS``, ``RssAnon``, ``VmHWM``
    …); zeros when the process is gone."""
    found = dict.fromkeys(fields, 0)
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in found:
                found[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return tuple(found[f] for f in fields)


def peak_rss_mib(children: bool = False) -> float:
    """This process's peak resident memory (``ru_maxrss``) in MiB, or the largest
    of its finished children's."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def _tree(root: int) -> list[int]:
    """``root`` and every descendant, from the parent links in /proc/*/stat."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += parents.get(pid, [])
    return out


class HostMemory:
    """``with HostMemory() as m: …`` then ``m.peak_rss`` / ``m.peak_anon`` in bytes."""

    def __init__(self, interval: float = 0.5, root: int | None = None) -> None:
        self.interval = interval
        self.root = os.getpid() if root is None else root  # the tree's root process
        self.peak_rss = 0
        self.peak_anon = 0
        self.at_peak_rss = (0, 0, 0)  # (anon, file, shmem) bytes when VmRSS peaked
        self.now = (0, 0, 0, 0)  # the last sample: (rss, anon, file, shmem) bytes
        self.peak_by_pid: dict[int, int] = {}  # each process's own peak (VmHWM), bytes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.available = Path("/proc/self/status").exists()

    def sample(self) -> None:
        total = [0, 0, 0, 0]
        for pid in _tree(self.root):
            *parts, hwm = status_kib(pid, "VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM")
            total = [t + p * 1024 for t, p in zip(total, parts, strict=True)]
            self.peak_by_pid[pid] = max(self.peak_by_pid.get(pid, 0), hwm * 1024)
        rss, anon, file, shmem = self.now = tuple(total)
        if rss > self.peak_rss:
            self.peak_rss, self.at_peak_rss = rss, (anon, file, shmem)
        self.peak_anon = max(self.peak_anon, anon)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> HostMemory:
        if self.available:
            self.sample()
            self._thread = threading.Thread(target=self._run, name="host-memory", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self.sample()

    def report(self) -> dict[str, int]:
        """Peaks in MiB, for a command's JSON report: of ``VmRSS`` (with its
        anonymous, file and shared parts at that moment) and of ``RssAnon``."""
        anon, file, shmem = (round(b / 2**20) for b in self.at_peak_rss)
        return {
            "host_peak_rss_mib": round(self.peak_rss / 2**20),
            "host_peak_anon_mib": round(self.peak_anon / 2**20),
            "at_peak_rss_mib": {"anon": anon, "file": file, "shmem": shmem},
        }

    def current(self) -> dict[str, int]:
        """The last sample in MiB: the tree's ``VmRSS`` and its three parts."""
        names = ("rss", "anon", "file", "shmem")
        return {f"now_{n}_mib": round(b / 2**20) for n, b in zip(names, self.now, strict=True)}


def watch(
    pid: int,
    interval: float = 1.0,
    progress: Callable[[dict[str, int]], None] | None = None,
    every: float = 10.0,
) -> dict[str, int]:
    """Sample another process's tree (a daemon and its synthesis workers) until
    that process ends; its peaks, as :meth:`HostMemory.report` gives them.
    ``progress`` gets the peaks so far and the last sample every ``every``
    seconds (a run cut short still leaves its figure, and the lines are a
    timeline of where the memory went)."""
    m = HostMemory(interval, root=pid)
    last = time.monotonic()
    with m:
        while _running(pid):
            m._stop.wait(interval)
            if progress is not None and time.monotonic() - last >= every:
                last = time.monotonic()
                progress({**m.report(), **m.current()})
    return m.report()


def _running(pid: int) -> bool:
    """The process exists and has not exited (a zombie waits for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


if __name__ == "__main__":
    # python -m cuzk.bench.hostmem PID: the peaks so far as a JSON line every 10 s,
    # and at the process's end; the last line is the figure
    import json
    import sys

    def show(report: dict[str, int]) -> None:
        print(json.dumps(report), flush=True)

    show(watch(int(sys.argv[1]), progress=show))
