"""A file-mapped matrix's rows leave the process's resident set once read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuzk.algebra.sparse import release_rows


def rss_file() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) * 1024
    pytest.skip("no RssFile in /proc/self/status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_released_rows_leave_the_resident_set_and_read_the_same(tmp_path: Path) -> None:
    rows = 1 << 19  # 16 MiB of (rows, 4) uint64
    path = tmp_path / "coeffs.npy"
    want = np.arange(4 * rows, dtype=np.uint64).reshape(rows, 4)
    np.save(path, want)
    a = np.load(path, mmap_mode="r")
    base = rss_file()
    assert int(a[:, 0].sum()) == int(want[:, 0].sum())  # every page touched
    touched = rss_file() - base
    assert touched >= 12 << 20
    release_rows(a, 0, rows // 2)  # the first half, as an upload's chunk
    assert rss_file() - base <= touched // 2 + (1 << 20)
    release_rows(a[rows // 2 :], 0, rows - rows // 2)  # a view of the mapping: the rest
    assert rss_file() - base <= 1 << 20
    assert np.array_equal(a, want)  # read again from the page cache


def test_arrays_not_mapped_from_a_file_are_left_alone() -> None:
    a = np.arange(100, dtype=np.uint64).reshape(25, 4)
    release_rows(a, 0, 25)
    release_rows(a, 5, 3)
    release_rows(np.uint64(3), 0, 1)
    assert np.array_equal(a, np.arange(100, dtype=np.uint64).reshape(25, 4))
