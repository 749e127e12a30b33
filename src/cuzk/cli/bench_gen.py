"""``cuzk-bench gen-c1`` / ``gen-snap``: synthetic Filecoin test inputs (``prove-c1`` and
``circuit-witness``, which time them, are :mod:`cuzk.bench.prove_c1` and
:mod:`cuzk.bench.circuit_witness`).

``gen-c1 --sector-size 32GiB --out c1.json`` writes a valid C1 output (in
Curio's ``c1.json`` envelope unless ``--bare``) for any registered sector
size, from a sparse synthetic sector; ``--sealed`` really seals a small
(2KiB) sector instead. ``--synthetic`` writes a synthetic PoRep's C1 (the
size's ``V1_1_Feat_SyntheticPoRep`` proof, as Curio seals with
``UseSyntheticPoRep``): its challenges are picked from a set that comm_r
fixes, so it needs the whole sector and implies ``--sealed``. ``gen-snap``
writes SnapDeals (EmptySectorUpdate) partition proofs the same way.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from cuzk.bench.prove_c1 import partition_list
from cuzk.circuits.porep.c1 import dumps_c1, dumps_wrapper
from cuzk.circuits.porep.derive import SYNTHETIC
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
    p.add_argument(
        "--synthetic",
        action="store_true",
        help="a synthetic PoRep (…V1_1_Feat_SyntheticPoRep, Curio's UseSyntheticPoRep); "
        "implies --sealed",
    )
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


def _proof(args: argparse.Namespace):
    size = parse_size(args.sector_size)
    name = args.proof
    if args.synthetic:
        synthetic = f"{default_proof(size).name}_Feat_SyntheticPoRep"
        if name is not None and name != synthetic:
            raise ValueError(f"--synthetic is {synthetic}, not --proof {name}")
        name = synthetic
    if name is None:
        return default_proof(size)
    proof = REGISTERED_SEAL_PROOFS.get(name)
    if proof is None:
        raise ValueError(f"unknown seal proof {name!r}")
    if proof.sector_size != size:
        raise ValueError(f"{proof.name} is not a {args.sector_size} proof")
    if not proof.interactive and proof.feature != SYNTHETIC:
        raise ValueError(f"{proof.name}: only interactive and synthetic PoRep are generated")
    return proof


def run_gen_c1(args: argparse.Namespace) -> int:
    from cuzk.circuits.porep import sealer, synthetic, vanilla
    from cuzk.circuits.porep.derive import prover_id_from_miner

    try:
        proof = _proof(args)
        partitions = partition_list(args.partitions)
        rng = random.Random(args.seed)
        t0 = time.perf_counter()
        if args.sealed or proof.feature == SYNTHETIC:
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


def run_gen_snap(args: argparse.Namespace) -> int:
    from cuzk.circuits.update.generate import generate_sector
    from cuzk.circuits.update.params import UpdateParams
    from cuzk.circuits.update.vanilla import UpdateVerifier, dumps_partition_proofs

    try:
        params = UpdateParams.of(parse_size(args.sector_size))
        t0 = time.perf_counter()
        sector = generate_sector(params, random.Random(args.seed), args.h)
        ks = partition_list(args.partitions) or list(range(params.partition_count))
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
