"""Point encodings in the zcash BLS12-381 format (bellperson, Filecoin).

Coordinates are big-endian. The three top bits of the first byte are flags:
0x80 compressed, 0x40 point at infinity, 0x20 the y "sign" (set when y is the
lexicographically larger of {y, -y}; compressed form only). G2 writes Fq2
elements as ``c1 ‖ c0``.

Sizes: G1 48 (compressed) / 96 bytes, G2 96 / 192 bytes.

Decoding rejects, each with its own :class:`EncodingError` reason: a wrong
length, inconsistent flags, a coordinate not below q, a point not on the
curve, and a point outside the prime-order subgroup.
"""

from __future__ import annotations

from cuzk.algebra import pairing
from cuzk.algebra.curves import G1, G2, Affine
from cuzk.algebra.fields import FQ_BYTES, Fq2, Q, fq_is_lexicographically_largest, fq_sqrt
from cuzk.errors import EncodingError

G1_COMPRESSED = 48
G1_UNCOMPRESSED = 96
G2_COMPRESSED = 96
G2_UNCOMPRESSED = 192

_FLAG_COMPRESSED = 0x80
_FLAG_INFINITY = 0x40
_FLAG_SIGN = 0x20
_FLAG_MASK = 0xE0


def _be(x: int) -> bytes:
    return x.to_bytes(FQ_BYTES, "big")


def _fq2_be(x: Fq2) -> bytes:
    return _be(x.c1) + _be(x.c0)


def _with_flags(data: bytes, flags: int) -> bytes:
    return bytes([data[0] | flags]) + data[1:]


# --- encode -------------------------------------------------------------


def encode_g1(p: Affine, compressed: bool = True) -> bytes:
    if p is None:
        size = G1_COMPRESSED if compressed else G1_UNCOMPRESSED
        flags = _FLAG_INFINITY | (_FLAG_COMPRESSED if compressed else 0)
        return bytes([flags]) + bytes(size - 1)
    x, y = p
    if compressed:
        flags = _FLAG_COMPRESSED | (_FLAG_SIGN if fq_is_lexicographically_largest(y) else 0)
        return _with_flags(_be(x), flags)
    return _be(x) + _be(y)


def encode_g2(p: Affine, compressed: bool = True) -> bytes:
    if p is None:
        size = G2_COMPRESSED if compressed else G2_UNCOMPRESSED
        flags = _FLAG_INFINITY | (_FLAG_COMPRESSED if compressed else 0)
        return bytes([flags]) + bytes(size - 1)
    x, y = p
    if compressed:
        flags = _FLAG_COMPRESSED | (_FLAG_SIGN if y.is_lexicographically_largest() else 0)
        return _with_flags(_fq2_be(x), flags)
    return _fq2_be(x) + _fq2_be(y)


# --- decode -------------------------------------------------------------


def _split_flags(data: bytes, group: str, compressed_size: int, uncompressed_size: int):
    if len(data) not in (compressed_size, uncompressed_size):
        raise EncodingError(
            EncodingError.LENGTH,
            f"{group} point: {len(data)} bytes, expected {compressed_size} (compressed) "
            f"or {uncompressed_size} (uncompressed)",
        )
    flags = data[0] & _FLAG_MASK
    compressed = bool(flags & _FLAG_COMPRESSED)
    if compressed != (len(data) == compressed_size):
        raise EncodingError(
            EncodingError.FLAGS,
            f"{group} point: compression flag is {'set' if compressed else 'clear'} "
            f"but the encoding is {len(data)} bytes",
        )
    body = bytes([data[0] & ~_FLAG_MASK & 0xFF]) + data[1:]
    infinity = bool(flags & _FLAG_INFINITY)
    sign = bool(flags & _FLAG_SIGN)
    if infinity:
        if sign or any(body):
            raise EncodingError(
                EncodingError.FLAGS,
                f"{group} point: infinity flag set but the other bits are not all zero",
            )
    elif sign and not compressed:
        raise EncodingError(
            EncodingError.FLAGS, f"{group} point: sign flag set on an uncompressed encoding"
        )
    return body, compressed, infinity, sign


def _coord(chunk: bytes, group: str, what: str) -> int:
    v = int.from_bytes(chunk, "big")
    if v >= Q:
        raise EncodingError(EncodingError.NON_CANONICAL, f"{group} point: {what} is not below q")
    return v


def decode_g1(data: bytes, subgroup_check: bool = True) -> Affine:
    """Decode a compressed (48 B) or uncompressed (96 B) G1 point."""
    body, compressed, infinity, sign = _split_flags(
        bytes(data), "G1", G1_COMPRESSED, G1_UNCOMPRESSED
    )
    if infinity:
        return None
    x = _coord(body[:48], "G1", "x")
    if compressed:
        y = fq_sqrt((x * x * x + 4) % Q)
        if y is None:
            raise EncodingError(EncodingError.OFF_CURVE, "G1 point: x is not on the curve")
        if fq_is_lexicographically_largest(y) != sign:
            y = -y % Q
        p = (x, y)
    else:
        p = (x, _coord(body[48:], "G1", "y"))
        if not G1.is_on_curve(p):
            raise EncodingError(EncodingError.OFF_CURVE, "G1 point: not on the curve")
    if subgroup_check and not pairing.g1_in_subgroup(p):
        raise EncodingError(EncodingError.NOT_IN_SUBGROUP, "G1 point: not in the r-order subgroup")
    return p


def decode_g2(data: bytes, subgroup_check: bool = True) -> Affine:
    """Decode a compressed (96 B) or uncompressed (192 B) G2 point."""
    body, compressed, infinity, sign = _split_flags(
        bytes(data), "G2", G2_COMPRESSED, G2_UNCOMPRESSED
    )
    if infinity:
        return None
    x = Fq2(_coord(body[48:96], "G2", "x.c0"), _coord(body[0:48], "G2", "x.c1"))
    if compressed:
        y = (x * x * x + G2.b).sqrt()
        if y is None:
            raise EncodingError(EncodingError.OFF_CURVE, "G2 point: x is not on the curve")
        if y.is_lexicographically_largest() != sign:
            y = -y
        p = (x, y)
    else:
        y = Fq2(_coord(body[144:192], "G2", "y.c0"), _coord(body[96:144], "G2", "y.c1"))
        p = (x, y)
        if not G2.is_on_curve(p):
            raise EncodingError(EncodingError.OFF_CURVE, "G2 point: not on the curve")
    if subgroup_check and not pairing.g2_in_subgroup(p):
        raise EncodingError(EncodingError.NOT_IN_SUBGROUP, "G2 point: not in the r-order subgroup")
    return p
