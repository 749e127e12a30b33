import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.circuits.demo import DemoCircuit
from cuzk.r1cs import ConstraintSystem


def test_tiled_system_is_satisfied_by_the_tiled_assignment_only():
    cs = ConstraintSystem()
    DemoCircuit(rounds=5, words=1).synthesize(cs, 3, [7])
    r1 = cs.r1cs()
    w = fr_to_array(cs.assignment())
    t = r1.tiled(3)
    assert t.num_inputs == r1.num_inputs and t.num_aux == 3 * r1.num_aux
    assert t.num_constraints == 3 * r1.num_constraints
    assert t.a.nnz == 3 * r1.a.nnz
    tw = r1.tile_assignment(w, 3)
    assert t.is_satisfied(tw)
    # a change in the last copy's aux breaks it
    bad = tw.copy()
    vals = cs.assignment()
    bad[-1] = fr_to_array([(vals[-1] + 1) % R])[0]
    assert not t.is_satisfied(bad)
    assert np.array_equal(r1.tiled(1).a.indices, r1.a.indices)
