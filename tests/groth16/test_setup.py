"""The setup's query scalars: native kernels against the Python-int reference.

:func:`setup.query_scalars` (arrays, C kernels) and
:func:`setup.query_scalars_python` (the reference on Python ints) must agree
bit for bit on every query, raise the same errors, and so give byte-identical
seeded keys.
"""

import random

import numpy as np
import pytest

from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends import native
from cuzk.circuits.demo import DemoCircuit
from cuzk.errors import SynthesisError
from cuzk.groth16 import setup
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.system import R1CS

QUERIES = ("ic", "l", "h", "a", "b")


@pytest.fixture(autouse=True)
def _require_native():
    if not native.available():
        pytest.fail(f"native kernels not built ({native.unavailable_reason()}): pip install -e .")


def assert_same_scalars(x: setup.QueryScalars, y: setup.QueryScalars) -> None:
    assert x.waste == y.waste
    for name in QUERIES:
        u, v = getattr(x, name), getattr(y, name)
        assert u.dtype == v.dtype == np.uint64, name
        assert u.shape == v.shape, name
        assert np.array_equal(u, v), name


def random_r1cs(seed: int, rows: int, inputs: int, aux: int) -> R1CS:
    """A random R1CS (not necessarily satisfiable: the setup does not care).

    Coefficients 1, −1, 0 and random; every aux variable appears in C so none is
    unconstrained; some variables appear in neither A nor B (empty columns,
    which get no A / B query point).
    """
    rng = random.Random(seed)
    nv = inputs + aux
    skip_a = set(rng.sample(range(inputs, nv), aux // 4))
    skip_b = set(rng.sample(range(nv), nv // 3))

    def row(skip: set[int]) -> list[tuple[int, int]]:
        cols = [j for j in rng.sample(range(nv), min(nv, rng.randrange(5))) if j not in skip]
        return [(j, rng.choice([1, R - 1, 0, rng.randrange(R)])) for j in cols]

    a = [row(skip_a) for _ in range(rows)]
    b = [row(skip_b) for _ in range(rows)]
    c = [row(set()) for _ in range(rows)]
    for k, j in enumerate(range(inputs, nv)):
        c[k % rows].append((j, rng.randrange(1, R)))
    return R1CS(
        inputs,
        aux,
        SparseMatrix.from_rows(a, nv),
        SparseMatrix.from_rows(b, nv),
        SparseMatrix.from_rows(c, nv),
    )


def demo_r1cs(constraints: int) -> R1CS:
    cs = ConstraintSystem(witness=False)
    DemoCircuit.with_constraints(constraints).synthesize(cs, None, None)
    return cs.r1cs()


@pytest.mark.parametrize(
    ("rows", "inputs", "aux"), [(1, 1, 0), (2, 1, 1), (5, 2, 3), (33, 3, 40), (700, 4, 900)]
)
def test_native_query_scalars_match_the_python_reference(rows, inputs, aux):
    r1 = random_r1cs(rows * 1000 + aux, rows, inputs, aux)
    for seed in (1, 2):
        w = setup.ToxicWaste.draw(seed)
        q = setup.query_scalars(r1, w)
        assert_same_scalars(q, setup.query_scalars_python(r1, w))
        m = EvaluationDomain.for_size(rows).size
        assert len(q.ic) == inputs and len(q.l) == aux and len(q.h) == m - 1
        assert len(q.a) == inputs + int(r1.a_aux_density().sum())
        assert len(q.b) == int(r1.b.column_mask().sum())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_threaded_query_scalars_on_a_demo_circuit(threads):
    """A few thousand constraints: every kernel's threaded path is taken."""
    r1 = demo_r1cs(6000)
    w = setup.ToxicWaste.draw(9)
    old = native.threads()
    native.set_threads(threads)
    try:
        q = setup.query_scalars(r1, w)
    finally:
        native.set_threads(old)
    assert_same_scalars(q, setup.query_scalars_python(r1, w))


def test_tau_in_the_domain_is_refused_by_both_paths():
    r1 = random_r1cs(3, 5, 2, 3)
    omega = EvaluationDomain.for_size(r1.num_constraints).omega
    for tau in (1, omega, pow(omega, 5, R)):
        w = setup.ToxicWaste(tau, 2, 3, 4, 5)
        for fn in (setup.query_scalars, setup.query_scalars_python):
            with pytest.raises(SynthesisError, match="τ fell in the evaluation domain"):
                fn(r1, w)


def test_an_unconstrained_aux_variable_is_named_by_both_paths():
    r1 = random_r1cs(4, 6, 2, 4)
    # three more aux variables that appear nowhere: the first is aux 4
    r1 = R1CS(
        r1.num_inputs,
        r1.num_aux + 3,
        *(SparseMatrix(m.indptr, m.indices, m.coeffs, m.num_cols + 3) for m in (r1.a, r1.b, r1.c)),
    )
    w = setup.ToxicWaste.draw(3)
    for fn in (setup.query_scalars, setup.query_scalars_python):
        with pytest.raises(SynthesisError, match="aux variable 4 is unconstrained"):
            fn(r1, w)


def test_seeded_keys_are_byte_identical_between_the_two_paths(monkeypatch):
    r1 = demo_r1cs(300)
    fast = setup.setup(r1, seed=21)
    monkeypatch.setenv("CUZK_CPU_NATIVE", "0")  # Python scalars, arkworks points
    slow = setup.setup(r1, seed=21)
    assert fast.vk == slow.vk
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        x, y = getattr(fast, name), getattr(slow, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name
