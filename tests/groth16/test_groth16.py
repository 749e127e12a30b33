"""Groth16 end to end on the CPU: setup, prove, verify, tamper."""

import random

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.errors import InputError
from cuzk.groth16 import prover, setup, verifier
from cuzk.groth16.proof import Proof, decode_proofs, encode_proofs
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination

be = CpuBackend()


def random_circuit(seed: int, witness: bool = True):
    """A random satisfiable circuit: products of random linear combinations."""
    rng = random.Random(seed)
    cs = ConstraintSystem(witness=witness)
    vars_ = [ONE]
    for i in range(rng.randint(1, 4)):
        vars_.append(cs.alloc_input(f"in {i}", rng.randrange(R)))
    for i in range(rng.randint(1, 3)):
        vars_.append(cs.alloc(f"free {i}", rng.choice([0, 1, rng.randrange(R)])))
    for i in range(rng.randint(5, 40)):

        def lc():
            out = LinearCombination()
            for v in rng.sample(vars_, rng.randint(1, min(4, len(vars_)))):
                out.add_term(v, rng.choice([1, R - 1, rng.randrange(R)]))
            return out

        a, b = lc(), lc()
        val = cs.eval(a) * cs.eval(b) % R if witness else None
        out = cs.alloc(f"prod {i}", val)
        cs.enforce(f"c {i}", a, b, out)
        vars_.append(out)
    # every free variable must be constrained (bellperson refuses unconstrained aux)
    for v in vars_:
        cs.enforce("touch", v, ONE, v)
    return cs


@pytest.fixture(scope="module")
def demo():
    circuit = DemoCircuit(rounds=40, words=2)
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1 = cs0.r1cs()
    pk = setup.setup(r1, seed=7)
    key = prover.prepare(pk, r1, be)
    cs = ConstraintSystem()
    circuit.synthesize(cs, 12345, [0xDEADBEEF, 2**64 - 1])
    proof = prover.prove(key, r1, fr_to_array(cs.assignment()))
    return circuit, r1, pk, key, cs, proof


def test_demo_proof_verifies(demo):
    circuit, r1, pk, _, cs, proof = demo
    assert r1.is_satisfied(cs.assignment())
    assert cs.public_inputs()[1] == circuit.evaluate(12345, [0xDEADBEEF, 2**64 - 1])
    assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert Proof.from_bytes(proof.to_bytes()) == proof


def test_every_flipped_proof_byte_is_rejected(demo):
    _, _, pk, _, cs, proof = demo
    raw = proof.to_bytes()
    for i in range(len(raw)):
        bad = bytearray(raw)
        bad[i] ^= 1 << (i % 8)
        try:
            tampered = Proof.from_bytes(bytes(bad))
        except InputError:
            continue  # not even a valid encoding
        assert not verifier.verify(pk.vk, cs.public_inputs(), tampered), f"byte {i}"


def test_every_changed_public_input_is_rejected(demo):
    _, _, pk, _, cs, proof = demo
    inputs = cs.public_inputs()
    for i in range(len(inputs)):
        changed = list(inputs)
        changed[i] = (changed[i] + 1) % R
        assert not verifier.verify(pk.vk, changed, proof)


def test_every_changed_witness_value_breaks_satisfaction(demo):
    _, r1, _, _, cs, _ = demo
    w = cs.assignment()
    for i in range(1, len(w)):
        changed = list(w)
        changed[i] = (changed[i] + 1) % R
        assert not r1.is_satisfied(changed), f"variable {i}"


def test_an_unsatisfying_witness_gives_a_proof_that_fails(demo):
    _, r1, pk, key, cs, _ = demo
    w = cs.assignment()
    w[5] = (w[5] + 1) % R
    proof = prover.prove(key, r1, fr_to_array(w))
    assert not verifier.verify(pk.vk, cs.public_inputs(), proof)


def test_same_r_s_same_proof_and_fresh_randomness_differs(demo):
    _, r1, pk, key, cs, _ = demo
    w = fr_to_array(cs.assignment())
    p1 = prover.prove(key, r1, w, r=11, s=22)
    p2 = prover.prove(key, r1, w, r=11, s=22)
    p3 = prover.prove(key, r1, w)
    assert p1 == p2 and p1 != p3
    assert verifier.verify(pk.vk, cs.public_inputs(), p3)


@pytest.mark.parametrize("seed", range(6))
def test_random_circuits_prove_and_verify(seed):
    cs = random_circuit(seed)
    r1 = cs.r1cs()
    assert r1.is_satisfied(cs.assignment())
    pk = setup.setup(r1, seed=seed)
    key = prover.prepare(pk, r1, be)
    proof = prover.prove(key, r1, fr_to_array(cs.assignment()))
    assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    # the same circuit shape built without a witness gives the same R1CS
    r1b = random_circuit(seed, witness=False).r1cs()
    for m, mb in ((r1.a, r1b.a), (r1.b, r1b.b), (r1.c, r1b.c)):
        assert np.array_equal(m.indptr, mb.indptr) and np.array_equal(m.indices, mb.indices)


def test_batch_verification(demo):
    circuit, r1, pk, key, _, _ = demo
    items = []
    for x in (1, 2, 3):
        cs = ConstraintSystem()
        circuit.synthesize(cs, x, [x, x + 1])
        items.append((cs.public_inputs(), prover.prove(key, r1, fr_to_array(cs.assignment()))))
    assert verifier.verify_batch(pk.vk, items)
    swapped = [items[0], (items[1][0], items[2][1]), items[2]]
    assert not verifier.verify_batch(pk.vk, swapped)
    assert verifier.verify_batch(pk.vk, [])


def test_seeded_setup_is_deterministic_and_secure_setup_is_not():
    cs = random_circuit(1)
    r1 = cs.r1cs()
    a, b = setup.setup(r1, seed=3), setup.setup(r1, seed=3)
    assert a.vk == b.vk and np.array_equal(a.h, b.h)
    c = setup.setup(r1)
    assert c.vk.alpha_g1 != a.vk.alpha_g1


def test_key_layout_follows_bellperson(demo):
    _, r1, pk, _, _, _ = demo
    assert len(pk.h) == pk.domain_size - 1 == 2 ** (r1.num_constraints - 1).bit_length() - 1
    assert len(pk.l) == r1.num_aux
    assert len(pk.a) == r1.num_inputs + int(r1.a_aux_density().sum())
    assert len(pk.b_g1) == len(pk.b_g2) == int(r1.b.column_mask().sum())
    assert len(pk.vk.ic) == r1.num_inputs
    # no point at infinity survives in the a / b queries
    for q in (pk.a, pk.b_g1):
        assert q.reshape(len(q), -1).any(axis=1).all()


def test_a_key_for_another_circuit_is_refused(demo):
    _, _, pk, _, _, _ = demo
    other = random_circuit(2).r1cs()
    with pytest.raises(InputError, match="key and circuit differ"):
        prover.prepare(pk, other, be)


def test_wrong_witness_length_and_input_count_are_refused(demo):
    _, r1, pk, key, cs, proof = demo
    with pytest.raises(InputError, match="witness"):
        prover.prove(key, r1, fr_to_array(cs.assignment()[:-1]))
    # proving with the key's own matrices (no R1CS given): the key knows the length
    assert key.num_variables == r1.num_variables
    with pytest.raises(InputError, match="witness"):
        prover.prove(key, None, fr_to_array(cs.assignment()[:-1]))
    assert verifier.verify(
        pk.vk, cs.public_inputs(), prover.prove(key, None, fr_to_array(cs.assignment()))
    )
    with pytest.raises(InputError, match="count"):
        verifier.verify(pk.vk, cs.public_inputs()[:-1], proof)
    with pytest.raises(InputError, match="canonical"):
        verifier.verify(pk.vk, [R, 0], proof)


def test_multi_partition_proof_encoding(demo):
    proof = demo[5]
    blob = encode_proofs([proof, proof])
    assert len(blob) == 384 and decode_proofs(blob) == [proof, proof]
    with pytest.raises(InputError, match="whole number"):
        decode_proofs(blob[:-1])
