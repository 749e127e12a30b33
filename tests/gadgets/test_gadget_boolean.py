"""Boolean gadgets: truth tables over every constant/allocated/negated mix,
and bellperson's constraint counts for each combination."""

from __future__ import annotations

import itertools

import pytest

from cuzk.gadgets import boolean
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.values import SCALAR
from cuzk.r1cs import ONE, ConstraintSystem

KINDS = ["const", "is", "not"]


def make(cs: ConstraintSystem, kind: str, value: bool) -> Boolean:
    if kind == "const":
        return Boolean.constant(value)
    if kind == "is":
        return Boolean.of(AllocatedBit.alloc(cs, value))
    return Boolean.of(AllocatedBit.alloc(cs, not value)).not_()


def _run(op, arity: int):
    for kinds in itertools.product(KINDS, repeat=arity):
        for values in itertools.product([False, True], repeat=arity):
            cs = ConstraintSystem()
            ins = [make(cs, k, v) for k, v in zip(kinds, values, strict=True)]
            before = cs.num_constraints
            out = op(cs, *ins)
            yield kinds, values, out, cs, cs.num_constraints - before


@pytest.mark.parametrize(
    "name,op,fn",
    [
        ("xor", boolean.xor, lambda a, b: a ^ b),
        ("and", boolean.and_, lambda a, b: a & b),
        ("or", boolean.or_, lambda a, b: a | b),
        ("nand", boolean.nand, lambda a, b: not (a & b)),
    ],
)
def test_binary_ops(name, op, fn):
    for kinds, values, out, cs, cost in _run(op, 2):
        assert out.value(SCALAR) == fn(*values), (name, kinds, values)
        assert cs.r1cs().is_satisfied(cs.assignment())
        constants = kinds.count("const")
        # Folding: any constant operand costs nothing, two variables cost one.
        assert cost == (0 if constants else 1), (name, kinds)


def test_sha256_ch_and_maj():
    for _kinds, values, out, cs, cost in _run(boolean.sha256_ch, 3):
        a, b, c = values
        assert out.value(SCALAR) == ((a & b) ^ ((not a) & c))
        assert cs.r1cs().is_satisfied(cs.assignment())
        assert cost <= 1
    for kinds, values, out, cs, cost in _run(boolean.sha256_maj, 3):
        a, b, c = values
        assert out.value(SCALAR) == ((a & b) ^ (a & c) ^ (b & c))
        assert cs.r1cs().is_satisfied(cs.assignment())
        # Only the all-variable case allocates maj and b∧c.
        assert cost == (2 if "const" not in kinds else (0 if kinds.count("const") >= 2 else 1))


def test_enforce_equal_and_alloc():
    for ka, kb in itertools.product(KINDS, repeat=2):
        if ka == kb == "const":
            continue
        for va, vb in itertools.product([False, True], repeat=2):
            cs = ConstraintSystem()
            a, b = make(cs, ka, va), make(cs, kb, vb)
            boolean.enforce_equal(cs, a, b)
            assert cs.r1cs().is_satisfied(cs.assignment()) == (va == vb)
    cs = ConstraintSystem()
    bits = boolean.u64_into_boolean_vec_le(cs, 0xDEADBEEF12345678)
    assert cs.num_constraints == 64
    assert sum(int(b.value(SCALAR)) << i for i, b in enumerate(bits)) == 0xDEADBEEF12345678


def test_a_non_boolean_fails():
    cs = ConstraintSystem()
    var = cs.alloc("x", 2)
    cs.enforce("boolean constraint", ONE - var, var, 0)  # what AllocatedBit enforces
    assert not cs.r1cs().is_satisfied(cs.assignment())
