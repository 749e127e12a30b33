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
        partitions = (
            [int(x) for x in args.partitions.split(",")] if args.partitions is not None else None
        )
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
