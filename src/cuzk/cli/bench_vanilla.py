"""``cuzk-bench gen-vanilla winning-post|window-post|snap-prove``: vanilla proofs
as Curio sends them to the daemon.

Curio's subcommand and flags (``--registered-proof``, ``--sector-number``,
``--miner-id``, ``--randomness``, ``-o/--output``), and its output: a JSON
array of base64 vanilla proofs (Go's ``json.Marshal([][]byte)``), ready for
``cuzk-bench single|batch --vanilla``. Curio's tool reads a sealed sector's
files; this one makes the proofs of a synthetic sector of the same size
(:mod:`cuzk.circuits.post.generate`, :mod:`cuzk.circuits.update.generate`),
which pass the same checks, so no sector data is needed. The flags that name
a sealed sector's files are accepted by the parser and refused with the
reason. The report on stdout holds what the request needs besides the file
(randomness, commitments) and the ``cuzk-bench single`` line that sends it.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
from pathlib import Path

from cuzk.errors import CuzkError, InputError

# Curio's defaults: Winning 32GiB = 3, Window 32GiB V1_1 = 13, Update 32GiB = 3.
_SEALED_FILES_POST = ("comm_r", "sealed", "cache")
_SEALED_FILES_SNAP = (
    "orig_commdr",
    "update_commdr",
    "sector_key",
    "sector_key_cache",
    "replica",
    "replica_cache",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gen-vanilla",
        help="vanilla proofs as Curio sends them (winning-post, window-post, snap-prove), "
        "from a synthetic sector",
    )
    kinds = p.add_subparsers(dest="vanilla_kind", required=True, metavar="KIND")

    # Curio's names, and the kinds' own (cuzk.engine.jobs.KIND_NAMES) as aliases
    w = kinds.add_parser(
        "winning-post", aliases=["winning"], help="the challenged sector's WinningPoSt proof"
    )
    _post_args(w, registered_proof=3, output="winning-vanilla.json")
    w.set_defaults(func=run_post, post_kind="winning-post", bench_type="winning")

    d = kinds.add_parser(
        "window-post", aliases=["wpost"], help="one WindowPoSt partition's sector proofs"
    )
    _post_args(d, registered_proof=13, output="wpost-vanilla.json")
    d.add_argument(
        "--sectors",
        type=int,
        default=1,
        help="sectors in the partition (numbered from --sector-number)",
    )
    d.add_argument("--partition", type=int, default=0, help="the partition index Curio sends")
    d.set_defaults(func=run_post, post_kind="window-post", bench_type="wpost")

    s = kinds.add_parser(
        "snap-prove", aliases=["snap"], help="SnapDeals (sector update) partition proofs"
    )
    s.add_argument("--registered-proof", type=int, default=3, help="RegisteredUpdateProof (0–4)")
    for flag in _SEALED_FILES_SNAP:
        s.add_argument("--" + flag.replace("_", "-"), help="(a sealed sector's file: not read)")
    s.add_argument(
        "--seed", type=int, default=0, help="the synthetic sector (same seed, same file)"
    )
    s.add_argument("-o", "--output", type=Path, default=Path("snap-vanilla.json"))
    s.set_defaults(func=run_snap)


def _post_args(p: argparse.ArgumentParser, registered_proof: int, output: str) -> None:
    p.add_argument(
        "--registered-proof", type=int, default=registered_proof, help="RegisteredPoStProof"
    )
    p.add_argument("--sector-number", type=int, default=1)
    p.add_argument("--miner-id", type=int, default=1000)
    p.add_argument("--randomness", help="hex, 32 bytes (default zeros)")
    for flag in _SEALED_FILES_POST:
        p.add_argument("--" + flag.replace("_", "-"), help="(a sealed sector's file: not read)")
    p.add_argument("--seed", type=int, default=None, help="the synthetic sector (default: its id)")
    p.add_argument("-o", "--output", type=Path, default=Path(output))


def _refuse_sealed_files(args: argparse.Namespace, flags: tuple[str, ...]) -> None:
    given = [f"--{f.replace('_', '-')}" for f in flags if getattr(args, f, None)]
    if given:
        raise InputError(
            "gen-vanilla",
            ", ".join(given),
            "reading a sealed sector's files is not supported: this tool makes the vanilla "
            "proofs of a synthetic sector of the same size; leave these flags out",
        )


def _randomness(text: str | None) -> bytes:
    if text is None:
        return bytes(32)
    try:
        value = bytes.fromhex(text.removeprefix("0x"))
    except ValueError as e:
        raise InputError("gen-vanilla", "--randomness", f"not hex ({e})") from None
    if len(value) != 32:
        raise InputError("gen-vanilla", "--randomness", f"{len(value)} bytes, expected 32")
    return value


def vanilla_json(proofs: list[bytes]) -> bytes:
    """A JSON array of base64 proofs, as Go's ``json.Marshal([][]byte)`` writes it."""
    return json.dumps([base64.b64encode(p).decode() for p in proofs]).encode()


def post_vanilla(
    registered_proof: int,
    post_kind: str,
    sector_ids: list[int],
    randomness: bytes,
    partition: int = 0,
    seed: int | None = None,
) -> list[bytes]:
    """Bincode vanilla proofs of ``sector_ids`` (one WindowPoSt partition, or the
    one challenged WinningPoSt sector) for ``randomness``."""
    from cuzk.circuits.post.config import config_for_registered_proof
    from cuzk.circuits.post.generate import generate_sector_proof
    from cuzk.circuits.post.vanilla import write_sector_proof

    cfg = config_for_registered_proof(registered_proof)
    if cfg.kind != post_kind:
        raise InputError(
            "gen-vanilla",
            "--registered-proof",
            f"{registered_proof} is a {cfg.kind} proof type, not {post_kind}",
        )
    if not 1 <= len(sector_ids) <= cfg.sector_count:
        raise InputError(
            "gen-vanilla",
            "--sectors",
            f"{len(sector_ids)}: a {post_kind} partition of this size holds 1 to "
            f"{cfg.sector_count} sectors",
        )
    base = partition * cfg.sector_count
    return [
        write_sector_proof(
            generate_sector_proof(
                cfg, randomness, sid, base + i, None if seed is None else seed + i
            )
        )
        for i, sid in enumerate(sector_ids)
    ]


def run_post(args: argparse.Namespace) -> int:
    try:
        _refuse_sealed_files(args, _SEALED_FILES_POST)
        randomness = _randomness(args.randomness)
        count = getattr(args, "sectors", 1)
        partition = getattr(args, "partition", 0)
        ids = [args.sector_number + i for i in range(count)]
        proofs = post_vanilla(
            args.registered_proof, args.post_kind, ids, randomness, partition, args.seed
        )
        args.output.write_bytes(vanilla_json(proofs))
    except (CuzkError, OSError) as e:
        print(f"cuzk-bench gen-vanilla: {e}", file=sys.stderr)
        return 2
    submit = (
        f"cuzk-bench single -t {args.bench_type} --vanilla {args.output} "
        f"--registered-proof {args.registered_proof} --miner-id {args.miner_id} "
        f"--randomness {randomness.hex()}"
    )
    if partition:
        submit += f" --partition {partition}"
    if args.registered_proof == 0:  # also proto3's "unset": say the size
        submit += " --sector-size 2KiB"
    report = {
        "kind": args.post_kind,
        "registered_proof": args.registered_proof,
        "sectors": ids,
        "partition": partition,
        "miner_id": args.miner_id,
        "randomness": randomness.hex(),
        "out": str(args.output),
        "proofs": len(proofs),
        "submit": submit,
    }
    print(json.dumps(report))
    return 0


def snap_vanilla(registered_proof: int, seed: int = 0) -> tuple[list[bytes], dict[str, str]]:
    """Every partition proof of a synthetic updated sector, and its commitments
    (hex, 32 bytes little-endian, as the request carries them)."""
    from cuzk.circuits.update.generate import generate_sector
    from cuzk.circuits.update.params import REGISTERED_UPDATE_PROOFS, UpdateParams
    from cuzk.circuits.update.vanilla import write_partition_proof

    names = {i: name for name, i in REGISTERED_UPDATE_PROOFS.items()}
    if registered_proof not in names:
        raise InputError(
            "gen-vanilla",
            "--registered-proof",
            f"{registered_proof} is not a RegisteredUpdateProof (0–4)",
        )
    params = UpdateParams.of(names[registered_proof].removeprefix("StackedDrg").removesuffix("V1"))
    sector = generate_sector(params, random.Random(seed))
    proofs = [
        write_partition_proof(sector.partition_proof(k)) for k in range(params.partition_count)
    ]
    commitments = {
        "comm_r_old": sector.comm_r_old.to_bytes(32, "little").hex(),
        "comm_r_new": sector.comm_r_new.to_bytes(32, "little").hex(),
        "comm_d_new": sector.comm_d_new.to_bytes(32, "little").hex(),
    }
    return proofs, commitments


def run_snap(args: argparse.Namespace) -> int:
    try:
        _refuse_sealed_files(args, _SEALED_FILES_SNAP)
        proofs, comms = snap_vanilla(args.registered_proof, args.seed)
        args.output.write_bytes(vanilla_json(proofs))
    except (CuzkError, OSError, ValueError) as e:
        print(f"cuzk-bench gen-vanilla: {e}", file=sys.stderr)
        return 2
    submit = (
        f"cuzk-bench single -t snap --vanilla {args.output} "
        f"--registered-proof {args.registered_proof} --comm-r-old {comms['comm_r_old']} "
        f"--comm-r-new {comms['comm_r_new']} --comm-d-new {comms['comm_d_new']}"
    )
    if args.registered_proof == 0:  # also proto3's "unset": say the size
        submit += " --sector-size 2KiB"
    report = {
        "kind": "snap-prove",
        "registered_proof": args.registered_proof,
        **comms,
        "out": str(args.output),
        "proofs": len(proofs),
        "submit": submit,
    }
    print(json.dumps(report))
    return 0
