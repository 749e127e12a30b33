"""The native setup kernels (qap.c) against their Python-int twins, bit for bit.

Each kernel runs in both Montgomery arithmetics and with 1, 2 and 3 threads
(the Lagrange basis splits its batch inversion per thread; the transposed
product gives each thread a column range balanced by entry counts).
"""

import random

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends import native

ARITHS = ["adx", "portable"] if native.available() and native.adx_supported() else ["portable"]


@pytest.fixture(autouse=True)
def _require_native():
    if not native.available():
        pytest.fail(f"native kernels not built ({native.unavailable_reason()}): pip install -e .")


@pytest.fixture(params=[(a, t) for a in ARITHS for t in (1, 2, 3)], ids=lambda p: f"{p[0]}-t{p[1]}")
def mode(request):
    arith, threads = request.param
    old_arith, old_threads = native.arithmetic(), native.threads()
    native.set_arithmetic(arith)
    native.set_threads(threads)
    yield request.param
    native.set_arithmetic(old_arith)
    native.set_threads(old_threads)


@pytest.mark.parametrize("log_m", [0, 1, 2, 5, 13])
def test_lagrange_at_matches_the_domain(mode, log_m):
    rng = random.Random(log_m)
    d = EvaluationDomain(log_m)
    for tau in (rng.randrange(R), 0, R - 1 if log_m == 0 else 2):
        if d.z_at(tau) == 0:
            continue
        ref = d.lagrange_at(tau)
        # every length a setup asks for: n in (m/2, m], and the degenerate ones
        for n in sorted({0, 1, d.size // 2 + 1, d.size - 1, d.size}):
            if n <= d.size:
                got = native.lagrange_at(d, tau, n)
                assert got.shape == (n, 4)
                assert fr_from_array(got) == ref[:n]


def test_lagrange_at_is_the_inverse_ntt_of_powers():
    """L(τ) = iNTT(1, τ, τ², …): the two ways of computing it agree."""
    d = EvaluationDomain(10)
    tau = random.Random(3).randrange(R)
    assert np.array_equal(
        native.lagrange_at(d, tau), native.ntt(native.powers(1, tau, d.size), True)
    )


def test_lagrange_at_rejects_points_of_the_domain_and_long_outputs():
    d = EvaluationDomain(4)
    for w in (1, d.omega, pow(d.omega, 7, R)):
        with pytest.raises(ValueError, match="tau lies in the domain"):
            native.lagrange_at(d, w)
    with pytest.raises(ValueError, match="Lagrange values"):
        native.lagrange_at(d, 5, d.size + 1)


def _random_matrix(rng: random.Random, rows: int, cols: int, per_row: int) -> SparseMatrix:
    """Coefficients 1, −1, 0 (explicit) and random; a heavy column 0; some empty
    rows; columns in [cols − 3, cols) never used (empty columns)."""
    used = max(1, cols - 3)
    out = []
    for i in range(rows):
        if i % 17 == 5:
            out.append([])
            continue
        base = rng.randrange(used)
        # column 0 (ONE) in many rows, as in a circuit
        row = [(0, rng.choice([1, R - 1, 0, rng.randrange(R)]))] if rng.random() < 0.3 else []
        for _ in range(rng.randrange(per_row + 1)):
            # mostly near the row's own block of columns, as circuits allocate them
            col = (base + rng.randrange(8)) % used if rng.random() < 0.8 else rng.randrange(used)
            row.append((col, rng.choice([1, R - 1, 0, rng.randrange(R), rng.randrange(R)])))
        out.append(row)
    return SparseMatrix.from_rows(out, cols)


@pytest.mark.parametrize(
    ("rows", "cols"), [(1, 1), (9, 4), (300, 120), (2000, 900), (6000, 5000), (3000, 1)]
)
def test_rmatvec_and_density_match_the_reference(mode, rows, cols):
    rng = random.Random(rows * 7 + cols)
    m = _random_matrix(rng, rows, cols, 5)
    v = [rng.choice([0, 1, R - 1, rng.randrange(R)]) for _ in range(rows)]
    density = np.zeros(cols, dtype=bool)
    got = native.rmatvec(m, fr_to_array(v), density)
    assert fr_from_array(got) == m.rmatvec(v)
    assert np.array_equal(density, m.column_mask())
    assert np.array_equal(native.rmatvec(m, fr_to_array(v)), got)  # without the density


@pytest.mark.parametrize("threads", [4, 7, 64, 65])
def test_rmatvec_with_more_threads_than_columns_or_stripes(threads):
    """Column ranges clamp and may be empty; more than 64 threads share stripe bits."""
    old = native.threads()
    native.set_threads(threads)
    try:
        for rows, cols in ((2500, 3), (2500, 2), (5000, 700)):
            rng = random.Random(rows + cols)
            m = _random_matrix(rng, rows, cols, 3)
            v = [rng.randrange(R) for _ in range(rows)]
            density = np.zeros(cols, dtype=bool)
            assert fr_from_array(native.rmatvec(m, fr_to_array(v), density)) == m.rmatvec(v)
            assert np.array_equal(density, m.column_mask())
    finally:
        native.set_threads(old)


def test_rmatvec_column_zero_with_only_zero_coefficients():
    m = SparseMatrix.from_rows([[(0, 0), (1, 2)] for _ in range(5000)], 2)
    density = np.zeros(2, dtype=bool)
    out = native.rmatvec(m, fr_to_array(range(5000)), density)
    assert list(density) == [False, True]
    assert fr_from_array(out) == [0, 2 * sum(range(5000)) % R]


def test_rmatvec_of_an_empty_matrix():
    m = SparseMatrix.from_rows([[], []], 3)
    density = np.ones(3, dtype=bool)
    out = native.rmatvec(m, fr_to_array([5, 6]), density)
    assert not out.any() and not density.any()
    none = SparseMatrix.from_rows([], 0)
    assert native.rmatvec(none, np.zeros((0, 4), np.uint64)).shape == (0, 4)


def test_rmatvec_rejects_bad_shapes():
    m = SparseMatrix.from_rows([[(0, 1)], [(1, 2)]], 2)
    with pytest.raises(ValueError, match="vector of 3"):
        native.rmatvec(m, fr_to_array([1, 2, 3]))
    with pytest.raises(ValueError, match="column density"):
        native.rmatvec(m, fr_to_array([1, 2]), np.zeros(3, dtype=bool))


def test_rmatvec_reduces_unreduced_inputs():
    m = SparseMatrix.from_rows([[(0, 3)], [(0, 1), (1, 5)]], 2)
    v = np.array([[0xFFFFFFFFFFFFFFFF] * 4, [7, 0, 0, 0]], dtype=np.uint64)
    big = int.from_bytes(v[0].tobytes(), "little")
    assert fr_from_array(native.rmatvec(m, v)) == m.rmatvec([big % R, 7])


@pytest.mark.parametrize("n", [0, 1, 5, 5000])
def test_powers(mode, n):
    rng = random.Random(n)
    start, ratio = rng.randrange(R), rng.randrange(R)
    ref, p = [], start
    for _ in range(n):
        ref.append(p)
        p = p * ratio % R
    assert fr_from_array(native.powers(start, ratio, n)) == ref


@pytest.mark.parametrize("n", [0, 3, 5000])
def test_qap_combine_and_its_first_zero(mode, n):
    rng = random.Random(n + 1)
    beta, alpha, scale = (rng.randrange(1, R) for _ in range(3))
    a, b = ([rng.randrange(R) for _ in range(n)] for _ in range(2))
    c = [rng.randrange(R) for _ in range(n)]
    for j in (n // 2, n - 1)[: 2 if n else 0]:  # make two outputs zero
        c[j] = -(beta * a[j] + alpha * b[j]) % R
    ref = [(beta * x + alpha * y + z) * scale % R for x, y, z in zip(a, b, c, strict=True)]
    ca = fr_to_array(c) if n else np.zeros((0, 4), np.uint64)
    aa = fr_to_array(a) if n else np.zeros((0, 4), np.uint64)
    ba = fr_to_array(b) if n else np.zeros((0, 4), np.uint64)
    out, first = native.qap_combine(aa, ba, ca, beta, alpha, scale)
    assert fr_from_array(out) == ref
    assert first == (ref.index(0) if 0 in ref else None)
    # in place over c
    out2, first2 = native.qap_combine(aa, ba, ca, beta, alpha, scale, out=ca)
    assert out2 is ca and fr_from_array(ca) == ref and first2 == first
