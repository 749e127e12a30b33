"""32-bit words in a circuit, with the helpers SHA-256 needs.

Follows bellperson's ``gadgets/uint32.rs`` and ``gadgets/multieq.rs``: a
:class:`UInt32` is 32 :class:`Boolean` (least significant first); rotations
and shifts are free; additions allocate the sum's bits and defer the
equality to a :class:`MultiEq`, which packs several equalities into one
constraint until the field's 254-bit capacity would overflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from cuzk.algebra.fields import R
from cuzk.gadgets import boolean
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.values import values_of
from cuzk.r1cs import ONE, LinearCombination

FR_CAPACITY = 254


class MultiEq:
    """A constraint-system wrapper that batches equalities of small sums.

    Allocations and constraints pass straight through; ``enforce_equal``
    accumulates ``lhs = rhs`` shifted by the bits already used, and emits
    one ``lhs · 1 = rhs`` constraint when the next one would not fit (and on
    :meth:`finish`).
    """

    def __init__(self, cs: Any) -> None:
        self.cs = cs
        self.values = values_of(cs)
        self.ops = 0
        self.bits_used = 0
        self.lhs = LinearCombination()
        self.rhs = LinearCombination()

    def alloc(self, name: str, value: Any = None):
        return self.cs.alloc(name, value)

    def alloc_input(self, name: str, value: Any = None):
        return self.cs.alloc_input(name, value)

    def enforce(self, name: str, a, b, c) -> None:
        self.cs.enforce(name, a, b, c)

    def namespace(self, name: str) -> AbstractContextManager:
        return self.cs.namespace(name)

    def _accumulate(self) -> None:
        self.cs.enforce(f"multieq {self.ops}", self.lhs, ONE, self.rhs)
        self.lhs = LinearCombination()
        self.rhs = LinearCombination()
        self.bits_used = 0
        self.ops += 1

    def enforce_equal(self, num_bits: int, lhs: LinearCombination, rhs: LinearCombination) -> None:
        if self.bits_used + num_bits >= FR_CAPACITY:
            self._accumulate()
        assert self.bits_used + num_bits < FR_CAPACITY
        coeff = pow(2, self.bits_used, R)
        self.lhs = self.lhs + lhs * coeff
        self.rhs = self.rhs + rhs * coeff
        self.bits_used += num_bits

    def finish(self) -> None:
        if self.bits_used > 0:
            self._accumulate()


class UInt32:
    """32 booleans, least significant first, with the word's value."""

    __slots__ = ("bits", "value")

    def __init__(self, bits: list[Boolean], value: Any) -> None:
        assert len(bits) == 32
        self.bits = bits
        self.value = value

    @staticmethod
    def constant(value: int) -> UInt32:
        return UInt32([Boolean.constant((value >> i) & 1) for i in range(32)], value)

    @staticmethod
    def alloc(cs: Any, value: Any) -> UInt32:
        V = values_of(cs)
        bits = [Boolean.of(AllocatedBit.alloc(cs, V.w_bit(value, i))) for i in range(32)]
        return UInt32(bits, value)

    def into_bits_be(self) -> list[Boolean]:
        return self.bits[::-1]

    @staticmethod
    def from_bits_be(V: Any, bits: Sequence[Boolean]) -> UInt32:
        assert len(bits) == 32
        le = list(bits)[::-1]
        return UInt32(le, V.w_from_bits([b.value(V) for b in le]))

    @staticmethod
    def from_bits(V: Any, bits: Sequence[Boolean]) -> UInt32:
        assert len(bits) == 32
        return UInt32(list(bits), V.w_from_bits([b.value(V) for b in bits]))

    def rotr(self, V: Any, by: int) -> UInt32:
        by %= 32
        return UInt32(self.bits[by:] + self.bits[:by], V.w_rotr(self.value, by))

    def shr(self, V: Any, by: int) -> UInt32:
        by %= 32
        fill = [Boolean.constant(False)] * by
        return UInt32(self.bits[by:] + fill, V.w_shr(self.value, by))

    def xor(self, cs: Any, other: UInt32) -> UInt32:
        V = values_of(cs)
        bits = [boolean.xor(cs, a, b) for a, b in zip(self.bits, other.bits, strict=True)]
        return UInt32(bits, V.w_xor(self.value, other.value))

    @staticmethod
    def sha256_ch(cs: Any, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        V = values_of(cs)
        bits = [
            boolean.sha256_ch(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits, strict=True)
        ]
        return UInt32(bits, V.w_from_bits([x.value(V) for x in bits]))

    @staticmethod
    def sha256_maj(cs: Any, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        V = values_of(cs)
        bits = [
            boolean.sha256_maj(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits, strict=True)
        ]
        return UInt32(bits, V.w_from_bits([x.value(V) for x in bits]))

    @staticmethod
    def addmany(me: MultiEq, operands: Sequence[UInt32]) -> UInt32:
        """The sum mod 2^32; its full-width bits are allocated, equality deferred."""
        assert 2 <= len(operands) <= 10
        V = me.values
        max_value = len(operands) * 0xFFFFFFFF
        total = V.w_sum([op.value for op in operands])
        lc = LinearCombination()
        all_constants = True
        for op in operands:
            coeff = 1
            for bit in op.bits:
                for var, k in bit.lc(coeff).terms.items():
                    lc.add_term(var, k)
                all_constants &= bit.is_constant
                coeff *= 2
        modular = V.w_mask(total, 32)
        if all_constants and modular is not None:
            return UInt32.constant(int(modular))
        result_bits: list[Boolean] = []
        result_lc = LinearCombination()
        coeff = 1
        i = 0
        while max_value:
            b = AllocatedBit.alloc(me, V.w_bit(total, i))
            result_lc.add_term(b.variable, coeff)
            result_bits.append(Boolean.of(b))
            max_value >>= 1
            i += 1
            coeff *= 2
        me.enforce_equal(i, lc, result_lc)
        return UInt32(result_bits[:32], modular)
