"""Residency tiers on a real GPU: the engine on the CUDA backend with its VRAM
budget capped so that the key's parts stream from pinned host memory and the
partitions are proved lean, and with room to keep today's whole, resident
path; every proof verified, every backend hold inside the engine's reservations."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from gpu_stand_ins import engine_config, prove_demo_jobs

from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.budget import Budget
from cuzk.engine.devices import Device
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import JobState
from cuzk.engine.keystore.residency import plan
from cuzk.engine.kinds import demo

ROUNDS, WORDS = 65536, 256  # the largest demo circuit: 164,100 constraints
MIB = 1 << 20


def _plan_at(limit: int, group: int = 1):
    """The plan the engine makes at ``limit`` with ``[gpus]
    shared_pass_partitions = group`` (the demo kind is batched: the setting
    reaches the planner as it is)."""
    from cuzk.backends.cuda.model import MODEL

    return plan(_counts(), limit, MODEL, witness_bytes=0, group=group)


@functools.cache
def _counts():
    return demo.DemoKind().counts(demo.circuit_id(ROUNDS, WORDS))


TIERS = [
    (240 * MIB, "mixed", True, False, False),
    (320 * MIB, "mixed", True, True, False),
    (384 * MIB, "resident", True, True, False),
    (1100 * MIB, "resident", False, True, False),
    (240 * MIB, "mixed", True, False, True),
]
TIER_IDS = [
    "mixed-lean",
    "mixed-lean-fork",
    "resident-lean-fork",
    "resident-whole",
    "mixed-lean-shared",
]


@pytest.mark.slow
def test_the_gpu_tiers_plans_hold_with_the_engines_sharing() -> None:
    """The CPU check of the GPU test's premise: each case's plan, with the
    sharing the engine runs it with, is the tier it names (slow: the demo
    circuit's counts compile it, ≈ 3 s)."""
    assert demo.DemoKind.batchable
    for limit, tier, lean, fork, shared in TIERS:
        want = _plan_at(limit, 0 if shared else 1)
        assert (want.tier, want.lean, want.fork_share > 0) == (tier, lean, fork), limit
        assert not shared or want.shared_queries


@pytest.mark.gpu
@pytest.mark.parametrize("limit, tier, lean, fork, shared", TIERS, ids=TIER_IDS)
def test_gpu_engine_proves_in_each_tier(
    tmp_path: Path, limit: int, tier: str, lean: bool, fork: bool, shared: bool
) -> None:
    """Lean partitions with a side branch ("-fork"): L, A and B beside H's MSM
    within their share of the partition's MSM room, the a and b scalars
    gathered a chunk at a time where their bases stream; "-shared": the
    two-partition job's streamed side queries as compact sets in pinned host
    memory, one pass a query for both partitions ([gpus]
    shared_pass_partitions; off in the others)."""
    from cuzk.backends.cuda import CudaBackend
    from cuzk.backends.cuda.memory import DeviceContext

    share = 0 if shared else 1
    want = _plan_at(limit, share)
    assert (want.tier, want.lean, want.fork_share > 0) == (tier, lean, fork)
    assert not shared or want.shared_queries
    ctx = DeviceContext(0, limit_bytes=limit)
    dev = Device(0, "capped GPU", CudaBackend(ctx=ctx), limit, Budget("vram:0", limit, ctx.budget))
    config = engine_config(tmp_path, gpu_workers_per_device=1, shared_pass_partitions=share)
    e = Engine(config, devices=[dev])
    e.start()
    try:
        circuit = DemoCircuit(rounds=ROUNDS, words=WORDS)
        jobs = prove_demo_jobs(e, circuit, timeout=300)
        assert all(j.state == JobState.COMPLETED for j in jobs), [j.error for j in jobs]
        entry = e.keys.entry(demo.circuit_id(ROUNDS, WORDS))
        got = e.keys.residency(entry, dev)
        assert (got.tier, got.lean, got.resident) == (want.tier, want.lean, want.resident)
        key = entry.prepared[0]
        for q in ("h", "l", "a", "b_g1", "b_g2"):
            assert getattr(key, q).resident == (q in want.resident), q
        assert ctx.budget.overdrawn_by_operation == {}, ctx.budget.overdrawn_by_operation
    finally:
        e.stop()
