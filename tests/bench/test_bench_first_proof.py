"""cuzk.bench.first_proof's timing of a job's way to its proof, on the demo kind."""

from __future__ import annotations

from pathlib import Path

from cuzk.bench.first_proof import measure
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.config import Config
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds import KindRegistry, demo


def test_measure_orders_acceptance_first_partition_and_proof(tmp_path: Path) -> None:
    reg = KindRegistry()
    reg.register(demo.DemoKind())
    cfg = Config().with_overrides(
        daemon={"journal": str(tmp_path / "j.sqlite"), "listen": ["unix:///unused"]},
        srs={"param_cache": str(tmp_path / "params")},
        memory={"total_budget": "1GiB"},
        gpus={"backend": "cpu"},
    )
    e = Engine(cfg, kinds=reg)
    e.start()
    try:
        raw = demo.make_vanilla(DemoCircuit(rounds=20, words=1), 3)
        got = measure(e, ProofRequest(ProofKind.DEMO, vanilla_proof=raw), timeout=120)
    finally:
        e.stop()
    assert got["state"] == "COMPLETED" and got["error"] == ""
    assert 0 <= got["accepted_s"] <= got["first_prover_s"] <= got["proof_s"]
    assert sorted(got["partitions"]) == [0, 1, 2]
    for p in got["partitions"].values():
        start, end = p["synthesis"]
        assert start <= end <= p["prover"] <= got["proof_s"]
    assert got["first_prover_s"] == min(p["prover"] for p in got["partitions"].values())
