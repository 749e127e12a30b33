"""``cuzk-bench gen-c1`` / ``gen-snap``: synthetic Filecoin test inputs.

``gen-c1 --sector-size 32GiB --out c1.json`` writes a valid C1 output (in
Curio's ``c1.json`` envelope unless ``--bare``) for any registered sector
size, from a sparse synthetic sector; ``--sealed`` really seals a small
(2KiB) sector instead. ``gen-snap`` writes SnapDeals (EmptySectorUpdate)
partition proofs the same way.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS, default_proof, parse_size
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.errors import CuzkError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gen-c1", help="write a valid PoRep C1 output (c1.json) for any sector size")
    p.add_argument("--sector-size", required=True, help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB")
    p.add_argument("--out", required=True, type=Path, help="output file")
    p.add_argument(
        "--proof", default=None, help="registered seal proof name (default: the size's V1_1 proof)"
    )
    p.add_argument("--seed", type=int, default=0, help="randomness seed (same seed, same file)")
    p.add_argument("--miner-id", type=int, default=1000)
    p.add_argument("--sector-num", type=int, default=1)
    p.add_argument(
        "--partitions", default=None, help="only these partitions (e.g. 0,3); others left empty"
    )
    p.add_argument("--sealed", action="store_true", help="really seal the sector (small sizes)")
    p.add_argument("--bare", action="store_true", help="bare C1 JSON, no c1.json envelope")
    p.add_argument("--verify", action="store_true", help="run the vanilla verifier on the result")
    p.set_defaults(func=run_gen_c1)

    s = sub.add_parser(
        "gen-snap", help="write valid SnapDeals partition proofs for any sector size"
    )
    s.add_argument("--sector-size", required=True, help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB")
    s.add_argument("--out", required=True, type=Path, help="JSON array of base64 partition proofs")
    s.add_argument("--pub", type=Path, default=None, help="public data (default: OUT.pub.json)")
    s.add_argument("--h", type=int, default=None, help="rho's high-bit count (default: the size's)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--partitions", default=None, help="only these partitions (e.g. 0,3)")
    s.add_argument("--verify", action="store_true", help="run the vanilla verifier on the result")
    s.set_defaults(func=run_gen_snap)

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
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=run_prove_c1)

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


def _proof(args: argparse.Namespace):
    size = parse_size(args.sector_size)
    if args.proof is None:
        return default_proof(size)
    proof = REGISTERED_SEAL_PROOFS.get(args.proof)
    if proof is None:
        raise ValueError(f"unknown seal proof {args.proof!r}")
    if proof.sector_size != size:
        raise ValueError(f"{proof.name} is not a {args.sector_size} proof")
    if not proof.interactive:
        raise ValueError(f"{proof.name}: only interactive PoRep proofs are generated")
    return proof


def run_gen_c1(args: argparse.Namespace) -> int:
    from cuzk.circuits.porep import sealer, synthetic, vanilla
    from cuzk.circuits.porep.derive import prover_id_from_miner

    try:
        proof = _proof(args)
        partitions = _partition_list(args.partitions)
        rng = random.Random(args.seed)
        t0 = time.perf_counter()
        if args.sealed:
            if proof.sector.nodes > 1 << 18:
                raise ValueError("--sealed materialises the whole sector: use 2KiB or 8MiB")
            data = sealer.random_sector_data(proof.sector.nodes, rng)
            ticket, seed = synthetic.random_domain(rng), synthetic.random_domain(rng)
            sealed = sealer.seal(
                proof, data, prover_id_from_miner(args.miner_id), args.sector_num, ticket
            )
            c1 = sealer.commit_phase1(sealed, seed, ticket, partitions)
        else:
            c1 = synthetic.generate_c1(proof, rng, args.miner_id, args.sector_num, partitions)
        t_gen = time.perf_counter() - t0
        raw = dumps_c1(c1)
        if not args.bare:
            raw = dumps_wrapper(C1Wrapper(args.sector_num, raw, proof.sector_size))
        args.out.write_bytes(raw)
        report = {
            "proof": proof.name,
            "out": str(args.out),
            "bytes": len(raw),
            "generate_s": round(t_gen, 3),
        }
        if args.verify:
            t1 = time.perf_counter()
            vanilla.Verifier(proof, str(args.out)).verify(c1, partitions)
            report["verify_s"] = round(time.perf_counter() - t1, 3)
    except (CuzkError, ValueError, OSError) as e:
        print(f"cuzk-bench gen-c1: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


def _partition_list(text: str | None) -> list[int] | None:
    return [int(x) for x in text.split(",")] if text is not None else None


def run_gen_snap(args: argparse.Namespace) -> int:
    from cuzk.circuits.update.generate import generate_sector
    from cuzk.circuits.update.params import UpdateParams
    from cuzk.circuits.update.vanilla import UpdateVerifier, dumps_partition_proofs

    try:
        params = UpdateParams.of(parse_size(args.sector_size))
        t0 = time.perf_counter()
        sector = generate_sector(params, random.Random(args.seed), args.h)
        ks = _partition_list(args.partitions) or list(range(params.partition_count))
        proofs = [sector.partition_proof(k) for k in ks]
        t_gen = time.perf_counter() - t0
        args.out.write_bytes(dumps_partition_proofs(proofs))
        public = {
            "registered_proof": f"StackedDrg{params.name}V1",
            "sector_size": params.sector_bytes,
            "h": sector.h,
            "partitions": ks,
            "comm_r_old": sector.comm_r_old.to_bytes(32, "little").hex(),
            "comm_d_new": sector.comm_d_new.to_bytes(32, "little").hex(),
            "comm_r_new": sector.comm_r_new.to_bytes(32, "little").hex(),
        }
        pub = args.pub or args.out.with_name(args.out.name + ".pub.json")
        pub.write_text(json.dumps(public, indent=2) + "\n")
        report = {"out": str(args.out), "pub": str(pub), "partitions": len(ks)}
        report["generate_s"] = round(t_gen, 3)
        if args.verify:
            t1 = time.perf_counter()
            roots = (sector.comm_r_old, sector.comm_d_new, sector.comm_r_new)
            for k, proof in zip(ks, proofs, strict=True):
                UpdateVerifier(params, f"{args.out}[{k}]").verify(proof, k, sector.h, *roots)
            report["verify_s"] = round(time.perf_counter() - t1, 3)
    except (CuzkError, ValueError, OSError) as e:
        print(f"cuzk-bench gen-snap: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_circuit_witness(args: argparse.Namespace) -> int:
    """One partition: generate test data, compile, witness, optionally check."""
    from cuzk.circuits.compile import Compiler
    from cuzk.circuits.satisfy import compiled_unsatisfied_rows

    rng = random.Random(args.seed)
    compiler = Compiler()
    stages: dict[str, dict] = {}

    def stage(name: str, t0: float) -> None:
        stages[name] = {
            "seconds": round(time.perf_counter() - t0, 3),
            "peak_mib": round(_peak_mib()),
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


def _witnesses_in_processes(request, ks: list[int], processes: int):
    """(k, assignment, public inputs) for each partition in order, made by the
    daemon's PoRep kind in a pool of worker processes that runs up to
    ``processes`` partitions ahead of the caller."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from cuzk.engine.kinds.base import PartitionInput
    from cuzk.engine.kinds.porep import PoRepKind
    from cuzk.engine.synthpool import SynthesisPool

    kind = PoRepKind()
    pool = SynthesisPool(processes)

    def submit(ex, k: int):
        return k, ex.submit(pool.synthesize, kind, request.circuit_id, PartitionInput(k, request))

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
                yield k, witness.assignment, list(witness.public_inputs)
    finally:
        pool.close()


def _key_source(args: argparse.Namespace, cid: str, r1cs, backend):
    """The key prove-c1 loads: the circuit's files (written first as development
    parameters when missing and the disk allows), or a development key made as
    it is loaded. Returns (source, the .params path or None)."""
    from cuzk.engine.config import load_config
    from cuzk.engine.keygen import disk_free, params_file_bytes, write_dev_params
    from cuzk.engine.kinds.base import KeyFiles
    from cuzk.formats.bellperson import open_params
    from cuzk.groth16.prover import KeyLayout
    from cuzk.groth16.setup import DevParams

    points = None
    if backend.name == "cuda":
        from cuzk.backends.cuda.msm import MsmEngine
        from cuzk.groth16.setup_gpu import GpuPoints

        points = GpuPoints(MsmEngine(backend.ctx))
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
    from cuzk.cli.hostmem import HostMemory

    with HostMemory() as mem:
        code, report = _prove_c1(args)
    if report is not None:
        report.update(mem.report())
        print(json.dumps(report, indent=2 if args.json else None))
    return code


def _prove_c1(args: argparse.Namespace) -> tuple[int, dict | None]:
    from cuzk.backends import get_backend
    from cuzk.circuits.cache import load_or_build_r1cs
    from cuzk.circuits.porep import c2
    from cuzk.circuits.porep.vanilla import Verifier
    from cuzk.engine.keygen import ProgressLog
    from cuzk.groth16 import prover, verifier
    from cuzk.groth16.proof import encode_proofs

    times: dict[str, float] = {}

    def mark(stage: str, t0: float) -> float:
        now = time.perf_counter()
        times[stage] = round(times.get(stage, 0.0) + now - t0, 3)
        return now

    try:
        t = time.perf_counter()
        # The daemon's C2 path (circuits.porep.c2): parse, compiled circuit,
        # synthesis; the vanilla proofs are checked once, here, to time them alone.
        request = c2.parse(args.c1.read_bytes(), str(args.c1))
        proof_type = request.proof
        ks = _partition_list(args.partitions) or list(range(request.partitions))
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
        stages = prover.StageTimes()
        if args.processes > 0 and args.tile == 1:
            assignments = _witnesses_in_processes(request, ks, args.processes)
        else:
            assignments = ((k, *c2.synthesize(request, k, verify_vanilla=False)) for k in ks)
        for k, w_k, inputs in assignments:
            w = base_r1cs.tile_assignment(w_k, args.tile) if args.tile > 1 else w_k
            t = mark("witness", t)
            for _ in range(max(1, args.repeat)):
                stages = prover.StageTimes()
                t0 = time.perf_counter()
                proof = prover.prove(key, r1cs, w, times=stages)
                prove_runs.append(time.perf_counter() - t0)
                if not verifier.verify(key.vk, inputs, proof):
                    print(
                        f"cuzk-bench prove-c1: partition {k}: proof did not verify", file=sys.stderr
                    )
                    return 1, None
            t = mark("prove+verify", t)
            proofs.append(proof)
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
        "seconds": times,
        "peak_mib": round(_peak_mib()),
    }
    peaks = getattr(backend, "peak_bytes_by_operation", None)
    if peaks is not None:  # a GPU: the largest reservation of each operation, for calibration
        report["device_peak_bytes"] = peaks()
    return 0, report
