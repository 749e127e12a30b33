from __future__ import annotations

import hashlib

import pytest

from cuzk.circuits.porep import derive
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS


def test_prover_id_is_leb128():
    assert derive.prover_id_from_miner(0) == bytes(32)
    assert derive.prover_id_from_miner(1000)[:3] == bytes([0xE8, 0x07, 0x00])
    assert derive.prover_id_from_miner(123)[:2] == bytes([123, 0])
    assert derive.prover_id_from_miner(1 << 21)[:4] == bytes([0x80, 0x80, 0x80, 0x01])
    with pytest.raises(ValueError):
        derive.prover_id_from_miner(-1)


def test_replica_id_layout_and_truncation():
    args = (
        bytes(range(32)),
        0x0102030405060708,
        bytes(32),
        bytes([9]) * 32,
        bytes([8]) + bytes(31),
    )
    rid = derive.replica_id(*args)
    raw = hashlib.sha256(
        args[0] + bytes([1, 2, 3, 4, 5, 6, 7, 8]) + args[2] + args[3] + args[4]
    ).digest()
    assert rid[:31] == raw[:31] and rid[31] == raw[31] & 0x3F


def test_interactive_challenges():
    p = REGISTERED_SEAL_PROOFS["StackedDrg32GiBV1_1"]
    rid, seed = bytes([7]) * 32, bytes([5]) * 32
    parts = derive.partition_challenges(p, rid, seed)
    assert [len(x) for x in parts] == [18] * 10
    flat = [c for part in parts for c in part]
    assert all(1 <= c < 1 << 30 for c in flat)
    # challenge j of partition k is global challenge 18·k + j
    assert derive.interactive_challenges(rid, seed, 1 << 30, 180, 0) == flat
    h = hashlib.sha256(rid + seed + (18 * 3 + 4).to_bytes(4, "little")).digest()
    assert parts[3][4] == int.from_bytes(h, "little") % ((1 << 30) - 1) + 1


def test_non_interactive_challenges_are_not_derived():
    p = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"]
    with pytest.raises(NotImplementedError, match="non-interactive"):
        derive.partition_challenges(p, bytes(32), bytes(32), bytes(32))


def test_chacha20_keystream_is_rfc_8439s():
    """RFC 8439, 2.4.2: key 00..1f, nonce 00 00 00 00 00 00 00 4a 00 00 00 00; the
    keystream block of counter 1 (the one that encrypts the sunscreen text)."""
    from cuzk.circuits.porep.chacha import chacha20_keystream

    key, nonce = bytes(range(32)), bytes.fromhex("000000000000004a00000000")
    block = chacha20_keystream(key, nonce, 64, 64)
    assert block.hex() == (
        "224f51f3401bd9e12fde276fb8631ded8c131f823d2c06e27e4fcaec9ef3cf78"
        "8a3b0aa372600a92b57974cded2b9334794cba40c63e34cdea212c4cf07d41b7"
    )
    # A seek anywhere is the same bytes as the stream read from the start.
    whole = chacha20_keystream(key, nonce, 0, 300)
    for offset, n in [(0, 1), (63, 2), (64, 64), (100, 150), (299, 1)]:
        assert chacha20_keystream(key, nonce, offset, n) == whole[offset : offset + n]


def test_synthetic_challenges_match_rust_fil_proofs_hardcoded_vector():
    """storage-proofs-porep's test of its synthetic challenge generator: 2^10 nodes,
    replica_id = Fr(55), comm_r = Fr(101), 21 synthetic challenges, 10 PoRep
    challenges drawn with randomness [1; 32] (partition 0)."""
    rid, comm_r = (55).to_bytes(32, "little"), (101).to_bytes(32, "little")
    synth = [
        178, 297, 869, 211, 875, 477, 94, 781, 124, 332, 856, 801, 176, 692, 429, 691, 290,
        204, 986, 210, 973,
    ]  # fmt: skip
    assert derive.synthetic_challenge(rid, comm_r, 1 << 10, range(21)) == synth
    assert derive.synthetic_challenge(rid, comm_r, 1 << 10, [20, 3]) == [973, 211]  # seeks
    porep = derive.synthetic_challenges(rid, comm_r, bytes([1]) * 32, 1 << 10, 10, 0, set_size=21)
    assert porep == [176, 781, 801, 986, 290, 211, 692, 856, 986, 332]


def test_synthetic_partition_challenges():
    p = REGISTERED_SEAL_PROOFS["StackedDrg32GiBV1_1_Feat_SyntheticPoRep"]
    rid, comm_r, seed = bytes([7]) * 32, bytes([9]) * 32, bytes([5]) * 32
    parts = derive.partition_challenges(p, rid, seed, comm_r)
    assert [len(x) for x in parts] == [18] * 10
    assert derive.synthetic_set_size(1 << 30) == 1 << 18 and derive.synthetic_set_size(64) == 64
    # partition k draws selections 18k … 18k + 17 of one stream: all of them at once agree
    picked = derive.synthetic_indexes(rid, seed, 1 << 18, 180, 0)
    assert [c for part in parts for c in part] == derive.synthetic_challenge(
        rid, comm_r, 1 << 30, picked
    )
    # comm_r and the seed both matter; the interactive derivation is another one
    assert derive.partition_challenges(p, rid, seed, bytes([8]) * 32) != parts
    assert derive.partition_challenges(p, rid, bytes([6]) * 32, comm_r) != parts
    v11 = REGISTERED_SEAL_PROOFS["StackedDrg32GiBV1_1"]
    assert derive.partition_challenges(v11, rid, seed) != parts
    with pytest.raises(ValueError, match="comm_r"):
        derive.partition_challenges(p, rid, seed)
