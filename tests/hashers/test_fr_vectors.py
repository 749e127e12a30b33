"""The two Fr vector backends agree with plain ints, lane by lane."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.hashers.field import OBJECT_FR, dot, limb_fr, pow5

EDGE = [0, 1, 2, R - 1, R - 2, (1 << 255) % R, (1 << 254), R >> 1, (1 << 32) - 1, 1 << 64]


@pytest.fixture(params=["object", "limb"])
def F(request):
    return OBJECT_FR if request.param == "object" else limb_fr(np)


def _values(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return EDGE + [rng.randrange(R) for _ in range(n - len(EDGE))]


def test_round_trip_ints_and_arrays(F):
    xs = _values(40, 1)
    v = F.from_ints(xs)
    assert F.to_ints(v) == xs
    assert (F.to_array(v) == fr_to_array(xs)).all()
    assert F.to_ints(F.from_array(fr_to_array(xs))) == xs
    assert F.length(v) == len(xs)


def test_arithmetic_matches_ints(F):
    xs, ys = _values(60, 2), _values(60, 3)[::-1]
    a, b = F.from_ints(xs), F.from_ints(ys)
    assert F.to_ints(F.add(a, b)) == [(x + y) % R for x, y in zip(xs, ys, strict=True)]
    assert F.to_ints(F.sub(a, b)) == [(x - y) % R for x, y in zip(xs, ys, strict=True)]
    assert F.to_ints(F.mul(a, b)) == [x * y % R for x, y in zip(xs, ys, strict=True)]
    assert F.to_ints(F.square(a)) == [x * x % R for x in xs]
    assert F.to_ints(F.neg(a)) == [(-x) % R for x in xs]
    assert F.to_ints(pow5(F, a)) == [pow(x, 5, R) for x in xs]


def test_constants_broadcast(F):
    xs = _values(20, 4)
    a = F.from_ints(xs)
    k = 0x1234567890ABCDEF1234567890ABCDEF
    assert F.to_ints(F.add(a, k)) == [(x + k) % R for x in xs]
    assert F.to_ints(F.sub(k, a)) == [(k - x) % R for x in xs]
    assert F.to_ints(F.mul(a, R - 1)) == [(-x) % R for x in xs]
    assert F.to_ints(F.full(3, 7)) == [7, 7, 7]
    assert F.to_ints(dot(F, [a, a, 5], [2, 3, 4])) == [(5 * x + 20) % R for x in xs]


def test_bits_select_and_equal(F):
    xs = _values(30, 5)
    ys = _values(30, 6)
    bits = np.array([x & 1 == 1 for x in ys])
    a, b = F.from_ints(xs), F.from_ints(ys)
    assert F.to_ints(F.select(bits, a, b)) == [
        x if bit else y for x, y, bit in zip(xs, ys, bits, strict=True)
    ]
    assert F.to_ints(F.from_bits(bits)) == [int(bit) for bit in bits]
    got = F.bits_le(a, 255)
    for i in (0, 1, 31, 32, 63, 64, 200, 254):
        assert list(got[i]) == [bool((x >> i) & 1) for x in xs]
    assert list(F.equal(a, a)) == [True] * len(xs)
    assert list(F.equal(a, b)) == [x == y for x, y in zip(xs, ys, strict=True)]
    parts = F.concat([a, b])
    assert F.to_ints(F.take(parts, np.array([0, len(xs)]))) == [xs[0], ys[0]]
