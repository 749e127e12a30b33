"""Fixtures of the CUDA backend's tests: the MSM kernels' CPU twin
(``host_kernels``, from host_twin.py) and the targets of the Fr / NTT / H /
sparse tests."""

from __future__ import annotations

import pytest
from cuda_targets import TARGETS, enter, leave
from host_twin import host_kernels  # noqa: F401 (a fixture)

# --- shared fixtures of the Fr / NTT / H / sparse tests -------------------
# Each test module runs once per target: the GPU where CuPy and a device are
# present, the CPU emulation of the kernels (cuda_emu) where they are not.


@pytest.fixture(scope="module", params=TARGETS)
def target(request):
    enter(request.param)
    yield request.param
    leave(request.param)


@pytest.fixture(scope="module")
def backend(target):
    from cuzk.backends.cuda import CudaBackend

    return CudaBackend()


@pytest.fixture(scope="module")
def cpu():
    from cuzk.backends.cpu import CpuBackend

    return CpuBackend()
