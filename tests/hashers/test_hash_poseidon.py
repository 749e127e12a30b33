"""Poseidon: neptune's published test vectors, and the three implementations agree."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.algebra.fields import R
from cuzk.hashers.field import OBJECT_FR, limb_fr
from cuzk.hashers.poseidon import hash2, hash_ints, hash_reference, hash_vectors
from cuzk.hashers.poseidon_constants import (
    STRENGTHENED,
    constant_length_tag,
    poseidon_constants,
    round_numbers,
)

# neptune src/poseidon.rs `hash_values`: Merkle-tree hash of [0, 1, …, arity−1].
MERKLE_STANDARD = {
    2: 0x396508D75E76A56B739E0FD902EFE161A6FBA9339D05A69D2E203C369A02E7FF,
    4: 0x58A54B10A9E5848A00DB3C6579229399FB6B4605BF1327EC019814FF6662075D,
    8: 0x2394611DA3A5DE5512010042116770774B682E9D9CC4AED92A9934F56D38A5E6,
    11: 0x0C0FC1B2E5227F286CA537E232EBE87A09F3DCD8CCB08FC1CEE3BBC32B693163,
    16: 0x2D3AE2663381AE8AC1C2FB5A6F871E635B8DBC6D30680A6F1291C74060266D37,
    24: 0x63BEB8831F11AE15066F39BF783F3D9FC3E779F6468815B1D7EF3569F585B321,
    36: 0x699303082A6E5D5F540A30E03C10BBAA75CD368DF8A8AC3C4473606DFA4E8140,
}
MERKLE_STRENGTHENED = {
    2: 0x33D28A753BAEE41BC48B36ECC4CAB7485278ECBF17040EA6793DBAF54552CD69,
    4: 0x09D8207C51CA3F4354013BDAF68BA4C2E5113A254D6F5C7E4650EE190212AA9A,
    8: 0x69E61465981AE17ED69AAE8FE1CB63E8E843D4CFBA662DF19F0C3C93C3FC894E,
    11: 0x28BB83FF439753C007ABBCF9B406E8D8C94FE2CA3F46D433778AF344D8F9E8B7,
}
# Constant-length hash of [0, 1, 2, 3] (domain tag 4·2^64, zero padded).
CONSTANT_LENGTH_4 = {
    4: 0x3A21A6AE86754A2939443980077D75934984DE08542C99778935B00A07909D45,
    8: 0x5C6DE4B69DE9D792CAD8B9F8AEB1578F203E3C7C4A85C1F9370A94532F818897,
    11: 0x02550C3A2113C7CAEF841B6BF51A5A397D2807D793AF9582E9B0CB7D6496F73B,
}


@pytest.mark.parametrize("arity", [2, 4, 8, 11, 16])
def test_merkle_vectors_standard(arity):
    c = poseidon_constants(arity)
    assert hash_ints(list(range(arity)), c) == MERKLE_STANDARD[arity]
    assert hash_reference(list(range(arity)), c) == MERKLE_STANDARD[arity]


@pytest.mark.slow
@pytest.mark.parametrize("arity", [24, 36])
def test_merkle_vectors_wide(arity):
    assert hash_ints(list(range(arity)), poseidon_constants(arity)) == MERKLE_STANDARD[arity]


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_merkle_vectors_strengthened(arity):
    c = poseidon_constants(arity, STRENGTHENED)
    assert hash_ints(list(range(arity)), c) == MERKLE_STRENGTHENED[arity]


@pytest.mark.parametrize("arity", [4, 8, 11])
def test_constant_length_vectors(arity):
    c = poseidon_constants(arity).with_tag(constant_length_tag(4))
    preimage = [0, 1, 2, 3] + [0] * (arity - 4)
    assert hash_ints(preimage, c) == CONSTANT_LENGTH_4[arity]


def test_round_numbers_and_constant_counts():
    for arity, rp in [(2, 55), (4, 56), (8, 57), (11, 57)]:
        assert round_numbers(arity) == (8, rp)
        c = poseidon_constants(arity)
        assert len(c.round_constants) == (8 + rp) * (arity + 1)
        assert len(c.compressed_round_constants) == 8 * (arity + 1) + rp
        assert c.domain_tag == (1 << arity) - 1
        assert all(x < R for x in c.round_constants)
        t = arity + 1
        # The MDS matrix is the Cauchy matrix, symmetric.
        assert all(c.mds[i][j] * (i + t + j) % R == 1 for i in range(t) for j in range(t))
        assert all(c.mds[i][j] == c.mds[j][i] for i in range(t) for j in range(t))


def test_curio_arity8_vector():
    """Curio's lib/proof/post_vproof_test.go: eight 32-byte LE nodes → one."""
    ins = [
        "f743111428ecda9b74a18826f1cc62d48ae1510de17e58645997559f86442f31",
        "197a6efa37086e3a37108f8460c52bc810e2781aff0091bfd7b74e3f6f752f02",
        "01c2c12f7930bbb59e3b36dae1c694b33ac6b3f199ec32a8665fadb8338f4f21",
        "bbe672a853f65cdb2563339ca61d6ad648473b4b4ce44bf3a48486424b865a2d",
        "937d57295f488cea8099f5525958f1af39c6241614b917835292e8e2314cf908",
        "3272570cd8ba38c1183629ca72d5e9149d76786ed22c1d591db3d2bccfa7d308",
        "2d3fc90e11aaf601bd1beae80fc3aba15a9e1f886d8140533ce36cda3dd9f936",
        "0a017e264d0728bfcd2edb3c6c60cc5a05a02af31a71cdd7bb2da27616f5f630",
    ]
    expected = "0737ca506df7d4544f8512df35aaa07ed8a40691e96ae868c23320220fec6866"
    xs = [int.from_bytes(bytes.fromhex(h), "little") for h in ins]
    out = hash_ints(xs, poseidon_constants(8))
    assert out.to_bytes(32, "little").hex() == expected


@pytest.mark.parametrize("backend", ["object", "limb"])
@pytest.mark.parametrize("arity", [2, 8])
def test_vectorised_matches_plain(backend, arity):
    F = OBJECT_FR if backend == "object" else limb_fr(np)
    rng = random.Random(arity)
    rows = [[rng.randrange(R) for _ in range(arity)] for _ in range(5)]
    cols = [F.from_ints([r[i] for r in rows]) for i in range(arity)]
    c = poseidon_constants(arity)
    got = F.to_ints(hash_vectors(F, cols, c))
    assert got == [hash_ints(r, c) for r in rows]


def test_hash2_is_arity_two():
    assert hash2(0, 1) == MERKLE_STANDARD[2]
    with pytest.raises(ValueError):
        hash_ints([1, 2, 3], poseidon_constants(2))
