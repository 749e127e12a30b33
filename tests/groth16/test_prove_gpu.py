"""A whole Groth16 proof on the GPU: the CUDA backend's proof bytes equal the CPU's."""

from __future__ import annotations

import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem


@pytest.mark.gpu
@pytest.mark.parametrize("rounds, words", [(40, 2), (1500, 12)])
def test_cuda_proof_bytes_equal_cpu_and_verify(rounds, words):
    from cuzk.backends.cuda import CudaBackend

    circuit = DemoCircuit(rounds=rounds, words=words)
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1cs = cs0.r1cs()
    pk = setup.setup(r1cs, seed=rounds)
    cs = ConstraintSystem()
    circuit.synthesize(
        cs, 987654321, [(0x9E3779B97F4A7C15 * (i + 1)) % 2**64 for i in range(words)]
    )
    assignment = fr_to_array(cs.assignment())
    r, s = 0x1234567 * rounds % R, R - 5
    gpu = CudaBackend()
    proofs = {}
    for be in (CpuBackend(), gpu):
        key = prover.prepare(pk, r1cs, be)
        proofs[be.name] = prover.prove(key, r1cs, assignment, r=r, s=s)
    assert proofs["cuda"].to_bytes() == proofs["cpu"].to_bytes()
    assert verifier.verify(pk.vk, cs.public_inputs(), proofs["cuda"])
