"""Groth16 proofs of the PoSt circuits: 2KiB on the CPU backend, 32GiB WinningPoSt on the GPU."""

from __future__ import annotations

import pytest

from cuzk.algebra.fields import R
from cuzk.backends import get_backend
from cuzk.circuits.post.circuit import compile_post, public_inputs, witness
from cuzk.circuits.post.config import WINDOW, WINNING, post_config
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.groth16 import prover, setup, verifier

RND = bytes(range(32))


@pytest.mark.slow
@pytest.mark.parametrize("kind", [WINDOW, WINNING])
def test_2kib_post_proof_verifies(kind):
    config = post_config(kind, "2KiB")
    cc = compile_post(config)
    r1cs = cc.to_r1cs()
    pk = setup.setup(r1cs, seed=7)  # a development key (INSECURE, seeded)
    key = prover.prepare(pk, r1cs, get_backend("cpu"))
    sectors = [generate_sector_proof(config, RND, 11 + i, i) for i in range(config.sector_count)]
    w = witness(cc, config, sectors)
    proof = prover.prove(key, r1cs, w)
    pub = public_inputs(config, RND, [(s.sector_id, s.comm_r) for s in sectors])
    assert verifier.verify(pk.vk, pub, proof)
    wrong = list(pub)
    wrong[1] = (wrong[1] + 1) % (1 << 64)  # another challenged leaf
    assert not verifier.verify(pk.vk, wrong, proof)


@pytest.mark.gpu
@pytest.mark.slow
def test_32gib_winning_post_proof_on_the_gpu():
    """The real-size WinningPoSt circuit (370,723 constraints) through the CUDA backend."""
    from cuzk.groth16.setup_gpu import setup_gpu

    config = post_config(WINNING, "32GiB")
    cc = compile_post(config)
    r1cs = cc.to_r1cs()
    pk = setup_gpu(r1cs, seed=7)  # a development key (INSECURE, seeded), made on the GPU
    gpu_key = prover.prepare(pk, r1cs, get_backend("cuda"))
    sectors = [generate_sector_proof(config, RND, 11, 0)]
    w = witness(cc, config, sectors)
    pub = public_inputs(config, RND, [(s.sector_id, s.comm_r) for s in sectors])
    proof = prover.prove(gpu_key, r1cs, w)
    assert verifier.verify(pk.vk, pub, proof)
    wrong = list(pub)
    wrong[0] = (wrong[0] + 1) % R  # another comm_r
    assert not verifier.verify(pk.vk, wrong, proof)
    # bit-compatible with the CPU backend for the same r, s
    cpu_key = prover.prepare(pk, r1cs, get_backend("cpu"))
    assert prover.prove(gpu_key, r1cs, w, r=5, s=6) == prover.prove(cpu_key, r1cs, w, r=5, s=6)
