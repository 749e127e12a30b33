"""A .zkey written by cuzk's development setup is one snarkjs proves and verifies with."""

import pytest

from cuzk.backends.cpu import CpuBackend
from cuzk.formats import snarkjs as sj
from cuzk.formats import snarkjs_json as sjson
from cuzk.formats import zkey_prover, zkey_setup
from interop_tools import circuit, snarkjs, snarkjs_verifies

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["cube_mix", "range_sum"])
def test_snarkjs_proves_with_our_zkey_and_we_agree(name, tmp_path):
    circ = circuit(name)
    c = sj.read_r1cs(circ.r1cs)
    zkey = tmp_path / "dev.zkey"
    zkey_setup.write_zkey(zkey, c, seed=8)
    # snarkjs: export the key, prove, verify
    snarkjs("zkey", "export", "verificationkey", zkey, tmp_path / "vk.json")
    snarkjs("groth16", "prove", zkey, circ.wtns, tmp_path / "theirs.json", tmp_path / "pub.json")
    assert snarkjs_verifies(tmp_path / "vk.json", tmp_path / "pub.json", tmp_path / "theirs.json")
    # we read the same key snarkjs did, and our proof passes snarkjs's verifier
    z = sj.read_zkey(zkey)
    assert z.vk.ic == sjson.read_vk_json(tmp_path / "vk.json").ic
    w = sj.read_wtns(circ.wtns, z.n_vars)
    proof = zkey_prover.prove_zkey(zkey_prover.prepare_zkey(z, CpuBackend()), w)
    sjson.write_proof_json(tmp_path / "ours.json", proof)
    assert snarkjs_verifies(tmp_path / "vk.json", tmp_path / "pub.json", tmp_path / "ours.json")
    # and the QAP coefficients are the circuit's
    qa, _ = z.matrices
    assert qa.nnz == c.r1cs.a.nnz


def test_same_seed_same_key(tmp_path):
    c = sj.read_r1cs(circuit("cube_mix").r1cs)
    zkey_setup.write_zkey(tmp_path / "a.zkey", c, seed=1)
    zkey_setup.write_zkey(tmp_path / "b.zkey", c, seed=1)
    zkey_setup.write_zkey(tmp_path / "c.zkey", c, seed=2)
    a, b, c2 = ((tmp_path / f"{x}.zkey").read_bytes() for x in "abc")
    assert a == b and a != c2
