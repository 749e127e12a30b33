"""Where the CUDA backend's tests run: the GPU, or the kernels' CPU twins.

``target`` "gpu" needs a GPU with CuPy (marked ``gpu``); "emu" runs the same
kernels compiled for the host through ``cuda_emu`` (marked ``slow``: it
compiles them with g++ once per source version) where CuPy is absent.
"""

from __future__ import annotations

import cuda_emu
import pytest

TARGETS = [
    pytest.param("gpu", marks=pytest.mark.gpu),
    pytest.param("emu", marks=pytest.mark.slow),
]


def enter(target: str) -> None:
    if target == "emu":
        reason = cuda_emu.unavailable_reason()
        if reason:
            pytest.skip(f"kernel emulation unavailable: {reason}")
        cuda_emu.install()


def leave(target: str) -> None:
    if target == "emu":
        cuda_emu.uninstall()


def to_numpy(a):
    import cupy
    import numpy as np

    return np.asarray(cupy.asnumpy(a))
