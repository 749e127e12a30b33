"""SnapDeals test data for any sector size, without materialising the sector.

The old replica and the new data are periodic (patterns of ``period``
random nodes) and the new replica is ``r_old + d_new · rho(i >> (bits − h))``,
so every tree is *block periodic*: a node depends only on its level, the
rho block it lies in and its offset in the pattern, or — above the block
size — on its index. :class:`LazyTree` hashes each distinct node once, so a
32GiB sector's trees R old, D new and R new cost a few thousand hashes.
(The roots must exist before the challenges are known — they derive from
comm_r_new — which is why the trees cannot simply be sparse.)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from cuzk.algebra.fields import R
from cuzk.circuits.post.vanilla import SINGLE, MerkleProof, variant_for_shape
from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import ChallengeProof, PartitionProof, challenges, phi, rho
from cuzk.hashers.domain import fr_to_le_bytes
from cuzk.hashers.merkle import PathElement
from cuzk.hashers.poseidon import hash_ints
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.hashers.sha256 import sha254_node


def poseidon_node(children: list[int]) -> int:
    return hash_ints(children, poseidon_constants(len(children)))


def sha_node(children: list[int]) -> int:
    left, right = (fr_to_le_bytes(x) for x in children)
    return int.from_bytes(sha254_node(left, right), "little")


@dataclass
class LazyTree:
    """A Merkle tree over ``leaf(i)`` that hashes each distinct node once.

    Leaves are ``g(i mod period, i >> block_bits)``: nodes of equal level,
    block and pattern offset are equal (``block_bits`` large = one block).
    """

    num_leaves: int
    arities: tuple[int, ...]
    leaf: Callable[[int], int]
    hash_children: Callable[[list[int]], int]
    period: int
    block_bits: int
    memo: dict = field(default_factory=dict)

    def _key(self, level: int, j: int, span: int) -> tuple:
        start = j * span
        if span > 1 << self.block_bits:
            return (level, j)
        block = start >> self.block_bits
        if span <= self.period:
            return (level, block, start % self.period)
        return (level, block)

    def span(self, level: int) -> int:
        s = 1
        for a in self.arities[:level]:
            s *= a
        return s

    def node(self, level: int, j: int) -> int:
        if level == 0:
            return self.leaf(j)
        key = self._key(level, j, self.span(level))
        got = self.memo.get(key)
        if got is None:
            a = self.arities[level - 1]
            got = self.hash_children([self.node(level - 1, j * a + t) for t in range(a)])
            self.memo[key] = got
        return got

    @property
    def root(self) -> int:
        return self.node(len(self.arities), 0)

    def path(self, index: int) -> list[PathElement]:
        out, j = [], index
        for level, a in enumerate(self.arities):
            pos = j % a
            start = j - pos
            sib = tuple(self.node(level, start + t) for t in range(a) if t != pos)
            out.append(PathElement(sib, pos))
            j //= a
        return out


def _merkle(variant: int, tree: LazyTree, index: int, sub: int, top: int) -> MerkleProof:
    path = tree.path(index)
    cut = len(path) - (1 if sub else 0) - (1 if top else 0)
    return MerkleProof(
        variant,
        tree.root,
        tree.node(0, index),
        tuple(path[:cut]),
        tuple(path[cut : cut + 1]) if sub else (),
        tuple(path[cut + 1 :]) if top else (),
    )


@dataclass
class UpdateSector:
    """An updated sector: trees R old, D new, R new and the public commitments."""

    params: UpdateParams
    h: int
    comm_c: int
    tree_r_old: LazyTree
    tree_d_new: LazyTree
    tree_r_new: LazyTree

    @property
    def comm_r_old(self) -> int:
        return hash_ints([self.comm_c, self.tree_r_old.root])

    @property
    def comm_d_new(self) -> int:
        return self.tree_d_new.root

    @property
    def comm_r_new(self) -> int:
        return hash_ints([self.comm_c, self.tree_r_new.root])

    def apex_leafs(self, k: int) -> tuple[int, ...]:
        p = self.params
        level = p.apex_leafs_height
        return tuple(
            self.tree_d_new.node(level, k * p.apex_leaf_count + i) for i in range(p.apex_leaf_count)
        )

    def partition_proof(self, k: int) -> PartitionProof:
        p = self.params
        shape = p.tree_shape
        variant = variant_for_shape(shape.sub, shape.top)
        proofs = []
        for c in challenges(p, self.comm_r_new, k):
            proofs.append(
                ChallengeProof(
                    _merkle(variant, self.tree_r_old, c, shape.sub, shape.top),
                    _merkle(SINGLE, self.tree_d_new, c, 0, 0),
                    _merkle(variant, self.tree_r_new, c, shape.sub, shape.top),
                )
            )
        return PartitionProof(self.comm_c, self.apex_leafs(k), tuple(proofs))


def generate_sector(
    params: UpdateParams, rng: random.Random, h: int | None = None, period: int | None = None
) -> UpdateSector:
    """A synthetic updated sector (``period`` defaults to 8, or every node for
    sectors of at most 64 nodes)."""
    h = params.h_default if h is None else h
    params.h_select(h)
    n = params.sector_nodes
    period = period or (n if n <= 64 else 8)
    r_old = [rng.randrange(R) for _ in range(period)]
    d_new = [rng.getrandbits(254) for _ in range(period)]
    arities = params.tree_r_arities
    bits = params.challenge_bit_len
    whole = bits + 1  # one block: the whole sector
    tree_r_old = LazyTree(n, arities, lambda i: r_old[i % period], poseidon_node, period, whole)
    tree_d_new = LazyTree(n, (2,) * bits, lambda i: d_new[i % period], sha_node, period, whole)
    comm_c = rng.randrange(R)
    phi_value = phi(tree_d_new.root, hash_ints([comm_c, tree_r_old.root]))
    shift = bits - h
    rhos: dict[int, int] = {}

    def r_new(i: int) -> int:
        high = i >> shift
        if high not in rhos:
            rhos[high] = rho(phi_value, high)
        return (r_old[i % period] + d_new[i % period] * rhos[high]) % R

    tree_r_new = LazyTree(n, arities, r_new, poseidon_node, period, shift)
    return UpdateSector(params, h, comm_c, tree_r_old, tree_d_new, tree_r_new)
