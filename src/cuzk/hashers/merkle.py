"""Merkle trees as Filecoin builds them: roots, inclusion paths, and sparse trees.

Two families:

- **binary SHA-256** (tree D): nodes are 32-byte domain values, a parent is
  ``sha254(left ‖ right)``;
- **Poseidon** (trees R and C): nodes are Fr ints, a parent of ``a`` children
  is ``Poseidon_a(children)``. A tree has a base arity (8) and optionally a
  sub-tree and a top-tree arity: a sector's leaves are split into
  ``top × sub`` equal base trees whose roots are hashed ``sub`` at a time,
  and those results ``top`` at a time (rust-fil-proofs' compound trees).

A path is a list of :class:`PathElement` from the leaf upwards: the sibling
hashes at that level (arity − 1 of them) and the position of the current
node among the arity children. A leaf's index is the path's indices read
as a mixed-radix number (base arity first).

:func:`sparse_poseidon_tree` makes a valid tree of any size in which only
the challenged paths are materialised: nodes off those paths are drawn at
random (no one can tell them from hashes of a real subtree), nodes on them
are hashed from their children. That is how test proofs for 32GiB sectors
are made without 32GiB of data.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuzk.algebra.fields import R
from cuzk.hashers.field import OBJECT_FR, FrVectors
from cuzk.hashers.poseidon import hash_ints, hash_vectors
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.hashers.sha256 import sha254_node, sha254_nodes


@dataclass(frozen=True)
class PathElement:
    """One level of an inclusion path: siblings in order, and our position."""

    hashes: tuple
    index: int

    @property
    def arity(self) -> int:
        return len(self.hashes) + 1

    def children(self, current) -> list:
        """The level's children with ``current`` inserted at ``index``."""
        out = list(self.hashes)
        out.insert(self.index, current)
        return out


@dataclass(frozen=True)
class TreeShape:
    """Arities of a (compound) Poseidon tree; 0 means "no such layer"."""

    base: int = 8
    sub: int = 0
    top: int = 0

    def __post_init__(self) -> None:
        for a in (self.base, self.sub, self.top):
            if a and a & (a - 1):
                raise ValueError(f"Merkle arities must be powers of two, not {a}")
        if self.top and not self.sub:
            raise ValueError("a top-tree layer needs a sub-tree layer")

    @property
    def num_base_trees(self) -> int:
        return max(self.sub, 1) * max(self.top, 1)

    def base_height(self, leaves: int) -> int:
        """Path length inside one base tree for a tree of ``leaves`` leaves."""
        per_tree = leaves // self.num_base_trees
        h, n = 0, 1
        while n < per_tree:
            n *= self.base
            h += 1
        if n != per_tree or per_tree * self.num_base_trees != leaves:
            raise ValueError(f"{leaves} leaves do not fit a tree of shape {self}")
        return h

    def arities(self, leaves: int) -> list[int]:
        """The arity of each path level, leaf upwards."""
        out = [self.base] * self.base_height(leaves)
        if self.sub:
            out.append(self.sub)
        if self.top:
            out.append(self.top)
        return out

    def path_indices(self, leaf: int, leaves: int) -> list[int]:
        """The per-level positions for a leaf index (mixed radix, base first)."""
        out = []
        for a in self.arities(leaves):
            out.append(leaf % a)
            leaf //= a
        return out


def leaf_index(path: Sequence[PathElement]) -> int:
    """The leaf index a path proves (its positions as a mixed-radix number)."""
    idx, scale = 0, 1
    for el in path:
        idx += el.index * scale
        scale *= el.arity
    return idx


# --------------------------------------------------------------------------
# Binary SHA-256 trees (32-byte nodes)
# --------------------------------------------------------------------------


def sha256_tree_layers(leaves: Sequence[bytes]) -> list[list[bytes]]:
    """All layers of a binary SHA-256 tree, leaves first, root last."""
    n = len(leaves)
    if n == 0 or n & (n - 1):
        raise ValueError(f"a binary tree needs a power-of-two number of leaves, not {n}")
    layer = np.frombuffer(b"".join(leaves), dtype=np.uint8).reshape(n, 32)
    layers = [[bytes(x) for x in layer]]
    while len(layer) > 1:
        layer = sha254_nodes(layer[0::2], layer[1::2])
        layers.append([bytes(x) for x in layer])
    return layers


def sha256_path(layers: list[list[bytes]], leaf: int) -> list[PathElement]:
    path = []
    for layer in layers[:-1]:
        sib = leaf ^ 1
        path.append(PathElement(hashes=(layer[sib],), index=leaf & 1))
        leaf >>= 1
    return path


def sha256_path_root(leaf: bytes, path: Sequence[PathElement]) -> bytes:
    cur = leaf
    for el in path:
        left, right = el.children(cur)
        cur = sha254_node(left, right)
    return cur


# --------------------------------------------------------------------------
# Poseidon trees (Fr nodes)
# --------------------------------------------------------------------------


def poseidon_layer(children: Sequence[int], arity: int, F: FrVectors = OBJECT_FR) -> list[int]:
    """Hash a layer ``arity`` children at a time (vectorised over parents)."""
    if len(children) % arity:
        raise ValueError(f"{len(children)} nodes do not group by {arity}")
    c = poseidon_constants(arity)
    if len(children) == arity:
        return [hash_ints(list(children), c)]
    cols = [F.from_ints(children[i::arity]) for i in range(arity)]
    return F.to_ints(hash_vectors(F, cols, c))


def poseidon_tree_root(leaves: Sequence[int], shape: TreeShape, F: FrVectors = OBJECT_FR) -> int:
    """The root of a (compound) Poseidon tree over all its leaves."""
    layer = [x % R for x in leaves]
    for arity in shape.arities(len(leaves)):
        layer = poseidon_layer(layer, arity, F)
    return layer[0]


def poseidon_path_root(leaf: int, path: Sequence[PathElement]) -> int:
    """Hash a leaf up its path (each level with its own arity)."""
    cur = leaf % R
    for el in path:
        cur = hash_ints(el.children(cur), poseidon_constants(el.arity))
    return cur


@dataclass(frozen=True)
class SparseTree:
    """A tree of which only some leaves' paths are known: root and paths."""

    root: int
    leaves: dict[int, int]  # leaf index → leaf value
    paths: dict[int, list[PathElement]]


def sparse_poseidon_tree(
    challenged: Sequence[int],
    num_leaves: int,
    shape: TreeShape,
    rng: random.Random,
    leaf_values: dict[int, int] | None = None,
) -> SparseTree:
    """A valid tree over ``num_leaves`` leaves materialising only the paths of
    ``challenged`` leaves; every other node is a random field element."""
    arities = shape.arities(num_leaves)
    for c in challenged:
        if not 0 <= c < num_leaves:
            raise ValueError(f"leaf {c} is outside a tree of {num_leaves} leaves")
    known: dict[int, int] = {}  # nodes of the current level that we have
    leaf_values = dict(leaf_values or {})
    for c in sorted(set(challenged)):
        known[c] = leaf_values.setdefault(c, rng.randrange(R)) % R
    level_nodes: list[dict[int, int]] = []
    for arity in arities:
        # Fill in every sibling group that holds a known node.
        full: dict[int, int] = {}
        for parent in sorted({i // arity for i in known}):
            for i in range(parent * arity, (parent + 1) * arity):
                full[i] = known[i] if i in known else rng.randrange(R)
        level_nodes.append(full)
        parents = sorted({i // arity for i in full})
        known = {
            p: hash_ints(
                [full[i] for i in range(p * arity, (p + 1) * arity)], poseidon_constants(arity)
            )
            for p in parents
        }
    (root,) = known.values()
    paths = {}
    for c in challenged:
        path, idx = [], c
        for arity, nodes in zip(arities, level_nodes, strict=True):
            pos = idx % arity
            start = idx - pos
            sib = tuple(nodes[start + j] for j in range(arity) if j != pos)
            path.append(PathElement(hashes=sib, index=pos))
            idx //= arity
        paths[c] = path
    return SparseTree(root=root, leaves={c: leaf_values[c] for c in challenged}, paths=paths)
