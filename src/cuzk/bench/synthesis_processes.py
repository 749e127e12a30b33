"""PoRep partition synthesis: one thread, T threads, and a pool of P processes, side by side.

    .venv/bin/python -m cuzk.bench.synthesis_processes --sector-size 8MiB --partitions 4 --workers 2

Generates a synthetic C1 output (``cuzk.circuits.porep.synthetic``), parses
it as the daemon does, and synthesizes ``--partitions`` partitions (cycling
over the sector's own) three ways: in this process one after another; in
``--workers`` threads (the daemon's ``synthesis_concurrency``); and in a
:class:`cuzk.engine.synthpool.SynthesisPool` of ``--workers`` processes (its
``synthesis_processes``). Every witness must equal the sequential one. The
compiled circuit is loaded (and the pool's processes warmed with one
partition each) before timing. Prints partitions per second of each way, and
their ratios to the sequential one.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.params import default_proof, parse_size
from cuzk.circuits.porep.synthetic import generate_c1
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds import default_registry
from cuzk.engine.synthpool import SynthesisPool


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", default="8MiB")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    proof_type = default_proof(parse_size(args.sector_size))
    t = time.perf_counter()
    c1 = generate_c1(proof_type, random.Random(args.seed))
    raw = dumps_wrapper(C1Wrapper(1, dumps_c1(c1), proof_type.sector.sector_size))
    handler, parsed = default_registry().parse(
        ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=raw)
    )
    cid = parsed.circuit_id
    parts = [parsed.partitions[i % len(parsed.partitions)] for i in range(args.partitions)]
    print(
        f"{cid}: {len(parsed.partitions)} partitions in the sector, C1 in "
        f"{time.perf_counter() - t:.1f} s; timing {len(parts)} partitions, "
        f"{args.workers} workers, load average {os.getloadavg()[0]:.1f}"
    )

    t = time.perf_counter()
    handler.synthesize(cid, parts[0])  # compiles or loads the circuit
    print(f"warm-up (circuit load + one partition): {time.perf_counter() - t:.1f} s")

    rows = []
    t = time.perf_counter()
    want = [handler.synthesize(cid, p).assignment for p in parts]
    rows.append(("sequential, this process", time.perf_counter() - t))

    with ThreadPoolExecutor(args.workers) as ex:
        t = time.perf_counter()
        got = list(ex.map(lambda p: handler.synthesize(cid, p).assignment, parts))
        rows.append((f"{args.workers} threads", time.perf_counter() - t))
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)), "threads differ"

    pool = SynthesisPool(args.workers)
    try:
        with ThreadPoolExecutor(args.workers) as ex:
            list(ex.map(lambda p: pool.synthesize(handler, cid, p), parts[: args.workers]))
            t = time.perf_counter()
            got = list(ex.map(lambda p: pool.synthesize(handler, cid, p).assignment, parts))
            rows.append((f"{args.workers} processes", time.perf_counter() - t))
    finally:
        pool.close()
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)), "processes differ"

    base = rows[0][1]
    print("\n| way | wall s | partitions/s | vs sequential |\n|---|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s:.1f} | {len(parts) / s:.3f} | {base / s:.2f}x |")
    print("all witnesses identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
