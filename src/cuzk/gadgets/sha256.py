"""SHA-256 in a circuit, with bellperson's exact constraint layout.

Follows ``gadgets/sha256.rs``: the message schedule and the 64 rounds on
:class:`UInt32` words; sums that feed ``a`` and ``e`` are deferred and folded
into the next round's additions; all additions of one compression share a
:class:`MultiEq`. A compression of allocated input bits from the constant IV
costs 25,840 constraints; SHA-256 of 64 bytes (two blocks, the second all
padding) 44,874.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.gadgets.boolean import Boolean
from cuzk.gadgets.uint32 import MultiEq, UInt32
from cuzk.gadgets.values import values_of
from cuzk.hashers.sha256 import IV, ROUND_CONSTANTS


def sha256_iv() -> list[UInt32]:
    return [UInt32.constant(v) for v in IV]


class _Deferred:
    """A word not yet summed: the operands of a pending addition."""

    __slots__ = ("operands",)

    def __init__(self, operands: list[UInt32]) -> None:
        self.operands = operands


def _compute(me: MultiEq, x: UInt32 | _Deferred, extra: Sequence[UInt32] = ()) -> UInt32:
    if isinstance(x, UInt32):
        return x
    return UInt32.addmany(me, [*x.operands, *extra])


def sha256_compression_function(
    cs: Any, input_bits: Sequence[Boolean], current_hash_value: Sequence[UInt32]
) -> list[UInt32]:
    """One SHA-256 compression of 512 big-endian message bits."""
    assert len(input_bits) == 512 and len(current_hash_value) == 8
    V = values_of(cs)
    w = [UInt32.from_bits_be(V, input_bits[32 * i : 32 * i + 32]) for i in range(16)]
    me = MultiEq(cs)
    for i in range(16, 64):
        x, y = w[i - 15], w[i - 2]
        s0 = x.rotr(V, 7).xor(me, x.rotr(V, 18)).xor(me, x.shr(V, 3))
        s1 = y.rotr(V, 17).xor(me, y.rotr(V, 19)).xor(me, y.shr(V, 10))
        w.append(UInt32.addmany(me, [w[i - 16], s0, w[i - 7], s1]))

    a: UInt32 | _Deferred = current_hash_value[0]
    b, c, d = current_hash_value[1], current_hash_value[2], current_hash_value[3]
    e: UInt32 | _Deferred = current_hash_value[4]
    f, g, h = current_hash_value[5], current_hash_value[6], current_hash_value[7]
    for i in range(64):
        new_e = _compute(me, e)
        s1 = new_e.rotr(V, 6).xor(me, new_e.rotr(V, 11)).xor(me, new_e.rotr(V, 25))
        ch = UInt32.sha256_ch(me, new_e, f, g)
        temp1 = [h, s1, ch, UInt32.constant(ROUND_CONSTANTS[i]), w[i]]
        new_a = _compute(me, a)
        s0 = new_a.rotr(V, 2).xor(me, new_a.rotr(V, 13)).xor(me, new_a.rotr(V, 22))
        maj = UInt32.sha256_maj(me, new_a, b, c)
        h, g, f = g, f, new_e
        e = _Deferred([*temp1, d])
        d, c, b = c, b, new_a
        a = _Deferred([*temp1, s0, maj])

    h0 = _compute(me, a, [current_hash_value[0]])
    h1 = UInt32.addmany(me, [current_hash_value[1], b])
    h2 = UInt32.addmany(me, [current_hash_value[2], c])
    h3 = UInt32.addmany(me, [current_hash_value[3], d])
    h4 = _compute(me, e, [current_hash_value[4]])
    h5 = UInt32.addmany(me, [current_hash_value[5], f])
    h6 = UInt32.addmany(me, [current_hash_value[6], g])
    h7 = UInt32.addmany(me, [current_hash_value[7], h])
    me.finish()
    return [h0, h1, h2, h3, h4, h5, h6, h7]


def sha256_padding_bits(num_bits: int) -> list[Boolean]:
    """The constant padding after a message of ``num_bits`` bits."""
    pad = [Boolean.constant(True)]
    while (num_bits + len(pad) + 64) % 512:
        pad.append(Boolean.constant(False))
    pad += [Boolean.constant(bool((num_bits >> i) & 1)) for i in range(63, -1, -1)]
    return pad


def sha256(cs: Any, input_bits: Sequence[Boolean]) -> list[Boolean]:
    """SHA-256 of a whole number of bytes given as big-endian bits."""
    assert len(input_bits) % 8 == 0
    padded = list(input_bits) + sha256_padding_bits(len(input_bits))
    cur = sha256_iv()
    for i in range(len(padded) // 512):
        with cs.namespace(f"block {i}"):
            cur = sha256_compression_function(cs, padded[512 * i : 512 * i + 512], cur)
    return [b for word in cur for b in word.into_bits_be()]
