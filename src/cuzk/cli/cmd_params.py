"""``cuzk params-list`` and ``cuzk gen-params``: the circuits' key files.

- ``cuzk params-list [--config FILE] [--digest] [--json]``: for every circuit
  the daemon serves, the ``.params`` / ``.vk`` files rust-fil-proofs names
  for it, where they were found in ``[srs]``'s search folders, their sizes
  and, with ``--digest``, whether each file's digest is the one Filecoin
  publishes (``parameters.json``). Exit 0, or 1 when ``--digest`` finds a
  file that is not Filecoin's.
- ``cuzk gen-params KIND --sector-size S [--out DIR] [--seed N]``: an
  INSECURE development key for one circuit, written under the real names
  (streamed: the points never sit whole in memory), made on the GPU when
  there is one. An existing file is never overwritten (``--force`` replaces
  a development one, never Filecoin's own).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cuzk.circuits.parameters import file_digest, parameter_files
from cuzk.circuits.post.config import format_sector_size, parse_sector_size
from cuzk.cli._kinds import HELP as KIND_HELP
from cuzk.cli._kinds import circuit_kind
from cuzk.cli._progress import Ticker
from cuzk.engine.config import load_config
from cuzk.engine.keystore.devfiles import write_dev_params
from cuzk.engine.kinds import default_registry
from cuzk.engine.kinds.base import KeyFiles
from cuzk.errors import CuzkError, InputError

# gen-params' kinds and the prefixes of their circuit ids
_CIRCUIT_PREFIX = {
    "porep": "porep",
    "winning-post": "winning",
    "window-post": "wpost",
    "snap": "snap",
}
_SIZE_SUFFIX = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}


def circuit_id(kind: str, sector_size: str | int) -> str:
    """The engine's circuit id of a kind and sector size (``porep-32g``)."""
    size = parse_sector_size(sector_size)
    if kind not in _CIRCUIT_PREFIX:
        raise InputError("kind", kind, f"not one of {', '.join(_CIRCUIT_PREFIX)}")
    if size not in _SIZE_SUFFIX:
        known = ", ".join(format_sector_size(s) for s in _SIZE_SUFFIX)
        raise InputError("--sector-size", str(sector_size), f"Filecoin's sizes are {known}")
    return f"{_CIRCUIT_PREFIX[kind]}-{_SIZE_SUFFIX[size]}"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("params-list", help="the key files of every served circuit, and where")
    p.add_argument("--config", type=Path, default=None, help="the daemon's cuzk.toml ([srs])")
    p.add_argument("--param-cache", type=Path, default=None, help="search this folder first")
    p.add_argument("--digest", action="store_true", help="check each file's published digest")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_list)

    g = sub.add_parser("gen-params", help="an INSECURE development key under the real names")
    g.add_argument("kind", type=circuit_kind, help=f"which circuit: {KIND_HELP}")
    g.add_argument("--sector-size", required=True, help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB")
    g.add_argument("--out", type=Path, default=None, help="folder (default: [srs] param_cache)")
    g.add_argument("--config", type=Path, default=None, help="the daemon's cuzk.toml ([srs])")
    g.add_argument("--seed", type=int, default=None, help="reproducible toxic waste (tests)")
    g.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto")
    g.add_argument("--force", action="store_true", help="replace development files")
    g.set_defaults(func=run_gen)


def _search_dirs(args: argparse.Namespace) -> list[Path]:
    dirs = load_config(args.config).srs.search_dirs()
    if args.param_cache is not None:
        dirs.insert(0, args.param_cache)
    return list(dict.fromkeys(dirs))


def _find(dirs: list[Path], name: str) -> Path | None:
    return next((d / name for d in dirs if (d / name).is_file()), None)


def run_list(args: argparse.Namespace) -> int:
    try:
        dirs = _search_dirs(args)
    except CuzkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows, foreign = [], 0
    for p in parameter_files():
        row: dict = {"circuit_id": p.circuit_id}
        for ext, name, published in (
            ("params", p.params_name, p.params_digest),
            ("vk", p.vk_name, p.vk_digest),
        ):
            found = _find(dirs, name)
            entry: dict = {"file": name, "path": str(found) if found else None}
            entry["bytes"] = found.stat().st_size if found else None
            if args.digest and found:
                digest = file_digest(found)
                entry["digest"] = digest
                entry["published"] = digest == published
                foreign += digest != published
            row[ext] = entry
        rows.append(row)
    if args.json:
        print(json.dumps({"search_dirs": [str(d) for d in dirs], "circuits": rows}, indent=2))
        return 1 if foreign else 0
    print("searched: " + ", ".join(str(d) for d in dirs))
    for row in rows:
        pr = row["params"]
        where = f"{pr['bytes']:,} bytes in {Path(pr['path']).parent}" if pr["path"] else "missing"
        vk = "" if row["vk"]["path"] else "   (.vk missing)"
        check = ""
        if "published" in pr:
            both = pr["published"] and row["vk"].get("published", False)
            check = "   digest ok" if both else "   NOT Filecoin's (development or damaged)"
        print(f"{row['circuit_id']:<13} {pr['file']}\n{'':<13} {where}{vk}{check}")
    return 1 if foreign else 0


def run_gen(args: argparse.Namespace) -> int:
    try:
        cid = circuit_id(args.kind, args.sector_size)
        out = args.out or load_config(args.config).srs.cache_dir()
        handler = default_registry().for_circuit(cid)
        files: KeyFiles = handler.key_files(cid)
        for name in (files.params, files.vk):
            path = out / name
            if not path.exists():
                continue
            if not args.force:
                raise InputError(str(path), "", "exists; --force replaces development files")
            if name == files.vk and file_digest(path) == files.published_vk_digest:
                raise InputError(str(path), "", "is Filecoin's published key: never replaced")
        points = _points(args.backend)
        t = time.perf_counter()
        with Ticker(f"compiling the {cid} circuit"):
            r1cs = handler.r1cs(cid)
        with Ticker(f"generating {cid} development key into {out}"):
            path = write_dev_params(r1cs, files, out, seed=args.seed, points=points)
    except (CuzkError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        f"{cid}: INSECURE development key written to {path} and {files.vk} "
        f"({path.stat().st_size:,} bytes, {time.perf_counter() - t:.1f} s)"
    )
    return 0


def _points(backend: str):
    """The GPU's point maker when asked for (or, for auto, when there is a GPU)."""
    from cuzk.backends.cuda import cuda_available

    if backend == "cpu" or (backend == "auto" and not cuda_available()):
        return None
    from cuzk.groth16.setup_gpu import GpuPoints

    return GpuPoints()
