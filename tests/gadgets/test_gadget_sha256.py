"""SHA-256 gadget: bellperson's constraint counts and agreement with hashlib."""

from __future__ import annotations

import hashlib
import random

import pytest

from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.sha256 import sha256, sha256_compression_function, sha256_iv
from cuzk.gadgets.uint32 import MultiEq, UInt32
from cuzk.gadgets.values import SCALAR
from cuzk.r1cs import ConstraintSystem


def _alloc_bytes(cs: ConstraintSystem, data: bytes) -> list[Boolean]:
    return [
        Boolean.of(AllocatedBit.alloc(cs, bool((b >> i) & 1)))
        for b in data
        for i in range(7, -1, -1)
    ]


def _to_bytes(bits: list[Boolean]) -> bytes:
    vals = [int(b.value(SCALAR)) for b in bits]
    return bytes(sum(vals[8 * k + j] << (7 - j) for j in range(8)) for k in range(len(vals) // 8))


def test_block_count_is_25840():
    cs = ConstraintSystem(keep_names=False)
    bits = _alloc_bytes(cs, random.Random(1).randbytes(64))
    sha256_compression_function(cs, bits, sha256_iv())
    assert cs.num_constraints - 512 == 25840
    assert cs.r1cs().is_satisfied(cs.assignment())


def test_64_bytes_count_is_44874_and_matches_hashlib():
    data = random.Random(2).randbytes(64)
    cs = ConstraintSystem(keep_names=False)
    out = sha256(cs, _alloc_bytes(cs, data))
    assert cs.num_constraints - 512 == 44874
    assert _to_bytes(out) == hashlib.sha256(data).digest()
    r1cs = cs.r1cs()
    w = cs.assignment()
    assert r1cs.is_satisfied(w)
    # Flip one output-adjacent witness bit: the system must notice.
    w[-1] = 1 - w[-1]
    assert not r1cs.is_satisfied(w)


@pytest.mark.parametrize("length", [0, 3, 17, 55, 56])
def test_short_messages_match_hashlib(length):
    data = random.Random(length).randbytes(length)
    cs = ConstraintSystem(keep_names=False)
    out = sha256(cs, _alloc_bytes(cs, data))
    assert _to_bytes(out) == hashlib.sha256(data).digest()
    assert cs.r1cs().is_satisfied(cs.assignment())


def test_blank_hash_of_constants_costs_nothing():
    bits = [Boolean.constant(i == 0) for i in range(512)]
    cs = ConstraintSystem()
    out = sha256_compression_function(cs, bits, sha256_iv())
    assert cs.num_constraints == 0
    digest = b"".join(w.value.to_bytes(4, "big") for w in out)
    assert digest == hashlib.sha256(b"").digest()


def test_addmany_and_multieq():
    rng = random.Random(3)
    for n in (2, 3, 5, 10):
        vals = [rng.getrandbits(32) for _ in range(n)]
        cs = ConstraintSystem()
        words = [UInt32.alloc(cs, v) for v in vals]
        me = MultiEq(cs)
        out = UInt32.addmany(me, words)
        me.finish()
        assert out.value == sum(vals) % (1 << 32)
        assert sum(int(b.value(SCALAR)) << i for i, b in enumerate(out.bits)) == out.value
        assert cs.r1cs().is_satisfied(cs.assignment())
    consts = [UInt32.constant(v) for v in (5, 7)]
    cs = ConstraintSystem()
    me = MultiEq(cs)
    assert UInt32.addmany(me, consts).value == 12 and cs.num_constraints == 0
