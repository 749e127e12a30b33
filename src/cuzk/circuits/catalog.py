"""The circuits cuzk knows, by kind and sector size, compiled through the cache.

One partition each: WinningPoSt and WindowPoSt (:mod:`cuzk.circuits.post`),
PoRep C2 (:mod:`cuzk.circuits.porep`) and SnapDeals (:mod:`cuzk.circuits.update`),
for Filecoin's sector sizes (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
"""

from __future__ import annotations

from pathlib import Path

from cuzk.circuits.porep.witness import compiled_porep
from cuzk.circuits.post.circuit import compile_post
from cuzk.circuits.post.config import WINDOW, WINNING, parse_sector_size, post_config
from cuzk.circuits.update.witness import compiled_snap
from cuzk.errors import InputError
from cuzk.synthesis.cache import load_or_compile
from cuzk.synthesis.compile import CompiledCircuit

POREP = "porep"
SNAP = "snap"
POST_KINDS = (WINNING, WINDOW)
KINDS = (*POST_KINDS, POREP, SNAP)


def proof_partitions(kind: str, sector_size: int | str) -> int:
    """Partitions a proof of ``kind`` has for a sector size: PoRep's and
    SnapDeals' by Filecoin's parameters; one for a PoSt request (Curio sends
    a WindowPoSt partition a request)."""
    if kind not in KINDS:
        raise InputError("circuit kind", "", f"{kind!r} is not one of {', '.join(KINDS)}")
    size = parse_sector_size(sector_size)
    if kind == POREP:
        from cuzk.circuits.porep.params import default_proof

        return default_proof(size).sector.partitions
    if kind == SNAP:
        from cuzk.circuits.update.params import UpdateParams

        return UpdateParams.of(size).partition_count
    return 1


def compiled_circuit(
    kind: str, sector_size: int | str, cache: Path | None = None, use_cache: bool = True
) -> CompiledCircuit:
    """Compile (or load) the circuit of one partition of ``kind``.

    InputError for an unknown kind or a size that is not a Filecoin sector size.
    """
    if kind not in KINDS:
        raise InputError("circuit kind", "", f"{kind!r} is not one of {', '.join(KINDS)}")
    size = parse_sector_size(sector_size)
    if kind == POREP:
        return compiled_porep(size, cache, use_cache)
    if kind == SNAP:
        return compiled_snap(size, cache, use_cache)
    config = post_config(kind, size)
    if not use_cache:
        return compile_post(config)
    return load_or_compile(config.circuit_id, lambda: compile_post(config), cache)
