"""Bits in a circuit: allocated bits and the three views of a boolean.

Layout follows bellperson's ``gadgets/boolean.rs`` (bellpepper-core) exactly:
which operations allocate a variable, in which order, and the linear
combinations of each constraint. A :class:`Boolean` is a constant, an
allocated bit, or the negation of one; operations on constants and
negations are folded without constraints wherever bellperson folds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuzk.algebra.fields import R
from cuzk.errors import SynthesisError
from cuzk.gadgets.values import values_of
from cuzk.r1cs import ONE, LinearCombination, Variable


@dataclass(frozen=True, slots=True)
class AllocatedBit:
    """A variable constrained to 0 or 1, with its value (bool, lanes or None)."""

    variable: Variable
    value: Any

    @staticmethod
    def alloc(cs: Any, value: Any) -> AllocatedBit:
        """Allocate a bit: (1 − a)·a = 0."""
        V = values_of(cs)
        var = cs.alloc("boolean", V.from_bit(value))
        cs.enforce("boolean constraint", ONE - var, var, 0)
        return AllocatedBit(var, value)

    @staticmethod
    def alloc_conditionally(cs: Any, value: Any, must_be_false: AllocatedBit) -> AllocatedBit:
        """A bit forced to 0 when ``must_be_false`` is 1: (1 − m − a)·a = 0."""
        V = values_of(cs)
        var = cs.alloc("boolean", V.from_bit(value))
        cs.enforce("boolean constraint", ONE - must_be_false.variable - var, var, 0)
        return AllocatedBit(var, value)

    @staticmethod
    def xor(cs: Any, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
        """c = a ⊕ b through (2a)·b = a + b − c."""
        V = values_of(cs)
        value = V.b_xor(a.value, b.value)
        var = cs.alloc("xor result", V.from_bit(value))
        cs.enforce(
            "xor constraint",
            LinearCombination({a.variable: 2}),
            b.variable,
            a.variable + b.variable - var,
        )
        return AllocatedBit(var, value)

    @staticmethod
    def and_(cs: Any, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
        """c = a ∧ b through a·b = c."""
        V = values_of(cs)
        value = V.b_and(a.value, b.value)
        var = cs.alloc("and result", V.from_bit(value))
        cs.enforce("and constraint", a.variable, b.variable, var)
        return AllocatedBit(var, value)

    @staticmethod
    def and_not(cs: Any, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
        """c = a ∧ ¬b through a·(1 − b) = c."""
        V = values_of(cs)
        value = V.b_and(a.value, V.b_not(b.value))
        var = cs.alloc("and not result", V.from_bit(value))
        cs.enforce("and not constraint", a.variable, ONE - b.variable, var)
        return AllocatedBit(var, value)

    @staticmethod
    def nor(cs: Any, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
        """c = ¬a ∧ ¬b through (1 − a)·(1 − b) = c."""
        V = values_of(cs)
        value = V.b_and(V.b_not(a.value), V.b_not(b.value))
        var = cs.alloc("nor result", V.from_bit(value))
        cs.enforce("nor constraint", ONE - a.variable, ONE - b.variable, var)
        return AllocatedBit(var, value)


_CONST, _IS, _NOT = 0, 1, 2


class Boolean:
    """A constant, an allocated bit, or a negated allocated bit."""

    __slots__ = ("bit", "const", "kind")

    def __init__(self, kind: int, bit: AllocatedBit | None = None, const: bool = False) -> None:
        self.kind = kind
        self.bit = bit
        self.const = const

    @staticmethod
    def constant(b: bool) -> Boolean:
        return Boolean(_CONST, const=bool(b))

    @staticmethod
    def of(bit: AllocatedBit) -> Boolean:
        return Boolean(_IS, bit)

    @property
    def is_constant(self) -> bool:
        return self.kind == _CONST

    @property
    def is_negated(self) -> bool:
        return self.kind == _NOT

    def value(self, V: Any) -> Any:
        """The bit's value (a bool for constants)."""
        if self.kind == _CONST:
            return self.const
        if self.kind == _IS:
            return self.bit.value
        return V.b_not(self.bit.value)

    def lc(self, coeff: int = 1) -> LinearCombination:
        """coeff·b as a linear combination (ONE stands for constant true)."""
        if self.kind == _CONST:
            return LinearCombination({ONE: coeff % R}) if self.const else LinearCombination()
        if self.kind == _IS:
            return LinearCombination({self.bit.variable: coeff % R})
        return LinearCombination({ONE: coeff % R, self.bit.variable: (-coeff) % R})

    def not_(self) -> Boolean:
        if self.kind == _CONST:
            return Boolean.constant(not self.const)
        return Boolean(_NOT if self.kind == _IS else _IS, self.bit)

    def __repr__(self) -> str:
        if self.kind == _CONST:
            return f"Constant({self.const})"
        return f"{'Is' if self.kind == _IS else 'Not'}({self.bit.variable})"


def enforce_equal(cs: Any, a: Boolean, b: Boolean) -> None:
    """a = b, with bellperson's three shapes of constraint."""
    if a.is_constant and b.is_constant:
        if a.const != b.const:
            raise SynthesisError("enforce_equal of two different constants")
        return
    if a.is_constant or b.is_constant:
        c, x = (a, b) if a.is_constant else (b, a)
        if c.const:
            cs.enforce("enforce equal to one", 0, 0, ONE - x.lc())
        else:
            cs.enforce("enforce equal to zero", 0, 0, x.lc())
        return
    cs.enforce("enforce equal", 0, 0, a.lc() - b.lc())


def xor(cs: Any, a: Boolean, b: Boolean) -> Boolean:
    if a.is_constant or b.is_constant:
        c, x = (a, b) if a.is_constant else (b, a)
        return x.not_() if c.const else x
    if a.kind != b.kind:  # a ⊕ ¬b = ¬(a ⊕ b)
        is_, not_ = (a, b) if a.kind == _IS else (b, a)
        return xor(cs, is_, not_.not_()).not_()
    return Boolean.of(AllocatedBit.xor(cs, a.bit, b.bit))


def and_(cs: Any, a: Boolean, b: Boolean) -> Boolean:
    if (a.is_constant and not a.const) or (b.is_constant and not b.const):
        return Boolean.constant(False)
    if a.is_constant or b.is_constant:
        return b if a.is_constant else a
    if a.kind == _IS and b.kind == _NOT:
        return Boolean.of(AllocatedBit.and_not(cs, a.bit, b.bit))
    if a.kind == _NOT and b.kind == _IS:
        return Boolean.of(AllocatedBit.and_not(cs, b.bit, a.bit))
    if a.kind == _NOT:
        return Boolean.of(AllocatedBit.nor(cs, a.bit, b.bit))
    return Boolean.of(AllocatedBit.and_(cs, a.bit, b.bit))


def or_(cs: Any, a: Boolean, b: Boolean) -> Boolean:
    """a ∨ b = ¬(¬a ∧ ¬b)."""
    return and_(cs, a.not_(), b.not_()).not_()


def nand(cs: Any, a: Boolean, b: Boolean) -> Boolean:
    return and_(cs, a, b).not_()


def sha256_ch(cs: Any, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a ∧ b) ⊕ (¬a ∧ c), folding constants as bellperson does."""
    V = values_of(cs)
    va, vb, vc = a.value(V), b.value(V), c.value(V)
    value = V.b_xor(V.b_and(va, vb), V.b_and(V.b_not(va), vc))
    if a.is_constant and b.is_constant and c.is_constant:
        return Boolean.constant(value)
    if a.is_constant and not a.const:
        return c
    if b.is_constant and not b.const:
        return and_(cs, a.not_(), c)
    if c.is_constant and not c.const:
        return and_(cs, a, b)
    if c.is_constant:  # c true: ¬(a ∧ ¬b)
        return and_(cs, a, b.not_()).not_()
    if b.is_constant:  # b true: ¬(¬a ∧ ¬c)
        return and_(cs, a.not_(), c.not_()).not_()
    # a true, or nothing constant: allocate ch with a(b − c) = ch − c.
    var = cs.alloc("ch", V.from_bit(value))
    cs.enforce("ch computation", b.lc() - c.lc(), a.lc(), var - c.lc())
    return Boolean.of(AllocatedBit(var, value))


def sha256_maj(cs: Any, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a ∧ b) ⊕ (a ∧ c) ⊕ (b ∧ c), folding constants as bellperson does."""
    V = values_of(cs)
    va, vb, vc = a.value(V), b.value(V), c.value(V)
    value = V.b_xor(V.b_xor(V.b_and(va, vb), V.b_and(va, vc)), V.b_and(vb, vc))
    if a.is_constant and b.is_constant and c.is_constant:
        return Boolean.constant(value)
    if a.is_constant and not a.const:
        return and_(cs, b, c)
    if b.is_constant and not b.const:
        return and_(cs, a, c)
    if c.is_constant and not c.const:
        return and_(cs, a, b)
    if c.is_constant:
        return and_(cs, a.not_(), b.not_()).not_()
    if b.is_constant:
        return and_(cs, a.not_(), c.not_()).not_()
    if a.is_constant:
        return and_(cs, b.not_(), c.not_()).not_()
    # maj is allocated before b∧c; then (2bc − b − c)·a = bc − maj.
    var = cs.alloc("maj", V.from_bit(value))
    bc = and_(cs, b, c)
    cs.enforce("maj computation", bc.lc(2) - b.lc() - c.lc(), a.lc(), bc.lc() - var)
    return Boolean.of(AllocatedBit(var, value))


def u64_into_boolean_vec_le(cs: Any, value: Any) -> list[Boolean]:
    """64 allocated bits of a u64, least significant first."""
    V = values_of(cs)
    return [Boolean.of(AllocatedBit.alloc(cs, V.w_bit(value, i))) for i in range(64)]


FR_NUM_BITS = 255


def field_into_allocated_bits_le(cs: Any, value: Any) -> list[AllocatedBit]:
    """The 255 bits of an Fr value as allocated bits, least significant first."""
    V = values_of(cs)
    bits = V.bits_le(value, FR_NUM_BITS)
    return [AllocatedBit.alloc(cs, b) for b in bits]
