"""The circuit cache's entries are built by one process at a time."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import numpy as np

from cuzk.synthesis.cache import building, cached


def _load(path: Path) -> np.ndarray:
    return np.load(path)["value"]


def _save(value: np.ndarray, path: Path) -> None:
    np.savez(path, value=value)


def _get(path: str, log: str, out) -> None:
    """One process asking for the entry: its build takes a while and is logged."""

    def build() -> np.ndarray:
        with open(log, "a") as f:
            f.write("built\n")
        time.sleep(0.5)
        return np.arange(5)

    out.put(cached(Path(path), _load, build, _save, "test entry").tolist())


def test_processes_asking_at_once_build_the_entry_once(tmp_path: Path) -> None:
    path, log = tmp_path / "entry.npz", tmp_path / "builds.txt"
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_get, args=(str(path), str(log), out)) for _ in range(3)]
    for p in procs:
        p.start()
    got = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert got == [[0, 1, 2, 3, 4]] * 3  # the two that waited loaded the first's entry
    assert log.read_text() == "built\n"


def test_a_cache_that_cannot_be_written_builds_without_a_lock(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with building(blocked / "entry.npz"):  # its folder cannot be made: nothing locked
        pass
    made = cached(blocked / "entry.npz", _load, lambda: np.arange(3), _save, "test entry")
    assert made.tolist() == [0, 1, 2]  # built, and the failed save only warned


def test_an_entry_the_cache_holds_is_read_while_its_lock_is_held(tmp_path: Path) -> None:
    """Loaders of an existing entry do not queue on its build lock (entries
    are written whole): a synthesis pool's processes and the daemon load a
    witness plan at once, not one after another."""
    import threading

    path = tmp_path / "entry.npz"
    cached(path, _load, lambda: np.arange(4), _save, "test entry")
    got: list = []

    def load() -> None:
        got.append(cached(path, _load, lambda: np.arange(9), _save, "test entry").tolist())

    with building(path):  # another process loading (or building) it now
        reader = threading.Thread(target=load, daemon=True)
        reader.start()
        reader.join(10)
        assert got == [[0, 1, 2, 3]]  # read at once, not built again
    # an entry that is not there yet still waits for the lock and is built once
    fresh = tmp_path / "fresh.npz"
    waiting: list = []
    with building(fresh):
        t = threading.Thread(
            target=lambda: waiting.append(cached(fresh, _load, lambda: np.arange(2), _save, "t")),
            daemon=True,
        )
        t.start()
        t.join(0.3)
        assert waiting == []  # it waits for the builder
    t.join(10)
    assert waiting[0].tolist() == [0, 1]
