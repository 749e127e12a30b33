"""Vectors of Fr elements, with arithmetic written once against an array module.

Hashing many Merkle nodes, or computing the witness of one gadget for
thousands of instances, is the same field arithmetic applied lane by lane.
:class:`FrVectors` is the small interface that code uses; two backends
implement it:

- :class:`ObjectFr`: numpy arrays of Python ints (``dtype=object``). Fast on
  the CPU (big-int products are native), but host-only.
- :class:`LimbFr`: Montgomery arithmetic on ``(8, n)`` arrays of 32-bit limbs
  held in uint64, written only with elementwise operations, slicing and
  broadcasting, so the same code runs on numpy and on CuPy (pass ``xp``).

Both take Python ints wherever a vector is expected (constants broadcast),
and both are tested against each other and against plain ints.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R

Vec = Any  # a backend's vector type (an object array or a limb array)


class FrVectors(Protocol):
    """Lane-wise Fr arithmetic. Every binary op also accepts Python ints."""

    name: str

    def from_ints(self, values: Sequence[int]) -> Vec: ...
    def canonical(self, v: Vec) -> Vec: ...
    def to_ints(self, v: Vec) -> list[int]: ...
    def from_array(self, a: np.ndarray) -> Vec: ...
    def to_array(self, v: Vec) -> np.ndarray: ...
    def full(self, n: int, c: int) -> Vec: ...
    def length(self, v: Vec) -> int: ...
    def add(self, a: Vec | int, b: Vec | int) -> Vec: ...
    def sub(self, a: Vec | int, b: Vec | int) -> Vec: ...
    def neg(self, a: Vec) -> Vec: ...
    def mul(self, a: Vec | int, b: Vec | int) -> Vec: ...
    def square(self, a: Vec) -> Vec: ...
    def select(self, bits: Any, a: Vec | int, b: Vec | int) -> Vec: ...
    def from_bits(self, bits: Any) -> Vec: ...
    def bits_le(self, v: Vec, count: int) -> list[Any]: ...
    def equal(self, a: Vec | int, b: Vec | int) -> Any: ...
    def concat(self, parts: Sequence[Vec]) -> Vec: ...
    def take(self, v: Vec, index: Any) -> Vec: ...


def pow5(F: FrVectors, x: Vec) -> Vec:
    """x^5 with two squarings and one product (Poseidon's S-box)."""
    x2 = F.square(x)
    return F.mul(F.square(x2), x)


def dot(F: FrVectors, xs: Sequence[Vec | int], coeffs: Sequence[int]) -> Vec | int:
    """Σ coeffs[i]·xs[i] (constant coefficients)."""
    acc: Vec | int = 0
    for x, c in zip(xs, coeffs, strict=True):
        acc = F.add(acc, F.mul(x, c))
    return acc


# --------------------------------------------------------------------------
# Object arrays of Python ints
# --------------------------------------------------------------------------


class ObjectFr:
    """Fr vectors as numpy object arrays of Python ints.

    Values are kept *congruent* mod r, not always reduced: sums, differences
    and products by constants skip the (costly) big-int remainder, which is
    taken when two vectors are multiplied (so sizes stay bounded) and when
    values leave the backend (``to_ints``, ``to_array``, ``bits_le``,
    ``equal``, :meth:`canonical`).
    """

    name = "object"

    def from_ints(self, values: Sequence[int]) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = [int(v) % R for v in values]
        return out

    def canonical(self, v: np.ndarray) -> np.ndarray:
        return v % R

    def to_ints(self, v: np.ndarray) -> list[int]:
        return [int(x) % R for x in v]

    def from_array(self, a: np.ndarray) -> np.ndarray:
        return self.from_ints(fr_from_array(np.asarray(a)))

    def to_array(self, v: np.ndarray) -> np.ndarray:
        # One to_bytes per element through map (the fastest pure-Python route).
        ints = (v % R).tolist()
        raw = b"".join(map(int.to_bytes, ints, repeat(32), repeat("little")))
        return np.frombuffer(raw, dtype="<u8").reshape(-1, 4).copy()

    def full(self, n: int, c: int) -> np.ndarray:
        out = np.empty(n, dtype=object)
        out[:] = c % R
        return out

    def length(self, v: np.ndarray) -> int:
        return len(v)

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def neg(self, a):
        return -a

    def mul(self, a, b):
        if isinstance(a, int) or isinstance(b, int):
            return a * b
        return (a * b) % R

    def square(self, a):
        return (a * a) % R

    def select(self, bits, a, b):
        cond = np.asarray(bits, dtype=bool)
        # constants as object arrays: np.where cannot hold ints beyond 64 bits
        a, b = (np.full(cond.shape, x, dtype=object) if isinstance(x, int) else x for x in (a, b))
        out = np.where(cond, a, b)
        return out.astype(object) if out.dtype != object else out

    def from_bits(self, bits) -> np.ndarray:
        return np.where(np.asarray(bits, dtype=bool), 1, 0).astype(object)

    def bits_le(self, v: np.ndarray, count: int) -> list[np.ndarray]:
        ints = [int(x) % R for x in v]
        return [np.array([(x >> i) & 1 for x in ints], dtype=bool) for i in range(count)]

    def equal(self, a, b):
        return np.asarray((a - b) % R == 0, dtype=bool)

    def concat(self, parts: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts)

    def take(self, v: np.ndarray, index) -> np.ndarray:
        return v[index]


# --------------------------------------------------------------------------
# Montgomery limbs (numpy or CuPy)
# --------------------------------------------------------------------------

_MASK = 0xFFFFFFFF
_R_LIMBS = [(R >> (32 * j)) & _MASK for j in range(8)]
_MONT = 1 << 256
_R2 = _MONT * _MONT % R
_NPRIME = (-pow(R, -1, 1 << 32)) % (1 << 32)


class LimbFr:
    """Fr vectors as ``(8, n)`` uint64 arrays of 32-bit limbs, Montgomery form.

    Limb j (row j) holds bits 32j..32j+31 of x·2^256 mod r. Products use the
    schoolbook method with 32-bit halves, so no intermediate exceeds 64 bits;
    every operation is elementwise over lanes, so ``xp`` may be numpy or CuPy.
    """

    name = "limb"

    def __init__(self, xp: Any = np) -> None:
        self.xp = xp
        self._u64 = xp.uint64
        self._r = xp.asarray(np.array(_R_LIMBS, dtype=np.uint64)).reshape(8, 1)
        self._consts: dict[int, Any] = {}

    # --- conversions ----------------------------------------------------
    def _std_to_limbs(self, ints: Sequence[int]) -> Any:
        buf = b"".join(int(v).to_bytes(32, "little") for v in ints)
        host = np.frombuffer(buf, dtype="<u4").reshape(-1, 8).T.astype(np.uint64)
        return self.xp.asarray(np.ascontiguousarray(host))

    def _limbs_to_std(self, m: Any) -> list[int]:
        host = np.asarray(m.get() if hasattr(m, "get") else m)
        raw = host.T.astype("<u4").tobytes()
        return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]

    def _const(self, c: int) -> Any:
        c %= R
        got = self._consts.get(c)
        if got is None:
            got = self._std_to_limbs([c * _MONT % R])
            self._consts[c] = got
        return got

    def _v(self, a: Vec | int) -> Any:
        return self._const(a) if isinstance(a, int) else a

    def from_ints(self, values: Sequence[int]) -> Any:
        return self._std_to_limbs([int(v) % R * _MONT % R for v in values])

    def to_ints(self, v: Any) -> list[int]:
        return self._limbs_to_std(self._redc_one(v))

    def canonical(self, v: Any) -> Any:
        return v  # limb vectors are always reduced

    def from_array(self, a: np.ndarray) -> Any:
        host = np.ascontiguousarray(np.asarray(a, dtype=np.uint64))
        std = self.xp.asarray(host.view("<u4").reshape(-1, 8).T.astype(np.uint64))
        # Multiply by the raw limbs of R^2 (not its Montgomery form): x·R²/R = xR.
        return self.mul(std, self._std_to_limbs([_R2]))

    def to_array(self, v: Any) -> np.ndarray:
        std = self._redc_one(v)
        host = np.asarray(std.get() if hasattr(std, "get") else std)
        return np.ascontiguousarray(host.T.astype("<u4")).view("<u8").reshape(-1, 4).copy()

    def full(self, n: int, c: int) -> Any:
        return self.xp.repeat(self._const(c), n, axis=1)

    def length(self, v: Any) -> int:
        return int(v.shape[1])

    # --- carries --------------------------------------------------------
    def _reduce_once(self, t: Any) -> Any:
        """t (8, n) normalised limbs with value < 2r → value mod r."""
        xp = self.xp
        borrow = xp.zeros(t.shape[1], dtype=self._u64)
        d = xp.empty_like(t)
        for j in range(8):
            x = t[j] + (1 << 32) - self._r[j] - borrow
            d[j] = x & _MASK
            borrow = 1 - (x >> 32)
        return xp.where(borrow == 0, d, t)

    # --- arithmetic -----------------------------------------------------
    def add(self, a, b):
        a, b = self._v(a), self._v(b)
        xp = self.xp
        n = max(a.shape[1], b.shape[1])
        s = xp.empty((8, n), dtype=self._u64)
        carry = 0
        for j in range(8):
            x = a[j] + b[j] + carry
            s[j] = x & _MASK
            carry = x >> 32
        # a + b < 2r < 2^256, so no carry leaves limb 7.
        return self._reduce_once(s)

    def sub(self, a, b):
        a, b = self._v(a), self._v(b)
        xp = self.xp
        n = max(a.shape[1], b.shape[1])
        d = xp.empty((8, n), dtype=self._u64)
        borrow = 0
        for j in range(8):
            x = a[j] + (1 << 32) - b[j] - borrow
            d[j] = x & _MASK
            borrow = 1 - (x >> 32)
        # Where a < b, add r back (mod 2^256).
        fix = xp.empty_like(d)
        carry = 0
        for j in range(8):
            x = d[j] + self._r[j] + carry
            fix[j] = x & _MASK
            carry = x >> 32
        return xp.where(borrow == 1, fix, d)

    def neg(self, a):
        return self.sub(0, a)

    def mul(self, a, b):
        a, b = self._v(a), self._v(b)
        xp = self.xp
        n = max(a.shape[1], b.shape[1])
        prod = a[:, None, :] * b[None, :, :]  # (8, 8, n): a_i·b_j < 2^64
        lo = prod & _MASK
        hi = prod >> 32
        t = xp.zeros((17, n), dtype=self._u64)
        for i in range(8):
            t[i : i + 8] += lo[i]
            t[i + 1 : i + 9] += hi[i]
        r_col = self._r
        for i in range(8):
            t[i + 1] += t[i] >> 32
            t[i] &= _MASK
            m = (t[i] * _NPRIME) & _MASK
            mn = m[None, :] * r_col  # (8, n)
            t[i : i + 8] += mn & _MASK
            t[i + 1 : i + 9] += mn >> 32
            t[i + 1] += t[i] >> 32  # t[i] is now a multiple of 2^32
        for j in range(8, 16):
            t[j + 1] += t[j] >> 32
            t[j] &= _MASK
        return self._reduce_once(t[8:16].copy())

    def square(self, a):
        return self.mul(a, a)

    def _redc_one(self, v: Any) -> Any:
        """Montgomery form → standard form (a product with 1)."""
        one = self.xp.zeros((8, 1), dtype=self._u64)
        one[0] = 1
        return self.mul(v, one)

    def select(self, bits, a, b):
        a, b = self._v(a), self._v(b)
        cond = self.xp.asarray(bits, dtype=bool)
        return self.xp.where(cond[None, :], a, b)

    def from_bits(self, bits):
        return self.select(bits, 1, 0)

    def bits_le(self, v, count: int) -> list[Any]:
        std = self._redc_one(v)
        return [((std[i // 32] >> (i % 32)) & 1).astype(bool) for i in range(count)]

    def equal(self, a, b):
        a, b = self._v(a), self._v(b)
        return self.xp.all(a == b, axis=0)

    def concat(self, parts: Sequence[Any]) -> Any:
        return self.xp.concatenate([self._v(p) for p in parts], axis=1)

    def take(self, v: Any, index: Any) -> Any:
        return v[:, index]


OBJECT_FR = ObjectFr()


def limb_fr(xp: Any = np) -> LimbFr:
    """A limb backend for an array module (numpy by default, or cupy)."""
    return LimbFr(xp)
