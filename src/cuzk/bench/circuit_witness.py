"""``cuzk-bench circuit-witness``: compile, vectorised witness and satisfaction of one
PoRep / SnapDeals partition, each timed with the process's peak memory."""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from cuzk.bench.hostmem import peak_rss_mib
from cuzk.circuits.porep.params import default_proof, parse_size
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "circuit-witness",
        help="time compile, vectorised witness and satisfaction of one PoRep / SnapDeals partition",
    )
    b.add_argument("kind", choices=("porep", "snap"))
    b.add_argument("--sector-size", required=True)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--check", action="store_true", help="check every constraint (slow for 32GiB)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=run_circuit_witness)


def run_circuit_witness(args: argparse.Namespace) -> int:
    """One partition: generate test data, compile, witness, optionally check."""
    from cuzk.synthesis.compile import Compiler
    from cuzk.synthesis.satisfy import compiled_unsatisfied_rows

    rng = random.Random(args.seed)
    compiler = Compiler()
    stages: dict[str, dict] = {}

    def stage(name: str, t0: float) -> None:
        stages[name] = {
            "seconds": round(time.perf_counter() - t0, 3),
            "peak_mib": round(peak_rss_mib()),
        }

    try:
        size = parse_size(args.sector_size)
        t0 = time.perf_counter()
        if args.kind == "porep":
            from cuzk.circuits.porep import synthetic
            from cuzk.circuits.porep.circuit import PoRepShape
            from cuzk.circuits.porep.witness import (
                compile_partition,
                partition_hints,
                partition_witness,
            )

            proof = default_proof(size)
            k = proof.sector.partitions - 1
            c1 = synthetic.generate_c1(proof, rng, partitions=[k])
            stage("generate", t0)
            shape = PoRepShape.of(proof.sector)
            t0 = time.perf_counter()
            cc = compile_partition(shape, compiler)
            stage("compile", t0)
            t0 = time.perf_counter()
            plan = partition_witness(cc, shape, partition_hints(c1, k), compiler)
        else:
            from cuzk.circuits.update import witness as snap
            from cuzk.circuits.update.generate import generate_sector
            from cuzk.circuits.update.params import UpdateParams

            params = UpdateParams.of(size)
            sector = generate_sector(params, rng)
            k = params.partition_count - 1
            proof = sector.partition_proof(k)
            roots = (sector.comm_r_old, sector.comm_d_new, sector.comm_r_new)
            stage("generate", t0)
            t0 = time.perf_counter()
            cc = snap.compile_partition(params, compiler)
            stage("compile", t0)
            t0 = time.perf_counter()
            hints = snap.partition_hints(params, proof, k, sector.h, *roots)
            plan = snap.partition_witness(cc, params, hints, compiler)
        stage("witness", t0)
        report: dict = {
            "circuit": cc.circuit_id,
            "constraints": cc.num_constraints,
            "aux": cc.num_aux,
            "stages": stages,
            "passes": [
                {"key": key, "passes": n, "lanes": lanes, "seconds": round(secs, 3)}
                for key, n, lanes, secs in plan.report()[:8]
            ],
        }
        if args.check:
            t0 = time.perf_counter()
            report["unsatisfied"] = len(compiled_unsatisfied_rows(cc, plan.W))
            stage("check", t0)
    except (CuzkError, ValueError, OSError) as e:
        print(f"cuzk-bench circuit-witness: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['circuit']}: {report['constraints']:,} constraints, {report['aux']:,} aux")
        for name, st in stages.items():
            print(f"  {name:9s} {st['seconds']:9.2f} s   peak {st['peak_mib']:,} MiB")
        if "unsatisfied" in report:
            print(f"  unsatisfied constraints: {report['unsatisfied']}")
    return 1 if report.get("unsatisfied") else 0
