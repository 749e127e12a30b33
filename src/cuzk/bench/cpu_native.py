"""The CPU backend's native kernels against its pure-Python twins, side by side.

    .venv/bin/python -m cuzk.bench.cpu_native --constraints 65000

Builds the demo circuit once, then for each path (Python twins, native C
kernels) runs a seeded setup, loads the key, proves with fixed r and s and
verifies. Both paths must produce byte-identical keys and proofs; the table
gives per-stage wall seconds, process CPU seconds (all threads) and the
ratio. A second table times each of the proof's kernels alone on one
thread, in CPU seconds (the best of three), which other work on a shared
machine disturbs least. The load average is printed too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.backends import native
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem


def run_path(use_native: bool, r1cs, assignment, public, seed: int) -> tuple[dict, object, object]:
    os.environ["CUZK_CPU_NATIVE"] = "1" if use_native else "0"  # setup reads it
    times: dict[str, tuple[float, float]] = {}

    def timed(name, fn, *args, **kw):
        w, c = time.perf_counter(), time.process_time()
        out = fn(*args, **kw)
        times[name] = (time.perf_counter() - w, time.process_time() - c)
        return out

    pk = timed("setup", setup.setup, r1cs, seed=seed)
    be = CpuBackend(native=use_native)
    key = timed("load key", prover.prepare, pk, r1cs, be)
    stages = prover.StageTimes()
    w, c = time.perf_counter(), time.process_time()
    proof = prover.prove(key, r1cs, assignment, r=12345, s=67890, times=stages)
    times["prove"] = (time.perf_counter() - w, time.process_time() - c)
    for stage, sec in stages.seconds.items():
        times[f"  {stage}"] = (sec, float("nan"))
    ok = timed("verify", verifier.verify, pk.vk, public, proof)
    if not ok:
        raise SystemExit("proof did not verify")
    return times, pk, proof


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constraints", type=int, default=65000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not native.available():
        print(f"native kernels not built: {native.unavailable_reason()}", file=sys.stderr)
        return 2

    circuit = DemoCircuit.with_constraints(args.constraints)
    cs = ConstraintSystem(witness=False)
    circuit.synthesize(cs, None, None)
    r1cs = cs.r1cs()
    cs = ConstraintSystem(witness=True)
    circuit.synthesize(cs, 3, [0x0123456789ABCDEF] * circuit.words)
    assignment = fr_to_array(cs.assignment())
    print(
        f"demo circuit: {r1cs.num_constraints} constraints; {os.cpu_count()} CPUs, "
        f"native threads {native.threads()}, arithmetic {native.arithmetic()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    py_times, py_pk, py_proof = run_path(False, r1cs, assignment, cs.public_inputs(), args.seed)
    nat_times, nat_pk, nat_proof = run_path(True, r1cs, assignment, cs.public_inputs(), args.seed)
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        assert np.array_equal(getattr(py_pk, name), getattr(nat_pk, name)), name
    assert py_pk.vk == nat_pk.vk and py_proof.to_bytes() == nat_proof.to_bytes()

    print("keys and proofs identical on both paths; wall s (cpu s)")
    print(f"{'stage':<14}{'python':>18}{'native':>18}{'ratio':>9}")
    for stage, (pw, pc) in py_times.items():
        nw, nc = nat_times[stage]
        cpu = lambda c: "" if c != c else f" ({c:.2f})"  # noqa: E731 (nan: not measured)
        print(f"{stage:<14}{pw:>10.3f}{cpu(pc):>8}{nw:>10.3f}{cpu(nc):>8}{pw / nw:>8.1f}x")
    kernel_table(nat_pk, r1cs, assignment)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


def kernel_table(pk, r1cs, assignment) -> None:
    """Each kernel of a proof alone, one thread, best-of-three CPU seconds."""
    threads = native.threads()
    native.set_threads(1)
    try:
        py, nat = CpuBackend(native=False), CpuBackend(native=True)
        pyk, natk = prover.prepare(pk, r1cs, py), prover.prepare(pk, r1cs, nat)
        a, b, c = (nat.spmv(m, assignment) for m in (r1cs.a, r1cs.b, r1cs.c))
        h = nat.h_poly(a, b, c)
        aux = assignment[natk.num_inputs :]
        jobs = {
            "spmv A": lambda be, k: be.spmv(r1cs.a, assignment),
            "h_poly": lambda be, k: be.h_poly(a, b, c),
            "msm H": lambda be, k: be.msm_g1(k.h, h),
            "msm L": lambda be, k: be.msm_g1(k.l, aux),
            "msm A": lambda be, k: be.msm_g1(k.a, assignment[k.a_select]),
            "msm B G1": lambda be, k: be.msm_g1(k.b_g1, assignment[k.b_select]),
            "msm B G2": lambda be, k: be.msm_g2(k.b_g2, assignment[k.b_select]),
        }
        print("kernels alone, one thread: cpu s (best of 3)")
        print(f"{'kernel':<14}{'python':>10}{'native':>10}{'ratio':>9}")
        for name, job in jobs.items():
            cost = []
            for be, k in ((py, pyk), (nat, natk)):
                best = float("inf")
                for _ in range(3 if be is nat or name.startswith("msm") else 1):
                    t = time.process_time()
                    job(be, k)
                    best = min(best, time.process_time() - t)
                cost.append(best)
            print(f"{name:<14}{cost[0]:>10.3f}{cost[1]:>10.3f}{cost[0] / cost[1]:>8.1f}x")
    finally:
        native.set_threads(threads)


if __name__ == "__main__":
    sys.exit(main())
