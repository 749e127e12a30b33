"""Field elements and points as numpy arrays of little-endian 64-bit limbs.

This is the layout every backend exchanges (shared/DESIGN.md):

- Fr: ``(n, 4)`` uint64, standard (not Montgomery) form;
- G1 affine: ``(n, 2, 6)`` uint64, ``[x, y]``;
- G2 affine: ``(n, 2, 2, 6)`` uint64, ``[x, y][c0, c1]``.

The point at infinity is all zeros: (0, 0) is not on either curve, so it
cannot be confused with a real point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.algebra.fields import Fq2, R

_U64 = np.dtype("<u8")


def fr_to_array(values: Iterable[int]) -> np.ndarray:
    """Ints in [0, r) → (n, 4) uint64."""
    buf = b"".join(int(v).to_bytes(32, "little") for v in values)
    return np.frombuffer(buf, dtype=_U64).reshape(-1, 4).copy()


def fr_from_array(a: np.ndarray) -> list[int]:
    """(n, 4) uint64 → ints."""
    a = np.ascontiguousarray(a, dtype=_U64)
    if a.ndim != 2 or a.shape[1] != 4:
        raise ValueError(f"an Fr array has shape (n, 4), not {a.shape}")
    raw = a.tobytes()
    return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


def fr_random(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniformly random Fr elements (rejection sampling on 255-bit values)."""
    out = np.empty((n, 4), dtype=_U64)
    filled = 0
    r_limbs = fr_to_array([R])[0]
    while filled < n:
        cand = rng.integers(0, 2**64, size=(n - filled, 4), dtype=np.uint64)
        cand[:, 3] &= np.uint64((1 << 63) - 1)
        # Keep cand < r: compare limbs from the top.
        less = np.zeros(len(cand), dtype=bool)
        equal = np.ones(len(cand), dtype=bool)
        for k in range(3, -1, -1):
            less |= equal & (cand[:, k] < r_limbs[k])
            equal &= cand[:, k] == r_limbs[k]
        good = cand[less]
        out[filled : filled + len(good)] = good
        filled += len(good)
    return out


def _fq_bytes(v: int) -> bytes:
    return v.to_bytes(48, "little")


def g1_to_array(points: Sequence[Affine]) -> np.ndarray:
    zero = bytes(96)
    buf = b"".join(zero if p is None else _fq_bytes(p[0]) + _fq_bytes(p[1]) for p in points)
    return np.frombuffer(buf, dtype=_U64).reshape(-1, 2, 6).copy()


def g1_from_array(a: np.ndarray) -> list[Affine]:
    raw = np.ascontiguousarray(a, dtype=_U64).tobytes()
    out: list[Affine] = []
    for i in range(0, len(raw), 96):
        x = int.from_bytes(raw[i : i + 48], "little")
        y = int.from_bytes(raw[i + 48 : i + 96], "little")
        out.append(None if x == 0 and y == 0 else (x, y))
    return out


def g2_to_array(points: Sequence[Affine]) -> np.ndarray:
    zero = bytes(192)
    buf = b"".join(
        zero
        if p is None
        else _fq_bytes(p[0].c0) + _fq_bytes(p[0].c1) + _fq_bytes(p[1].c0) + _fq_bytes(p[1].c1)
        for p in points
    )
    return np.frombuffer(buf, dtype=_U64).reshape(-1, 2, 2, 6).copy()


def g2_from_array(a: np.ndarray) -> list[Affine]:
    raw = np.ascontiguousarray(a, dtype=_U64).tobytes()
    out: list[Affine] = []
    for i in range(0, len(raw), 192):
        c = [int.from_bytes(raw[i + j : i + j + 48], "little") for j in range(0, 192, 48)]
        out.append(None if not any(c) else (Fq2(c[0], c[1]), Fq2(c[2], c[3])))
    return out


# --- the zcash encoding, whole arrays at once ---------------------------------
#
# Uncompressed zcash points (bellperson's .params and .vk files, see
# cuzk.algebra.encoding) are big-endian coordinates with three flag bits on
# top of the first byte, G2 as x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0. Converting to and
# from the limb layout above is a byte shuffle. The functions take the array
# module ``xp`` (numpy, or CuPy for device arrays), so the same code encodes
# points where they were made.

ZCASH_INFINITY = 0x40
ZCASH_FLAGS = 0xE0


def _be_coords_to_limbs(xp, raw, n: int, k: int):
    """(n, k·48) big-endian coordinates → (n, k, 6) little-endian limbs."""
    cells = raw.reshape(n, k, 48)[:, :, ::-1]
    return xp.ascontiguousarray(cells).view(xp.uint64).reshape(n, k, 6)


# The flag bits (the top three of a point's first byte) in its first
# coordinate's most significant limb.
_ZCASH_FLAG_CLEAR = np.uint64((1 << 61) - 1)


def _zcash_to_limbs(xp, raw, n: int, order: tuple[int, ...]):
    """(n, k·48) zcash points → (n, k, 6) little-endian limbs of their k
    coordinates taken in ``order``, the flag bits cleared. On the host the
    shuffle is one strided copy of 64-bit words and an in-place byte swap
    (≈ 4× the byte-wise reversal, which a key's load on the CPU spent most
    of its decoding in); elsewhere (CuPy) the byte-wise reversal."""
    k = len(order)
    if xp is np:
        words = np.ascontiguousarray(raw).view(np.uint64).reshape(n, k, 6)[:, :, ::-1]
        out = np.empty((n, k, 6), np.uint64)
        if order == tuple(range(k)):
            out[...] = words
        else:
            for i, j in enumerate(order):
                out[:, i] = words[:, j]
        out.byteswap(inplace=True)  # big-endian words → limbs
        out[:, order.index(0), 5] &= _ZCASH_FLAG_CLEAR
        return out
    clean = raw.copy()
    clean[:, 0] &= 0x1F
    limbs = _be_coords_to_limbs(xp, clean, n, k)
    return limbs if order == tuple(range(k)) else xp.ascontiguousarray(limbs[:, list(order), :])


def g1_from_zcash(raw, xp=np):
    """Uncompressed zcash G1 points ((n, 96) or n·96 bytes) to (n, 2, 6) limbs.

    A byte shuffle that clears the flag bits; flagged-infinity points become
    all zeros. Nothing is checked (:func:`zcash_first_flagged` and the
    backends' loaders check).
    """
    raw = xp.asarray(raw, dtype=xp.uint8).reshape(-1, 96)
    out = _zcash_to_limbs(xp, raw, len(raw), (0, 1))
    out[(raw[:, 0] & ZCASH_INFINITY) != 0] = 0
    return out


def g2_from_zcash(raw, xp=np):
    """Uncompressed zcash G2 points ((n, 192) bytes) to (n, 2, 2, 6) limbs."""
    raw = xp.asarray(raw, dtype=xp.uint8).reshape(-1, 192)
    n = len(raw)
    out = _zcash_to_limbs(xp, raw, n, (1, 0, 3, 2)).reshape(n, 2, 2, 6)  # c1 c0 → c0 c1
    out[(raw[:, 0] & ZCASH_INFINITY) != 0] = 0
    return out


def to_zcash(a, group: str, xp=np):
    """(n, 2, 6) G1 or (n, 2, 2, 6) G2 limbs → (n, 96 | 192) uint8 uncompressed
    zcash points, the point at infinity (all-zero limbs) flagged as such."""
    k = 2 if group == "G1" else 4
    cells = xp.ascontiguousarray(a, dtype=xp.uint64).reshape(-1, k, 6)
    if group == "G2":
        cells = xp.ascontiguousarray(cells[:, [1, 0, 3, 2], :])
    n = len(cells)
    be = cells.view(xp.uint8).reshape(n, k, 48)[:, :, ::-1].reshape(n, 48 * k)
    be = xp.ascontiguousarray(be)
    inf = ~cells.reshape(n, -1).any(axis=1)
    be[inf] = 0
    be[inf, 0] = ZCASH_INFINITY
    return be


def g1_to_zcash(a) -> bytes:
    """(n, 2, 6) limbs → uncompressed zcash bytes (infinity flagged)."""
    return to_zcash(a, "G1").tobytes()


def g2_to_zcash(a) -> bytes:
    """(n, 2, 2, 6) limbs → uncompressed zcash bytes."""
    return to_zcash(a, "G2").tobytes()


def zcash_first_flagged(raw, size: int) -> tuple[int, str] | None:
    """The first uncompressed point (rows of ``size`` bytes) whose flag bits are
    not those of a plain finite point, and what is wrong with it, or None.

    Keys never hold the point at infinity (bellperson drops those), so its
    flag is a problem here too.
    """
    flags = np.asarray(raw, dtype=np.uint8).reshape(-1, size)[:, 0] & ZCASH_FLAGS
    bad = np.flatnonzero(flags)
    if not len(bad):
        return None
    i = int(bad[0])
    if flags[i] & 0x80:
        return i, "compression flag set in an uncompressed encoding"
    if flags[i] & ZCASH_INFINITY:
        return i, "point at infinity (bellperson never stores one)"
    return i, "sign flag set in an uncompressed encoding"
