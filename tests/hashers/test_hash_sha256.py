"""SHA-256 with Filecoin's truncation, plain and vectorised, against hashlib."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from cuzk.algebra.fields import R
from cuzk.hashers.sha256 import sha254, sha254_many, sha254_node, sha254_nodes, sha256_many


@pytest.mark.parametrize("length", [0, 1, 31, 55, 56, 63, 64, 65, 119, 128, 200])
def test_vectorised_matches_hashlib(length):
    rng = np.random.default_rng(length)
    msgs = rng.integers(0, 256, size=(7, length), dtype=np.uint8)
    got = sha256_many(msgs)
    for row, msg in zip(got, msgs, strict=True):
        assert bytes(row) == hashlib.sha256(bytes(msg)).digest()


def test_truncation_keeps_254_bits_and_is_below_r():
    rng = random.Random(7)
    for _ in range(200):
        data = rng.randbytes(rng.randrange(100))
        full = hashlib.sha256(data).digest()
        t = sha254(data)
        assert t[:31] == full[:31]
        assert t[31] == full[31] & 0x3F
        assert int.from_bytes(t, "little") < R


def test_node_hash_batch_matches_plain():
    rng = np.random.default_rng(3)
    left = rng.integers(0, 256, size=(9, 32), dtype=np.uint8)
    right = rng.integers(0, 256, size=(9, 32), dtype=np.uint8)
    got = sha254_nodes(left, right)
    for g, a, b in zip(got, left, right, strict=True):
        assert bytes(g) == sha254_node(bytes(a), bytes(b))
    assert bytes(sha254_many(left[:1])[0]) == sha254(bytes(left[0]))
