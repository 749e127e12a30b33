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
        return _Branch(self.vram, share)


class _Branch:
    def __init__(self, vram: DeviceBudget, share: int) -> None:
        self.vram, self.envelope = vram, vram.envelope()
        self.cap = vram.branch_cap(share)
        self.out: dict = {}

    def start(self, fn) -> None:
        def run() -> None:
            try:
                with self.vram.drawing_from(self.envelope), self.vram.capped(self.cap):
                    self.out["value"] = fn()
            except BaseException as e:
                self.out["error"] = e

        self.thread = threading.Thread(target=run, name="side")
        self.thread.start()

    def join(self):
        self.vram.rejoin(self.cap)
        self.thread.join()
        if "error" in self.out:
            raise self.out["error"]
        return self.out["value"]


def _budget_for(want) -> int:
    """The smallest budget (in 1 MiB steps) whose plan for CID satisfies ``want``."""
    counts = demo.DemoKind().counts(CID)
    for mib in range(1, 1 << 14):
        r = plan(counts, mib << 20, MODEL, witness_bytes=0)
        if want(r):
            return mib << 20
    raise AssertionError("no budget gives the plan asked for")


def _prove_on(tmp_path: Path, limit: int, partitions=(2, 1), **gpus) -> tuple[TieredStandIn, list]:
    vram = DeviceBudget(0, limit)
    be = TieredStandIn(vram)
    dev = Device(0, "tiered stand-in", be, limit, Budget("vram:0", limit, vram))
    # each partition its own passes unless the test asks for shared ones
    e = Engine(engine_config(tmp_path, **({"shared_pass_partitions": 1} | gpus)), devices=[dev])
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
        jobs = prove_demo_jobs(e, CIRCUIT, partitions)
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
