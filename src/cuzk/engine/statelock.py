"""One daemon per state: an exclusive lock beside the journal, naming its holder.

A second daemon on the same journal would resume the first one's unfinished
jobs (proving them twice) and, on the same socket, take the first one's
clients. The lock is ``flock`` on ``<journal>.lock``: it goes with the process
however it ends (a SIGKILL included), so a stale lock file never blocks a
restart; the file holds the holder's pid, which the refusal names.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

from cuzk.errors import CuzkError

log = logging.getLogger(__name__)


class StateLocked(CuzkError):
    """Another daemon holds this state."""

    def __init__(self, journal: Path, lock: Path, pid: int | None) -> None:
        self.pid = pid
        holder = f"pid {pid}" if pid else "pid unknown"
        super().__init__(
            f"{journal}: in use by another cuzk-daemon ({holder}), which holds {lock}; stop "
            "it, or give this daemon its own [daemon] journal and listen address"
        )


def lock_path(journal: Path) -> Path:
    return journal.with_name(journal.name + ".lock")


class StateLock:
    """Held from :meth:`acquire` until :meth:`release` (or the process ends)."""

    def __init__(self, journal: Path) -> None:
        self.journal = Path(journal)
        self.path = lock_path(self.journal)
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise StateLocked(self.journal, self.path, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        log.debug("state lock %s taken (pid %d)", self.path, os.getpid())

    def probe(self) -> None:
        """Raise StateLocked when another process holds the lock (nothing is kept:
        a daemon checks this before anything else, and takes the lock as it starts)."""
        self.acquire()
        self.release()

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing the descriptor releases the flock
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isascii() and text.isdigit() else None
