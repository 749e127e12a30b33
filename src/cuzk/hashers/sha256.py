"""SHA-256 as Filecoin uses it, on plain bytes and vectorised over many messages.

Filecoin's SHA-256 hasher truncates every digest to 254 bits so that it is
an Fr element: the two top bits of the last byte are cleared
(``digest[31] &= 0x3f``; the 32 bytes are read as a little-endian integer).

:func:`sha256_many` hashes n equal-length messages at once with uint32
arithmetic on an array module ``xp`` (numpy or CuPy); it is checked against
hashlib in the tests.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

ROUND_CONSTANTS = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip

IV = (
    0x6A09E667,
    0xBB67AE85,
    0x3C6EF372,
    0xA54FF53A,
    0x510E527F,
    0x9B05688C,
    0x1F83D9AB,
    0x5BE0CD19,
)

TRUNCATE_MASK = 0x3F  # keeps 254 bits: byte 31 of the little-endian value


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def truncate(digest: bytes) -> bytes:
    """Clear the top two bits (of byte 31) so the value is below r."""
    return digest[:31] + bytes([digest[31] & TRUNCATE_MASK])


def sha254(data: bytes) -> bytes:
    """SHA-256 truncated to 254 bits (Filecoin's ``Sha256Function::hash``)."""
    return truncate(sha256(data))


def sha254_node(left: bytes, right: bytes) -> bytes:
    """A binary Merkle node: sha254(left ‖ right), both 32-byte domain values."""
    return truncate(hashlib.sha256(left + right).digest())


def padding(length: int) -> bytes:
    """The SHA-256 padding that follows a message of ``length`` bytes."""
    zeros = (55 - length) % 64
    return b"\x80" + bytes(zeros) + (8 * length).to_bytes(8, "big")


def _rotr(x: Any, n: int) -> Any:
    return (x >> n) | (x << (32 - n))


def compress(xp: Any, state: list[Any], words: list[Any]) -> list[Any]:
    """One compression: 8 state words and 16 message words (uint32 lanes)."""
    w = list(words)
    for i in range(16, 64):
        x, y = w[i - 15], w[i - 2]
        s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x >> 3)
        s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y >> 10)
        w.append(w[i - 16] + s0 + w[i - 7] + s1)
    a, b, c, d, e, f, g, h = state
    for i in range(64):
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        ch = (e & f) ^ (~e & g)
        t1 = h + s1 + ch + xp.uint32(ROUND_CONSTANTS[i]) + w[i]
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        maj = (a & b) ^ (a & c) ^ (b & c)
        t2 = s0 + maj
        h, g, f, e, d, c, b, a = g, f, e, d + t1, c, b, a, t1 + t2
    return [x + y for x, y in zip(state, (a, b, c, d, e, f, g, h), strict=True)]


def sha256_many(messages: Any, xp: Any = np) -> Any:
    """SHA-256 of n messages of equal length: (n, L) uint8 → (n, 32) uint8."""
    messages = xp.asarray(messages, dtype=xp.uint8)
    n, length = messages.shape
    pad = xp.asarray(np.frombuffer(padding(length), dtype=np.uint8))
    full = xp.concatenate([messages, xp.broadcast_to(pad, (n, len(pad)))], axis=1)
    words = full.reshape(n, -1, 4).astype(xp.uint32)
    words = (words[:, :, 0] << 24) | (words[:, :, 1] << 16) | (words[:, :, 2] << 8) | words[:, :, 3]
    state = [xp.full(n, v, dtype=xp.uint32) for v in IV]
    for blk in range(words.shape[1] // 16):
        state = compress(xp, state, [words[:, 16 * blk + j] for j in range(16)])
    out = xp.stack(state, axis=1)  # (n, 8) uint32, big-endian words
    by = xp.stack([(out >> s) & 0xFF for s in (24, 16, 8, 0)], axis=2).astype(xp.uint8)
    return by.reshape(n, 32)


def sha254_many(messages: Any, xp: Any = np) -> Any:
    """:func:`sha256_many` truncated to 254 bits."""
    out = sha256_many(messages, xp)
    out[:, 31] &= TRUNCATE_MASK
    return out


def sha254_nodes(left: Any, right: Any, xp: Any = np) -> Any:
    """Binary Merkle nodes for n pairs: (n, 32) and (n, 32) uint8 → (n, 32)."""
    return sha254_many(xp.concatenate([xp.asarray(left), xp.asarray(right)], axis=1), xp)
