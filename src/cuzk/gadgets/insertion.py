"""Insert a number among others at a position given by bits.

Follows rust-fil-proofs ``storage-proofs-core/src/gadgets/insertion.rs``:
hand-optimised networks of ``pick`` constraints for 2, 4 and 8 slots (the
8-slot one shares a NOR and an AND of the two low bits), and the general
select-based algorithm for other sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.errors import SynthesisError
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.values import values_of


def pick(cs: Any, condition: Boolean, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """``a`` if condition else ``b``: (b − a)·condition = b − c."""
    V = values_of(cs)
    value = V.select(condition.value(V), a.value, b.value)
    c = AllocatedNum.alloc(cs, value, "pick result")
    cs.enforce("pick", b.variable - a.variable, condition.lc(), b.variable - c.variable)
    return c


def select(cs: Any, options: Sequence[AllocatedNum], bits: Sequence[Boolean]) -> AllocatedNum:
    """options[n] where ``bits`` is n, least significant first."""
    assert len(options) == 1 << len(bits)
    state = list(options)
    half = len(options) // 2
    for bit in reversed(bits):  # most significant bit first
        state = [pick(cs, bit, state[half + j], state[j]) for j in range(half)]
        half //= 2
    return state[0]


def insert(
    cs: Any, element: AllocatedNum, bits: Sequence[Boolean], elements: Sequence[AllocatedNum]
) -> list[AllocatedNum]:
    """``elements`` with ``element`` inserted at position ``bits``."""
    size = len(elements) + 1
    assert 1 << len(bits) == size
    if size == 2:
        return _insert_2(cs, element, bits, elements)
    if size == 4:
        return _insert_4(cs, element, bits, elements)
    if size == 8:
        return _insert_8(cs, element, bits, elements)
    results = []
    for index in range(size):
        row = [*elements[:index], element, *elements[index:]]
        results.append(row)
    return [select(cs, [results[i][pos] for i in range(size)], bits) for pos in range(size)]


def _insert_2(cs, a, bits, elements):
    return [pick(cs, bits[0], elements[0], a), pick(cs, bits[0], a, elements[0])]


def _insert_4(cs, a, bits, elements):
    b0, b1 = bits
    b, c, d = elements
    p0_x0 = pick(cs, b0, b, a)
    p0 = pick(cs, b1, b, p0_x0)
    p1_x0 = pick(cs, b0, a, b)
    p1 = pick(cs, b1, c, p1_x0)
    p2_x1 = pick(cs, b0, d, a)
    p2 = pick(cs, b1, p2_x1, c)
    p3_x1 = pick(cs, b0, a, d)
    p3 = pick(cs, b1, p3_x1, d)
    return [p0, p1, p2, p3]


def _insert_8(cs, a, bits, elements):
    b0, b1, b2 = bits
    if b0.is_constant or b0.is_negated or b1.is_constant or b1.is_negated:
        raise SynthesisError("insert_8 needs allocated, unnegated index bits")
    b, c, d, e, f, g, h = elements
    b0_nor_b1 = Boolean.of(AllocatedBit.nor(cs, b0.bit, b1.bit))
    b0_and_b1 = Boolean.of(AllocatedBit.and_(cs, b0.bit, b1.bit))

    p0_xx0 = pick(cs, b0_nor_b1, a, b)
    p0 = pick(cs, b2, b, p0_xx0)

    p1_x00 = pick(cs, b0, a, b)
    p1_xx0 = pick(cs, b1, c, p1_x00)
    p1 = pick(cs, b2, c, p1_xx0)

    p2_x10 = pick(cs, b0, d, a)
    p2_xx0 = pick(cs, b1, p2_x10, c)
    p2 = pick(cs, b2, d, p2_xx0)

    p3_xx0 = pick(cs, b0_and_b1, a, d)
    p3 = pick(cs, b2, e, p3_xx0)

    p4_xx1 = pick(cs, b0_nor_b1, a, f)
    p4 = pick(cs, b2, p4_xx1, e)

    p5_x01 = pick(cs, b0, a, f)
    p5_xx1 = pick(cs, b1, g, p5_x01)
    p5 = pick(cs, b2, p5_xx1, f)

    p6_x11 = pick(cs, b0, h, a)
    p6_xx1 = pick(cs, b1, p6_x11, g)
    p6 = pick(cs, b2, p6_xx1, g)

    p7_xx1 = pick(cs, b0_and_b1, a, h)
    p7 = pick(cs, b2, p7_xx1, h)
    return [p0, p1, p2, p3, p4, p5, p6, p7]
