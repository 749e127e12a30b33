"""``cuzk-bench prove-c1``: PoRep C2 from a c1.json without the daemon, timed.

The daemon's C2 path (:mod:`cuzk.circuits.porep.c2`): the request parsed by
``c2.parse``, its compiled circuit, each partition synthesized by
``c2.synthesize`` (or, with ``--processes``, by the PoRep kind in a
:class:`~cuzk.engine.synthpool.SynthesisPool`); the key from the circuit's
``.params`` files (or a development key made as it is loaded); each
partition proven and verified by the daemon's own
:func:`cuzk.engine.prove.prove_partition` (with ``--witness device``, the
assignment made on the device from the hint table and its inputs checked
there, inside that function: ``device_witness_s`` is its time). Prints a
JSON report: stage seconds, the prover's steps, host and device memory peaks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cuzk.bench.hostmem import HostMemory, peak_rss_mib
from cuzk.bench.timing import StageClock
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "prove-c1",
        help="PoRep C2 from a c1.json: vanilla check, witness, Groth16 per partition, verify",
    )
    c.add_argument("--c1", required=True, type=Path, help="c1.json (Curio envelope or bare)")
    c.add_argument("--out", type=Path, default=None, help="write the concatenated proofs here")
    c.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    c.add_argument(
        "--key",
        choices=("files", "memory"),
        default="files",
        help="files: the circuit's .params/.vk found in --param-cache or [srs]'s folders "
        "(development ones are written there first when missing and the disk allows); "
        "memory: a development key made as it is loaded, no file",
    )
    c.add_argument("--param-cache", type=Path, default=None, help="search (and write) here first")
    c.add_argument(
        "--key-seed", type=int, default=1, help="seeded development key (INSECURE, tests only)"
    )
    c.add_argument("--partitions", default=None, help="only these partitions (e.g. 0,3)")
    c.add_argument(
        "--tile",
        type=int,
        default=1,
        help="benchmark only: prove K copies of the partition circuit side by side",
    )
    c.add_argument(
        "--repeat", type=int, default=1, help="proofs per partition with the key resident (timing)"
    )
    c.add_argument(
        "--processes",
        type=int,
        default=0,
        help="synthesize partitions in this many worker processes, ahead of the prover "
        "(as the daemon's [pipeline] synthesis_processes); 0: one after another here",
    )
    c.add_argument(
        "--witness",
        choices=("auto", "device", "host"),
        default="auto",
        help="where each partition's assignment is made: device (the circuit's static "
        "witness plan run where it is proven; the host only checks and makes hints), "
        "host (the CPU witness), auto (device on a GPU; as the daemon's [pipeline] witness)",
    )
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=run_prove_c1)


def partition_list(text: str | None) -> list[int] | None:
    """``--partitions 0,3`` as a list (None: all)."""
    return [int(x) for x in text.split(",")] if text is not None else None


def _witnesses_in_processes(request, ks: list[int], processes: int, hints: bool = False):
    """(k, assignment, public inputs) for each partition in order, made by the
    daemon's PoRep kind in a pool of worker processes that runs up to
    ``processes`` partitions ahead of the caller (``hints``: (k, hint table,
    public inputs), for a witness made on the device)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from cuzk.engine.kinds.base import PartitionInput
    from cuzk.engine.kinds.porep import PoRepKind
    from cuzk.engine.synthpool import SynthesisPool

    kind = PoRepKind()
    pool = SynthesisPool(processes)

    make = pool.witness_hints if hints else pool.synthesize

    def submit(ex, k: int):
        return k, ex.submit(make, kind, request.circuit_id, PartitionInput(k, request))

    try:
        with ThreadPoolExecutor(processes) as ex:
            pending: deque = deque()
            todo = iter(ks)
            for k in todo:
                pending.append(submit(ex, k))
                if len(pending) >= processes:
                    break
            while pending:
                k, fut = pending.popleft()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(submit(ex, nxt))
                witness = fut.result()
                made = witness.hints if hints else witness.assignment
                yield k, made, list(witness.public_inputs)
    finally:
        pool.close()


def _kind():
    from cuzk.engine.kinds.porep import PoRepKind

    return PoRepKind()


def _hint_tables(request, ks: list[int], processes: int):
    """(k, hint table, public inputs) for each partition in order: the vanilla
    proofs were checked already; the static plan is recorded (or loaded from
    the circuit cache) with the first partition's hints."""
    from cuzk.circuits.porep import c2

    if processes > 0:
        k0 = ks[0]
        hints, _ = c2.checked_hints(request, k0, verify_vanilla=False)
        _kind().witness_plan(request.circuit_id, hints)  # recorded once, here
        yield from _witnesses_in_processes(request, ks, processes, hints=True)
        return
    kind = _kind()
    for k in ks:
        hints, inputs = c2.checked_hints(request, k, verify_vanilla=False)
        yield k, kind.witness_plan(request.circuit_id, hints).hint_table(hints), inputs


def _key_source(args: argparse.Namespace, cid: str, r1cs, backend):
    """The key prove-c1 loads: the circuit's files (written first as development
    parameters when missing and the disk allows), or a development key made as
    it is loaded. Returns (source, the .params path or None)."""
    from cuzk.engine.config import load_config
    from cuzk.engine.keystore.devfiles import disk_free, params_file_bytes, write_dev_params
    from cuzk.engine.kinds.base import KeyFiles
    from cuzk.formats.bellperson import open_params
    from cuzk.groth16.prover import KeyLayout
    from cuzk.groth16.setup import DevParams

    points = None
    if backend.point_maker() is not None:
        from cuzk.groth16.setup_gpu import GpuPoints

        points = GpuPoints(backend.point_maker())
    if args.key == "files" and args.tile == 1:
        dirs = load_config(None).srs.search_dirs()
        if args.param_cache is not None:
            dirs.insert(0, args.param_cache)
        files = KeyFiles.filecoin(cid)
        found = next((d / files.params for d in dirs if (d / files.params).is_file()), None)
        if found is None:
            need = params_file_bytes(KeyLayout.of(r1cs).counts) + (64 << 20)
            if disk_free(dirs[0]) >= need:
                found = write_dev_params(r1cs, files, dirs[0], args.key_seed, points)
        if found is not None:
            return open_params(found, found.with_name(files.vk)), found
    name = f"development key {cid}" + (f" x{args.tile}" if args.tile > 1 else "") + " (in memory)"
    return DevParams(r1cs, seed=args.key_seed, points=points, name=name), None


def run_prove_c1(args: argparse.Namespace) -> int:
    """C2 end to end: the key from its files (or a development key), witnesses,
    proofs, each verified (CPU or CUDA backend)."""
    with HostMemory() as mem:
        code, report = _prove_c1(args)
    if report is not None:
        report.update(mem.report())
        print(json.dumps(report, indent=2 if args.json else None))
    return code


def _prove_c1(args: argparse.Namespace) -> tuple[int, dict | None]:
    from cuzk.backends import get_backend
    from cuzk.circuits.porep import c2
    from cuzk.circuits.porep.vanilla import Verifier
    from cuzk.engine.devices import witness_device_for
    from cuzk.engine.keystore.progress import ProgressLog
    from cuzk.engine.prove import DeviceWitness, prove_partition
    from cuzk.groth16 import prover
    from cuzk.groth16.proof import encode_proofs
    from cuzk.synthesis.cache import load_or_build_r1cs

    clock = StageClock()
    mark = clock.mark
    try:
        t = time.perf_counter()
        # The daemon's C2 path (circuits.porep.c2): parse, compiled circuit,
        # synthesis; the vanilla proofs are checked once, here, to time them alone.
        request = c2.parse(args.c1.read_bytes(), str(args.c1))
        proof_type = request.proof
        ks = partition_list(args.partitions) or list(range(request.partitions))
        Verifier(proof_type, request.source).verify(request.c1, ks)
        t = mark("vanilla_verify", t)
        cc = c2.compiled(request.circuit_id)
        t = mark("compile", t)
        base_r1cs = load_or_build_r1cs(cc)  # mapped from the circuit cache once built
        r1cs = base_r1cs.tiled(args.tile) if args.tile > 1 else base_r1cs
        t = mark("r1cs", t)
        backend = get_backend(args.backend)
        source, key_file = _key_source(args, request.circuit_id, r1cs, backend)
        t = mark("dev_key", t)
        key = prover.load(source, r1cs, backend, ProgressLog(f"loading {source.name}"))
        t = mark("load_key", t)
        del source  # a development key's scalars go; a file's source is a few descriptors
        proofs = []
        prove_runs: list[float] = []
        verify_runs: list[float] = []  # the proof checked against the key, each run
        stages = prover.StageTimes()
        on_device = args.tile == 1 and (
            args.witness == "device" or (args.witness == "auto" and backend.name == "cuda")
        )
        device_witness_s: list[float] = []
        if on_device:
            # the daemon's device witness: the host checks and makes hint tables
            # (here, or in --processes workers), the assignment is made on the device
            assignments = _hint_tables(request, ks, args.processes)
            maker, plan = None, None
        elif args.processes > 0 and args.tile == 1:
            assignments = _witnesses_in_processes(request, ks, args.processes)
        else:
            assignments = ((k, *c2.synthesize(request, k, verify_vanilla=False)) for k in ks)
        for k, w_k, inputs in assignments:
            if on_device:
                if plan is None:
                    plan = _kind().witness_plan(request.circuit_id)
                    maker = witness_device_for(backend)
                    t = mark("witness_plan", t)
                witness = DeviceWitness(plan, maker, w_k)
            else:
                witness = base_r1cs.tile_assignment(w_k, args.tile) if args.tile > 1 else w_k
            t = mark("witness", t)
            for _ in range(max(1, args.repeat)):
                done = prove_partition(
                    key,
                    r1cs,
                    witness,
                    inputs,
                    source=request.source,
                    partition=k,
                    verify_with=key.vk,
                )
                stages = done.times
                prove_runs.append(done.prove_s)
                verify_runs.append(done.verify_s)
                if on_device:
                    device_witness_s.append(done.witness_s)
                if not done.verified:
                    print(
                        f"cuzk-bench prove-c1: partition {k}: proof did not verify", file=sys.stderr
                    )
                    return 1, None
            del witness
            t = mark("prove+verify", t)
            proofs.append(done.proof)
        data = encode_proofs(proofs)
        if args.out is not None:
            args.out.write_bytes(data)
    except (CuzkError, ValueError, OSError) as e:
        print(f"cuzk-bench prove-c1: {e}", file=sys.stderr)
        return 2, None
    report = {
        "proof": proof_type.name,
        "partitions": ks,
        "tile": args.tile,
        "processes": args.processes,
        "key": str(key_file) if key_file is not None else "development key in memory",
        "witness": "device" if on_device else "host",
        "device_witness_s": [round(x, 4) for x in device_witness_s],
        "verify_s": [round(x, 4) for x in verify_runs],
        "constraints": r1cs.num_constraints,
        "prove_s": {
            "runs": [round(x, 4) for x in prove_runs],
            "median": round(sorted(prove_runs)[len(prove_runs) // 2], 4),
            "last_stages": {k: round(v, 4) for k, v in stages.seconds.items()},
            "last_detail": {k: round(v, 4) for k, v in stages.detail.items()},
            "last_msm_phases_ms": {
                name: {k: round(v, 2) for k, v in ph.items()} for name, ph in stages.phases.items()
            },
        },
        "bytes": len(data),
        "verified": True,
        "seconds": clock.rounded(),
        "peak_mib": round(peak_rss_mib()),
    }
    peaks = backend.peak_bytes_by_operation()
    if peaks:  # a GPU: the largest reservation of each operation, for calibration
        report["device_peak_bytes"] = peaks
    return 0, report
