"""The prover's steps: the assignment crosses to the backend once, the a and b
queries' scalars are gathered there with the key's prepared indices (each
gather once, the b scalars feeding both B MSMs), and every step is timed."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem
from thread_branch import ThreadBranch


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


def _demo():
    circuit = DemoCircuit(rounds=30, words=2)
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1cs = cs0.r1cs()
    pk = setup.setup(r1cs, seed=2)
    cs = ConstraintSystem()
    circuit.synthesize(cs, 77, [5, 6])
    return r1cs, pk, cs


def test_scalars_are_gathered_on_the_backend_once_each_and_every_step_timed() -> None:
    r1cs, pk, cs = _demo()
    be = Recording()
    key = prover.prepare(pk, r1cs, be)
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


class Forking(Recording):
    """The recording backend with the fork capability: the branch runs in a
    thread of its own (as the CUDA backend's does), each MSM noting its thread."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.forks: list[tuple[int, int]] = []
        self.msm_threads: list[str] = []
        self.gather_threads: list[str] = []
        self.fail = fail

    def fork(self, domain_size: int, num_variables: int, share: int | None = None):
        self.forks.append((domain_size, num_variables))
        return ThreadBranch()

    def gather(self, a, idx):
        self.gather_threads.append(threading.current_thread().name)
        return super().gather(a, idx)

    def msm_g1(self, bases, scalars, phases=None):
        self.msm_threads.append(threading.current_thread().name)
        if self.fail and threading.current_thread().name == "side":
            raise RuntimeError("side MSM failed")
        return super().msm_g1(bases, scalars, phases)

    def msm_g2(self, bases, scalars, phases=None):
        self.msm_threads.append(threading.current_thread().name)
        return super().msm_g2(bases, scalars, phases)


def test_a_forking_backend_runs_the_side_msms_beside_h() -> None:
    """L, A and B (G1 and G2) and their gathers run on the branch, H's MSM on the
    calling thread; the proof is the one the same r, s give in turn."""
    r1cs, pk, cs = _demo()
    assignment = fr_to_array(cs.assignment())
    be = Forking()
    times = prover.StageTimes()
    proof = prover.prove(prover.prepare(pk, r1cs, be), r1cs, assignment, r=3, s=4, times=times)
    plain = prover.prove(prover.prepare(pk, r1cs, CpuBackend()), r1cs, assignment, r=3, s=4)
    assert proof.to_bytes() == plain.to_bytes()
    assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    m = 1 << (r1cs.num_constraints - 1).bit_length()
    assert be.forks == [(m, r1cs.num_variables)]
    me = threading.current_thread().name
    assert be.msm_threads.count(me) == 1 and be.msm_threads.count("side") == 4  # H here
    assert be.gather_threads == ["side", "side"]
    assert set(times.detail) == {
        *("upload", "gather", "msm_h", "msm_l", "msm_a", "msm_b_g1", "side_wait"),
    }
    g1 = sum(times.detail[k] for k in ("gather", "msm_h", "msm_l", "msm_a", "msm_b_g1"))
    assert abs(times.seconds["msm_g1"] - g1) < 1e-6
    # one StageTimes over two proofs (the demo and gpu-proof commands): the sums
    prover.prove(prover.prepare(pk, r1cs, be), r1cs, assignment, r=3, s=4, times=times)
    g1 = sum(times.detail[k] for k in ("gather", "msm_h", "msm_l", "msm_a", "msm_b_g1"))
    assert abs(times.seconds["msm_g1"] - g1) < 1e-6


def test_a_failed_side_msm_fails_the_proof_after_the_join() -> None:
    r1cs, pk, cs = _demo()
    be = Forking(fail=True)
    key = prover.prepare(pk, r1cs, be)
    with pytest.raises(RuntimeError, match="side MSM failed"):
        prover.prove(key, r1cs, fr_to_array(cs.assignment()))
    # the branch was joined, not left running
    assert all(t.name != "side" for t in threading.enumerate())
