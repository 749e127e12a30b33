"""A thin adapter over py-arkworks-bls12381: pairings and fast point maths.

Everything that crosses into the library goes through the functions here, in
its uncompressed little-endian ``x ‖ y`` form (G2: ``x.c0 ‖ x.c1 ‖ y.c0 ‖ y.c1``),
which the library reads without a square root. The rest of cuzk only sees
our own affine tuples (:mod:`cuzk.algebra.curves`).
"""

from __future__ import annotations

from collections.abc import Sequence

import py_arkworks_bls12381 as ark

from cuzk.algebra.curves import Affine
from cuzk.algebra.fields import Fq2

_ZERO96 = bytes(96)
_ZERO192 = bytes(192)

G1Point = ark.G1Point
G2Point = ark.G2Point
Scalar = ark.Scalar


def _le(x: int) -> bytes:
    return x.to_bytes(48, "little")


# --- conversions ----------------------------------------------------------


def g1_to_ark(p: Affine) -> ark.G1Point:
    if p is None:
        return ark.G1Point.identity()
    return ark.G1Point.from_xy_bytes_unchecked_le(_le(p[0]) + _le(p[1]))


def g2_to_ark(p: Affine) -> ark.G2Point:
    if p is None:
        return ark.G2Point.identity()
    x, y = p
    return ark.G2Point.from_xy_bytes_unchecked_le(_le(x.c0) + _le(x.c1) + _le(y.c0) + _le(y.c1))


def g1_from_ark(p: ark.G1Point) -> Affine:
    b = p.to_xy_bytes_le()
    if b == _ZERO96:
        return None
    return (int.from_bytes(b[:48], "little"), int.from_bytes(b[48:], "little"))


def g2_from_ark(p: ark.G2Point) -> Affine:
    b = p.to_xy_bytes_le()
    if b == _ZERO192:
        return None
    c = [int.from_bytes(b[i : i + 48], "little") for i in range(0, 192, 48)]
    return (Fq2(c[0], c[1]), Fq2(c[2], c[3]))


def scalar(k: int) -> ark.Scalar:
    return ark.Scalar.from_le_bytes(k.to_bytes(32, "little"))


# --- checks ---------------------------------------------------------------


def g1_in_subgroup(p: Affine) -> bool:
    return p is None or g1_to_ark(p).is_in_subgroup()


def g2_in_subgroup(p: Affine) -> bool:
    return p is None or g2_to_ark(p).is_in_subgroup()


# --- pairings -------------------------------------------------------------


def pairing_product_is_one(pairs: Sequence[tuple[Affine, Affine]]) -> bool:
    """True when Π e(P_i, Q_i) = 1 (one shared final exponentiation)."""
    g1s = [g1_to_ark(p) for p, _ in pairs]
    g2s = [g2_to_ark(q) for _, q in pairs]
    return bool(ark.GT.pairing_check(g1s, g2s))


def pairing(p: Affine, q: Affine) -> ark.GT:
    return ark.GT.pairing(g1_to_ark(p), g2_to_ark(q))


# --- fast point maths for setup and the CPU backend -------------------------


def g1_mul(p: Affine, k: int) -> Affine:
    return g1_from_ark(g1_to_ark(p) * scalar(k))


def g2_mul(p: Affine, k: int) -> Affine:
    return g2_from_ark(g2_to_ark(p) * scalar(k))


class FixedBase:
    """Many multiples k·P of one point, by a table of windowed multiples.

    The table holds d·2^(c·w)·P for every window w and digit d; a multiple
    then costs one addition per non-zero c-bit digit of k instead of a full
    double-and-add. Used by parameter generation, where each of τ^i, A_j(τ),
    ... multiplies the same generator.
    """

    WINDOW = 10

    def __init__(self, base, bits: int = 255) -> None:
        identity = type(base).identity()
        self._identity = identity
        self._tables = []
        cur = base
        for _ in range(-(-bits // self.WINDOW)):
            row = [identity]
            acc = identity
            for _ in range((1 << self.WINDOW) - 1):
                acc = acc + cur
                row.append(acc)
            self._tables.append(row)
            cur = acc + cur

    def mul(self, k: int):
        acc = self._identity
        mask = (1 << self.WINDOW) - 1
        for row in self._tables:
            if not k:
                break
            d = k & mask
            if d:
                acc = acc + row[d]
            k >>= self.WINDOW
        return acc

    def mul_many_xy_le(self, scalars) -> bytes:
        """The multiples as concatenated uncompressed little-endian x ‖ y rows."""
        return b"".join(self.mul(k).to_xy_bytes_le() for k in scalars)
