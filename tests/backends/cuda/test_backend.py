"""The CUDA backend's contract beyond the arithmetic: arrays, budget, delegation."""

from __future__ import annotations

import threading

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


def test_a_fork_runs_beside_on_a_side_stream_of_the_role(target):
    """The branch's function runs in its own thread on the role's side stream
    (the same priority), after the calling stream's work so far; inside it,
    free memory is capped at the side's share until the join lifts the cap,
    and what it returns (or raises) comes back from the join."""
    import cupy

    from cuzk.backends.cpu import CpuBackend
    from cuzk.backends.cuda import CudaBackend

    be, cpu = CudaBackend(), CpuBackend()
    x = fr_random(1 << 10, np.random.default_rng(5))
    seen = {}

    def side(d):
        seen["thread"] = threading.current_thread()
        seen["stream"] = cupy.cuda.get_current_stream()
        seen["free"] = be.ctx.budget.free_bytes
        assert be.ctx.budget.await_lift()  # waits for the join
        seen["lifted"] = be.ctx.budget.free_bytes
        return be.to_host(be.intt(d))

    with be.work_stream("prove") as ps:
        d = be.ntt(x)
        branch = be.fork(8, 8)
        branch.start(lambda: side(d))
        mine = be.to_host(be.coset_ntt(d))
        got = branch.join()
    assert np.array_equal(got, x) and np.array_equal(mine, cpu.coset_ntt(cpu.ntt(x)))
    assert seen["thread"] is not threading.current_thread()
    assert seen["stream"] is not ps and seen["stream"].priority == ps.priority
    assert seen["free"] == be.side_workspace_bytes(8, 8) == 64 * 8
    assert seen["lifted"] == be.ctx.budget.free_bytes > seen["free"]
    with be.work_stream("prove"):
        again = be.fork(8, 8)
        again.start(lambda: cupy.cuda.get_current_stream())
        assert again.join() is seen["stream"]  # one side stream a role

        def fails():
            raise ValueError("side failed")

        bad = be.fork(8, 8)
        bad.start(fails)
        with pytest.raises(ValueError, match="side failed"):
            bad.join()


def test_a_fork_within_a_fixed_room_splits_it(target):
    """Forked where the calling thread sizes its work within a final cap (a lean
    partition's MSM room), the branch sizes within its share throughout (a
    final cap: never waited for, not widened by the join) and the calling
    thread within the rest until the join gives it its room back; a share
    beyond the room is the whole room."""
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    budget = be.ctx.budget
    seen: dict = {}

    def side():
        seen["free"] = budget.free_bytes
        seen["waited"] = budget.await_lift()
        return budget.free_bytes

    with be.work_stream("prove"), budget.sized_within(6 << 20):
        branch = be.fork(8, 8, 2 << 20)
        assert budget.free_bytes == 4 << 20  # H's part while the branch runs
        branch.start(side)
        assert branch.join() == 2 << 20
        assert budget.free_bytes == 6 << 20  # the room back whole
        wide = be.fork(8, 8, 8 << 20)
        assert budget.free_bytes == 0
        wide.start(lambda: budget.free_bytes)
        assert wide.join() == 6 << 20
        assert budget.free_bytes == 6 << 20
    assert seen == {"free": 2 << 20, "waited": False}
    assert budget.free_bytes == budget.limit_bytes - budget.reserved_bytes  # no cap left


def test_a_gathered_set_crosses_to_the_msm_engine_with_its_device_index(target):
    """msm_g1_many / msm_g2_many hand a Gathered set to the MSM engine with its
    values on the device and the prepared index's device array (the engine
    takes its rows there); other sets as they are."""
    from cuzk.backends.base import Gathered
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    given: list = []

    class Recorder:
        def msm_many(self, handle, sets, timings, spec):
            given.append((spec.name, sets))
            return [spec.name] * len(sets)

    be._msm = Recorder()
    w = fr_random(20, np.random.default_rng(9))
    idx = be.prepare_index(np.array([3, 1, 19]))
    assert be.msm_g1_many(None, [Gathered(w, idx), w[:2]]) == ["G1", "G1"]
    assert be.msm_g2_many(None, [Gathered(w, idx)]) == ["G2"]
    for _, sets in given:
        g = sets[0]
        assert isinstance(g, Gathered) and g.index is idx.array and len(g) == 3
        assert np.array_equal(be.to_host(g.values), w)
    assert np.array_equal(given[0][1][1], w[:2])  # a plain set as it was
    idx.close()


@pytest.mark.gpu
def test_an_msm_reserves_the_workspace_of_the_scalars_it_classified():
    """Mostly zeros and ones (a witness's L, A and B scalars): the workspace
    reservation, made once the classification has counted them, is the bound
    of those counts, far below the bound of as many full scalars."""
    from test_msm import random_points

    from cuzk.algebra.arrays import fr_to_array, g1_to_array
    from cuzk.algebra.curves import G1
    from cuzk.backends.cpu import CpuBackend
    from cuzk.backends.cuda import CudaBackend
    from cuzk.backends.cuda.msm import G1_SPEC, Tuning, classify_bytes, workspace_bytes

    rng = np.random.default_rng(61)
    n = 3000
    cpu = CpuBackend()
    bases = g1_to_array(random_points(G1, 8, rng) * (n // 8))
    kind = rng.integers(0, 10, size=n)
    scalars = fr_random(n, rng)
    scalars[kind < 6] = 0
    scalars[(kind >= 6) & (kind < 9)] = fr_to_array([1])[0]
    be = CudaBackend()
    got = be.msm_g1(be.prepare_g1(bases), scalars)
    assert got == cpu.msm_g1(cpu.prepare_g1(bases), scalars)
    counts = (int(((kind >= 6) & (kind < 9)).sum()), int((kind >= 9).sum()))
    peak = be.peak_bytes_by_operation()
    ws = workspace_bytes(G1_SPEC, n, True, Tuning(), counts)  # host scalars: uploaded
    assert peak["msm_g1 scalars"] == classify_bytes(n, True)
    assert peak["msm_g1 workspace"] == ws - classify_bytes(n, True)
    assert ws < workspace_bytes(G1_SPEC, n, True, Tuning()) / 2


def test_time_critical_work_has_the_device_s_first_stream(target):
    """A WinningPoSt's witness and proof ("urgent") are scheduled before a
    PoRep partition's proof, which is scheduled before a witness; the urgent
    stream's side branch keeps its priority."""
    import cupy

    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    with be.work_stream("urgent") as us:
        branch = be.fork(16, 16)
        branch.start(cupy.cuda.get_current_stream)
        side = branch.join()
    with be.work_stream("prove") as ps, be.work_stream("witness") as ws:
        pass
    assert us.priority < ps.priority < ws.priority
    assert side is not us and side.priority == us.priority


def test_a_failed_branch_frees_its_arrays_with_its_exception(target):
    """A branch's exception, raised again by the join, holds no cycle back to
    the branch: the arrays its frames held (an MSM's buffers, whose
    reservations are already given back) go when the exception goes, not at
    the next garbage collection."""
    import gc
    import weakref

    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    refs = []

    class Buffers:
        pass

    def fails():
        held = Buffers()  # a local of a frame the exception's traceback keeps
        refs.append(weakref.ref(held))
        raise ValueError("side failed")

    gc.collect()
    gc.disable()
    try:
        with be.work_stream("prove"):
            bad = be.fork(8, 8)
            bad.start(fails)
            try:
                bad.join()
            except ValueError as e:
                assert str(e) == "side failed"
            del bad
        assert refs[0]() is None
    finally:
        gc.enable()


def test_compact_sets_are_classified_on_the_device_into_host_memory(target):
    """CudaBackend.compact: the rows of a device assignment (by a prepared
    index, or its tail) classified a step at a time on the device within a
    reservation of one step, kept in host memory (pinned): the dense rows
    bit for bit; msm_g1_many hands the set to the MSM engine as it is."""
    from cuzk.backends.base import Compact
    from cuzk.backends.compact import CLASSIFY_STEP, classify_step, classify_step_bytes
    from cuzk.backends.cuda import CudaBackend

    be = CudaBackend()
    rng = np.random.default_rng(12)
    w = fr_random(3000, rng)
    w[::2] = 0
    w[::3, 1:] = 0
    w[::3, 0] = 1
    d = be.asarray(w)
    idx = be.prepare_index(rng.integers(0, 3000, 2500))
    want = w[be.to_host(idx.array).astype(np.int64)]
    before = be.ctx.budget.reserved_bytes
    c = be.compact(d, idx)
    assert be.ctx.budget.reserved_bytes == before  # the step's reservation given back
    assert isinstance(c, Compact) and isinstance(c.values, np.ndarray)
    assert np.array_equal(c.dense(), want)
    assert c.n_ones == int(((want[:, 0] == 1) & (want[:, 1:] == 0).all(axis=1)).sum())
    tail = be.compact(d, start=7)
    assert np.array_equal(tail.dense(), w[7:])
    # a step fitted to the set (rounded up to a block) and the room
    assert be.peak_bytes_by_operation()["compact scalars"] == classify_step_bytes(3072)
    assert classify_step(10**9, 1 << 40) == CLASSIFY_STEP
    assert classify_step(10**9, 64 << 20) * 96 <= 32 << 20
    given: list = []

    class Recorder:
        def msm_many(self, handle, sets, timings, spec):
            given.append(sets)
            return [spec.name] * len(sets)

    be._msm = Recorder()
    assert be.msm_g1_many(None, [c, tail]) == ["G1", "G1"]
    assert given[0][0] is c and given[0][1] is tail
    idx.close()
