"""The circuits cuzk knows, by kind and sector size, compiled through the cache."""

from __future__ import annotations

from pathlib import Path

from cuzk.circuits.cache import load_or_compile
from cuzk.circuits.compile import CompiledCircuit
from cuzk.circuits.post.circuit import compile_post
from cuzk.circuits.post.config import WINDOW, WINNING, post_config
from cuzk.errors import InputError

KINDS = (WINNING, WINDOW)
PLANNED = ("porep", "snap")


def compiled_circuit(
    kind: str, sector_size: int | str, cache: Path | None = None, use_cache: bool = True
) -> CompiledCircuit:
    """Compile (or load) the circuit of one partition of ``kind``."""
    if kind in PLANNED:
        raise InputError("circuit kind", "", f"the {kind} circuit is not available yet")
    if kind not in KINDS:
        raise InputError("circuit kind", "", f"{kind!r} is not one of {', '.join(KINDS)}")
    config = post_config(kind, sector_size)
    if not use_cache:
        return compile_post(config)
    return load_or_compile(config.circuit_id, lambda: compile_post(config), cache)
