"""Fixtures of the service tests (the harness lives in daemon_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_harness import Daemon, running_daemon


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(tmp_path) as d:
        yield d
