"""Numbers, packing and insertion gadgets."""

from __future__ import annotations

import random

from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.insertion import insert, select
from cuzk.gadgets.multipack import (
    bytes_to_bits,
    bytes_to_bits_le,
    compute_multipacking,
    pack_bits,
    pack_into_inputs,
)
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.values import SCALAR
from cuzk.r1cs import ConstraintSystem


def test_to_bits_le_and_strict():
    rng = random.Random(1)
    for x in [0, 1, R - 1, rng.randrange(R)]:
        cs = ConstraintSystem()
        n = AllocatedNum.alloc(cs, x)
        bits = n.to_bits_le(cs)
        assert len(bits) == 255 and cs.num_constraints == 256
        assert sum(int(b.value(SCALAR)) << i for i, b in enumerate(bits)) == x
        assert cs.r1cs().is_satisfied(cs.assignment())
        cs = ConstraintSystem()
        n = AllocatedNum.alloc(cs, x)
        bits = n.to_bits_le_strict(cs)
        assert sum(int(b.value(SCALAR)) << i for i, b in enumerate(bits)) == x
        assert cs.r1cs().is_satisfied(cs.assignment())


def test_num_ops():
    cs = ConstraintSystem()
    a, b = AllocatedNum.alloc(cs, 6), AllocatedNum.alloc(cs, 7)
    assert a.mul(cs, b).value == 42 and a.square(cs).value == 36 and a.add(cs, b).value == 13
    a.assert_nonzero(cs)
    for flag in (False, True):
        cond = Boolean.of(AllocatedBit.alloc(cs, flag))
        c, d = AllocatedNum.conditionally_reverse(cs, a, b, cond)
        assert (c.value, d.value) == ((7, 6) if flag else (6, 7))
    a.inputize(cs)
    assert cs.public_inputs() == [6]
    assert cs.r1cs().is_satisfied(cs.assignment())


def test_multipacking_matches_compute():
    rng = random.Random(2)
    for nbits in (0, 1, 253, 254, 255, 600):
        bits = [rng.random() < 0.5 for _ in range(nbits)]
        cs = ConstraintSystem()
        gb = [Boolean.of(AllocatedBit.alloc(cs, b)) for b in bits]
        pack_into_inputs(cs, gb)
        assert cs.public_inputs() == compute_multipacking(bits)
        assert cs.r1cs().is_satisfied(cs.assignment())
    cs = ConstraintSystem()
    gb = [Boolean.of(AllocatedBit.alloc(cs, b)) for b in [True] * 300]
    assert pack_bits(cs, gb).value == (1 << 254) - 1
    assert bytes_to_bits(b"\x80") == [True] + [False] * 7
    assert bytes_to_bits_le(b"\x80") == [False] * 7 + [True]


def test_select_and_insert_every_position():
    rng = random.Random(3)
    for size in (2, 4, 8, 16):
        nbits = size.bit_length() - 1
        for index in range(size):
            cs = ConstraintSystem()
            vals = [rng.randrange(R) for _ in range(size)]
            nums = [AllocatedNum.alloc(cs, v) for v in vals]
            bits = [
                Boolean.of(AllocatedBit.alloc(cs, bool((index >> i) & 1))) for i in range(nbits)
            ]
            before = cs.num_constraints
            assert select(cs, nums, bits).value == vals[index]
            assert cs.num_constraints - before == size - 1
            before = cs.num_constraints
            out = insert(cs, nums[0], bits, nums[1:])
            expect = vals[1:]
            expect.insert(index, vals[0])
            assert [o.value for o in out] == expect
            cost = cs.num_constraints - before
            # The hand-made networks of rust-fil-proofs: 2, 8 and 22 picks.
            assert cost == {2: 2, 4: 8, 8: 22, 16: 16 * 15}[size]
            assert cs.r1cs().is_satisfied(cs.assignment())
