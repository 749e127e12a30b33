"""Field elements in a circuit: allocated numbers and linear-combination numbers.

Follows bellperson's ``gadgets/num.rs`` (bellpepper-core): allocation order,
constraint shapes, and :class:`Num` (a linear combination with its value)
used by packing and by neptune's Poseidon circuit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import (
    AllocatedBit,
    Boolean,
    field_into_allocated_bits_le,
)
from cuzk.gadgets.values import values_of
from cuzk.r1cs import ONE, LinearCombination, Variable


@dataclass(frozen=True, slots=True)
class AllocatedNum:
    """An allocated variable with its value (an int, lanes, or None)."""

    variable: Variable
    value: Any

    @staticmethod
    def alloc(cs: Any, value: Any, name: str = "num") -> AllocatedNum:
        return AllocatedNum(cs.alloc(name, value), value)

    @staticmethod
    def alloc_input(cs: Any, value: Any, name: str = "input num") -> AllocatedNum:
        return AllocatedNum(cs.alloc_input(name, value), value)

    def lc(self, coeff: int = 1) -> LinearCombination:
        return LinearCombination({self.variable: coeff % R})

    def inputize(self, cs: Any) -> AllocatedNum:
        """Expose as a public input: input·1 = self."""
        inp = cs.alloc_input("input variable", self.value)
        cs.enforce("enforce input is correct", inp, ONE, self.variable)
        return AllocatedNum(inp, self.value)

    def to_bits_le(self, cs: Any) -> list[Boolean]:
        """255 allocated bits and one unpacking constraint (not range-strict)."""
        bits = field_into_allocated_bits_le(cs, self.value)
        lc = LinearCombination()
        coeff = 1
        for b in bits:
            lc.add_term(b.variable, coeff)
            coeff = coeff * 2 % R
        lc.add_term(self.variable, R - 1)
        cs.enforce("unpacking constraint", 0, 0, lc)
        return [Boolean.of(b) for b in bits]

    def to_bits_le_strict(self, cs: Any) -> list[Boolean]:
        """Bits of the value, enforced to be below r (bellperson's strict form)."""
        V = values_of(cs)
        a_bits = V.bits_le(self.value, 256)[::-1]  # big-endian
        r_minus_1 = R - 1
        result: list[AllocatedBit] = []
        last_run: AllocatedBit | None = None
        current_run: list[AllocatedBit] = []
        found_one = False
        i = 0
        for pos in range(255, -1, -1):
            b = (r_minus_1 >> pos) & 1
            a_bit = a_bits[255 - pos]
            found_one |= bool(b)
            if not found_one:
                continue
            if b:
                bit = AllocatedBit.alloc(cs, a_bit)
                current_run.append(bit)
                result.append(bit)
            else:
                if current_run:
                    if last_run is not None:
                        current_run.append(last_run)
                    last_run = _kary_and(cs, current_run)
                    current_run = []
                result.append(AllocatedBit.alloc_conditionally(cs, a_bit, last_run))
            i += 1
        lc = LinearCombination()
        coeff = 1
        for bit in reversed(result):
            lc.add_term(bit.variable, coeff)
            coeff = coeff * 2 % R
        lc.add_term(self.variable, R - 1)
        cs.enforce("unpacking constraint", 0, 0, lc)
        return [Boolean.of(b) for b in reversed(result)]

    def mul(self, cs: Any, other: AllocatedNum) -> AllocatedNum:
        V = values_of(cs)
        value = V.mul(self.value, other.value)
        var = cs.alloc("product num", value)
        cs.enforce("multiplication constraint", self.variable, other.variable, var)
        return AllocatedNum(var, value)

    def square(self, cs: Any) -> AllocatedNum:
        V = values_of(cs)
        value = V.square(self.value)
        var = cs.alloc("squared num", value)
        cs.enforce("squaring constraint", self.variable, self.variable, var)
        return AllocatedNum(var, value)

    def add(self, cs: Any, other: AllocatedNum) -> AllocatedNum:
        V = values_of(cs)
        value = V.add(self.value, other.value)
        var = cs.alloc("sum num", value)
        cs.enforce("addition constraint", self.variable + other.variable, ONE, var)
        return AllocatedNum(var, value)

    def assert_nonzero(self, cs: Any) -> None:
        V = values_of(cs)
        inv = cs.alloc("ephemeral inverse", V.inverse(self.value))
        cs.enforce("nonzero assertion constraint", self.variable, inv, ONE)

    @staticmethod
    def conditionally_reverse(
        cs: Any, a: AllocatedNum, b: AllocatedNum, condition: Boolean
    ) -> tuple[AllocatedNum, AllocatedNum]:
        """(b, a) if condition else (a, b)."""
        V = values_of(cs)
        cond = condition.value(V)
        cv = V.select(cond, b.value, a.value)
        c = AllocatedNum.alloc(cs, cv, "conditional reversal result 1")
        cs.enforce(
            "first conditional reversal",
            a.variable - b.variable,
            condition.lc(),
            a.variable - c.variable,
        )
        dv = V.select(cond, a.value, b.value)
        d = AllocatedNum.alloc(cs, dv, "conditional reversal result 2")
        cs.enforce(
            "second conditional reversal",
            b.variable - a.variable,
            condition.lc(),
            b.variable - d.variable,
        )
        return c, d


def _kary_and(cs: Any, bits: list[AllocatedBit]) -> AllocatedBit:
    cur = bits[0]
    for b in bits[1:]:
        cur = AllocatedBit.and_(cs, cur, b)
    return cur


class Num:
    """A linear combination together with its value."""

    __slots__ = ("lc_", "value")

    def __init__(self, lc: LinearCombination | None = None, value: Any = 0) -> None:
        self.lc_ = lc if lc is not None else LinearCombination()
        self.value = value

    @staticmethod
    def zero() -> Num:
        return Num(LinearCombination(), 0)

    @staticmethod
    def of(num: AllocatedNum) -> Num:
        return Num(LinearCombination({num.variable: 1}), num.value)

    def lc(self, coeff: int = 1) -> LinearCombination:
        return self.lc_ * coeff if coeff % R != 1 else self.lc_.copy()

    def add_bool_with_coeff(self, V: Any, bit: Boolean, coeff: int) -> Num:
        value = V.add(self.value, V.mul(V.from_bit(bit.value(V)), coeff % R))
        return Num(self.lc_ + bit.lc(coeff), value)

    def add(self, V: Any, other: Num) -> Num:
        return Num(self.lc_ + other.lc_, V.add(self.value, other.value))

    def scale(self, V: Any, scalar: int) -> Num:
        return Num(self.lc_ * scalar, V.mul(self.value, scalar % R))
