"""Merkle roots and paths: binary SHA-256 and compound Poseidon trees."""

from __future__ import annotations

import random

import pytest

from cuzk.algebra.fields import R
from cuzk.hashers.merkle import (
    PathElement,
    TreeShape,
    leaf_index,
    poseidon_layer,
    poseidon_path_root,
    poseidon_tree_root,
    sha256_path,
    sha256_path_root,
    sha256_tree_layers,
    sparse_poseidon_tree,
)
from cuzk.hashers.poseidon import hash_ints
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.hashers.sha256 import sha254_node


def test_sha256_tree_paths_verify():
    rng = random.Random(1)
    leaves = [rng.randbytes(31) + b"\x00" for _ in range(16)]
    layers = sha256_tree_layers(leaves)
    root = layers[-1][0]
    assert layers[1][0] == sha254_node(leaves[0], leaves[1])
    for i in range(16):
        path = sha256_path(layers, i)
        assert len(path) == 4
        assert leaf_index(path) == i
        assert sha256_path_root(leaves[i], path) == root
    bad = sha256_path(layers, 3)
    assert sha256_path_root(leaves[2], bad) != root


def _full_tree_paths(leaves: list[int], shape: TreeShape) -> tuple[int, dict[int, list]]:
    """Build every layer explicitly and read paths off it (test oracle)."""
    layers = [leaves]
    for arity in shape.arities(len(leaves)):
        layers.append(poseidon_layer(layers[-1], arity))
    paths = {}
    for i in range(len(leaves)):
        idx, path = i, []
        for arity, layer in zip(shape.arities(len(leaves)), layers, strict=False):
            pos = idx % arity
            start = idx - pos
            sib = tuple(layer[start + j] for j in range(arity) if j != pos)
            path.append(PathElement(sib, pos))
            idx //= arity
        paths[i] = path
    return layers[-1][0], paths


@pytest.mark.parametrize(
    "shape,leaves",
    [
        (TreeShape(8), 64),
        (TreeShape(8, 2), 128),
        (TreeShape(8, 8), 512),
        (TreeShape(8, 8, 2), 1024),
    ],
)
def test_poseidon_compound_tree(shape, leaves):
    rng = random.Random(leaves)
    values = [rng.randrange(R) for _ in range(leaves)]
    root, paths = _full_tree_paths(values, shape)
    assert poseidon_tree_root(values, shape) == root
    for i in rng.sample(range(leaves), 5):
        assert leaf_index(paths[i]) == i
        assert [el.index for el in paths[i]] == shape.path_indices(i, leaves)
        assert poseidon_path_root(values[i], paths[i]) == root


def test_tree_shape_heights():
    assert TreeShape(8, 8).arities(1 << 30) == [8] * 9 + [8]
    assert TreeShape(8, 8, 2).arities(1 << 31) == [8] * 9 + [8, 2]
    assert TreeShape(8).arities(64) == [8, 8]
    with pytest.raises(ValueError):
        TreeShape(8).arities(100)
    with pytest.raises(ValueError):
        TreeShape(6)


def test_sparse_tree_matches_full_tree_and_scales():
    rng = random.Random(5)
    shape = TreeShape(8, 2)
    sparse = sparse_poseidon_tree([3, 77, 77, 120], 128, shape, rng)
    for leaf, path in sparse.paths.items():
        assert leaf_index(path) == leaf
        assert poseidon_path_root(sparse.leaves[leaf], path) == sparse.root
    # A 32GiB-sized tree: 2^30 leaves, only the challenged paths exist.
    big = sparse_poseidon_tree([0, (1 << 30) - 1, 12345678], 1 << 30, TreeShape(8, 8), rng)
    for leaf, path in big.paths.items():
        assert len(path) == 10
        assert leaf_index(path) == leaf
        assert poseidon_path_root(big.leaves[leaf], path) == big.root


def test_path_element_insert():
    el = PathElement((10, 11, 12), 2)
    assert el.children(99) == [10, 11, 99, 12]
    assert el.arity == 4
    assert hash_ints(el.children(99), poseidon_constants(4)) == poseidon_path_root(99, [el])
