"""A PoSt partition's witness as recorded programs (for a GPU, or numpy).

The slot subcircuit (:func:`~cuzk.circuits.post.circuit.sector_subcircuit`)
is the top of a :class:`~cuzk.synthesis.static_plan.StaticPlan` with one lane
per slot (the compiled circuit is ``circuit_sector_count`` copies of it);
its inclusion proofs run as one pass with a lane per (slot, challenge), and
their Merkle levels as one pass per arity, each level's parent valued by a
Poseidon instruction. Padding slots repeat the last sector's hints, as the
CPU witness repeats its values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuzk.circuits.porep import evaluators
from cuzk.circuits.post.circuit import _check_sector_count, _pad, sector_subcircuit, slot_hints
from cuzk.circuits.post.config import PoStConfig
from cuzk.circuits.post.vanilla import FallbackPoStSectorProof
from cuzk.synthesis.compile import CompiledCircuit, Compiler
from cuzk.synthesis.program import TraceEvaluator
from cuzk.synthesis.static_plan import StaticPlan


def _fr(v: int) -> np.ndarray:
    out = np.empty(1, dtype=object)
    out[0] = int(v)
    return out


def _slot(scalar: tuple) -> tuple:
    header, pors = scalar
    return (
        tuple(_fr(x) for x in header),
        [
            (
                _fr(leaf),
                [
                    (np.array([idx], dtype=np.uint64), [_fr(s) for s in sibs])
                    for idx, sibs in levels
                ],
            )
            for leaf, levels in pors
        ],
    )


def slot_hint_arrays(config: PoStConfig, proofs: Sequence[FallbackPoStSectorProof]) -> list[tuple]:
    """Every circuit slot's hints as one-lane arrays (padding slots repeat the last)."""
    _check_sector_count(config, len(proofs), "vanilla proofs")
    rows = [_slot(h) for p in proofs for h in slot_hints(config, p)]
    return _pad(rows, config.circuit_sector_count)


def trace_lookup(caller: str, callee: str) -> TraceEvaluator | None:
    """Deferred calls: the header's Poseidon, every inclusion proof (one pass
    over all slots and challenges), every Merkle level."""
    if callee.startswith("por/"):
        return evaluators.trace_no_outputs
    if callee.startswith("poseidon/") and caller.startswith("merkle-level/"):
        return None
    return evaluators.trace_by_key(callee)


def static_plan(
    compiled: CompiledCircuit,
    config: PoStConfig,
    hints: list[tuple],
    compiler: Compiler | None = None,
) -> StaticPlan:
    """The partition's witness recorded once (``hints``: :func:`slot_hint_arrays`
    of any partition, for their shape)."""
    sub = sector_subcircuit(config.arities, config.circuit_challenge_count)
    if compiled.top.key != sub.key:
        raise ValueError(
            f"compiled circuit {compiled.circuit_id} does not match {config.circuit_id}"
        )
    return StaticPlan.build(compiled, sub, hints, trace_lookup, compiler)


def device_witness(plan: StaticPlan, hints: list[tuple], device: Any) -> Any:
    """One partition's full assignment made on ``device``."""
    return plan.run(device, hints)
