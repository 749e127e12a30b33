"""One daemon per state: an exclusive lock on the journal file itself, naming its holder.

A second daemon on the same journal would resume the first one's unfinished
jobs (proving them twice) and, on the same socket, take the first one's
clients. The lock is ``flock`` on the journal file (created empty when it is
new; SQLite's own locks are POSIX locks, which ``flock`` does not touch), so it
is keyed on the file's identity, its device and inode, not on the name it was
given: a journal reached through a symlink, a symlinked folder or a hard link
is the same journal and is refused. It goes with the process however it ends
(a SIGKILL included), so a crash never blocks a restart. The holder's pid is
read from the kernel's lock table (``/proc/locks``), and also written to
``<journal>.lock`` beside the journal's real path for the operator.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

from cuzk.errors import CuzkError

log = logging.getLogger(__name__)

PROC_LOCKS = Path("/proc/locks")


class StateLocked(CuzkError):
    """Another daemon holds this state."""

    def __init__(self, journal: Path, real: Path, pid: int | None) -> None:
        self.pid = pid
        holder = f"pid {pid}" if pid else "pid unknown"
        same = "" if real == journal else f" (the same file as {real})"
        super().__init__(
            f"{journal}: in use by another cuzk-daemon ({holder}), which holds its "
            f"lock{same}; stop it, or give this daemon its own [daemon] journal and "
            "listen address"
        )


def lock_path(journal: Path) -> Path:
    """The file beside the journal that names the holder's pid."""
    return journal.with_name(journal.name + ".lock")


class StateLock:
    """Held from :meth:`acquire` until :meth:`release` (or the process ends)."""

    def __init__(self, journal: Path) -> None:
        self.journal = Path(journal)
        self.real = self.journal.resolve()  # symlinks followed: the file it really is
        self.path = lock_path(self.real)
        self._fd: int | None = None

    def acquire(self) -> None:
        self.real.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.real, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            st = os.fstat(fd)
            os.close(fd)
            pid = holder_pid(st.st_dev, st.st_ino) or _read_pid(self.path)
            raise StateLocked(self.journal, self.real, pid) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        with contextlib.suppress(OSError):
            self.path.write_text(f"{os.getpid()}\n")
            os.chmod(self.path, 0o600)
        log.debug("state lock on %s taken (pid %d)", self.real, os.getpid())

    def probe(self) -> None:
        """Raise StateLocked when another process holds the lock (nothing is kept:
        a daemon checks this before anything else, and takes the lock as it starts)."""
        self.acquire()
        self.release()

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if _read_pid(self.path) == os.getpid():
                self.path.write_text("")
        os.close(self._fd)  # closing the descriptor releases the flock
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def holder_pid(dev: int, ino: int, table: Path = PROC_LOCKS) -> int | None:
    """The pid holding a ``flock`` on the file (dev, ino), from the kernel's lock
    table; None when it cannot be told (no /proc, a pid in another namespace: 0)."""
    want = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    try:
        lines = table.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF"; a waiter's line has "->"
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[2] != "->":
            pid, where = parts[4], parts[5]
            if where.lower() == want and pid.isdigit() and int(pid) > 0:
                return int(pid)
    return None


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii", errors="replace")[:32].strip()
    except OSError:
        return None
    return int(text) if text.isascii() and text.isdigit() else None


def adopt(old: Path, new: Path) -> bool:
    """Move a journal from where an earlier version kept it (``old``) to this
    daemon's state folder (``new``), with SQLite's side files, so an upgrade
    resumes its unfinished jobs. Only when ``new`` does not exist yet and no
    process holds ``old``: neither this version's lock (``flock`` on the file)
    nor the earlier one's (``flock`` on ``<journal>.lock``). True when moved;
    False when there was nothing to move or it is in use (left where it is)."""
    if not old.exists() or new.exists() or old.resolve() == new.resolve():
        return False
    fds: list[int] = []
    try:
        for path in (old, lock_path(old)):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        new.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("-wal", "-shm", ""):  # the database last: its side files go first
            side = old.with_name(old.name + suffix)
            if side.exists():
                os.replace(side, new.with_name(new.name + suffix))
        return True
    except BlockingIOError:
        return False
    finally:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            lock_path(old).unlink()
