"""The CPU backend against first principles (it is the reference for every other)."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.algebra import pairing
from cuzk.algebra.arrays import fr_from_array, fr_random, fr_to_array, g1_to_array, g2_to_array
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends.cpu import CpuBackend

be = CpuBackend()


def _eval_poly(coeffs, x):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


@pytest.mark.parametrize("log_n", [0, 1, 2, 5, 10])
def test_ntt_is_evaluation_on_the_domain(log_n):
    rng = np.random.default_rng(log_n)
    a = fr_random(1 << log_n, rng)
    coeffs = fr_from_array(a)
    d = EvaluationDomain(log_n)
    evals = fr_from_array(be.ntt(a))
    for i in random.Random(log_n).sample(range(d.size), min(d.size, 8)):
        assert evals[i] == _eval_poly(coeffs, pow(d.omega, i, R))
    cos = fr_from_array(be.coset_ntt(a))
    for i in random.Random(log_n).sample(range(d.size), min(d.size, 8)):
        assert cos[i] == _eval_poly(coeffs, 7 * pow(d.omega, i, R) % R)


@pytest.mark.parametrize("log_n", [1, 3, 8, 12])
def test_inverse_transforms_round_trip(log_n):
    rng = np.random.default_rng(100 + log_n)
    a = fr_random(1 << log_n, rng)
    assert np.array_equal(be.intt(be.ntt(a)), a)
    assert np.array_equal(be.ntt(be.intt(a)), a)
    assert np.array_equal(be.coset_intt(be.coset_ntt(a)), a)


def test_ntt_edge_values():
    vals = [0, 1, R - 1, R - 1, 1, 0, 5, 5]
    a = fr_to_array(vals)
    assert np.array_equal(be.intt(be.ntt(a)), a)
    assert fr_from_array(be.ntt(fr_to_array([1] + [0] * 7))) == [1] * 8


def test_ntt_rejects_non_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        be.ntt(fr_to_array([1, 2, 3]))


def test_spmv_matches_dense_product():
    rng = random.Random(7)
    rows, cols = 40, 25
    dense = [
        [rng.randrange(R) if rng.random() < 0.2 else 0 for _ in range(cols)] for _ in range(rows)
    ]
    dense[3] = [0] * cols  # an empty row
    m = SparseMatrix.from_rows(
        [[(j, v) for j, v in enumerate(row) if v] for row in dense], num_cols=cols
    )
    w = [rng.randrange(R) for _ in range(cols)]
    expected = [sum(v * x for v, x in zip(row, w, strict=True)) % R for row in dense]
    assert fr_from_array(be.spmv(m, fr_to_array(w))) == expected
    v = [rng.randrange(R) for _ in range(rows)]
    expected_t = [sum(dense[i][j] * v[i] for i in range(rows)) % R for j in range(cols)]
    assert m.rmatvec(v) == expected_t


def test_h_poly_satisfies_the_quotient_identity():
    """For a·b − c vanishing on the domain, A(x)B(x) − C(x) = H(x)·Z(x) at a random x."""
    rng = random.Random(9)
    n = 13  # not a power of two: zero-padded to 16
    d = EvaluationDomain.for_size(n)
    a = [rng.randrange(R) for _ in range(n)]
    b = [rng.randrange(R) for _ in range(n)]
    c = [x * y % R for x, y in zip(a, b, strict=True)]
    h = fr_from_array(be.h_poly(fr_to_array(a), fr_to_array(b), fr_to_array(c)))
    assert len(h) == d.size - 1

    def interp(vals):
        return fr_from_array(be.intt(fr_to_array(vals + [0] * (d.size - len(vals)))))

    pa, pb, pc = interp(a), interp(b), interp(c)
    x = rng.randrange(R)
    lhs = (_eval_poly(pa, x) * _eval_poly(pb, x) - _eval_poly(pc, x)) % R
    assert lhs == _eval_poly(h, x) * d.z_at(x) % R
    # a c that does not vanish gives an H that fails the identity
    c[0] = (c[0] + 1) % R
    h_bad = fr_from_array(be.h_poly(fr_to_array(a), fr_to_array(b), fr_to_array(c)))
    pc_bad = interp(c)
    lhs_bad = (_eval_poly(pa, x) * _eval_poly(pb, x) - _eval_poly(pc_bad, x)) % R
    assert lhs_bad != _eval_poly(h_bad, x) * d.z_at(x) % R


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_h_poly_takes_thunks_in_order(native):
    """Zero-argument callables in place of a, b, c: each called once, a then b
    then c, and the same H as from the arrays."""
    cpu = CpuBackend(native=native)
    rng = np.random.default_rng(11)
    arrs = [fr_random(n, rng) for n in (13, 16, 5)]
    calls = []

    def thunk(name, x):
        def call():
            calls.append(name)
            return x.copy()

        return call

    want = cpu.h_poly(*arrs)
    thunks = [thunk(n, x) for n, x in zip("abc", arrs, strict=True)]
    assert np.array_equal(cpu.h_poly(*thunks), want)
    assert calls == ["a", "b", "c"]
    assert np.array_equal(cpu.h_poly(arrs[0], thunk("b", arrs[1]), arrs[2]), want)
    assert calls == ["a", "b", "c", "b"]


def _edge_scalars(n, rng):
    pool = [0, 1, R - 1, 2]
    return [rng.choice(pool) if rng.random() < 0.5 else rng.randrange(R) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 7, 33])
def test_msm_g1_matches_naive_sum(n):
    rng = random.Random(n)
    pts = [pairing.g1_mul(G1.generator, rng.randrange(1, R)) for _ in range(n)]
    if n > 3:
        pts[1] = pts[0]  # equal points
        pts[2] = G1.neg(pts[0])  # negated point
        pts[3] = None  # infinity among the bases
    ks = _edge_scalars(n, rng)
    bases = be.prepare_g1(g1_to_array(pts))
    assert be.msm_g1(bases, fr_to_array(ks)) == G1.msm(pts, ks)
    # fewer scalars than bases: the rest count as zero
    assert be.msm_g1(bases, fr_to_array(ks[: n // 2])) == G1.msm(pts[: n // 2], ks[: n // 2])


@pytest.mark.parametrize("n", [1, 9])
def test_msm_g2_matches_naive_sum(n):
    rng = random.Random(50 + n)
    pts = [pairing.g2_mul(G2.generator, rng.randrange(1, R)) for _ in range(n)]
    ks = _edge_scalars(n, rng)
    got = be.msm_g2(be.prepare_g2(g2_to_array(pts)), fr_to_array(ks))
    expected = None
    for p, k in zip(pts, ks, strict=True):
        expected = G2.add(expected, pairing.g2_mul(p, k))
    assert got == expected


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_gathered_scalar_sets_are_their_gathered_arrays(native):
    """msm_g1_many / msm_g2_many over Gathered sets (rows of an assignment by a
    prepared index, as the lean prover gives the a and b queries) equal the
    MSMs of the gathered arrays, bit for bit."""
    from cuzk.backends.base import Gathered

    if native and not CpuBackend(native=None).native:
        pytest.skip("the native kernels are not built here")
    cpu = CpuBackend(native=native)
    rng = random.Random(71)
    g1 = [pairing.g1_mul(G1.generator, rng.randrange(1, R)) for _ in range(6)]
    g2 = [pairing.g2_mul(G2.generator, rng.randrange(1, R)) for _ in range(3)]
    w = fr_to_array(_edge_scalars(10, rng))
    idx = cpu.prepare_index(np.array([9, 0, 4, 4, 7, 1]))
    sets = [Gathered(w, idx), Gathered(w, cpu.prepare_index(np.array([], dtype=np.int64)))]
    assert len(sets[0]) == 6 and sets[0].shape == (6, 4) and sets[1].shape == (0, 4)
    plain = [w[[9, 0, 4, 4, 7, 1]], w[:0]]
    b1, b2 = cpu.prepare_g1(g1_to_array(g1)), cpu.prepare_g2(g2_to_array(g2))
    assert cpu.msm_g1_many(b1, sets) == cpu.msm_g1_many(b1, plain)
    assert cpu.msm_g1_many(b1, sets)[0] == G1.msm(g1, fr_from_array(plain[0]))
    three = [Gathered(w, cpu.prepare_index(np.array([2, 3, 5])))]
    assert cpu.msm_g2_many(b2, three) == [cpu.msm_g2(b2, w[[2, 3, 5]])]


def test_msm_rejects_more_scalars_than_bases():
    bases = be.prepare_g1(g1_to_array([G1.generator]))
    with pytest.raises(ValueError, match="2 scalars over 1 bases"):
        be.msm_g1(bases, fr_to_array([1, 2]))


@settings(max_examples=25, deadline=None)
@given(
    st.integers(min_value=0, max_value=6).flatmap(
        lambda k: st.lists(st.integers(0, R - 1), min_size=1 << k, max_size=1 << k)
    )
)
def test_ntt_round_trip_property(values):
    a = fr_to_array(values)
    assert np.array_equal(be.intt(be.ntt(a)), a)
    assert np.array_equal(be.coset_intt(be.coset_ntt(a)), a)
    # linearity: ntt(a + a) = 2·ntt(a)
    doubled = fr_to_array([2 * v % R for v in values])
    assert fr_from_array(be.ntt(doubled)) == [2 * v % R for v in fr_from_array(be.ntt(a))]
