"""One daemon per journal, whatever name the journal is reached by (issue 32 item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.engine.statelock import StateLock, StateLocked, holder_pid


@pytest.mark.parametrize("how", ["same path", "symlink", "symlinked folder", "hard link"])
def test_a_journal_reached_by_another_name_is_refused(tmp_path: Path, how: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    journal = state / "journal.sqlite"
    first = StateLock(journal)
    first.acquire()
    try:
        if how == "same path":
            other = journal
        elif how == "symlink":
            other = tmp_path / "link.sqlite"
            other.symlink_to(journal)
        elif how == "symlinked folder":
            (tmp_path / "alias").symlink_to(state)
            other = tmp_path / "alias" / "journal.sqlite"
        else:
            other = tmp_path / "hard.sqlite"
            os.link(journal, other)
        held = rf"in use by another cuzk-daemon \(pid {os.getpid()}\)"
        with pytest.raises(StateLocked, match=held):
            StateLock(other).acquire()
    finally:
        first.release()
    StateLock(journal).probe()  # released: the next one takes it


def test_the_holder_is_named_from_the_kernels_lock_table(tmp_path: Path) -> None:
    """Another process holds the journal (a hard link has no pid file beside it)."""
    journal = tmp_path / "journal.sqlite"
    code = (
        "import sys,time; sys.path.insert(0, sys.argv[2]);"
        "from cuzk.engine.statelock import StateLock;"
        "l = StateLock(sys.argv[1]); l.acquire(); print('held', flush=True); time.sleep(60)"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(journal), src], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        st = journal.stat()
        assert holder_pid(st.st_dev, st.st_ino) == proc.pid
        os.link(journal, tmp_path / "hard.sqlite")
        with pytest.raises(StateLocked) as ei:
            StateLock(tmp_path / "hard.sqlite").acquire()
        assert ei.value.pid == proc.pid and f"pid {proc.pid}" in str(ei.value)
    finally:
        proc.kill()
        proc.wait()
    StateLock(tmp_path / "hard.sqlite").probe()  # the lock went with the process


def test_holder_pid_reads_only_flock_lines_of_the_file(tmp_path: Path) -> None:
    table = tmp_path / "locks"
    table.write_text(
        "1: POSIX  ADVISORY  WRITE 111 fe:00:42 0 EOF\n"
        "2: FLOCK  ADVISORY  WRITE 222 fe:00:43 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 333 fe:00:42 0 EOF\n"
        "3: -> FLOCK  ADVISORY  WRITE 444 fe:00:42 0 EOF\n"
    )
    dev = os.makedev(0xFE, 0)
    assert holder_pid(dev, 42, table) == 333
    assert holder_pid(dev, 44, table) is None
    assert holder_pid(dev, 42, tmp_path / "absent") is None


def test_an_earlier_versions_journal_moves_into_the_state_folder(tmp_path: Path) -> None:
    """An upgrade resumes the jobs of the journal an earlier version kept at
    $CUZK_HOME/journal.sqlite: it moves (with SQLite's side files) into the
    address's state folder when nothing holds it."""
    import sqlite3

    from cuzk.engine.statelock import adopt

    old = tmp_path / "journal.sqlite"
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE jobs (id TEXT)")
    db.execute("INSERT INTO jobs VALUES ('unfinished')")
    db.commit()
    db.close()
    side = old.with_name(old.name + "-wal")
    side.write_bytes(b"side file")  # moved with the database, whatever it holds
    new = tmp_path / "daemons" / "unix_x-00000000" / "journal.sqlite"
    assert adopt(old, new)
    assert not old.exists() and not side.exists() and new.exists()
    assert new.with_name(new.name + "-wal").read_bytes() == b"side file"
    new.with_name(new.name + "-wal").unlink()
    rows = sqlite3.connect(new).execute("SELECT id FROM jobs").fetchall()
    assert rows == [("unfinished",)]
    assert not adopt(old, new)  # nothing left to move


@pytest.mark.parametrize("holder", ["this version's lock", "the earlier version's lock file"])
def test_a_journal_in_use_is_not_moved(tmp_path: Path, holder: str) -> None:
    import fcntl

    from cuzk.engine.statelock import adopt, lock_path

    old = tmp_path / "journal.sqlite"
    old.write_bytes(b"")
    held = old if holder == "this version's lock" else lock_path(old)
    fd = os.open(held, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        new = tmp_path / "state" / "journal.sqlite"
        assert not adopt(old, new)
        assert old.exists() and not new.exists()
    finally:
        os.close(fd)


def test_an_existing_state_journal_is_kept(tmp_path: Path) -> None:
    from cuzk.engine.statelock import adopt

    old, new = tmp_path / "journal.sqlite", tmp_path / "state" / "journal.sqlite"
    old.write_bytes(b"old")
    new.parent.mkdir()
    new.write_bytes(b"new")
    assert not adopt(old, new)
    assert old.read_bytes() == b"old" and new.read_bytes() == b"new"
