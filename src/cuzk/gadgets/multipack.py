"""Packing bits into field elements (bellperson's ``gadgets/multipack.rs``).

Bits are packed little-endian, 254 (the field's capacity) per element.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import Boolean
from cuzk.gadgets.num import AllocatedNum, Num
from cuzk.gadgets.values import values_of
from cuzk.r1cs import ONE

FR_CAPACITY = 254


def _pack(V: Any, bits: Sequence[Boolean]) -> Num:
    num = Num.zero()
    coeff = 1
    for bit in bits:
        num = num.add_bool_with_coeff(V, bit, coeff)
        coeff = coeff * 2 % R
    return num


def pack_into_inputs(cs: Any, bits: Sequence[Boolean]) -> list[AllocatedNum]:
    """Expose bits as public inputs, 254 per input: num·1 = input."""
    V = values_of(cs)
    out = []
    for i in range(0, len(bits), FR_CAPACITY):
        num = _pack(V, bits[i : i + FR_CAPACITY])
        inp = cs.alloc_input(f"input {i // FR_CAPACITY}", num.value)
        cs.enforce(f"packing constraint {i // FR_CAPACITY}", num.lc(), ONE, inp)
        out.append(AllocatedNum(inp, num.value))
    return out


def pack_bits(cs: Any, bits: Sequence[Boolean]) -> AllocatedNum:
    """Pack up to 254 bits (extra bits are ignored) into one aux number."""
    V = values_of(cs)
    num = _pack(V, bits[:FR_CAPACITY])
    alloc = AllocatedNum.alloc(cs, num.value, "input")
    cs.enforce("packing constraint", num.lc(), ONE, alloc.variable)
    return alloc


def bytes_to_bits(data: bytes) -> list[bool]:
    """Big-endian bits of each byte, bytes in order."""
    return [bool((b >> i) & 1) for b in data for i in range(7, -1, -1)]


def bytes_to_bits_le(data: bytes) -> list[bool]:
    """Little-endian bits of each byte, bytes in order."""
    return [bool((b >> i) & 1) for b in data for i in range(8)]


def compute_multipacking(bits: Sequence[bool]) -> list[int]:
    """The public inputs :func:`pack_into_inputs` produces for these bits."""
    out = []
    for i in range(0, len(bits), FR_CAPACITY):
        out.append(sum(int(b) << j for j, b in enumerate(bits[i : i + FR_CAPACITY])) % R)
    return out
