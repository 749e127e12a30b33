"""prove_partition: the one path by which the daemon's GPU workers and
``cuzk-bench prove-c1`` prove a partition (a small demo circuit on the CPU)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.prove import DeviceWitness, Scopes, prove_partition, verify_partition
from cuzk.errors import InputError
from cuzk.groth16 import prover, setup
from cuzk.r1cs import ConstraintSystem


@pytest.fixture(scope="module")
def demo():
    circuit = DemoCircuit(rounds=10, words=1)
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1 = cs0.r1cs()
    key = prover.prepare(setup.setup(r1, seed=5), r1, CpuBackend())
    cs = ConstraintSystem()
    circuit.synthesize(cs, 77, [0xC0FFEE])
    return key, r1, fr_to_array(cs.assignment()), list(cs.public_inputs())


class _Plan:
    """A static plan's stand-in: its "hint table" is the assignment itself."""

    def run_table(self, maker, hints):
        maker.made += 1
        return np.array(hints)


class _Maker:
    def __init__(self) -> None:
        self.made = self.freed = 0

    def free(self, W) -> None:
        self.freed += 1


class _Recording(Scopes):
    def __init__(self) -> None:
        self.entered: list[str] = []

    @contextlib.contextmanager
    def witness(self):
        self.entered.append("witness")
        yield

    @contextlib.contextmanager
    def proving(self, times, after_device_witness):
        self.entered.append(f"proving after_device_witness={after_device_witness}")
        yield


def test_a_host_assignment_is_proven_and_verified(demo) -> None:
    key, r1, W, inputs = demo
    scopes = _Recording()
    done = prove_partition(
        key, r1, W, inputs, source="c.json", partition=0, scopes=scopes, verify_with=key.vk
    )
    assert done.verified is True and done.prove_s > 0 and done.witness_s == 0
    assert "msm_g1" in done.times.seconds
    assert scopes.entered == ["proving after_device_witness=False"]
    assert verify_partition(key.vk, inputs, done.proof)
    wrong = [(inputs[0] + 1), *inputs[1:]]
    assert not verify_partition(key.vk, wrong, done.proof)
    # without a verifying key the caller verifies (the daemon's epilogue)
    assert prove_partition(key, r1, W, inputs, source="c.json", partition=0).verified is None


def test_a_device_witness_is_made_checked_proven_and_freed(demo) -> None:
    key, r1, W, inputs = demo
    maker, scopes = _Maker(), _Recording()
    done = prove_partition(
        key,
        r1,
        DeviceWitness(_Plan(), maker, W),
        inputs,
        source="c.json",
        partition=2,
        scopes=scopes,
        verify_with=key.vk,
    )
    assert done.verified is True and done.times.detail["witness"] == done.witness_s > 0
    assert (maker.made, maker.freed) == (1, 1)
    assert scopes.entered == ["witness", "witness", "proving after_device_witness=True"]


def test_a_device_witness_without_the_requests_inputs_is_refused_and_freed(demo) -> None:
    key, r1, W, inputs = demo
    maker = _Maker()
    wrong = [(inputs[0] + 1), *inputs[1:]]
    with pytest.raises(InputError, match=r"c\.json: partition 3: the witness does not carry"):
        prove_partition(
            key, r1, DeviceWitness(_Plan(), maker, W), wrong, source="c.json", partition=3
        )
    assert (maker.made, maker.freed) == (1, 1)


def test_a_groups_shared_passes_run_a_pass_at_a_time_then_in_turn(demo) -> None:
    """SharedPasses.run with ``ending`` true after each pass: one pass a call
    (as beside carriers whose H MSMs end first), the proofs set on the parts
    only after the last; finish_partitions runs the rest in turn. Every
    proof verifies."""
    from cuzk.engine.prove import SharedPasses, finish_partitions

    key, r1, w, inputs = demo
    queries = prover.SIDE_QUERIES
    parts = [
        prove_partition(key, r1, w.copy(), inputs, source="t", partition=j, defer=queries)
        for j in range(2)
    ]
    passes = SharedPasses(parts)
    assert not passes.run(key, ending=lambda: True)
    assert passes.finishing.left == list(queries[1:]) and parts[0].proof is None
    assert not passes.run(key, ending=lambda: True)
    assert finish_partitions(key, parts, passes=passes) > 0
    assert passes.done and passes.finishing.done
    for p in parts:
        assert p.deferred is None and verify_partition(key.vk, inputs, p.proof)
