"""Direct values of the subcircuits a witness plan defers.

Each evaluator returns, for lane arrays of a subcircuit's ports and hints,
the values its synthesis would give its outputs — computed with the plain
hashes (:mod:`cuzk.hashers`) instead of gadgets. The plan checks every one
against the deferred pass that later synthesizes the same calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.fields import R
from cuzk.circuits.porep.circuit import CHALLENGE_BITS, FR_BITS, expand_parents
from cuzk.circuits.porep.sha_blocks import SHAPES, evaluate_block
from cuzk.circuits.porep.vanilla import insert_lanes
from cuzk.gadgets.subcircuit import NUM
from cuzk.gadgets.values import LaneValues
from cuzk.hashers.poseidon import hash_vectors
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.hashers.sha256 import sha254_nodes
from cuzk.synthesis.plan import Evaluator, lanes_of
from cuzk.synthesis.program import TraceEvaluator, TraceValues
from cuzk.synthesis.trace_evaluators import (
    fr_words_be,
    merkle_level_outputs,
    sha254_words,
    sha256_block_outputs,
)


def obj(values: Any, lanes: int) -> np.ndarray:
    return lanes_of(values, lanes, NUM)


def sha256_block(V: LaneValues, ports: list, hints: Any, key: str) -> list:
    from_iv, pattern = SHAPES[key]
    return evaluate_block(from_iv, pattern, V.lanes, ports)


def poseidon(V: LaneValues, ports: list, hints: Any, arity: int) -> list:
    cols = [obj(p, V.lanes) for p in ports]
    return [hash_vectors(V.F, cols, poseidon_constants(arity)) % R]


def _children(cur: np.ndarray, position: np.ndarray, siblings: list) -> list[np.ndarray]:
    """The level's children with ``cur`` at each lane's position."""
    return insert_lanes(cur, np.asarray(position, dtype=np.int64), siblings)


def sha_node(children: list[np.ndarray]) -> np.ndarray:
    left, right = (fr_to_array((c % R).tolist()).view(np.uint8).reshape(-1, 32) for c in children)
    digest = np.ascontiguousarray(sha254_nodes(left, right))
    out = np.empty(len(digest), dtype=object)
    out[:] = fr_from_array(digest.view(np.uint64).reshape(-1, 4))
    return out


def merkle_level(V: LaneValues, ports: list, hints: Any, hasher: str, arity: int) -> list:
    position, siblings = hints[:2]
    cur = obj(ports[0], V.lanes)
    children = _children(cur, position, [obj(s, V.lanes) for s in siblings])
    if hasher == "poseidon":
        parent = hash_vectors(V.F, children, poseidon_constants(arity)) % R
    else:
        parent = sha_node(children)
    pos = np.asarray(position, dtype=np.uint64)
    bits = [
        ((pos >> np.uint64(i)) & np.uint64(1)).astype(bool) for i in range(arity.bit_length() - 1)
    ]
    return [parent, *bits]


def no_outputs(V: LaneValues, ports: list, hints: Any) -> list:
    return []


def by_key(key: str) -> Evaluator | None:
    """The evaluator for a subcircuit key, if it has one."""
    if key.startswith("sha256-block/"):
        return lambda V, ports, hints: sha256_block(V, ports, hints, key)
    if key.startswith("merkle-level/"):
        _, hasher, arity = key.split("/")
        return lambda V, ports, hints: merkle_level(V, ports, hints, hasher, int(arity))
    if key.startswith("poseidon/"):
        arity = int(key.split("/")[1])
        return lambda V, ports, hints: poseidon(V, ports, hints, arity)
    return None


# --------------------------------------------------------------------------
# The same evaluators, recorded into a witness program (device plans)
# --------------------------------------------------------------------------


def trace_by_key(key: str) -> TraceEvaluator | None:
    """The trace evaluator (:mod:`cuzk.synthesis.program`) for a subcircuit key."""
    if key.startswith("sha256-block/"):
        from_iv, pattern = SHAPES[key]
        return lambda V, ports, hints: sha256_block_outputs(V, from_iv, pattern, ports)
    if key.startswith("merkle-level/"):
        _, hasher, arity_s = key.split("/")
        arity = int(arity_s)
        c = poseidon_constants(arity) if hasher == "poseidon" else None
        return lambda V, ports, hints: merkle_level_outputs(V, ports[0], hints, hasher, arity, c)
    if key.startswith("poseidon/"):
        c = poseidon_constants(int(key.split("/")[1]))
        return lambda V, ports, hints: [V.rec.poseidon(ports, c)]
    return None


def trace_no_outputs(V: TraceValues, ports: list, hints: Any) -> list:
    return []


def trace_hinted_poseidon(arity: int) -> TraceEvaluator:
    """A column hash whose value the call's hints carry (``ChallengeHints.
    column_hashes``): a hint load in the caller's lane; the deferred Poseidon
    pass still hashes it with its constraints."""
    c = poseidon_constants(arity)

    def evaluate(V: TraceValues, ports: list, hints: Any) -> list:
        return [hints] if hints is not None else [V.rec.poseidon(ports, c)]

    return evaluate


def trace_label(layer: int) -> TraceEvaluator:
    """A label subcircuit's output (``circuit.label_subcircuit``): the label
    ``sha254(replica_id ‖ u32_be(layer) ‖ u64_be(node) ‖ 0^20 ‖ 37 parents)``,
    from its ports (replica-id bits, challenge bits, parent labels), with the
    parents' message words taken from their values rather than their bits."""

    def evaluate(V: TraceValues, ports: list, hints: Any) -> list:
        rid_bits = [*ports[:FR_BITS], False]
        node_bits = ports[FR_BITS : FR_BITS + CHALLENGE_BITS]
        parents = ports[FR_BITS + CHALLENGE_BITS :]
        # the first block as the circuit lays it out, bit by bit (big-endian bits)
        rid = [b for i in range(0, 256, 8) for b in reversed(rid_bits[i : i + 8])]
        layer_bits = [bool((layer >> i) & 1) for i in range(31, -1, -1)]
        first = rid + layer_bits + list(reversed(node_bits))
        first += [False] * (512 - len(first))
        words = [V.w_from_bits(first[32 * i : 32 * i + 32][::-1]) for i in range(16)]
        own: dict[int, list] = {}
        for j in expand_parents(list(range(len(parents))), layer):
            if j not in own:
                own[j] = fr_words_be(V, parents[j])
            words += own[j]
        return [sha254_words(V, words)]

    return evaluate
