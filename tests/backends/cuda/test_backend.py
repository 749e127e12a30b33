"""The CUDA backend's contract beyond the arithmetic: arrays, budget, delegation."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_random
from cuzk.errors import ResourceError


def test_arrays_round_trip(target):
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    x = fr_random(10, np.random.default_rng(0))
    d = be.asarray(x)
    host = be.to_host(d)
    assert isinstance(host, np.ndarray) and host.dtype == np.uint64
    assert np.array_equal(host, x)
    assert np.array_equal(be.to_host(be.asarray(d)), x)
    with pytest.raises(ValueError):
        be.asarray(np.zeros((3, 5), dtype=np.uint64))


def test_budget_rejects_before_allocating(target):
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend(limit_bytes=1 << 20)
    x = fr_random(1 << 16, np.random.default_rng(0))  # 2 MiB out of a 1 MiB budget
    with pytest.raises(ResourceError, match="ntt needs"):
        be.ntt(x)
    assert be.ctx.budget.reserved_bytes == 0
    import cupy

    small = fr_random(1 << 10, np.random.default_rng(0))
    # The emulation's device arrays are numpy arrays: nothing to upload there.
    upload = 0 if isinstance(small, cupy.ndarray) else 1
    be.ntt(small)  # the output and the upload of the host input
    assert be.peak_bytes_by_operation()["ntt"] == (1 + upload) * (1 << 10) * 32
    be.ntt(be.asarray(small))  # a device input needs no upload
    be.h_poly(small, small, small)  # four buffers and three uploads
    assert be.peak_bytes_by_operation()["h_poly"] == (4 + 3 * upload) * (1 << 10) * 32
