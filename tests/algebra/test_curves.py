import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.algebra import pairing
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.fields import Fq2, R

scalars = st.integers(min_value=0, max_value=R - 1)


@pytest.fixture(scope="module")
def ecc():
    """py_ecc, the independent oracle (imported here so that GPU-only runs,
    which deselect these tests, do not need it installed)."""
    import py_ecc.optimized_bls12_381 as ecc

    return ecc


def _ecc_g1(ecc, p):
    x, y = ecc.normalize(p)
    return (int(x), int(y))


def _ecc_g2(ecc, p):
    x, y = ecc.normalize(p)
    return (Fq2(int(x.coeffs[0]), int(x.coeffs[1])), Fq2(int(y.coeffs[0]), int(y.coeffs[1])))


def test_generators_match_py_ecc(ecc):
    assert G1.generator == _ecc_g1(ecc, ecc.G1)
    assert G2.generator == _ecc_g2(ecc, ecc.G2)
    assert G1.is_on_curve(G1.generator) and G2.is_on_curve(G2.generator)


def test_scalar_multiplication_matches_py_ecc(ecc):
    rng = random.Random(1)
    k = rng.randrange(R)
    assert G1.mul(G1.generator, k) == _ecc_g1(ecc, ecc.multiply(ecc.G1, k))
    assert G2.mul(G2.generator, k) == _ecc_g2(ecc, ecc.multiply(ecc.G2, k))


@pytest.mark.parametrize("curve", [G1, G2], ids=["G1", "G2"])
def test_generator_order_is_r(curve):
    assert curve.mul_unreduced(curve.generator, R) is None
    assert curve.is_in_subgroup(curve.generator)


@settings(max_examples=20, deadline=None)
@given(scalars, scalars)
def test_g1_group_laws(a, b):
    P = G1.mul(G1.generator, a)
    Q = G1.mul(G1.generator, b)
    assert G1.add(P, Q) == G1.mul(G1.generator, a + b)
    assert G1.add(P, G1.neg(P)) is None
    assert G1.add(P, None) == P
    assert G1.double(P) == G1.add(P, P) == G1.mul(P, 2)
    jp = G1.jacobian_add(G1.to_jacobian(P), G1.to_jacobian(Q))
    assert G1.to_affine(jp) == G1.add(P, Q)


@settings(max_examples=5, deadline=None)
@given(scalars, scalars)
def test_g2_group_laws(a, b):
    P = G2.mul(G2.generator, a)
    Q = G2.mul(G2.generator, b)
    assert G2.add(P, Q) == G2.mul(G2.generator, a + b)
    assert G2.add(P, G2.neg(P)) is None
    assert G2.to_affine(G2.jacobian_double(G2.to_jacobian(P))) == G2.double(P)


def test_library_adapter_round_trips_and_agrees():
    rng = random.Random(2)
    for _ in range(5):
        k = rng.randrange(R)
        p1 = G1.mul(G1.generator, k)
        p2 = G2.mul(G2.generator, k)
        assert pairing.g1_from_ark(pairing.g1_to_ark(p1)) == p1
        assert pairing.g2_from_ark(pairing.g2_to_ark(p2)) == p2
        assert pairing.g1_mul(G1.generator, k) == p1
        assert pairing.g2_mul(G2.generator, k) == p2
    assert pairing.g1_from_ark(pairing.g1_to_ark(None)) is None
    assert pairing.g2_from_ark(pairing.g2_to_ark(None)) is None


def test_fixed_base_matches_scalar_multiplication():
    rng = random.Random(3)
    fb1 = pairing.FixedBase(pairing.g1_to_ark(G1.generator))
    fb2 = pairing.FixedBase(pairing.g2_to_ark(G2.generator))
    for k in [0, 1, 2, R - 1, *(rng.randrange(R) for _ in range(5))]:
        assert pairing.g1_from_ark(fb1.mul(k)) == G1.mul(G1.generator, k)
        assert pairing.g2_from_ark(fb2.mul(k)) == pairing.g2_mul(G2.generator, k)


def test_pairing_is_bilinear():
    rng = random.Random(4)
    a, b = rng.randrange(1, R), rng.randrange(1, R)
    pa = pairing.g1_mul(G1.generator, a)
    qb = pairing.g2_mul(G2.generator, b)
    ab = pairing.g1_mul(G1.generator, a * b % R)
    # e(aG, bH) · e(-abG, H) = 1
    assert pairing.pairing_product_is_one([(pa, qb), (G1.neg(ab), G2.generator)])
    assert not pairing.pairing_product_is_one([(pa, qb), (G1.neg(pa), G2.generator)])


def test_pairing_check_agrees_with_py_ecc(ecc):
    """py_ecc as an independent oracle: same verdict on a true and a false relation."""
    a = 0x1234567
    lhs = ecc.multiply(ecc.G1, a)
    for rhs_scalar, expected in [(a, True), (a + 1, False)]:
        rhs = ecc.multiply(ecc.G1, rhs_scalar)
        prod = ecc.pairing(ecc.G2, lhs, final_exponentiate=False) * ecc.pairing(
            ecc.G2, ecc.neg(rhs), final_exponentiate=False
        )
        ecc_says = ecc.final_exponentiate(prod) == ecc.FQ12.one()
        ours = pairing.pairing_product_is_one(
            [(_ecc_g1(ecc, lhs), G2.generator), (G1.neg(_ecc_g1(ecc, rhs)), G2.generator)]
        )
        assert ecc_says == ours == expected
