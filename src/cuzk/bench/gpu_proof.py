"""``cuzk-bench gpu-proof``: a demo-circuit Groth16 proof on the CUDA backend, timed, verified."""

from __future__ import annotations

import logging
import secrets
import statistics
import time

from cuzk.algebra.arrays import fr_to_array
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, verifier
from cuzk.r1cs import ConstraintSystem

log = logging.getLogger(__name__)


def gpu_proof_rows(ctx, log_constraints: int) -> tuple[list[dict], dict]:
    """A demo-circuit proof on the CUDA backend (key from the GPU setup), verified:
    three timed proofs after a warm-up, median in ms."""
    from cuzk.backends.cuda import CudaBackend
    from cuzk.groth16.setup_gpu import setup_gpu

    circuit = DemoCircuit.with_constraints(1 << log_constraints)
    t = time.perf_counter()
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1cs = cs0.r1cs()
    cs = ConstraintSystem()
    circuit.synthesize(cs, 42, [secrets.randbits(64) for _ in range(circuit.words)])
    assignment = fr_to_array(cs.assignment())
    info: dict = {"constraints": r1cs.num_constraints, "synthesis_s": time.perf_counter() - t}
    t = time.perf_counter()
    pk = setup_gpu(r1cs, seed=1)
    info["setup_gpu_s"] = time.perf_counter() - t
    key = prover.prepare(pk, r1cs, CudaBackend(ctx=ctx))
    prover.prove(key, r1cs, assignment)  # warm-up: kernels, tables
    times = []
    stages = prover.StageTimes()
    for _ in range(3):
        t = time.perf_counter()
        proof = prover.prove(key, r1cs, assignment, times=stages)
        times.append((time.perf_counter() - t) * 1e3)
    info["stages_s"] = {k: round(v / 3, 4) for k, v in stages.seconds.items()}
    info["detail_s"] = {k: round(v / 3, 4) for k, v in stages.detail.items()}
    info["msm_phases_ms"] = {
        name: {k: round(v / 3, 2) for k, v in ph.items()} for name, ph in stages.phases.items()
    }
    info["verified"] = verifier.verify(pk.vk, cs.public_inputs(), proof)
    ms = statistics.median(times)
    log.info("proof of %d constraints: %.1f ms, %s", r1cs.num_constraints, ms, info)
    row = {
        "op": "groth16_prove",
        "size": r1cs.num_constraints,
        "median_ms": round(ms, 3),
        "rate": round(ms, 3),
        "unit": "ms/proof",
        "floor_ms": 0.0,
        "ratio_to_floor": None,
    }
    return [row], info
