"""Neptune's Poseidon circuit: its constraint counts and the plain hash's values."""

from __future__ import annotations

import random

import pytest

from cuzk.algebra.fields import R
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.hashers.poseidon import hash_ints
from cuzk.hashers.poseidon_constants import STRENGTHENED, poseidon_constants
from cuzk.r1cs import ConstraintSystem


def _expected(arity: int, strength: str = "standard") -> int:
    c = poseidon_constants(arity, strength)
    width = arity + 1
    s_boxes = width * c.full_rounds + c.partial_rounds - 1  # the tag's first is constant
    return 3 * s_boxes + width * c.full_rounds + c.partial_rounds - arity


@pytest.mark.parametrize("arity,count", [(2, 311), (4, 377), (8, 505), (11, 598)])
def test_counts_and_values(arity, count):
    assert _expected(arity) == count
    c = poseidon_constants(arity)
    rng = random.Random(arity)
    xs = [rng.randrange(R) for _ in range(arity)]
    cs = ConstraintSystem(keep_names=False)
    nums = [AllocatedNum.alloc(cs, x) for x in xs]
    out = poseidon_hash(cs, nums, c)
    assert cs.num_constraints == count
    assert out.value == hash_ints(xs, c)
    r1cs = cs.r1cs()
    w = cs.assignment()
    assert r1cs.is_satisfied(w)
    w[1 + arity + 5] = (w[1 + arity + 5] + 1) % R
    assert not r1cs.is_satisfied(w)


def test_strengthened_counts():
    # neptune's circuit tests: 367 / 433 / 565 for arity 2 / 4 / 8.
    for arity, count in [(2, 367), (4, 433), (8, 565)]:
        c = poseidon_constants(arity, STRENGTHENED)
        cs = ConstraintSystem(witness=False, keep_names=False)
        poseidon_hash(cs, [AllocatedNum.alloc(cs, None) for _ in range(arity)], c)
        assert cs.num_constraints == count == _expected(arity, STRENGTHENED)
