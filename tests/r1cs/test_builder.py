import numpy as np
import pytest

from cuzk.algebra.fields import R
from cuzk.errors import SynthesisError, UnsatisfiedError
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination
from cuzk.r1cs.builder import AUX, INPUT, Variable


def _small(x=3, y=4):
    cs = ConstraintSystem()
    xi = cs.alloc_input("x", x)
    with cs.namespace("body"):
        yv = cs.alloc("y", y)
        prod = cs.alloc("prod", x * y % R)
        cs.enforce("mul", xi, yv, prod)
        with cs.namespace("inner"):
            s = cs.alloc("sum", (x + y) % R)
            cs.enforce("add", xi + yv, ONE, s)
    return cs


def test_layout_follows_bellperson():
    cs = _small()
    assert cs.num_inputs == 2 and cs.num_aux == 3 and cs.num_constraints == 2
    r1 = cs.r1cs()
    # the input constraints x_i · 0 = 0 are appended, ONE included
    assert r1.num_constraints == 2 + 2
    assert r1.constraint_names[-2:] == ("input 0", "input 1")
    assert r1.constraint_names[:2] == ("body/mul", "body/inner/add")
    assert r1.b.indptr[-1] == r1.b.indptr[-3]  # input rows have empty B and C
    # columns: inputs first (ONE = 0), then aux
    assert list(r1.a.indices[r1.a.indptr[0] : r1.a.indptr[1]]) == [1]
    assert list(r1.b.indices[r1.b.indptr[0] : r1.b.indptr[1]]) == [2]
    assert cs.assignment() == [1, 3, 4, 12, 7]
    assert cs.public_inputs() == [3]
    assert r1.is_satisfied(cs.assignment())


def test_first_failing_constraint_is_named():
    cs = _small()
    r1 = cs.r1cs()
    w = cs.assignment()
    w[4] = (w[4] + 1) % R
    with pytest.raises(UnsatisfiedError, match="body/inner/add"):
        r1.check_satisfied(w)
    w = cs.assignment()
    w[3] = 13
    with pytest.raises(UnsatisfiedError, match="body/mul"):
        r1.check_satisfied(w)
    assert not r1.is_satisfied(np.zeros((5, 4), dtype=np.uint64))


def test_linear_combinations_merge_terms():
    a, b = Variable(AUX, 0), Variable(INPUT, 1)
    lc = a + b + a - b
    assert lc.terms == {a: 2, b: 0}
    assert (3 * a).terms == {a: 3}
    assert (-(a + 5)).terms == {a: R - 1, ONE: R - 5}
    assert LinearCombination.from_terms([(2, a), (3, a)]).terms == {a: 5}


def test_zero_coefficients_are_dropped_from_the_matrices():
    cs = ConstraintSystem()
    x = cs.alloc("x", 2)
    cs.enforce("cancel", x - x + ONE, ONE, ONE)
    r1 = cs.r1cs()
    assert r1.a.nnz == 1 + 1  # ONE in the first row, ONE's input constraint
    assert r1.is_satisfied(cs.assignment())


def test_setup_mode_needs_no_values_and_proving_mode_does():
    cs = ConstraintSystem(witness=False)
    x = cs.alloc("x")
    cs.enforce("sq", x, x, x)
    assert cs.r1cs().num_constraints == 2
    with pytest.raises(SynthesisError, match="values are not tracked"):
        cs.value(x)
    cs2 = ConstraintSystem()
    with cs2.namespace("ns"), pytest.raises(SynthesisError, match="no value for ns/x"):
        cs2.alloc("x")


def test_finished_system_is_closed():
    cs = _small()
    cs.r1cs()
    with pytest.raises(SynthesisError, match="finished"):
        cs.alloc("late", 1)
