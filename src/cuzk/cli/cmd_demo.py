"""``cuzk demo``: set up, prove and verify the built-in demo circuit, with timings."""

from __future__ import annotations

import argparse
import json
import secrets
import time

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends import get_backend
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="set up, prove and verify the built-in demo circuit")
    p.add_argument("--constraints", type=int, default=4000, help="approximate circuit size")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--proofs", type=int, default=2, help="proofs to generate (and batch-verify)")
    p.add_argument(
        "--seed", type=int, default=None, help="seeded (INSECURE) setup, for repeatability"
    )
    p.add_argument("--json", action="store_true", help="print the timings as JSON")
    p.set_defaults(func=run)


def _synthesize(circuit: DemoCircuit, x: int | None, words: list[int] | None, witness: bool):
    cs = ConstraintSystem(witness=witness)
    circuit.synthesize(cs, x, words)
    return cs


def run(args: argparse.Namespace) -> int:
    circuit = DemoCircuit.with_constraints(args.constraints)
    backend = get_backend(args.backend)
    times: dict[str, float] = {}

    def mark(stage: str, t0: float) -> float:
        now = time.perf_counter()
        times[stage] = times.get(stage, 0.0) + now - t0
        return now

    t = time.perf_counter()
    r1cs = _synthesize(circuit, None, None, witness=False).r1cs()
    t = mark("compile", t)
    pk = setup.setup(r1cs, seed=args.seed)
    t = mark("setup", t)
    key = prover.prepare(pk, r1cs, backend)
    t = mark("load key", t)
    print(
        f"demo circuit: {r1cs.num_constraints} constraints, {r1cs.num_inputs} inputs "
        f"(ONE included), {r1cs.num_aux} aux; backend {backend.name}"
    )
    stage_times = prover.StageTimes()
    items = []
    for i in range(args.proofs):
        x = secrets.randbelow(R)
        words = [secrets.randbits(64) for _ in range(circuit.words)]
        t = time.perf_counter()
        cs = _synthesize(circuit, x, words, witness=True)
        assignment = fr_to_array(cs.assignment())
        t = mark("synthesize", t)
        proof = prover.prove(key, r1cs, assignment, times=stage_times)
        t = mark("prove", t)
        ok = verifier.verify(pk.vk, cs.public_inputs(), proof)
        t = mark("verify", t)
        if not ok or cs.public_inputs()[1] != circuit.evaluate(x, words):
            print(f"proof {i}: NOT VERIFIED")
            return 1
        items.append((cs.public_inputs(), proof))
        print(f"proof {i}: verified ({proof.to_bytes()[:8].hex()}…)")
    t = time.perf_counter()
    if not verifier.verify_batch(pk.vk, items):
        print("batch verification FAILED")
        return 1
    mark("batch verify", t)
    for stage, sec in stage_times.seconds.items():
        times[f"prove.{stage}"] = sec
    if args.json:
        print(json.dumps({"constraints": r1cs.num_constraints, "seconds": times}, indent=2))
    else:
        print(f"batch of {len(items)} verified with one final exponentiation")
        print("stage                 seconds")
        for stage, sec in times.items():
            print(f"  {stage:<20}{sec:8.3f}")
    return 0
