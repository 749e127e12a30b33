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
arrays at once (numpy byte shuffles, and numpy object arrays of Python ints
for the modular products), so a key of 10^6 points converts in seconds, and
every check reports the first offending index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def be_ints(raw: np.ndarray, width: int) -> np.ndarray:
    """Consecutive big-endian integers of ``width`` bytes, as an object array."""
    buf = np.ascontiguousarray(raw, dtype=np.uint8).tobytes()
    return np.array(
        [int.from_bytes(buf[i : i + width], "big") for i in range(0, len(buf), width)],
        dtype=object,
    )


def ints_to_le(values, width: int) -> bytes:
    return b"".join(int(v).to_bytes(width, "little") for v in values)


def ints_to_be(values, width: int) -> bytes:
    return b"".join(int(v).to_bytes(width, "big") for v in values)


def first_true(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


# --- curve equations over whole arrays ----------------------------------------


def g1_off_curve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mask of affine G1 points (object arrays of ints) with y² ≠ x³ + 4."""
    lhs = y * y % Q
    rhs = (x * x % Q * x + 4) % Q
    return lhs != rhs


def g2_off_curve(x0, x1, y0, y1) -> np.ndarray:
    """Mask of affine G2 points with y² ≠ x³ + 4(1 + u), coordinates c0 + c1·u."""
    # (a0 + a1 u)^2 = a0² − a1² + 2 a0 a1 u
    xx0 = (x0 * x0 - x1 * x1) % Q
    xx1 = 2 * x0 * x1 % Q
    # x³ = x² · x
    xxx0 = (xx0 * x0 - xx1 * x1) % Q
    xxx1 = (xx0 * x1 + xx1 * x0) % Q
    yy0 = (y0 * y0 - y1 * y1) % Q
    yy1 = 2 * y0 * y1 % Q
    return (yy0 != (xxx0 + 4) % Q) | (yy1 != (xxx1 + 4) % Q)


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


def _limbs(coords: list[np.ndarray], n: int, shape: tuple[int, ...]) -> np.ndarray:
    """Interleave per-coordinate object arrays into (n, *shape) uint64 limbs."""
    k = len(coords)
    flat = np.empty(n * k, dtype=object)
    for j, c in enumerate(coords):
        flat[j::k] = c
    raw = ints_to_le(flat, 48)
    return np.frombuffer(raw, dtype="<u8").reshape((n, *shape)).copy()


def g1_from_lem(raw: np.ndarray) -> DecodedPoints:
    """snarkjs G1 points (n·96 bytes, Montgomery LE) to (n, 2, 6) standard limbs."""
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1, 96)
    n = len(raw)
    infinity = ~raw.any(axis=1)
    c = le_ints(raw, 48)
    x_m, y_m = c[0::2], c[1::2]
    problem = None
    big = (x_m >= Q) | (y_m >= Q)
    if big.any():
        problem = PointProblem(first_true(big), "a coordinate is not below q")
        x_m = np.where(big, 0, x_m)
        y_m = np.where(big, 0, y_m)
    x = x_m * FQ_MONT_INV % Q
    y = y_m * FQ_MONT_INV % Q
    off = g1_off_curve(x, y) & ~infinity
    if problem is None and off.any():
        problem = PointProblem(first_true(off), "not on the G1 curve")
    return DecodedPoints(_limbs([x, y], n, (2, 6)), infinity, problem)


def g2_from_lem(raw: np.ndarray) -> DecodedPoints:
    """snarkjs G2 points (n·192 bytes) to (n, 2, 2, 6) standard limbs."""
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1, 192)
    n = len(raw)
    infinity = ~raw.any(axis=1)
    c = le_ints(raw, 48)
    parts = [c[j::4] for j in range(4)]  # x.c0, x.c1, y.c0, y.c1
    problem = None
    big = np.zeros(n, dtype=bool)
    for p in parts:
        big |= p >= Q
    if big.any():
        problem = PointProblem(first_true(big), "a coordinate is not below q")
        parts = [np.where(big, 0, p) for p in parts]
    std = [p * FQ_MONT_INV % Q for p in parts]
    off = g2_off_curve(*std) & ~infinity
    if problem is None and off.any():
        problem = PointProblem(first_true(off), "not on the G2 curve")
    return DecodedPoints(_limbs(std, n, (2, 2, 6)), infinity, problem)


def fr_from_mont2(raw: np.ndarray) -> tuple[np.ndarray, int | None]:
    """zkey coefficients (n·32 bytes, n·2^512 mod r) to (n, 4) standard limbs.

    Returns the array and the index of the first value not below r (or None).
    """
    v = le_ints(raw, 32)
    big = v >= R
    bad = first_true(big) if big.any() else None
    std = np.where(big, 0, v) * FR_MONT2_INV % R
    out = np.frombuffer(ints_to_le(std, 32), dtype="<u8").reshape(-1, 4).copy()
    return out, bad


def fr_first_noncanonical(a: np.ndarray) -> int | None:
    """Index of the first (n, 4) limb row that is not below r, or None."""
    r_limbs = np.frombuffer(R.to_bytes(32, "little"), dtype="<u8")
    less = np.zeros(len(a), dtype=bool)
    equal = np.ones(len(a), dtype=bool)
    for k in range(3, -1, -1):
        less |= equal & (a[:, k] < r_limbs[k])
        equal &= a[:, k] == r_limbs[k]
    return first_true(~less)


# --- zcash uncompressed (bellperson) <-> limbs ---------------------------------

_FLAGS = 0xE0
_INFINITY = 0x40
_COMPRESSED = 0x80


def _be_coords_to_limbs(raw: np.ndarray, n: int, k: int) -> np.ndarray:
    """(n, k·48) big-endian coordinates → (n, k, 6) little-endian limbs (byte reversal)."""
    cells = raw.reshape(n, k, 48)[:, :, ::-1]
    return np.ascontiguousarray(cells).view("<u8").reshape(n, k, 6)


def g1_from_zcash(raw: np.ndarray) -> np.ndarray:
    """Uncompressed zcash G1 points (n·96 bytes, flags clear) to (n, 2, 6) limbs.

    A pure byte shuffle, no checks (see :func:`zcash_flag_problem` and the
    point check of :mod:`cuzk.formats.bellperson`).
    """
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1, 96)
    n = len(raw)
    clean = raw.copy()
    clean[:, 0] &= 0x1F
    out = _be_coords_to_limbs(clean, n, 2)
    out[(raw[:, 0] & _INFINITY) != 0] = 0
    return out


def g2_from_zcash(raw: np.ndarray) -> np.ndarray:
    """Uncompressed zcash G2 points (n·192 bytes) to (n, 2, 2, 6) limbs."""
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1, 192)
    n = len(raw)
    clean = raw.copy()
    clean[:, 0] &= 0x1F
    # zcash order x.c1, x.c0, y.c1, y.c0 → ours x.c0, x.c1, y.c0, y.c1
    limbs = _be_coords_to_limbs(clean, n, 4)[:, [1, 0, 3, 2], :]
    out = np.ascontiguousarray(limbs).reshape(n, 2, 2, 6)
    out[(raw[:, 0] & _INFINITY) != 0] = 0
    return out


def g1_to_zcash(a: np.ndarray) -> bytes:
    """(n, 2, 6) limbs → uncompressed zcash bytes (infinity flagged)."""
    a = np.ascontiguousarray(a, dtype="<u8").reshape(-1, 2, 6)
    n = len(a)
    be = a.view(np.uint8).reshape(n, 2, 48)[:, :, ::-1].reshape(n, 96).copy()
    inf = ~a.reshape(n, -1).any(axis=1)
    be[inf] = 0
    be[inf, 0] = _INFINITY
    return be.tobytes()


def g2_to_zcash(a: np.ndarray) -> bytes:
    """(n, 2, 2, 6) limbs → uncompressed zcash bytes."""
    a = np.ascontiguousarray(a, dtype="<u8").reshape(-1, 4, 6)[:, [1, 0, 3, 2], :]
    n = len(a)
    a = np.ascontiguousarray(a)
    be = a.view(np.uint8).reshape(n, 4, 48)[:, :, ::-1].reshape(n, 192).copy()
    inf = ~a.reshape(n, -1).any(axis=1)
    be[inf] = 0
    be[inf, 0] = _INFINITY
    return be.tobytes()


def zcash_flag_problem(raw: np.ndarray, size: int) -> PointProblem | None:
    """The first uncompressed point whose flag bits are not a plain finite point."""
    first = np.asarray(raw, dtype=np.uint8).reshape(-1, size)[:, 0]
    flags = first & _FLAGS
    comp = (flags & _COMPRESSED) != 0
    if comp.any():
        return PointProblem(first_true(comp), "compression flag set in an uncompressed encoding")
    inf = (flags & _INFINITY) != 0
    if inf.any():
        return PointProblem(first_true(inf), "point at infinity (bellperson never stores one)")
    sign = flags != 0
    if sign.any():
        return PointProblem(first_true(sign), "sign flag set in an uncompressed encoding")
    return None
