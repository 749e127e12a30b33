"""Shared test set-up: GPU tests run only where a GPU and CuPy are present."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_unavailable_reason() -> str | None:
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (GPU tests run on the GPU machine: scripts/device-check.sh)"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device is visible"
    except Exception as e:  # the CUDA driver itself may be missing
        return f"no usable CUDA driver ({type(e).__name__})"
    return None


def pytest_collection_modifyitems(config, items):
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def module_circuit_cache(tmp_path_factory):
    """``$CUZK_CIRCUIT_CACHE`` pointed, for one test module, at a folder of its own
    (compiled circuits and their matrices are then built once per module and
    never read from, or left in, the user's cache)."""
    with pytest.MonkeyPatch.context() as mp:
        d = tmp_path_factory.mktemp("circuits")
        mp.setenv("CUZK_CIRCUIT_CACHE", str(d))
        yield d
