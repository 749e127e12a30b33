"""Groth16 proofs of the 2KiB PoSt circuits on the CPU backend, verified."""

from __future__ import annotations

import pytest

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
