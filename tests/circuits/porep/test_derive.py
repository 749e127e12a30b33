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


def test_only_interactive_challenges_are_derived():
    p = REGISTERED_SEAL_PROOFS["StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"]
    with pytest.raises(NotImplementedError):
        derive.partition_challenges(p, bytes(32), bytes(32))
