"""``cuzk circuit-info KIND --sector-size SIZE``: a circuit's shape and size."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cuzk.circuits.catalog import KINDS, compiled_circuit, proof_partitions
from cuzk.cli._kinds import HELP as KIND_HELP
from cuzk.cli._kinds import circuit_kind
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "circuit-info",
        help="constraints, inputs, aux variables, FFT domain and non-zeros of a circuit",
    )
    p.add_argument("kind", type=circuit_kind, help=f"which circuit: {KIND_HELP}")
    p.add_argument("--sector-size", required=True, help="e.g. 2KiB, 512MiB, 32GiB")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--cache-dir", type=Path, default=None, help="compiled-circuit cache")
    p.add_argument("--no-cache", action="store_true", help="compile without the cache")
    p.set_defaults(func=run)
    register_plan(sub)


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
        "inputs_with_one": cc.num_inputs,
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
    print(f"public inputs  {cc.num_inputs - 1:,} (+ ONE = {cc.num_inputs:,} input variables)")
    print(f"aux variables  {cc.num_aux:,}")
    print(f"FFT domain     2^{info['fft_domain_log2']} = {cc.domain_size:,}")
    print(f"non-zeros      A {a:,}  B {b:,}  C {c:,}")
    print(f"compiled in    {seconds:.2f} s ({info['templates']} templates)")
    return 0


# --------------------------------------------------------------------------
# memory-plan: what a circuit needs of a GPU and a host
# --------------------------------------------------------------------------


def register_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "memory-plan",
        help="where a circuit's key and partitions live on a GPU (the tier) and what fits",
    )
    p.add_argument(
        "kind",
        nargs="?",
        type=circuit_kind,
        default=None,
        help=f"which circuit (default: every kind): {KIND_HELP}",
    )
    p.add_argument("--sector-size", required=True, help="e.g. 2KiB, 512MiB, 32GiB")
    p.add_argument("--backend", choices=("cuda", "cpu"), default="cuda")
    p.add_argument(
        "--gpu-memory",
        default="141GB",
        help="one GPU's memory, or several separated by commas (16GiB,24GiB,48GiB); "
        "its budget is [gpus] vram_budget_fraction of it (default: an H200)",
    )
    p.add_argument(
        "--vram-budget",
        default=None,
        help="the VRAM budget itself, as [gpus] vram_budget sets it (overrides --gpu-memory)",
    )
    p.add_argument("--host-memory", default="auto", help="host RAM (auto: this machine's)")
    p.add_argument("--config", type=Path, default=None, help="take the budgets' settings here")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--cache-dir", type=Path, default=None, help="compiled-circuit cache")
    p.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from cuzk.engine.config import (
        Config,
        detect_system_memory,
        load_config,
        parse_size,
        vram_budget_bytes,
    )
    from cuzk.engine.memplan import plan, render, shape_of

    try:
        cfg = load_config(args.config) if args.config else Config()
        host = (
            detect_system_memory()
            if str(args.host_memory).lower() == "auto"
            else parse_size(args.host_memory, "--host-memory", "host memory")
        )
        host_budget = (
            max(0, host - cfg.memory.safety_margin)
            if cfg.memory.total_budget.strip().lower() == "auto"
            else cfg.memory.resolve_total_budget()
        )
        if args.vram_budget is not None:
            budgets = [parse_size(args.vram_budget, "--vram-budget", "VRAM budget")]
        else:
            sizes = [x for x in str(args.gpu_memory).split(",") if x.strip()]
            gpus = [parse_size(x, "--gpu-memory", "GPU memory") for x in sizes]
            budgets = [vram_budget_bytes(cfg.gpus, g, "--gpu-memory") for g in gpus]
        kinds = [args.kind] if args.kind else list(KINDS)
        shapes = [
            shape_of(compiled_circuit(k, args.sector_size, args.cache_dir, True)) for k in kinds
        ]
        partitions = [proof_partitions(k, args.sector_size) for k in kinds]
    except CuzkError as e:
        print(f"error: {e}")
        return 2
    plans = [
        plan(
            shape,
            args.backend,
            host_budget,
            budget,
            cfg.pipeline.witness,
            parts,
            cfg.gpus.shared_pass_partitions,
        )
        for shape, parts in zip(shapes, partitions, strict=True)
        for budget in (budgets if args.backend == "cuda" else budgets[:1])
    ]
    if args.json:
        out = [p.as_dict() for p in plans]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=2))
    else:
        print("\n\n".join(render(p) for p in plans))
    return 0 if all(p.fits_gpu and p.fits_host for p in plans) else 1
