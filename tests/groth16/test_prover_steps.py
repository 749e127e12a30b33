"""The prover's steps: the assignment crosses to the backend once, the a and b
queries' scalars are gathered there with the key's prepared indices (each
gather once, the b scalars feeding both B MSMs), and every step is timed."""

from __future__ import annotations

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem


class Recording(CpuBackend):
    """The CPU backend, noting what crosses its boundary."""

    def __init__(self) -> None:
        super().__init__()
        self.uploads: list[int] = []
        self.gathers: list[tuple[int, int]] = []
        self.msm_inputs: list[int] = []
        self.syncs = 0

    def asarray(self, a):
        self.uploads.append(id(a))
        return super().asarray(a)

    def gather(self, a, idx):
        out = super().gather(a, idx)
        self.gathers.append((id(idx), id(out)))
        return out

    def msm_g1(self, bases, scalars, phases=None):
        self.msm_inputs.append(id(scalars))
        return super().msm_g1(bases, scalars, phases)

    def msm_g2(self, bases, scalars, phases=None):
        self.msm_inputs.append(id(scalars))
        return super().msm_g2(bases, scalars, phases)

    def synchronize(self) -> None:
        self.syncs += 1


def test_scalars_are_gathered_on_the_backend_once_each_and_every_step_timed() -> None:
    circuit = DemoCircuit(rounds=30, words=2)
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1cs = cs0.r1cs()
    pk = setup.setup(r1cs, seed=2)
    be = Recording()
    key = prover.prepare(pk, r1cs, be)
    cs = ConstraintSystem()
    circuit.synthesize(cs, 77, [5, 6])
    assignment = fr_to_array(cs.assignment())
    times = prover.StageTimes()
    proof = prover.prove(key, r1cs, assignment, times=times)
    assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert be.uploads == [id(assignment)]  # the assignment crossed once
    (a_idx, a_out), (b_idx, b_out) = be.gathers
    assert (a_idx, b_idx) == (id(key.a_index), id(key.b_index))  # the key's prepared indices
    assert np.array_equal(key.a_index, key.a_select) and np.array_equal(key.b_index, key.b_select)
    _, _, msm_a, msm_b1, msm_b2 = be.msm_inputs
    assert msm_a == a_out and msm_b1 == msm_b2 == b_out  # one b gather feeds both B MSMs
    assert set(times.seconds) == {"spmv", "h_poly", "msm_g1", "msm_g2", "assemble"}
    assert set(times.detail) == {"upload", "gather", "msm_h", "msm_l", "msm_a", "msm_b_g1"}
    assert set(times.phases) == {"h", "l", "a", "b_g1", "b_g2"}
    # each step waits for the device before its clock stops (msm_g1 is the sum of its steps)
    assert be.syncs == len(times.seconds) + len(times.detail) - 1
    g1 = sum(times.detail[k] for k in ("gather", "msm_h", "msm_l", "msm_a", "msm_b_g1"))
    assert abs(times.seconds["msm_g1"] - g1) < 1e-6  # the G1 stage is its steps
