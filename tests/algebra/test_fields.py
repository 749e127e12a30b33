from hypothesis import given
from hypothesis import strategies as st

from cuzk.algebra.fields import (
    FR_GENERATOR,
    FR_ROOT_OF_UNITY,
    FR_TWO_ADICITY,
    Fq2,
    Q,
    R,
    fq_sqrt,
    fr_batch_inverse,
    fr_inv,
)

fr = st.integers(min_value=0, max_value=R - 1)
fq = st.integers(min_value=0, max_value=Q - 1)
fq2 = st.builds(Fq2, fq, fq)


def test_moduli_are_the_bls12_381_ones():
    assert R.bit_length() == 255 and Q.bit_length() == 381
    # r = x^4 - x^2 + 1 and q = (x - 1)^2 (x^4 - x^2 + 1) / 3 + x for x = -0xd201000000010000.
    x = -0xD201000000010000
    assert x**4 - x**2 + 1 == R
    assert (x - 1) ** 2 * R // 3 + x == Q


def test_two_adicity_and_root_of_unity():
    assert (R - 1) % (1 << FR_TWO_ADICITY) == 0
    assert ((R - 1) >> FR_TWO_ADICITY) % 2 == 1
    # the same primitive 2^32-th root of unity as blstrs / bellperson
    assert FR_ROOT_OF_UNITY == 0x16A2A19EDFE81F20D09B681922C813B4B63683508C2280B93829971F439F0D2B
    assert pow(FR_ROOT_OF_UNITY, 1 << FR_TWO_ADICITY, R) == 1
    assert pow(FR_ROOT_OF_UNITY, 1 << (FR_TWO_ADICITY - 1), R) == R - 1
    # 7 generates Fr*: it is a non-residue for every prime factor tested here (2)
    assert pow(FR_GENERATOR, (R - 1) // 2, R) == R - 1


@given(fr, fr, fr)
def test_fr_field_laws(a, b, c):
    assert (a * (b + c) - (a * b + a * c)) % R == 0
    if a:
        assert a * fr_inv(a) % R == 1


@given(st.lists(fr, max_size=20))
def test_batch_inverse_matches_single(xs):
    inv = fr_batch_inverse(xs)
    for x, y in zip(xs, inv, strict=True):
        assert y == (fr_inv(x) if x else 0)


@given(fq)
def test_fq_sqrt(a):
    s = fq_sqrt(a)
    if s is None:
        assert pow(a, (Q - 1) // 2, Q) == Q - 1
    else:
        assert s * s % Q == a


@given(fq2, fq2, fq2)
def test_fq2_field_laws(a, b, c):
    assert a * (b + c) == a * b + a * c
    assert (a * b) * c == a * (b * c)
    assert a - a == Fq2.zero()
    if not a.is_zero():
        assert a * a.inverse() == Fq2.one()


@given(fq2)
def test_fq2_sqrt_of_squares(a):
    sq = a * a
    s = sq.sqrt()
    assert s is not None and s * s == sq


def test_fq2_non_square_has_no_root():
    u_plus_one = Fq2(1, 1)  # the G2 twist's non-residue ξ = u + 1 is not a square
    assert u_plus_one.sqrt() is None
