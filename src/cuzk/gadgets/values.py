"""Witness values as gadgets see them: one instance (ints) or many (lane vectors).

A gadget computes the value of every variable it allocates. Written against
a :class:`Values` object, the same gadget code serves three purposes:

- with :data:`SCALAR` (Python ints and bools) and cuzk's ``ConstraintSystem``,
  it synthesizes one instance with its witness, bellperson-style;
- with values that are all ``None`` (a blank circuit), every operation
  returns ``None`` and only the constraint structure is built;
- with :class:`LaneValues`, every value is a vector over n independent
  instances ("lanes"), so one synthesis pass computes the witness of n
  copies of the gadget — the vectorised witness of a compiled circuit.

Three kinds of values exist: field elements (Fr), bits, and machine words
(u32/u64 integers, used by UInt32 and SHA-256). Constants are plain Python
ints/bools in every mode and broadcast against lane vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuzk.algebra.fields import R
from cuzk.hashers.field import OBJECT_FR, FrVectors


def _any_none(*xs: Any) -> bool:
    return any(x is None for x in xs)


class ScalarValues:
    """One instance: Fr as ints in [0, r), bits as bools, words as ints.

    ``None`` (an unknown value) propagates through every operation.
    """

    lanes = None

    # --- Fr ---------------------------------------------------------------
    def add(self, a, b):
        return None if _any_none(a, b) else (a + b) % R

    def sub(self, a, b):
        return None if _any_none(a, b) else (a - b) % R

    def mul(self, a, b):
        return None if _any_none(a, b) else a * b % R

    def square(self, a):
        return None if a is None else a * a % R

    def neg(self, a):
        return None if a is None else (-a) % R

    def select(self, bit, a, b):
        """``a`` where ``bit`` is true, else ``b``."""
        if bit is None:
            return None
        return a if bit else b

    def from_bit(self, bit):
        return None if bit is None else int(bool(bit))

    def bits_le(self, a, count: int) -> list:
        if a is None:
            return [None] * count
        return [bool((a >> i) & 1) for i in range(count)]

    def inverse(self, a):
        return None if a is None else pow(a, -1, R)

    def canonical(self, a):
        """The value reduced mod r (a no-op here: ints are kept reduced)."""
        return a

    # --- bits -------------------------------------------------------------
    def b_and(self, a, b):
        return None if _any_none(a, b) else a & b

    def b_xor(self, a, b):
        return None if _any_none(a, b) else a ^ b

    def b_or(self, a, b):
        return None if _any_none(a, b) else a | b

    def b_not(self, a):
        return None if a is None else a ^ True

    # --- words ------------------------------------------------------------
    def w_sum(self, values: Sequence) -> Any:
        return None if _any_none(*values) else sum(values)

    def w_bit(self, v, i: int):
        return None if v is None else bool((v >> i) & 1)

    def w_mask(self, v, bits: int):
        return None if v is None else v & ((1 << bits) - 1)

    def w_rotr(self, v, by: int, bits: int = 32):
        if v is None:
            return None
        m = (1 << bits) - 1
        return ((v >> by) | (v << (bits - by))) & m

    def w_shr(self, v, by: int):
        return None if v is None else v >> by

    def w_xor(self, a, b):
        return None if _any_none(a, b) else a ^ b

    def w_from_bits(self, bits: Sequence) -> Any:
        if _any_none(*bits):
            return None
        return sum(int(bool(b)) << i for i, b in enumerate(bits))


SCALAR = ScalarValues()


class LaneValues:
    """n instances at once: Fr as backend vectors, bits and words as arrays.

    ``F`` is an :class:`~cuzk.hashers.field.FrVectors` backend; ``xp`` the
    array module of bit and word arrays (numpy, or CuPy with a limb backend).
    """

    def __init__(self, lanes: int, F: FrVectors = OBJECT_FR, xp: Any = np) -> None:
        self.lanes = lanes
        self.F = F
        self.xp = xp

    # --- Fr ---------------------------------------------------------------
    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return (a + b) % R
        return self.F.add(a, b)

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return (a - b) % R
        return self.F.sub(a, b)

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b % R
        return self.F.mul(a, b)

    def square(self, a):
        return a * a % R if isinstance(a, int) else self.F.square(a)

    def neg(self, a):
        return (-a) % R if isinstance(a, int) else self.F.neg(a)

    def select(self, bit, a, b):
        if isinstance(bit, bool | np.bool_):
            return a if bit else b
        return self.F.select(bit, a, b)

    def from_bit(self, bit):
        if isinstance(bit, bool | np.bool_):
            return int(bit)
        return self.F.from_bits(bit)

    def bits_le(self, a, count: int) -> list:
        if isinstance(a, int):
            return [bool((a >> i) & 1) for i in range(count)]
        return self.F.bits_le(a, count)

    def canonical(self, a):
        """Reduce a lane vector that a backend may keep unreduced."""
        return a % R if isinstance(a, int) else self.F.canonical(a)

    def inverse(self, a):
        if isinstance(a, int):
            return pow(a, -1, R)
        ints = self.F.to_ints(a)
        return self.F.from_ints([pow(x, -1, R) if x else 0 for x in ints])

    # --- bits (bool arrays or Python bools) --------------------------------
    def b_and(self, a, b):
        return a & b

    def b_xor(self, a, b):
        return a ^ b

    def b_or(self, a, b):
        return a | b

    def b_not(self, a):
        return a ^ True

    # --- words (uint64 arrays or Python ints) -------------------------------
    def _w(self, v):
        return self.xp.uint64(v) if isinstance(v, int) else v

    def w_sum(self, values: Sequence) -> Any:
        acc = 0
        for v in values:
            acc = acc + v if isinstance(v, int) and isinstance(acc, int) else acc + self._w(v)
        return acc

    def w_bit(self, v, i: int):
        if isinstance(v, int):
            return bool((v >> i) & 1)
        return ((v >> self.xp.uint64(i)) & self.xp.uint64(1)).astype(bool)

    def w_mask(self, v, bits: int):
        if isinstance(v, int):
            return v & ((1 << bits) - 1)
        return v & self.xp.uint64((1 << bits) - 1)

    def w_rotr(self, v, by: int, bits: int = 32):
        m = (1 << bits) - 1
        if isinstance(v, int):
            return ((v >> by) | (v << (bits - by))) & m
        u = self.xp.uint64
        return ((v >> u(by)) | (v << u(bits - by))) & u(m)

    def w_shr(self, v, by: int):
        return v >> by if isinstance(v, int) else v >> self.xp.uint64(by)

    def w_xor(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a ^ b
        return self._w(a) ^ self._w(b)

    def w_from_bits(self, bits: Sequence) -> Any:
        acc: Any = 0
        for i, b in enumerate(bits):
            if isinstance(b, bool | np.bool_):
                if b:
                    acc = acc + (1 << i) if isinstance(acc, int) else acc + self.xp.uint64(1 << i)
            else:
                term = b.astype(self.xp.uint64) << self.xp.uint64(i)
                acc = term if isinstance(acc, int) and acc == 0 else self._w(acc) + term
        return acc


def values_of(cs: Any) -> Any:
    """The value backend a constraint system's gadgets compute with."""
    return getattr(cs, "values", SCALAR)
