"""The StackedDRG graph against rust-fil-proofs' published parent-cache digests."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.circuits.porep.graph import Feistel, StackedGraph, feistel_keys
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS, ApiVersion

# storage-proofs-porep/parent_cache.json: cache id -> SHA-256 of every node's
# 14 parents (u32 LE). The ids hash the graph's description and Feistel keys,
# so each pins which proof version the digest belongs to.
PARENT_CACHE_2KIB = {
    "v28-sdr-parent-3f0eef38bb48af1f48ad65e14eb85b4ebfc167cec18cd81764f6d998836c9899": (
        "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d"
    ),
    "v28-sdr-parent-494d91dc80f2df5272c4b9e129bc7ade9405225993af9fe34e6542a39a47554b": (
        "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97"
    ),
}


@pytest.mark.parametrize("name", ["StackedDrg2KiBV1", "StackedDrg2KiBV1_1"])
def test_parent_cache_digest_matches_rust_fil_proofs(name):
    p = REGISTERED_SEAL_PROOFS[name]
    g = StackedGraph(p.sector.nodes, p.porep_id, p.api_version)
    cache_id = g.parent_cache_id()
    assert cache_id in PARENT_CACHE_2KIB
    assert g.parent_cache_digest() == PARENT_CACHE_2KIB[cache_id]


@pytest.mark.parametrize("version", [ApiVersion.V1_0_0, ApiVersion.V1_1_0])
def test_drg_parents_are_earlier_nodes_with_the_predecessor(version):
    g = StackedGraph(1 << 20, bytes([3]) + bytes(31), version)
    nodes = np.array([0, 1, 2, 3, 1000, 123_457, (1 << 20) - 1])
    parents = g.drg_parents_many(nodes)
    assert (parents[0] == 0).all() and (parents[1] == 0).all()
    slot = 5 if version == ApiVersion.V1_0_0 else 0
    for v, ps in zip(nodes[2:], parents[2:], strict=True):
        assert ps[slot] == v - 1
        assert (ps < v).all()
    # vectorised and one-at-a-time agree
    assert g.drg_parents(1000) == [int(x) for x in parents[4]]


def test_feistel_is_a_permutation_with_inverse():
    keys = feistel_keys(bytes(32))
    f = Feistel(8 * 64, keys)
    image = [f.permute(i) for i in range(8 * 64)]
    assert sorted(image) == list(range(8 * 64))
    assert [f.invert(x) for x in image] == list(range(8 * 64))
    big = Feistel(8 << 30, keys)
    for i in (0, 1, 12345, (8 << 30) - 1):
        assert big.invert(big.permute(i)) == i < 8 << 30


def test_expander_parents_in_range():
    p = REGISTERED_SEAL_PROOFS["StackedDrg32GiBV1_1"]
    g = StackedGraph(p.sector.nodes, p.porep_id, p.api_version)
    for v in (1, 77, (1 << 30) - 1):
        ps = g.parents(v)
        assert len(ps) == 14
        assert all(0 <= x < 1 << 30 for x in ps)
