"""Merkle inclusion proofs in a circuit (rust-fil-proofs' ``PoRCircuit``).

A path is proven level by level from the leaf: allocate the position's
index bits and the sibling values, insert the current node among the
siblings (:mod:`~cuzk.gadgets.insertion`), hash the children. Levels follow
the tree's shape — base arity, then at most one sub-tree and one top-tree
level. The index bits of all levels are packed into one public input (the
challenged leaf's index), and the computed root is enforced equal to the
given root.

Hashers: ``"poseidon"`` (Poseidon of the arity, trees R and C) and
``"sha256"`` (binary tree D: both children to 255 bits each, byte-wise bit
reversal, SHA-256, 254 bits packed back into a number).

Each level, each node hash, and each whole inclusion proof is a
:class:`~cuzk.gadgets.subcircuit.Subcircuit`, so a compiled circuit holds
one copy of each and replicates it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.insertion import insert
from cuzk.gadgets.multipack import pack_bits, pack_into_inputs
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.gadgets.sha256 import sha256
from cuzk.gadgets.subcircuit import NUM, Subcircuit, call
from cuzk.gadgets.values import values_of
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.r1cs import ONE

POSEIDON = "poseidon"
SHA256 = "sha256"


# --------------------------------------------------------------------------
# Node hashes
# --------------------------------------------------------------------------


@functools.cache
def poseidon_subcircuit(arity: int) -> Subcircuit:
    c = poseidon_constants(arity)

    def synth(cs: Any, ports: list, hints: Any) -> list:
        return [poseidon_hash(cs, ports, c)]

    return Subcircuit(f"poseidon/{arity}", (NUM,) * arity, synth)


def sha256_leaves(cs: Any, leaves: Sequence[AllocatedNum]) -> AllocatedNum:
    """Filecoin's SHA-256 node hash of allocated numbers (``hash_multi_leaf_circuit``)."""
    bits: list[Boolean] = []
    for leaf in leaves:
        le = leaf.to_bits_le(cs)
        while len(le) % 8:
            le.append(Boolean.constant(False))
        for i in range(0, len(le), 8):
            bits.extend(reversed(le[i : i + 8]))
    be = sha256(cs, bits)
    le_out = [b for i in range(0, len(be), 8) for b in reversed(be[i : i + 8])]
    return pack_bits(cs, le_out[:254])


@functools.cache
def sha256_subcircuit(arity: int) -> Subcircuit:
    def synth(cs: Any, ports: list, hints: Any) -> list:
        return [sha256_leaves(cs, ports)]

    return Subcircuit(f"sha256-node/{arity}", (NUM,) * arity, synth)


def hash_node(cs: Any, hasher: str, children: Sequence[AllocatedNum]) -> AllocatedNum:
    if hasher == POSEIDON:
        return call(cs, poseidon_subcircuit(len(children)), children)[0]
    if hasher == SHA256:
        return call(cs, sha256_subcircuit(len(children)), children)[0]
    raise ValueError(f"unknown Merkle hasher {hasher!r}")


# --------------------------------------------------------------------------
# One level of a path
# --------------------------------------------------------------------------


def _level(cs: Any, hasher: str, arity: int, cur: AllocatedNum, hints: Any) -> list:
    V = values_of(cs)
    # (position, siblings), perhaps with the parent's value third (the caller's
    # device witness read it; this level hashes it again, with its constraints)
    index, siblings = hints[:2] if hints is not None else (None, [None] * (arity - 1))
    nbits = arity.bit_length() - 1
    bits = [AllocatedBit.alloc(cs, V.w_bit(index, i)) for i in range(nbits)]
    nums = [AllocatedNum.alloc(cs, s, "path element") for s in siblings]
    children = insert(cs, cur, [Boolean.of(b) for b in bits], nums)
    return [hash_node(cs, hasher, children), *bits]


@functools.cache
def level_subcircuit(hasher: str, arity: int) -> Subcircuit:
    """Ports: the current node. Hints: (position, siblings), or (position,
    siblings, parent value). Outputs: the parent node, then the position's
    bits (least significant first)."""

    def synth(cs: Any, ports: list, hints: Any) -> list:
        return _level(cs, hasher, arity, ports[0], hints)

    return Subcircuit(f"merkle-level/{hasher}/{arity}", (NUM,), synth)


# --------------------------------------------------------------------------
# A whole inclusion proof
# --------------------------------------------------------------------------


def por(
    cs: Any,
    hasher: str,
    arities: Sequence[int],
    root: AllocatedNum,
    hints: Any,
    private: bool = True,
) -> None:
    """Prove a leaf under ``root``; the packed path bits become a public input.

    ``hints`` is ``(leaf value, [(position, siblings) per level])`` or None.
    """
    leaf, levels = hints if hints is not None else (None, [None] * len(arities))
    cur = AllocatedNum.alloc(cs, leaf, "value")
    path_bits: list[Boolean] = []
    for arity, level_hints in zip(arities, levels, strict=True):
        out = call(cs, level_subcircuit(hasher, arity), [cur], level_hints)
        cur = out[0]
        path_bits.extend(Boolean.of(b) for b in out[1:])
    pack_into_inputs(cs, path_bits)
    cs.enforce("enforce root is correct", cur.variable, ONE, root.variable)
    if not private:
        root.inputize(cs)


def stack_por_hints(V: Any, per_lane: Sequence[Any]) -> Any:
    """Stack the scalar hints of n inclusion proofs into lane hints for ``V``
    (a :class:`~cuzk.gadgets.values.LaneValues` of n lanes)."""
    F, xp = V.F, V.xp
    leaves = F.from_ints([h[0] for h in per_lane])
    levels = []
    for lvl in range(len(per_lane[0][1])):
        idx = xp.asarray(np.array([h[1][lvl][0] for h in per_lane], dtype=np.uint64))
        nsib = len(per_lane[0][1][lvl][1])
        sibs = [F.from_ints([h[1][lvl][1][j] for h in per_lane]) for j in range(nsib)]
        levels.append((idx, sibs))
    return leaves, levels


@functools.cache
def por_subcircuit(hasher: str, arities: tuple[int, ...], private: bool = True) -> Subcircuit:
    """A whole inclusion proof; port: the root (already allocated)."""

    def synth(cs: Any, ports: list, hints: Any) -> list:
        por(cs, hasher, arities, ports[0], hints, private)
        return []

    key = f"por/{hasher}/{'-'.join(map(str, arities))}/{'private' if private else 'public'}"
    return Subcircuit(key, (NUM,), synth)


__all__ = [
    "POSEIDON",
    "SHA256",
    "hash_node",
    "level_subcircuit",
    "por",
    "por_subcircuit",
    "poseidon_subcircuit",
    "sha256_leaves",
    "sha256_subcircuit",
    "stack_por_hints",
]
