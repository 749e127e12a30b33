"""``cuzk-bench synth-only``: a C1's partitions synthesized alone, timed (Curio's
``cuzk-bench synth-only``: no daemon, no GPU, no key).

Synthesis here is what the daemon's synthesis workers do with
``[pipeline] witness = "host"``: the circuit compiled (once, then from the
circuit cache) and each partition's whole assignment made by the vectorised
witness. ``--verify`` also checks the vanilla proofs, which the daemon does
before synthesis and Curio's synthesis does not time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cuzk.bench.hostmem import peak_rss_mib
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("synth-only", help="synthesize a C1's partitions alone, timed (no daemon)")
    p.add_argument("--c1", required=True, type=Path, help="c1.json (Curio envelope or bare)")
    p.add_argument("--sector-num", type=int, default=1, help="accepted as Curio's; c1.json's")
    p.add_argument("--miner-id", type=int, default=1000, help="accepted as Curio's; c1.json's")
    p.add_argument("-i", "--iterations", type=int, default=1, help="synthesis runs")
    p.add_argument("--partition", type=int, default=None, help="only this partition")
    p.add_argument("--verify", action="store_true", help="check the vanilla proofs as well")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_synth_only)


def run_synth_only(args: argparse.Namespace) -> int:
    from cuzk.circuits.porep import c2

    if args.iterations < 1:
        print("cuzk-bench synth-only: --iterations must be at least 1", file=sys.stderr)
        return 2
    try:
        raw = args.c1.read_bytes()
    except OSError as e:
        print(f"cuzk-bench synth-only: --c1 {args.c1}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        request = c2.parse(raw, str(args.c1))
        n = request.partitions
        if args.partition is not None and not 0 <= args.partition < n:
            print(
                f"cuzk-bench synth-only: --partition {args.partition}: this C1 has "
                f"{n} partition(s), numbered from 0",
                file=sys.stderr,
            )
            return 2
        ks = [args.partition] if args.partition is not None else list(range(n))
        t0 = time.perf_counter()
        c2.compiled(request.circuit_id)
        compile_s = time.perf_counter() - t0
        runs = []
        for i in range(args.iterations):
            per_partition = []
            for k in ks:
                t = time.perf_counter()
                assignment, _inputs = c2.synthesize(request, k, verify_vanilla=args.verify)
                per_partition.append(time.perf_counter() - t)
                del assignment  # one partition's assignment live at a time
            runs.append(per_partition)
            print(
                f"iteration {i + 1}/{args.iterations}: {len(ks)} partition(s) of "
                f"{request.circuit_id} synthesized in {sum(per_partition):.3f} s "
                f"({sum(per_partition) / len(ks):.3f} s a partition)"
            )
    except CuzkError as e:
        print(f"cuzk-bench synth-only: {e}", file=sys.stderr)
        return 1
    totals = [sum(r) for r in runs]
    summary = {
        "circuit_id": request.circuit_id,
        "partitions": ks,
        "compile_seconds": round(compile_s, 3),
        "synthesis_seconds": [round(t, 3) for t in totals],
        "per_partition_seconds": [[round(t, 3) for t in r] for r in runs],
        "peak_mib": round(peak_rss_mib()),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print("=== Synthesis ===")
        print(f"circuit:      {request.circuit_id} (compiled or loaded in {compile_s:.3f} s)")
        print(f"partitions:   {len(ks)}, iterations: {len(runs)}")
        print(f"synthesis:    min {min(totals):.3f} s, max {max(totals):.3f} s a run")
        print(f"peak memory:  {summary['peak_mib']} MiB")
    return 0
