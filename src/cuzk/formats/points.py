"""Vectorised conversions of foreign point and scalar encodings to cuzk's arrays.

Foreign files hold points in two byte layouts:

- snarkjs (.zkey): little-endian Montgomery ("LEM"): each Fq coordinate is
  x·2^384 mod q in 48 little-endian bytes; G1 ``x ‖ y``, G2
  ``x.c0 ‖ x.c1 ‖ y.c0 ‖ y.c1``; the point at infinity is all zero bytes.
  Fr scalars in the coefficient section are n·2^512 mod r ("Montgomery of
  the Montgomery form", as snarkjs writes them), 32 bytes little-endian.
- zcash / bellperson: big-endian, flags in the top three bits of the first
  byte (see :mod:`cuzk.algebra.encoding`); G2 writes ``c1`` before ``c0``.

cuzk's own layout (:mod:`cuzk.algebra.arrays`) is little-endian 64-bit limbs
in standard form, infinity as all zeros. Everything here works on whole
arrays at once (numpy byte shuffles, numpy object arrays of Python ints for
the modular products, py-arkworks for the curve equation), so a key of 10^6
points converts in seconds, and every check reports the first offending index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import (  # noqa: F401  (this module's public names since before)
    g1_from_zcash,
    g1_to_zcash,
    g2_from_zcash,
    g2_to_zcash,
    zcash_first_flagged,
)
from cuzk.algebra.fields import Q, R

FQ_MONT_INV = pow(1 << 384, -1, Q)  # undoes snarkjs's Fq Montgomery factor
FR_MONT2_INV = pow(1 << 512, -1, R)  # undoes the 2^512 factor of zkey coefficients
FR_MONT2 = (1 << 512) % R


def le_ints(raw: np.ndarray, width: int) -> np.ndarray:
    """Consecutive little-endian integers of ``width`` bytes, as an object array."""
    buf = np.ascontiguousarray(raw, dtype=np.uint8).tobytes()
    return np.array(
        [int.from_bytes(buf[i : i + width], "little") for i in range(0, len(buf), width)],
        dtype=object,
    )


def ints_to_le(values, width: int) -> bytes:
    return b"".join(int(v).to_bytes(width, "little") for v in values)


def first_true(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


# --- decoded point batches ----------------------------------------------------


@dataclass(frozen=True)
class PointProblem:
    """Why the point at ``index`` of a batch is unusable."""

    index: int
    problem: str


@dataclass(frozen=True)
class DecodedPoints:
    """Points in cuzk's limb layout, plus the first problem found (if any)."""

    array: np.ndarray  # (n, 2, 6) or (n, 2, 2, 6) uint64
    infinity: np.ndarray  # bool (n,)
    problem: PointProblem | None


def _off_curve(limbs: np.ndarray, group: str) -> np.ndarray:
    """Mask of limb rows that are not points of the curve (infinity rows pass).

    py-arkworks' constructor checks the curve equation (not the subgroup)
    in about half a microsecond, several times faster than the same equation
    on numpy object arrays of Python ints.
    """
    n = len(limbs)
    size = limbs[0].nbytes if n else 0
    make = (pairing.G1Point if group == "G1" else pairing.G2Point).from_xy_bytes_unchecked_le
    buf = np.ascontiguousarray(limbs).tobytes()
    bad = np.zeros(n, dtype=bool)
    for i in range(n):
        try:
            make(buf[i * size : (i + 1) * size])
        except ValueError:
            bad[i] = True
    return bad


def _mulmod_le(raw: np.ndarray, width: int, factor: int, modulus: int) -> bytes:
    """Each ``width``-byte LE integer times ``factor`` mod ``modulus``, LE again (one pass)."""
    buf = np.ascontiguousarray(raw, dtype=np.uint8).tobytes()
    fb, tb = int.from_bytes, int.to_bytes
    return b"".join(
        [
            tb(fb(buf[i : i + width], "little") * factor % modulus, width, "little")
            for i in range(0, len(buf), width)
        ]
    )


def first_not_below(limbs: np.ndarray, modulus: int) -> int | None:
    """Index of the first row of LE 64-bit limbs whose value is not below ``modulus``."""
    k = limbs.shape[1]
    m = np.frombuffer(modulus.to_bytes(8 * k, "little"), dtype="<u8")
    less = np.zeros(len(limbs), dtype=bool)
    equal = np.ones(len(limbs), dtype=bool)
    for j in range(k - 1, -1, -1):
        less |= equal & (limbs[:, j] < m[j])
        equal &= limbs[:, j] == m[j]
    return first_true(~less)


def _from_lem(raw: np.ndarray, size: int, group: str) -> DecodedPoints:
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, size)
    n = len(raw)
    infinity = ~raw.any(axis=1)
    coords = raw.view("<u8").reshape(-1, 6)
    big = first_not_below(coords, Q)
    if big is not None:
        return DecodedPoints(
            np.zeros((n, *_SHAPE[group]), np.uint64),
            infinity,
            PointProblem(big // (size // 48), "a coordinate is not below q"),
        )
    std = _mulmod_le(raw, 48, FQ_MONT_INV, Q)
    limbs = np.frombuffer(std, dtype="<u8").reshape((n, *_SHAPE[group])).copy()
    off = _off_curve(limbs, group) & ~infinity
    problem = PointProblem(first_true(off), f"not on the {group} curve") if off.any() else None
    return DecodedPoints(limbs, infinity, problem)


_SHAPE = {"G1": (2, 6), "G2": (2, 2, 6)}


def g1_from_lem(raw: np.ndarray) -> DecodedPoints:
    """snarkjs G1 points (n·96 bytes, Montgomery LE) to (n, 2, 6) standard limbs."""
    return _from_lem(raw, 96, "G1")


def g2_from_lem(raw: np.ndarray) -> DecodedPoints:
    """snarkjs G2 points (n·192 bytes) to (n, 2, 2, 6) standard limbs."""
    return _from_lem(raw, 192, "G2")


def _to_lem(a: np.ndarray, width: int) -> bytes:
    """Limb rows of affine points → snarkjs Montgomery bytes (infinity stays all zero)."""
    flat = np.ascontiguousarray(a, dtype="<u8").reshape(len(a), width)
    coords = le_ints(flat.reshape(-1, 6).view(np.uint8), 48)
    return ints_to_le(coords * (1 << 384) % Q, 48)


def g1_to_lem(a: np.ndarray) -> bytes:
    """(n, 2, 6) limbs → snarkjs G1 bytes (n·96)."""
    return _to_lem(a, 12)


def g2_to_lem(a: np.ndarray) -> bytes:
    """(n, 2, 2, 6) limbs → snarkjs G2 bytes (n·192), x.c0 ‖ x.c1 ‖ y.c0 ‖ y.c1."""
    return _to_lem(a, 24)


def fr_to_mont2(values) -> bytes:
    """Fr ints → zkey coefficient bytes (n·2^512 mod r, 32 bytes LE each)."""
    return ints_to_le((int(v) * FR_MONT2 % R for v in values), 32)


def fr_from_mont2(raw: np.ndarray) -> tuple[np.ndarray, int | None]:
    """zkey coefficients (n·32 bytes, n·2^512 mod r) to (n, 4) standard limbs.

    Returns the array and the index of the first value not below r (or None;
    the array is then not converted).
    """
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    limbs = raw.view("<u8").reshape(-1, 4)
    bad = first_not_below(limbs, R)
    if bad is not None:
        return limbs.copy(), bad
    std = _mulmod_le(raw, 32, FR_MONT2_INV, R)
    return np.frombuffer(std, dtype="<u8").reshape(-1, 4).copy(), None


def fr_first_noncanonical(a: np.ndarray) -> int | None:
    """Index of the first (n, 4) limb row that is not below r, or None."""
    return first_not_below(a, R)


# --- zcash uncompressed (bellperson) <-> limbs ---------------------------------


def zcash_flag_problem(raw: np.ndarray, size: int) -> PointProblem | None:
    """The first uncompressed point whose flag bits are not a plain finite point."""
    found = zcash_first_flagged(raw, size)
    return None if found is None else PointProblem(*found)
