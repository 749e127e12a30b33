"""Residency tiers on a real GPU: the engine on the CUDA backend with its VRAM
budget capped so that the key's parts stream from pinned host memory and the
partitions are proved lean, and with room to keep today's whole, resident
path; every proof verified, every backend hold inside the engine's reservations."""

from __future__ import annotations

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


def _plan_at(limit: int):
    from cuzk.backends.cuda.model import MODEL

    counts = demo.DemoKind().counts(demo.circuit_id(ROUNDS, WORDS))
    return plan(counts, limit, MODEL, witness_bytes=0)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "limit, tier, lean, fork",
    [
        (240 * MIB, "mixed", True, False),
        (320 * MIB, "mixed", True, True),
        (384 * MIB, "resident", True, True),
        (1100 * MIB, "resident", False, True),
    ],
    ids=["mixed-lean", "mixed-lean-fork", "resident-lean-fork", "resident-whole"],
)
def test_gpu_engine_proves_in_each_tier(
    tmp_path: Path, limit: int, tier: str, lean: bool, fork: bool
) -> None:
    """Lean partitions with a side branch ("-fork"): L, A and B beside H's MSM
    within their share of the partition's MSM room, the a and b scalars
    gathered a chunk at a time where their bases stream."""
    from cuzk.backends.cuda import CudaBackend
    from cuzk.backends.cuda.memory import DeviceContext

    want = _plan_at(limit)
    assert (want.tier, want.lean, want.fork_share > 0) == (tier, lean, fork)
    ctx = DeviceContext(0, limit_bytes=limit)
    dev = Device(0, "capped GPU", CudaBackend(ctx=ctx), limit, Budget("vram:0", limit, ctx.budget))
    e = Engine(engine_config(tmp_path, gpu_workers_per_device=1), devices=[dev])
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
