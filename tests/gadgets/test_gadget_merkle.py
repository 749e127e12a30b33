"""Merkle inclusion in a circuit against paths from the plain hashers."""

from __future__ import annotations

import random

from cuzk.algebra.fields import R
from cuzk.gadgets.merkle import POSEIDON, SHA256, por
from cuzk.gadgets.num import AllocatedNum
from cuzk.hashers.merkle import (
    TreeShape,
    leaf_index,
    sha256_path,
    sha256_tree_layers,
    sparse_poseidon_tree,
)
from cuzk.r1cs import ConstraintSystem


def _hints(leaf: int, path) -> tuple:
    return leaf, [(el.index, list(el.hashes)) for el in path]


def test_poseidon_por_compound_shape():
    rng = random.Random(1)
    shape = TreeShape(8, 2)
    tree = sparse_poseidon_tree([5, 100], 128, shape, rng)
    for leaf_idx, path in tree.paths.items():
        cs = ConstraintSystem(keep_names=False)
        root = AllocatedNum.alloc(cs, tree.root)
        por(cs, POSEIDON, [el.arity for el in path], root, _hints(tree.leaves[leaf_idx], path))
        assert cs.public_inputs() == [leaf_index(path)]
        # value alloc, 2 base levels (3 bits + 22 + 505), sub level (1 + 2 + 311), pack, equal
        assert cs.num_constraints == 2 * 530 + 314 + 2
        r1cs = cs.r1cs()
        assert r1cs.is_satisfied(cs.assignment())
        bad = cs.assignment()
        bad[-1] = (bad[-1] + 1) % R
        assert not r1cs.is_satisfied(bad)


def test_sha256_binary_por():
    rng = random.Random(2)
    leaves = [rng.randrange(R).to_bytes(32, "little") for _ in range(4)]
    layers = sha256_tree_layers(leaves)
    root = int.from_bytes(layers[-1][0], "little")
    path = sha256_path(layers, 2)
    hints = (
        int.from_bytes(leaves[2], "little"),
        [(el.index, [int.from_bytes(h, "little") for h in el.hashes]) for el in path],
    )
    cs = ConstraintSystem(keep_names=False)
    root_num = AllocatedNum.alloc(cs, root)
    por(cs, SHA256, [2, 2], root_num, hints)
    assert cs.public_inputs() == [2]
    # Per level: 1 bit, 2 picks, 2 × (255 bits + unpacking), SHA-256 of 64 bytes
    # whose two padding bits per leaf are constants (folded: 44,866 instead
    # of 44,874), 1 pack; then the path input and the root equality.
    assert cs.num_constraints == 2 * (1 + 2 + 512 + 44866 + 1) + 2 == 90766
    assert cs.r1cs().is_satisfied(cs.assignment())
