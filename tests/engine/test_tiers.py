"""The engine proves by each key's residency: on a stand-in GPU planned with the
CUDA backend's memory model, a budget too small for the whole key loads its
parts resident or streamed as the plan says and proves lean partitions, every
proof verified; a roomy budget keeps today's whole, resident path."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from gpu_stand_ins import BudgetedCpuBackend, VramHandle, engine_config, prove_demo_jobs

from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda.memory import DeviceBudget
from cuzk.backends.cuda.model import MODEL
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.budget import Budget
from cuzk.engine.devices import Device
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState
from cuzk.engine.keystore.residency import plan
from cuzk.engine.kinds import demo
from thread_branch import ThreadBranch

CIRCUIT = DemoCircuit.with_constraints(1 << 16)
CID = demo.circuit_id(CIRCUIT.rounds, CIRCUIT.words)


class TieredStandIn(BudgetedCpuBackend):
    """A stand-in GPU planned as the CUDA backend is: VRAM held only by the parts
    kept resident; what it was told of each part and how each proof ran."""

    memory_model = MODEL

    def __init__(self, vram: DeviceBudget) -> None:
        super().__init__(vram)
        self.placed: list[bool | None] = []  # what each part was told, in load order
        self.padded: list[int | None] = []
        self.passes: list[int] = []
        # (thread, the free memory an MSM pass sized itself by)
        self.room_seen: list[tuple[str, int]] = []
        self.forks: list[int] = []  # the shares asked of fork

    def _bases(self, group: str, count, read, progress, resident):
        self.placed.append(resident)
        load = CpuBackend.load_g1 if group == "G1" else CpuBackend.load_g2
        inner = load(self, count, read, progress)
        held = 0 if resident is False else (96 if group == "G1" else 192) * count
        return VramHandle(inner, self.vram.acquire(held, f"{group} bases"))

    def load_g1(self, count, read, progress=None, resident=None):
        return self._bases("G1", count, read, progress, resident)

    def load_g2(self, count, read, progress=None, resident=None):
        return self._bases("G2", count, read, progress, resident)

    def prepare_matrix(self, m, resident=True):
        self.placed.append(resident)
        held = 8 * m.num_rows + 36 * m.nnz if resident else 0  # streamed: pinned host memory
        return VramHandle(m, self.vram.acquire(held, "CSR"))

    def spmv(self, m, w, rows=None):
        self.padded.append(rows)
        return super().spmv(m, w, rows)

    def msm_g1_many(self, bases, scalar_sets, phases=None):
        self.passes.append(len(scalar_sets))
        self.room_seen.append((threading.current_thread().name, self.vram.free_bytes))
        return super().msm_g1_many(bases, scalar_sets, phases)

    def msm_g2_many(self, bases, scalar_sets, phases=None):
        self.passes.append(len(scalar_sets))
        self.room_seen.append((threading.current_thread().name, self.vram.free_bytes))
        return super().msm_g2_many(bases, scalar_sets, phases)

    def fork(self, domain_size, num_variables, share=None):
        """A branch on a thread of its own, with the CUDA backend's memory
        behaviour (``CudaBackend.fork``): drawing from the caller's envelope,
        sized within its part of the caller's room (DeviceBudget.branch_cap)."""
        self.forks.append(share)
        self.branch = _Branch(self.vram, share)
        return self.branch


class _Branch(ThreadBranch):
    """A thread branch drawing from the caller's envelope within its share."""

    def __init__(self, vram: DeviceBudget, share: int) -> None:
        self.vram, self.envelope = vram, vram.envelope()
        self.cap = vram.branch_cap(share)
        # the branch's work and its caller's H pass, each noting it began
        self.side_began, self.h_began = threading.Event(), threading.Event()
        self.joined = False

    def call(self, fn):
        with self.vram.drawing_from(self.envelope), self.vram.capped(self.cap):
            return fn()

    def join(self):
        self.vram.rejoin(self.cap)
        try:
            return super().join()
        finally:
            self.joined = True


def _budget_for(want, cid: str = CID) -> int:
    """The smallest budget (in 1 MiB steps) whose plan for ``cid`` satisfies ``want``."""
    counts = demo.DemoKind().counts(cid)
    for mib in range(1, 1 << 14):
        r = plan(counts, mib << 20, MODEL, witness_bytes=0)
        if want(r):
            return mib << 20
    raise AssertionError("no budget gives the plan asked for")


def _prove_on(
    tmp_path: Path,
    limit: int,
    partitions=(2, 1),
    stand_in=TieredStandIn,
    circuit=CIRCUIT,
    pipeline: dict | None = None,
    **gpus,
) -> tuple[TieredStandIn, list]:
    vram = DeviceBudget(0, limit)
    be = stand_in(vram)
    dev = Device(0, "tiered stand-in", be, limit, Budget("vram:0", limit, vram))
    # each partition its own passes unless the test asks for shared ones
    config = engine_config(tmp_path, **({"shared_pass_partitions": 1} | gpus))
    if pipeline:
        config = config.with_overrides(pipeline=pipeline)
    e = Engine(config, devices=[dev])
    host = e.keys.host_budget
    be.compact_holds = []  # type: ignore[attr-defined]
    for name in ("try_reserve", "reserve"):
        take = getattr(host, name)

        def noting(parts, *a, _take=take, **kw):
            got = _take(parts, *a, **kw)
            be.compact_holds += [r for r in got or () if r.what.startswith("compact scalars")]
            return got

        setattr(host, name, noting)
    e.start()
    try:
        jobs = prove_demo_jobs(e, circuit, partitions)
    finally:
        e.stop()
    return be, jobs


@pytest.mark.parametrize("tier, fork", [("streamed", False), ("mixed", True)], ids=str)
def test_a_small_budget_streams_parts_and_proves_lean(
    tmp_path: Path, tier: str, fork: bool
) -> None:
    limit = _budget_for(lambda r: r.fits and r.tier == tier and (r.fork_share > 0) == fork)
    counts = demo.DemoKind().counts(CID)
    want = plan(counts, limit, MODEL, witness_bytes=0)
    assert want.lean and want.streamed_parts
    be, jobs = _prove_on(tmp_path, limit)
    assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
    # each part as the plan placed it: bases in query order, then A, B, C
    order = ("h", "l", "a", "b_g1", "b_g2", "A", "B", "C")
    assert be.placed == [p in want.resident for p in order]
    # lean proofs: the evaluations padded to the domain, the MSMs in passes
    m = 1 << (counts.num_constraints - 1).bit_length()
    assert be.padded and set(be.padded) == {m}
    assert be.passes and set(be.passes) == {1}
    # the MSMs sized themselves to the room the plan gave them, not to the
    # partition's whole reservation (its live vectors hold the rest); with a
    # side branch, H's pass within its part and L, A and B within the branch's
    assert be.forks == ([want.fork_share] * 3 if fork else [])  # three partitions
    main = [room for thread, room in be.room_seen if thread != "side"]
    side = [room for thread, room in be.room_seen if thread == "side"]
    assert len(main) == 3 * (1 if fork else 5) and len(side) == (3 * 4 if fork else 0)
    if fork:
        assert want.h_room + want.fork_share == want.msm_room
        assert max(main) <= want.h_room and max(side) <= want.fork_share
    else:
        assert max(main) <= want.msm_room
    assert be.vram.overdrawn_by_operation == {}


def test_a_roomy_budget_keeps_the_whole_resident_path(tmp_path: Path) -> None:
    limit = _budget_for(lambda r: r.fits and r.tier == "resident" and not r.lean)
    be, jobs = _prove_on(tmp_path, limit)
    assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
    assert be.placed == [True] * 8  # every part resident
    assert be.padded and set(be.padded) == {None}  # whole proofs: no lazy evaluations
    assert be.passes == []


def test_a_jobs_partitions_share_the_passes_over_streamed_l_a_b(tmp_path: Path) -> None:
    """Every part streamed, sharing on: each partition of a three-partition job
    is proved but for L, A and B (its H pass its own), its compact sets held
    in the host budget, and one pass a side query serves the three; the
    one-partition job proves as before. Every proof verified (the jobs
    complete), the host reservations given back."""
    from cuzk.groth16.prover import SIDE_QUERIES

    limit = _budget_for(lambda r: r.fits and r.tier == "streamed")
    counts = demo.DemoKind().counts(CID)
    want = plan(counts, limit, MODEL, witness_bytes=0)
    assert want.shared_queries == SIDE_QUERIES
    be, jobs = _prove_on(
        tmp_path, limit, (3, 1), shared_pass_partitions=0, gpu_workers_per_device=1
    )
    assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
    # H: one pass a partition (4); the side queries: one pass of three, one of one
    assert sorted(be.passes) == [1] * 4 + [1] * 4 + [3] * 4
    assert be.forks == []  # a deferred partition runs no side branch
    assert be.vram.overdrawn_by_operation == {}
    # each deferred partition's compact sets held in the host budget, then given back
    holds = be.compact_holds
    assert len(holds) == 3 and all(r.nbytes > 0 and r.released for r in holds)


def test_a_failed_shared_pass_fails_its_group_and_gives_back_its_holds(
    tmp_path: Path, monkeypatch
) -> None:
    """The shared passes fail (not the device): every partition of the group
    fails its job with the error, and their compact sets' host reservations
    are given back."""
    from cuzk.backends.base import Compact

    limit = _budget_for(lambda r: r.fits and r.tier == "streamed")

    def failing(self, bases, scalar_sets, phases=None):
        if any(isinstance(x, Compact) for x in scalar_sets):
            raise ValueError("shared pass broke")
        return TieredStandIn.__mro__[1].msm_g1_many(self, bases, scalar_sets, phases)

    monkeypatch.setattr(TieredStandIn, "msm_g1_many", failing)
    be, jobs = _prove_on(tmp_path, limit, (2,), shared_pass_partitions=0, gpu_workers_per_device=1)
    (job,) = jobs
    assert job.state == JobState.FAILED and "shared pass broke" in job.error
    assert len(be.compact_holds) == 2 and all(r.released for r in be.compact_holds)


class Overlapping(TieredStandIn):
    """The tiered stand-in whose passes take the whole room they see (each
    reserves it while it runs) and whose side branch's shared passes (compact
    sets) meet the caller's H pass: each notes that it began and waits,
    bounded, for the other to have begun, so an overlap is shown by events.
    The first branch's first shared pass fails when asked."""

    fail_first = False

    def __init__(self, vram: DeviceBudget) -> None:
        super().__init__(vram)
        self.branch: _Branch | None = None
        self.met: list[tuple[str, bool]] = []  # (thread, whether the other line had begun)
        self.carried = 0  # branches whose shared passes ran
        self.reserved_peak = 0
        self.h_rooms_beside: list[int] = []  # the room H's passes saw beside a branch

    def _pass(self, run, bases, scalar_sets, phases):
        from cuzk.backends.base import Compact

        side = threading.current_thread().name == "side"
        branch = self.branch
        shared = any(isinstance(x, Compact) for x in scalar_sets)
        if side and shared and not branch.side_began.is_set():
            self.carried += 1
            branch.side_began.set()
            self.met.append(("side", branch.h_began.wait(10)))
            if self.fail_first and self.carried == 1:
                raise ValueError("shared pass broke")
        elif not side and not shared and _first_h_beside(branch):
            branch.h_began.set()
            self.met.append(("main", branch.side_began.wait(10)))
            self.h_rooms_beside.append(self.vram.free_bytes)
        room = self.vram.free_bytes
        with self.vram.reserve(room, f"pass on {threading.current_thread().name}"):
            self.reserved_peak = max(self.reserved_peak, self.vram.reserved_bytes)
            return run(bases, scalar_sets, phases)

    def msm_g1_many(self, bases, scalar_sets, phases=None):
        run = super().msm_g1_many
        return self._pass(run, bases, scalar_sets, phases)

    def msm_g2_many(self, bases, scalar_sets, phases=None):
        run = super().msm_g2_many
        return self._pass(run, bases, scalar_sets, phases)


def _first_h_beside(branch: _Branch | None) -> bool:
    """Whether a pass on the caller's line is the first beside a live branch."""
    return branch is not None and not branch.joined and not branch.h_began.is_set()


def test_a_full_groups_passes_run_beside_the_next_partitions_h_msm(
    tmp_path: Path, monkeypatch
) -> None:
    """Sharing on, groups of two, one GPU worker, three jobs of two partitions:
    each full group's shared passes run on the side branch of the next
    partition's proof, beside its H pass (both lines seen begun by the other),
    within the plan's branch share while H's pass sizes within the rest (the
    two never over the room, the budget never overdrawn); the last group, with
    nothing after it, in turn on the worker's line. The first group's passes
    fail: its jobs fail with the error, the others' proofs all verify (their
    jobs complete), every compact-set hold is given back, no branch left."""
    from cuzk.engine.pipeline import gpu

    small = DemoCircuit.with_constraints(1 << 12)
    cid = demo.circuit_id(small.rounds, small.words)

    def want(r):
        return r.fits and r.lean and r.fork_share > 0 and bool(r.shared_queries)

    limit = _budget_for(want, cid)
    res = plan(demo.DemoKind().counts(cid), limit, MODEL, witness_bytes=0)
    # (a carried group's finish or None, its jobs) a time passes ran for a group
    groups: list[tuple[object, frozenset[str]]] = []
    run, finish_group = gpu.Finish.run, gpu.GpuWorkers._finish_group

    def noting_run(self, key, ending):
        groups.append((self, frozenset(w.item.job.job_id for w in self.group)))
        return run(self, key, ending)

    def noting_group(self, state, group, passes=None):
        groups.append((None, frozenset(w.item.job.job_id for w in group)))
        return finish_group(self, state, group, passes)

    monkeypatch.setattr(gpu.Finish, "run", noting_run)
    monkeypatch.setattr(gpu.GpuWorkers, "_finish_group", noting_group)
    monkeypatch.setattr(Overlapping, "fail_first", True)
    be, jobs = _prove_on(
        tmp_path,
        limit,
        (2, 2, 2),
        stand_in=Overlapping,
        circuit=small,
        pipeline={"synthesis_concurrency": 1},
        shared_pass_partitions=2,
        gpu_workers_per_device=1,
    )
    carried = list(dict.fromkeys(ids for finish, ids in groups if finish is not None))
    assert len(carried) >= 2 and be.carried == len([f for f, _ in groups if f is not None])
    assert groups[-1][0] is None  # the last group: nothing to carry it
    # each carried group's passes and the next partition's H pass overlapped
    assert be.met and all(met for _, met in be.met)
    assert {t for t, _ in be.met} == {"side", "main"}
    # the branch's share and H's room split the plan's MSM room
    assert be.forks and set(be.forks) == {res.fork_share}
    assert res.h_room + res.fork_share == res.msm_room
    side = [room for thread, room in be.room_seen if thread == "side"]
    assert side and max(side) <= res.fork_share
    assert len(be.h_rooms_beside) == be.carried and max(be.h_rooms_beside) <= res.h_room
    assert be.reserved_peak <= limit and be.vram.overdrawn_by_operation == {}
    failed = {j.job_id for j in jobs if j.state == JobState.FAILED}
    assert failed == carried[0], [(j.job_id, j.state, j.error) for j in jobs]
    assert all("shared pass broke" in j.error for j in jobs if j.job_id in failed)
    done = [j for j in jobs if j.job_id not in failed]
    assert done and all(j.state == JobState.COMPLETED for j in done)
    holds = be.compact_holds
    assert len(holds) == 6 and all(r.released for r in holds)
    assert all(t.name != "side" for t in threading.enumerate())
