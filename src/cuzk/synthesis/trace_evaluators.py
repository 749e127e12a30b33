"""Trace evaluators shared by the circuits: the values of deferred calls, recorded.

A witness program (:mod:`cuzk.synthesis.program`) values the outputs of a
call it defers with a *trace evaluator*: the same values the CPU plan's
evaluators (:mod:`cuzk.circuits.porep.evaluators`) compute with numpy, here
as instructions — a SHA-256 compression or a Poseidon hash becomes one
macro instruction, a Merkle level's insertion a few selects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.hashers.sha256 import IV
from cuzk.synthesis.program import MASK32, F, Instr, Op, Reg, TraceValues


def sha256_block_outputs(
    V: TraceValues, from_iv: bool, pattern: Sequence[Any], ports: list
) -> list:
    """The 256 output bits of a SHA-256 block subcircuit (see
    :func:`cuzk.circuits.porep.sha_blocks.evaluate_block`): state words from
    the ports' bits (least significant first), message words from the
    pattern's bits (big-endian), one compression."""
    if from_iv:
        state = list(IV)
        rest = ports
    else:
        state = [V.w_from_bits(ports[32 * i : 32 * i + 32]) for i in range(8)]
        rest = ports[256:]
    it = iter(rest)
    msg = [next(it) if p is None else bool(p) for p in pattern]
    words = [V.w_from_bits(msg[32 * i : 32 * i + 32][::-1]) for i in range(16)]
    out = V.rec.sha256(state, words)
    return [V.w_bit(w, i) for w in out for i in range(32)]


def inserted(V: TraceValues, cur: Any, position: Any, siblings: list) -> list:
    """The level's children: ``cur`` inserted among ``siblings`` at ``position``
    (as :func:`cuzk.circuits.porep.vanilla.insert_lanes`)."""
    arity = len(siblings) + 1
    out = []
    for j in range(arity):
        below = siblings[j] if j < arity - 1 else siblings[j - 1]
        above = siblings[j - 1] if j > 0 else siblings[0]
        out.append(V.select(V.gt(position, j), below, V.select(V.lt(position, j), above, cur)))
    return out


def fr_words_be(V: TraceValues, x: Any) -> list[Reg]:
    """The 8 big-endian message words of a field element's 32 little-endian bytes."""
    rec = V.rec
    src = rec.f(x)
    return [rec.emit(Op.U_BSWAP, (rec.emit(Op.F_WORD, (src,), i),)) for i in range(8)]


def sha254_words(V: TraceValues, words: Sequence[Any]) -> Reg:
    """Filecoin's sha254 of a message given as big-endian 32-bit words (whole
    bytes: SHA-256 padding added here), as a field element: the digest's 32
    bytes read little-endian with the top two bits cleared."""
    rec = V.rec
    nbits = 32 * len(words)
    msg = [*words, 0x80000000]
    while len(msg) % 16 != 14:
        msg.append(0)
    msg += [nbits >> 32, nbits & MASK32]
    state: list[Any] = list(IV)
    for i in range(0, len(msg), 16):
        state = rec.sha256(state, msg[i : i + 16])
    le = [rec.emit(Op.U_BSWAP, (rec.u(w),)) for w in state]
    le[7] = rec.emit(Op.U_MASK, (le[7],), 30)  # digest[31] &= 0x3f
    d = rec.reg(F)
    rec.instrs.append(Instr(Op.F_FROM_WORDS, (d,), tuple(le)))
    return d


def sha254_node(V: TraceValues, children: Sequence[Any]) -> Reg:
    """Filecoin's SHA-256 node hash of field elements (32 little-endian bytes
    each, digest truncated to 254 bits)."""
    return sha254_words(V, [w for c in children for w in fr_words_be(V, c)])


def merkle_level_outputs(
    V: TraceValues, cur: Any, hints: Any, hasher: str, arity: int, constants: Any = None
) -> list:
    """Parent and position bits of one Merkle level (``evaluators.merkle_level``):
    the parent hashed here, or read from the hints when they carry it third
    (the level's own pass hashes it again, with its constraints)."""
    position, siblings = hints[:2]
    if len(hints) > 2:
        parent = hints[2]
    elif hasher == "poseidon":
        parent = V.rec.poseidon(inserted(V, cur, position, list(siblings)), constants)
    else:
        parent = sha254_node(V, inserted(V, cur, position, list(siblings)))
    bits = [V.w_bit(position, i) for i in range(arity.bit_length() - 1)]
    return [parent, *bits]
