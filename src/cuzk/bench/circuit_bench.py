"""``cuzk circuit-bench KIND --sector-size SIZE``: a PoSt circuit's compile, CSR
materialisation and witness, each timed in a process of its own with its peak memory."""

from __future__ import annotations

import argparse
import json
import time

from cuzk.bench.hostmem import peak_rss_mib
from cuzk.bench.timing import cpu_seconds
from cuzk.circuits.post.config import WINDOW, WINNING
from cuzk.engine.jobs import ProofKind, kind_argument
from cuzk.errors import CuzkError

POST = {ProofKind.WINDOW_POST_PARTITION: WINDOW, ProofKind.WINNING_POST: WINNING}


post_kind = kind_argument(POST)  # argparse ``type``: winning or wpost (old spellings too)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "circuit-bench",
        help="time compile, CSR materialisation and witness of a PoSt circuit (peak memory)",
    )
    p.add_argument("kind", type=post_kind, help="winning or wpost")
    p.add_argument("--sector-size", required=True)
    p.add_argument(
        "--sectors",
        type=int,
        default=None,
        help="distinct sectors to materialise and witness (default: the whole partition)",
    )
    p.add_argument("--chunk", type=int, default=64, help="sectors per witness pass")
    p.add_argument("--processes", type=int, default=1, help="witness worker processes")
    p.add_argument("--backend", choices=("object", "limb"), default="object")
    p.add_argument("--no-r1cs", action="store_true", help="skip CSR materialisation")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_bench)


def _peak_mib() -> float:
    """The larger peak of this process and of its finished children, in MiB."""
    return max(peak_rss_mib(), peak_rss_mib(children=True))


def _cpu() -> float:
    """CPU seconds of this process and of its finished children."""
    return cpu_seconds() + cpu_seconds(children=True)


def _phase_compile(kind: str, size: str) -> dict:
    from cuzk.circuits.post.circuit import compile_post
    from cuzk.circuits.post.config import post_config

    config = post_config(kind, size)
    t, c = time.perf_counter(), _cpu()
    cc = compile_post(config)
    return {
        "seconds": time.perf_counter() - t,
        "cpu_seconds": _cpu() - c,
        "peak_mib": _peak_mib(),
        "constraints": cc.num_constraints,
        "nnz": sum(cc.nnz),
    }


def _phase_r1cs(kind: str, size: str, sectors: int) -> dict:
    import dataclasses

    from cuzk.circuits.post.circuit import compile_post
    from cuzk.circuits.post.config import post_config

    config = dataclasses.replace(post_config(kind, size), sector_count=sectors)
    cc = compile_post(config)
    base = _peak_mib()
    t, c = time.perf_counter(), _cpu()
    r1cs = cc.to_r1cs()
    seconds = time.perf_counter() - t
    cpu = _cpu() - c
    nbytes = sum(
        m.indptr.nbytes + m.indices.nbytes + m.coeffs.nbytes for m in (r1cs.a, r1cs.b, r1cs.c)
    )
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_mib": _peak_mib(),
        "base_mib": base,
        "constraints": r1cs.num_constraints,
        "nnz": r1cs.a.nnz + r1cs.b.nnz + r1cs.c.nnz,
        "csr_mib": nbytes / 2**20,
    }


def _phase_witness(
    kind: str, size: str, sectors: int, chunk: int, backend: str, processes: int
) -> dict:
    """Witness of ``sectors`` distinct sectors (a partition of that many), then
    of a whole partition holding one real sector (the rest padding)."""
    import dataclasses

    import numpy as np

    from cuzk.circuits.post.circuit import compile_post, witness
    from cuzk.circuits.post.config import post_config
    from cuzk.circuits.post.generate import generate_sector_proof
    from cuzk.hashers.field import OBJECT_FR, limb_fr

    full = post_config(kind, size)
    config = dataclasses.replace(full, sector_count=sectors)
    rnd = bytes(range(32))
    t = time.perf_counter()
    # Distinct positions; vanilla data repeats every 8 sectors (generation is slow).
    made = [generate_sector_proof(config, rnd, 1000 + i, i) for i in range(min(sectors, 8))]
    proofs = [made[i % len(made)] for i in range(sectors)]
    gen = time.perf_counter() - t
    F = OBJECT_FR if backend == "object" else limb_fr(np)
    cc = compile_post(config)
    t, c = time.perf_counter(), _cpu()
    w = witness(cc, config, proofs, F=F, chunk=chunk, processes=processes)
    out = {
        "seconds": time.perf_counter() - t,
        "cpu_seconds": _cpu() - c,
        "generate_seconds": gen,
        "assignment_mib": w.nbytes / 2**20,
        "distinct_sectors": sectors,
        "partition_sectors": full.sector_count,
    }
    del w
    out["peak_mib"] = _peak_mib()
    if sectors < full.sector_count:
        cc = compile_post(full)
        t, c = time.perf_counter(), _cpu()
        w = witness(cc, full, proofs[:1], F=F)
        out["padded_partition"] = {
            "seconds": time.perf_counter() - t,
            "cpu_seconds": _cpu() - c,
            "assignment_mib": w.nbytes / 2**20,
            "peak_mib": _peak_mib(),
        }
    return out


def _child_main(queue, fn, args) -> None:
    queue.put(fn(*args))


def _in_child(fn, *args) -> dict:
    """Run one phase in a fresh process, so its peak memory is its own."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_main, args=(queue, fn, args))
    proc.start()
    try:
        return queue.get()
    finally:
        proc.join()


def _layout(config) -> str:
    """The circuit's slots: WinningPoSt proves its one sector in 66 one-challenge
    slots; a WindowPoSt partition holds one slot per sector."""
    slots, per = config.circuit_sector_count, config.circuit_challenge_count
    if config.kind == WINNING:
        return f"1 sector in {slots} slots of {per} challenge each"
    return f"{slots} sectors of {per} challenges each"


def _sectors(config, k: int) -> str:
    """What a phase over ``k`` distinct vanilla sectors covers, in words."""
    if config.kind == WINNING:
        return f"1 sector ({config.circuit_sector_count} slots)"
    return f"{k} sector" + ("" if k == 1 else "s")


def run_bench(args: argparse.Namespace) -> int:
    from cuzk.circuits.post.config import format_sector_size, post_config

    try:
        config = post_config(args.kind, args.sector_size)
    except CuzkError as e:
        print(f"error: {e}")
        return 2
    size = format_sector_size(config.sector_size)
    k = min(args.sectors or config.sector_count, config.sector_count)
    report: dict = {
        "circuit": config.circuit_id,
        "sectors": k,
        "circuit_slots": config.circuit_sector_count,
        "challenges_per_slot": config.circuit_challenge_count,
        "backend": args.backend,
    }
    report["compile"] = _in_child(_phase_compile, args.kind, size)
    if not args.no_r1cs:
        report["r1cs"] = _in_child(_phase_r1cs, args.kind, size, k)
    report["witness"] = _in_child(
        _phase_witness, args.kind, size, k, args.chunk, args.backend, args.processes
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    c = report["compile"]
    n = config.sector_count
    print(
        f"{config.circuit_id}: {c['constraints']:,} constraints, {c['nnz']:,} non-zeros "
        f"({_layout(config)})"
    )
    label = 30
    print(
        f"{'compile (structure)':<{label}}{c['seconds']:8.2f} s wall "
        f"{c['cpu_seconds']:8.2f} s CPU   peak {c['peak_mib']:7.0f} MiB"
    )
    if "r1cs" in report:
        r = report["r1cs"]
        print(
            f"{'CSR, ' + _sectors(config, k):<{label}}{r['seconds']:8.2f} s wall "
            f"{r['cpu_seconds']:8.2f} s CPU"
            f"   peak {r['peak_mib']:7.0f} MiB  ({r['constraints']:,} rows, {r['csr_mib']:.0f} MiB)"
        )
        if k < n:
            print(
                f"  whole partition (×{n / k:.1f}, linear): ~{r['cpu_seconds'] * n / k:.0f} s CPU, "
                f"~{r['csr_mib'] * n / k / 1024:.1f} GiB of CSR"
            )
    w = report["witness"]
    print(
        f"{'witness, ' + _sectors(config, k):<{label}}{w['seconds']:8.2f} s wall "
        f"{w['cpu_seconds']:8.2f} s CPU"
        f"   peak {w['peak_mib']:7.0f} MiB  (assignment {w['assignment_mib']:.0f} MiB)"
    )
    if k < n:
        print(f"  {n} distinct sectors (linear): ~{w['cpu_seconds'] * n / k:.0f} s CPU")
        p = w["padded_partition"]
        print(
            f"whole partition, 1 real sector + {n - 1} padding cop{'y' if n == 2 else 'ies'}: "
            f"{p['seconds']:.2f} s wall {p['cpu_seconds']:.2f} s CPU, "
            f"peak {p['peak_mib']:.0f} MiB (assignment {p['assignment_mib']:.0f} MiB)"
        )
    return 0
