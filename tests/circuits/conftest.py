"""Compiled circuits are cached per test session in a temporary directory."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def circuit_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("circuit-cache")
