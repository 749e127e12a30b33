"""PoSt vanilla proofs: the real Curio fixture, the bincode format, the
verifier, challenge derivation and the sparse generator."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cuzk.algebra.fields import R
from cuzk.circuits.post.challenges import (
    leaf_challenge,
    prover_id_from_miner,
    sector_leaf_challenges,
    winning_sector_challenge,
)
from cuzk.circuits.post.commcid import comm_r_from_sealed_cid, sealed_cid_from_comm_r
from cuzk.circuits.post.config import (
    SHAPES,
    WINDOW,
    WINNING,
    config_for_registered_proof,
    format_sector_size,
    parse_sector_size,
    post_config,
)
from cuzk.circuits.post.generate import generate_sector_proof
from cuzk.circuits.post.vanilla import SUB, read_sector_proof, write_sector_proof
from cuzk.circuits.post.verify import check_sector_proof, verify_sector_proof
from cuzk.errors import InputError
from cuzk.hashers.merkle import PathElement, leaf_index

DATA = Path(__file__).parent.parent / "data" / "curio-windowpost-32g"


@pytest.fixture(scope="module")
def fixture():
    raw = (DATA / "post.vproof").read_bytes()
    pub = json.loads((DATA / "postpub.json").read_text())
    return raw, pub


def test_fixture_parses_round_trips_and_verifies(fixture):
    raw, pub = fixture
    proof = read_sector_proof(raw, "post.vproof")
    assert proof.sector_id == pub["ChallengedSectors"][0]["SectorNumber"] == 1
    comm_r = comm_r_from_sealed_cid(pub["ChallengedSectors"][0]["SealedCID"]["/"])
    assert proof.comm_r == comm_r
    assert write_sector_proof(proof) == raw
    sp = proof.sectors[0]
    assert len(sp.inclusion_proofs) == 10
    assert all(
        ip.variant == SUB and len(ip.base) == 9 and len(ip.sub) == 1 for ip in sp.inclusion_proofs
    )
    config = config_for_registered_proof(pub["Proofs"][0]["PoStProof"])
    assert config.kind == WINDOW and format_sector_size(config.sector_size) == "32GiB"
    randomness = bytes(32)
    check_sector_proof(config, randomness, proof, comm_r=comm_r)
    # The proven leaves are the derived challenges.
    assert [leaf_index(ip.path) for ip in sp.inclusion_proofs] == sector_leaf_challenges(
        config, randomness, 1
    )


def test_verifier_rejects_tampering(fixture):
    raw, _ = fixture
    proof = read_sector_proof(raw)
    config = config_for_registered_proof(8)
    rnd = bytes(32)
    assert not verify_sector_proof(config, bytes([1]) + bytes(31), proof)  # other challenges
    assert not verify_sector_proof(config, rnd, proof, comm_r=proof.comm_r ^ 1)
    sp = proof.sectors[0]
    ip = sp.inclusion_proofs[3]
    el = ip.base[4]
    bad_el = PathElement(((el.hashes[0] + 1) % R, *el.hashes[1:]), el.index)
    bad_ip = dataclasses.replace(ip, base=(*ip.base[:4], bad_el, *ip.base[5:]))
    bad = dataclasses.replace(
        proof,
        sectors=(
            dataclasses.replace(
                sp, inclusion_proofs=(*sp.inclusion_proofs[:3], bad_ip, *sp.inclusion_proofs[4:])
            ),
        ),
    )
    with pytest.raises(InputError, match="does not hash to the root"):
        check_sector_proof(config, rnd, bad)
    short = dataclasses.replace(
        proof, sectors=(dataclasses.replace(sp, inclusion_proofs=sp.inclusion_proofs[:9]),)
    )
    with pytest.raises(InputError, match="9 inclusion proofs"):
        check_sector_proof(config, rnd, short)
    with pytest.raises(InputError, match="comm_r"):
        check_sector_proof(config, rnd, dataclasses.replace(proof, comm_r=5))


def test_bincode_errors_name_the_field(fixture):
    raw, _ = fixture
    with pytest.raises(InputError, match="truncated"):
        read_sector_proof(raw[:-1], "post.vproof")
    with pytest.raises(InputError, match="trailing"):
        read_sector_proof(raw + b"\x00", "post.vproof")
    bad = bytearray(raw)
    bad[8 + 31] = 0xFF  # comm_r above the modulus
    with pytest.raises(InputError, match="comm_r"):
        read_sector_proof(bytes(bad), "post.vproof")
    bad = bytearray(raw)
    bad[56:60] = (7).to_bytes(4, "little")  # the first proof's variant
    with pytest.raises(InputError, match="variant"):
        read_sector_proof(bytes(bad), "post.vproof")


# WinningPoSt's 66 challenges on the large sizes are covered by the circuit tests.
CASES = [(WINDOW, s) for s in sorted(SHAPES)] + [
    (WINNING, s) for s in sorted(SHAPES) if s < 1 << 30
]


@pytest.mark.parametrize("kind,size", CASES)
def test_generator_makes_valid_proofs_for_every_size(kind, size):
    config = post_config(kind, size)
    rnd = bytes(range(32))
    proof = generate_sector_proof(config, rnd, sector_id=42, sector_index=1, seed=3)
    check_sector_proof(config, rnd, proof, sector_index=1)
    assert read_sector_proof(write_sector_proof(proof)) == proof


def test_challenges_and_ids():
    # V1 proof types offset a challenge by the sector's position; V1_1 do not.
    v1 = config_for_registered_proof(8)
    v11 = config_for_registered_proof(13)
    rnd = bytes(range(32))
    assert sector_leaf_challenges(v1, rnd, 5, 0) == sector_leaf_challenges(v11, rnd, 5, 0)
    assert sector_leaf_challenges(v1, rnd, 5, 2)[0] == leaf_challenge(rnd, 5, 20, 1 << 30)
    assert sector_leaf_challenges(v11, rnd, 5, 2)[0] == leaf_challenge(rnd, 5, 0, 1 << 30)
    assert prover_id_from_miner(1000)[:2] == bytes([0xE8, 0x07])
    assert 0 <= winning_sector_challenge(rnd, prover_id_from_miner(1000), 0, 7) < 7
    assert parse_sector_size("32GiB") == 32 << 30 and parse_sector_size(2048) == 2048
    with pytest.raises(InputError):
        parse_sector_size("3GiB")
    with pytest.raises(InputError):
        config_for_registered_proof(15)
    with pytest.raises(InputError, match="0x3f"):
        leaf_challenge(b"\xff" * 32, 1, 0, 64)
    c = 0x1234
    assert comm_r_from_sealed_cid(sealed_cid_from_comm_r(c)) == c
    with pytest.raises(InputError):
        comm_r_from_sealed_cid("bafy2bzaceabc")
