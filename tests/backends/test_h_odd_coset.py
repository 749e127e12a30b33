"""Backend.h_odd_coset (snarkjs's H scalars) against first principles."""

import random

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_from_array, fr_random, fr_to_array
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend

be = CpuBackend()


def _interpolate_at(values: list[int], d: EvaluationDomain, x: int) -> int:
    """The polynomial of degree < m through values on ⟨ω⟩, at a point x off the domain."""
    lag = d.lagrange_at(x)
    return sum(v * l for v, l in zip(values, lag, strict=True)) % R


@pytest.mark.parametrize("log_n", [0, 1, 3, 6])
def test_values_are_ab_minus_c_on_the_odd_coset(log_n):
    rng = np.random.default_rng(log_n)
    d = EvaluationDomain(log_n)
    a, b, c = (fr_random(d.size, rng) for _ in range(3))
    out = fr_from_array(be.h_odd_coset(a, b, c))
    assert len(out) == d.size
    zeta = EvaluationDomain(log_n + 1).omega
    assert zeta * zeta % R == d.omega
    av, bv, cv = fr_from_array(a), fr_from_array(b), fr_from_array(c)
    for i in random.Random(log_n).sample(range(d.size), min(d.size, 6)):
        x = zeta * pow(d.omega, i, R) % R
        want = (
            _interpolate_at(av, d, x) * _interpolate_at(bv, d, x) - _interpolate_at(cv, d, x)
        ) % R
        assert out[i] == want


def test_c_defaults_to_the_pointwise_product():
    rng = np.random.default_rng(9)
    a, b = fr_random(16, rng), fr_random(16, rng)
    ab = fr_to_array([x * y % R for x, y in zip(fr_from_array(a), fr_from_array(b), strict=True)])
    assert np.array_equal(be.h_odd_coset(a, b), be.h_odd_coset(a, b, ab))


def test_satisfied_rows_give_a_multiple_of_z():
    """With c = a∘b, P vanishes on ⟨ω⟩: its 2m values interpolate a multiple of x^m − 1."""
    rng = np.random.default_rng(5)
    d = EvaluationDomain(4)
    a, b = fr_random(d.size, rng), fr_random(d.size, rng)
    p = fr_from_array(be.h_odd_coset(a, b))
    # Interpolate the 2m-point values of P: zeros on ⟨ω⟩ (even indices), p on the odd ones.
    d2 = EvaluationDomain(d.log_size + 1)
    full = [0] * d2.size
    full[1::2] = p
    coeffs = fr_from_array(be.intt(fr_to_array(full)))
    # deg P ≤ 2m − 2, and P(x) / (x^m − 1) has no remainder.
    assert coeffs[-1] == 0
    rem = coeffs[: d.size]
    quot = coeffs[d.size :]
    assert all((r + q) % R == 0 for r, q in zip(rem, quot, strict=True))


def test_zero_padding_of_short_inputs():
    rng = np.random.default_rng(2)
    a, b = fr_random(5, rng), fr_random(7, rng)
    pad = lambda x: np.vstack([x, np.zeros((8 - len(x), 4), np.uint64)])  # noqa: E731
    assert np.array_equal(be.h_odd_coset(a, b), be.h_odd_coset(pad(a), pad(b)))
