import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cuzk.algebra import arrays
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R

fr = st.integers(min_value=0, max_value=R - 1)


def test_domain_roots():
    for k in (0, 1, 5, 20, 32):
        d = EvaluationDomain(k)
        assert pow(d.omega, d.size, R) == 1
        if k:
            assert pow(d.omega, d.size // 2, R) == R - 1
        assert d.omega * d.omega_inv % R == 1
        assert d.size * d.size_inv % R == 1


def test_for_size_picks_the_smallest_power_of_two():
    assert EvaluationDomain.for_size(1).size == 1
    assert EvaluationDomain.for_size(5).size == 8
    assert EvaluationDomain.for_size(8).size == 8
    assert EvaluationDomain.for_size(130_278_869).log_size == 27


@given(fr)
def test_lagrange_basis_interpolates(tau):
    d = EvaluationDomain(3)
    if d.z_at(tau) == 0:
        return
    lag = d.lagrange_at(tau)
    assert sum(lag) % R == 1  # interpolates the constant 1
    # interpolates x: Σ ω^j L_j(τ) = τ
    assert sum(w * l for w, l in zip(d.elements(), lag, strict=True)) % R == tau


def test_z_on_coset_is_constant():
    d = EvaluationDomain(4)
    g = d.coset_generator
    for w in d.elements():
        assert d.z_at(g * w % R) == d.z_on_coset


@given(st.lists(fr, max_size=40))
def test_fr_array_round_trip(xs):
    a = arrays.fr_to_array(xs)
    assert a.shape == (len(xs), 4) and a.dtype == np.uint64
    assert arrays.fr_from_array(a) == xs


def test_fr_random_is_canonical_and_varied():
    a = arrays.fr_random(1000, np.random.default_rng(1))
    xs = arrays.fr_from_array(a)
    assert all(0 <= x < R for x in xs)
    assert len(set(xs)) == 1000
    assert max(xs) > R // 2


def test_point_array_round_trip():
    pts1 = [None, G1.generator, G1.mul(G1.generator, 12345)]
    pts2 = [G2.generator, None, G2.mul(G2.generator, 777)]
    a1 = arrays.g1_to_array(pts1)
    a2 = arrays.g2_to_array(pts2)
    assert a1.shape == (3, 2, 6) and a2.shape == (3, 2, 2, 6)
    assert not a1[0].any()
    assert arrays.g1_from_array(a1) == pts1
    assert arrays.g2_from_array(a2) == pts2
