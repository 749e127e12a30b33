"""Valid C1 outputs for any sector size, without sealing the sector.

A sparse synthetic sector materialises only what the vanilla proofs open:

- **Data and tree D.** The data is a random pattern of ``P`` nodes (a power
  of two, at most 1024) repeated over the sector, so tree D above the
  pattern's height has equal children everywhere: comm_d and every path
  cost P + log2(nodes) hashes. comm_d is needed before the challenges are
  known (it feeds replica_id), which is why tree D cannot be sparse in the
  challenged leaves.
- **Labels.** Columns of the 14 parents of every challenged node are random
  254-bit values; the challenged nodes' labels are computed from them (layer
  by layer, nodes in increasing order, so a challenged node that is also a
  parent of another is labelled before it is used).
- **Trees C and R.** Sparse Poseidon trees (:func:`cuzk.hashers.merkle.
  sparse_poseidon_tree`): the opened leaves (column hashes, encoded replica
  nodes) are hashed up their paths; every node off those paths is random.

replica_id is derived from the prover id, sector number, ticket and comm_d
exactly as a real sealer does, and the challenges from replica_id and the
seed, so the output is indistinguishable from a real C1 output to anyone
not holding the sector: rust-fil-proofs' verifier and ours accept it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.circuits.porep import derive
from cuzk.circuits.porep.graph import StackedGraph
from cuzk.circuits.porep.labels import create_label, encode, layer_parents
from cuzk.circuits.porep.params import BASE_DEGREE, RegisteredSealProof
from cuzk.circuits.porep.types import SealCommitPhase1Output
from cuzk.circuits.porep.vanilla import column_hash
from cuzk.circuits.porep.vanilla_prove import assemble_c1, challenged_nodes
from cuzk.hashers.merkle import (
    PathElement,
    sha256_path,
    sha256_tree_layers,
    sparse_poseidon_tree,
)
from cuzk.hashers.poseidon import hash2
from cuzk.hashers.sha256 import sha254_node

log = logging.getLogger(__name__)

PATTERN_NODES = 1024


def random_domain(rng: random.Random) -> bytes:
    b = bytearray(rng.randbytes(32))
    b[31] &= 0x3F  # below 2^254, like a truncated SHA-256 label
    return bytes(b)


@dataclass
class PeriodicTreeD:
    """Tree D of a sector whose data repeats a pattern of ``len(pattern)`` nodes."""

    nodes: int
    pattern: list[bytes]

    def __post_init__(self) -> None:
        self.layers = sha256_tree_layers(self.pattern)
        # above the pattern every pair of children is equal
        self.upper = [self.layers[-1][0]]
        size = len(self.pattern)
        while size < self.nodes:
            self.upper.append(sha254_node(self.upper[-1], self.upper[-1]))
            size *= 2

    @property
    def root(self) -> bytes:
        return self.upper[-1]

    def opening(self, node: int) -> tuple[bytes, list[PathElement]]:
        p = len(self.pattern)
        path = sha256_path(self.layers, node % p)
        idx = node // p
        for value in self.upper[:-1]:
            path.append(PathElement(hashes=(value,), index=idx & 1))
            idx >>= 1
        return self.pattern[node % p], path


@dataclass
class SyntheticSector:
    """The opened part of a sector: implements :class:`prove.SectorOpenings`."""

    proof_type: RegisteredSealProof
    replica_id: bytes
    tree_d: PeriodicTreeD
    columns: dict[int, tuple[bytes, ...]]
    c_paths: dict[int, list[PathElement]]
    r_leaves: dict[int, int]
    r_paths: dict[int, list[PathElement]]
    comm_c: bytes
    comm_r_last: bytes

    @property
    def comm_d(self) -> bytes:
        return self.tree_d.root

    @property
    def comm_r(self) -> bytes:
        c, r = (int.from_bytes(x, "little") for x in (self.comm_c, self.comm_r_last))
        return hash2(c, r).to_bytes(32, "little")

    def column(self, node: int) -> tuple[bytes, ...]:
        return self.columns[node]

    def tree_c_path(self, node: int) -> list[PathElement]:
        return self.c_paths[node]

    def tree_r_opening(self, node: int) -> tuple[bytes, list[PathElement]]:
        return self.r_leaves[node].to_bytes(32, "little"), self.r_paths[node]

    def tree_d_opening(self, node: int) -> tuple[bytes, list[PathElement]]:
        return self.tree_d.opening(node)


def generate_c1(
    proof_type: RegisteredSealProof,
    rng: random.Random,
    miner_id: int = 1000,
    sector_id: int = 1,
    partitions: Sequence[int] | None = None,
) -> SealCommitPhase1Output:
    """A valid C1 output for ``proof_type`` (all partitions, or only those
    listed: the others are then left empty, for tests and benchmarks)."""
    if proof_type.feature == derive.SYNTHETIC:
        # comm_r is made from the opened nodes, and a synthetic proof's challenges
        # from comm_r: a sparse sector cannot know which nodes to open.
        raise ValueError(
            f"{proof_type.name}: a synthetic PoRep's challenges come from comm_r, so its "
            "C1 needs a really sealed sector (gen-c1 --sealed: 2KiB or 8MiB)"
        )
    s = proof_type.sector
    graph = StackedGraph(s.nodes, proof_type.porep_id, proof_type.api_version)
    ticket = random_domain(rng)
    seed = random_domain(rng)
    tree_d = PeriodicTreeD(
        s.nodes, [random_domain(rng) for _ in range(min(PATTERN_NODES, s.nodes))]
    )
    rid = derive.replica_id(
        derive.prover_id_from_miner(miner_id), sector_id, ticket, tree_d.root, proof_type.porep_id
    )
    challenges = challenged_nodes(proof_type, rid, seed, partitions)
    challenged = sorted({c for part in challenges for c in part})

    parents = {c: graph.parents(c) for c in challenged}
    columns: dict[int, list[bytes]] = {}
    for c in challenged:
        for p in parents[c]:
            if p not in columns:
                columns[p] = [random_domain(rng) for _ in range(s.layers)]
        columns.setdefault(c, [b""] * s.layers)
    for layer in range(1, s.layers + 1):
        for c in challenged:  # increasing: DRG parents (< c) already labelled
            ps = parents[c]
            chosen = layer_parents(
                layer,
                [columns[p] for p in ps[:BASE_DEGREE]],
                [columns[p] for p in ps[BASE_DEGREE:]],
            )
            columns[c][layer - 1] = create_label(rid, layer, c, chosen)
    frozen = {v: tuple(col) for v, col in columns.items()}
    log.info("%s: %d challenges, %d columns", proof_type.name, len(challenged), len(frozen))

    hashes = {col: column_hash(col) for col in frozen.values()}
    leaf_c = {v: int.from_bytes(hashes[col], "little") for v, col in frozen.items()}
    tree_c = sparse_poseidon_tree(list(leaf_c), s.nodes, s.tree_shape, rng, leaf_c)
    leaf_r = {
        c: int.from_bytes(encode(frozen[c][-1], tree_d.opening(c)[0]), "little") for c in challenged
    }
    tree_r = sparse_poseidon_tree(challenged, s.nodes, s.tree_shape, rng, leaf_r)
    sector = SyntheticSector(
        proof_type=proof_type,
        replica_id=rid,
        tree_d=tree_d,
        columns=frozen,
        c_paths=tree_c.paths,
        r_leaves=leaf_r,
        r_paths=tree_r.paths,
        comm_c=tree_c.root.to_bytes(32, "little"),
        comm_r_last=tree_r.root.to_bytes(32, "little"),
    )
    return assemble_c1(
        proof_type, sector, graph, sector.comm_r, seed, ticket, challenges, hashes.__getitem__
    )
