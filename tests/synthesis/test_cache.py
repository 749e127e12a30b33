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
