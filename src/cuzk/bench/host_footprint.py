"""The host side of a PoRep proof whose witnesses are made on the device, as the
daemon runs it, with the process tree's memory peaks.

    .venv/bin/python -m cuzk.bench.host_footprint --c1 c1.json --processes 2 --partitions 4
    .venv/bin/python -m cuzk.bench.host_footprint --matrices porep-32g

Hint tables: a :class:`~cuzk.engine.synthpool.SynthesisPool` of ``--processes``
parses the request in one of its processes and makes each partition's hint
table (``witness_hints``: the vanilla check and the hints) on as many threads
as there are processes, as the daemon's synthesis workers do; the first
partition's table is checked against one made in this process. With
``--matrices`` instead: the circuit's one-time matrix build
(:func:`~cuzk.synthesis.cache.load_or_build_r1cs` into the circuit cache)
against the host reservation the daemon makes for it (and, with
``--device-csr``, each matrix's device size counted exactly beside the
estimate a key's reservation uses). Prints one JSON line:
seconds, and the peaks of ``RssAnon`` (private memory) and ``VmRSS`` of this
process and its children together, in MiB; for hint tables also each worker
process's own peak (``VmHWM``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from cuzk.bench.hostmem import HostMemory


def hint_tables(c1: Path, processes: int, partitions: int | None) -> dict:
    from cuzk.engine.jobs import ProofKind, ProofRequest
    from cuzk.engine.kinds import default_registry
    from cuzk.engine.synthpool import SynthesisPool

    request = ProofRequest(ProofKind.POREP_SEAL_COMMIT, vanilla_proof=c1.read_bytes())
    kind = default_registry().handler(request.proof_kind)
    with HostMemory() as mem:
        pool = SynthesisPool(processes)
        try:
            t = time.perf_counter()
            parsed = pool.parse(kind, request)
            parse_s = time.perf_counter() - t
            parts = parsed.partitions[:partitions]

            def one(p):
                t0 = time.perf_counter()
                table = pool.witness_hints(kind, parsed.circuit_id, p).hints
                return time.perf_counter() - t0, table

            t = time.perf_counter()
            with ThreadPoolExecutor(processes) as ex:
                made = list(ex.map(one, parts))
            hints_s = time.perf_counter() - t
        finally:
            pool.close()
    workers = [b for pid, b in mem.peak_by_pid.items() if pid != os.getpid()]
    here = kind.witness_hints(parsed.circuit_id, parts[0]).hints
    if not np.array_equal(np.asarray(here), np.asarray(made[0][1])):
        raise AssertionError("a worker's hint table differs from this process's")
    return {
        "circuit": parsed.circuit_id,
        "processes": processes,
        "partitions": len(parts),
        "parse_s": round(parse_s, 2),
        "hint_tables_s": round(hints_s, 2),
        "per_partition_s": [round(s, 2) for s, _ in made],
        "hint_table_bytes": int(np.asarray(made[0][1]).nbytes),
        "worker_peak_mib": sorted(round(b / 2**20) for b in workers),
        **mem.report(),
    }


def matrices(circuit_id: str, device_csr: bool = False) -> dict:
    from cuzk.backends.cuda.csr_bytes import resident_bytes_estimate, resident_bytes_exact
    from cuzk.engine.kinds import default_registry
    from cuzk.engine.kinds.base import CompiledKind
    from cuzk.synthesis.cache import load_or_build_r1cs, r1cs_build_bytes, r1cs_path

    kind = default_registry().for_circuit(circuit_id)
    if not isinstance(kind, CompiledKind):
        raise SystemExit(f"{circuit_id}: not a compiled Filecoin circuit")
    cc = kind.compiled(circuit_id)
    if r1cs_path(cc).exists():
        raise SystemExit(f"the matrices of {circuit_id} are cached already: {r1cs_path(cc)}")
    reserved = r1cs_build_bytes(cc)
    with HostMemory(interval=0.2) as mem:
        t = time.perf_counter()
        r1cs = load_or_build_r1cs(cc)
        build_s = time.perf_counter() - t
    report = {
        "circuit": circuit_id,
        "build_s": round(build_s, 1),
        "reserved_mib": round(reserved / 2**20),
        **mem.report(),
    }
    if device_csr:  # what a GPU holds for each matrix, counted exactly, beside the estimate
        for name in ("a", "b", "c"):
            m = getattr(r1cs, name)
            report[f"device_{name}_mib"] = {
                "nnz": m.nnz,
                "exact": round(resident_bytes_exact(m) / 2**20),
                "estimate": round(resident_bytes_estimate(m) / 2**20),
            }
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--c1", type=Path, help="a c1.json (Curio envelope or bare)")
    what.add_argument("--matrices", metavar="CIRCUIT_ID", help="build this circuit's matrices")
    ap.add_argument(
        "--device-csr",
        action="store_true",
        help="with --matrices: each matrix's device size counted exactly, beside the estimate "
        "the key's reservation uses (reads every entry: minutes at 32GiB)",
    )
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--partitions", type=int, default=None, help="the first N (default: all)")
    args = ap.parse_args(argv)
    if args.c1 is not None:
        report = hint_tables(args.c1, max(1, args.processes), args.partitions)
    else:
        report = matrices(args.matrices, args.device_csr)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
