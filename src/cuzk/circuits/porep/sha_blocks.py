"""SHA-256 in a circuit as one subcircuit call per compression block.

The gadget :func:`cuzk.gadgets.sha256.sha256` synthesizes every block
inline. A label hashes 20 blocks, 198 labels per 32GiB partition, and 18 of
the 20 blocks have the same shape (chained state, all message bits
allocated), so here each block is a :class:`Subcircuit` keyed by its
*shape*: whether it starts from the IV (constant) or a chained state, and
which message bits are constants (with their values). Same key ⇒ same
constraints and variables, so one template serves every such block, and the
witness of all of them is computed in one vectorised pass.

The layout is exactly the inline gadget's: a call reserves the aux block
that inline synthesis would fill, and the compression function runs
unchanged inside it.

Ports: the 256 state bits (8 words, each least significant bit first),
unless the block starts from the IV, then the message's non-constant bits
in order. Outputs: the 256 bits of the new state, same order.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.sha256 import sha256_compression_function, sha256_iv, sha256_padding_bits
from cuzk.gadgets.subcircuit import BIT, Subcircuit, call
from cuzk.gadgets.uint32 import UInt32
from cuzk.gadgets.values import values_of
from cuzk.hashers.sha256 import IV, compress

Pattern = tuple  # 512 entries: None (a variable bit) or a constant bool

SHAPES: dict[str, tuple[bool, Pattern]] = {}  # key -> (from IV, pattern), for evaluators


@functools.cache
def block_subcircuit(from_iv: bool, pattern: Pattern) -> Subcircuit:
    n_vars = sum(1 for p in pattern if p is None)
    digest = hashlib.sha256(bytes(2 if p is None else int(p) for p in pattern)).hexdigest()[:16]
    key = f"sha256-block/{'iv' if from_iv else 'chain'}/{n_vars}/{digest}"
    SHAPES[key] = (from_iv, pattern)

    def synth(cs: Any, ports: list, hints: Any) -> list:
        V = values_of(cs)
        if from_iv:
            state = sha256_iv()
            rest = ports
        else:
            state = [
                UInt32.from_bits(V, [Boolean.of(b) for b in ports[32 * i : 32 * i + 32]])
                for i in range(8)
            ]
            rest = ports[256:]
        it = iter(rest)
        message = [Boolean.of(next(it)) if p is None else Boolean.constant(p) for p in pattern]
        out = sha256_compression_function(cs, message, state)
        bits = [b for word in out for b in word.bits]
        if any(b.is_constant or b.is_negated for b in bits):
            raise AssertionError("a SHA-256 block's output bits are all allocated")
        return [b.bit for b in bits]

    ports = (BIT,) * ((0 if from_iv else 256) + n_vars)
    return Subcircuit(key, ports, synth)


def block_shape(message: Sequence[Boolean]) -> Pattern:
    out = []
    for b in message:
        if b.is_constant:
            out.append(b.const)
        elif b.is_negated:
            raise ValueError("negated message bits are not supported as block ports")
        else:
            out.append(None)
    return tuple(out)


def sha256_blocks(cs: Any, bits: Sequence[Boolean]) -> list[Boolean]:
    """SHA-256 of whole bytes (big-endian bits), one subcircuit per block;
    the same constraints and variables as :func:`cuzk.gadgets.sha256.sha256`."""
    assert len(bits) % 8 == 0
    padded = list(bits) + sha256_padding_bits(len(bits))
    state: list[AllocatedBit] | None = None
    for i in range(0, len(padded), 512):
        message = padded[i : i + 512]
        pattern = block_shape(message)
        ports = list(state or []) + [b.bit for b in message if not b.is_constant]
        state = call(cs, block_subcircuit(state is None, pattern), ports)
    assert state is not None
    words = [state[32 * i : 32 * i + 32] for i in range(8)]
    return [Boolean.of(b) for word in words for b in reversed(word)]


# --------------------------------------------------------------------------
# Fast values (for the witness plan): the block's output from its inputs
# --------------------------------------------------------------------------


def _word(bits: Sequence[Any], lanes: int) -> np.ndarray:
    w = np.zeros(lanes, dtype=np.uint32)
    for i, b in enumerate(bits):
        if isinstance(b, bool | np.bool_):
            if b:
                w |= np.uint32(1 << i)
        else:
            w |= np.asarray(b, dtype=np.uint32) << np.uint32(i)
    return w


def evaluate_block(from_iv: bool, pattern: Pattern, lanes: int, port_values: list) -> list:
    """Output bit values (bool lanes) of a block, computed with plain SHA-256."""
    if from_iv:
        state = [np.full(lanes, v, dtype=np.uint32) for v in IV]
        rest = port_values
    else:
        state = [_word(port_values[32 * i : 32 * i + 32], lanes) for i in range(8)]
        rest = port_values[256:]
    it = iter(rest)
    msg_bits = [next(it) if p is None else p for p in pattern]
    # message words are big-endian: bit 0 of the block is the top bit of word 0
    words = [_word(msg_bits[32 * i : 32 * i + 32][::-1], lanes) for i in range(16)]
    with np.errstate(over="ignore"):
        out = compress(np, state, words)
    return [((w >> np.uint32(i)) & np.uint32(1)).astype(bool) for w in out for i in range(32)]
