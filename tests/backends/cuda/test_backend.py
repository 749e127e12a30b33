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


def test_work_streams_order_a_witness_before_its_proof(target):
    """A value made on the witness's stream and used on the prover's is the
    CPU backend's; each role has one stream (the prover's scheduled first)."""
    import cupy

    from cuzk.backends.cpu import CpuBackend
    from cuzk.backends.cuda import CudaBackend

    be, cpu = CudaBackend(), CpuBackend()
    x = fr_random(1 << 12, np.random.default_rng(3))
    with be.work_stream("witness") as ws:
        assert cupy.cuda.get_current_stream() is ws
        d = be.ntt(x)
    with be.work_stream("prove") as ps:
        assert cupy.cuda.get_current_stream() is ps
        got = be.to_host(be.intt(be.coset_ntt(d)))
    assert np.array_equal(got, cpu.intt(cpu.coset_ntt(cpu.ntt(x))))
    with be.work_stream("prove") as again:
        assert again is ps  # one stream a role, shared by the device's workers
    assert ps is not ws and ps.priority < ws.priority  # lower is scheduled first
    with pytest.raises(ValueError, match="role"), be.work_stream("h_poly"):
        pass


@pytest.mark.gpu
def test_pool_at_its_limit_gives_back_another_streams_blocks():
    """CuPy's pool caches freed blocks per stream and, at its limit, does not
    look at the other streams' (memory.releasing_malloc does)."""
    cupy = pytest.importorskip("cupy")
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    pool = cupy.get_default_memory_pool()
    limit = pool.get_limit()
    try:
        pool.free_all_blocks()
        pool.set_limit(size=pool.used_bytes() + (96 << 20))
        with be.work_stream("witness"):
            a = cupy.empty(64 << 20, dtype=cupy.uint8)
            del a  # cached for the witness's stream
        with be.work_stream("prove"):
            b = cupy.zeros(64 << 20, dtype=cupy.uint8)  # over the limit but for the cache
            assert int(b.sum()) == 0
    finally:
        pool.set_limit(size=limit)
