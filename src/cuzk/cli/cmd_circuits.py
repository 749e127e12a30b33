"""``cuzk circuit-info KIND --sector-size SIZE``: a circuit's shape and size."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cuzk.circuits.catalog import KINDS, PLANNED, compiled_circuit
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "circuit-info",
        help="constraints, inputs, aux variables, FFT domain and non-zeros of a circuit",
    )
    p.add_argument("kind", choices=(*KINDS, *PLANNED), help="which circuit")
    p.add_argument("--sector-size", required=True, help="e.g. 2KiB, 512MiB, 32GiB")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--cache-dir", type=Path, default=None, help="compiled-circuit cache")
    p.add_argument("--no-cache", action="store_true", help="compile without the cache")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    try:
        cc = compiled_circuit(args.kind, args.sector_size, args.cache_dir, not args.no_cache)
    except CuzkError as e:
        print(f"error: {e}")
        return 2
    seconds = time.perf_counter() - t0
    a, b, c = cc.nnz
    info = {
        "circuit": cc.circuit_id,
        "constraints": cc.num_constraints,
        "circuit_constraints": cc.num_circuit_constraints,
        "public_inputs": cc.num_inputs - 1,
        "aux_variables": cc.num_aux,
        "fft_domain": cc.domain_size,
        "fft_domain_log2": cc.domain_size.bit_length() - 1,
        "nnz": {"a": a, "b": b, "c": c},
        "templates": len(cc.templates()),
        "seconds": round(seconds, 3),
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"circuit        {info['circuit']}")
    print(
        f"constraints    {cc.num_constraints:,} "
        f"({cc.num_circuit_constraints:,} + {cc.num_inputs:,} input constraints)"
    )
    print(f"public inputs  {cc.num_inputs - 1:,} (plus ONE)")
    print(f"aux variables  {cc.num_aux:,}")
    print(f"FFT domain     2^{info['fft_domain_log2']} = {cc.domain_size:,}")
    print(f"non-zeros      A {a:,}  B {b:,}  C {c:,}")
    print(f"compiled in    {seconds:.2f} s ({info['templates']} templates)")
    return 0
