"""A real (small) sealer: every label of every layer, trees D, C and R.

``seal(...)`` does what SealPreCommit1/2 and SealCommit1 do for a sector
small enough to hold in memory (2KiB in tests; 8MiB works, slowly, since
Poseidon runs on Python integers): tree D over the data, the replica id,
the SDR labels layer by layer, tree C over the column hashes, the replica
(last label + data) and tree R over it, comm_r = Poseidon2(comm_c,
comm_r_last), then the vanilla proofs for the seed's challenges (interactive,
or synthetic: selected from the synthetic set that comm_r fixes).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.algebra.fields import R
from cuzk.circuits.porep import derive
from cuzk.circuits.porep.graph import StackedGraph
from cuzk.circuits.porep.labels import create_label, cycle_parents, encode
from cuzk.circuits.porep.params import BASE_DEGREE, NODE_SIZE, RegisteredSealProof
from cuzk.circuits.porep.types import SealCommitPhase1Output
from cuzk.circuits.porep.vanilla import column_hash
from cuzk.circuits.porep.vanilla_prove import assemble_c1, challenged_nodes
from cuzk.hashers.merkle import (
    PathElement,
    TreeShape,
    poseidon_layer,
    sha256_path,
    sha256_tree_layers,
)
from cuzk.hashers.poseidon import hash2

log = logging.getLogger(__name__)


def random_sector_data(nodes: int, rng: random.Random) -> bytes:
    """Fr-safe random data: every 32-byte node below 2^254 (as fr32 padding makes it)."""
    out = bytearray(rng.randbytes(nodes * NODE_SIZE))
    out[NODE_SIZE - 1 :: NODE_SIZE] = bytes(b & 0x3F for b in out[NODE_SIZE - 1 :: NODE_SIZE])
    return bytes(out)


def compute_labels(graph: StackedGraph, replica_id: bytes, layers: int) -> list[list[bytes]]:
    """``labels[l][v]``: the label of node v in layer l + 1."""
    out: list[list[bytes]] = []
    for layer in range(1, layers + 1):
        cur: list[bytes] = []
        prev = out[-1] if out else None
        for v in range(graph.nodes):
            if v == 0:
                cur.append(create_label(replica_id, layer, 0, ()))
                continue
            ps = graph.parents(v)
            chosen = [cur[p] for p in ps[:BASE_DEGREE]]
            if prev is not None:
                chosen += [prev[p] for p in ps[BASE_DEGREE:]]
            cur.append(create_label(replica_id, layer, v, cycle_parents(chosen)))
        out.append(cur)
    return out


def poseidon_tree_layers(leaves: Sequence[int], shape: TreeShape) -> list[list[int]]:
    """Every level of a Poseidon tree, leaves first."""
    layers = [[x % R for x in leaves]]
    for arity in shape.arities(len(leaves)):
        layers.append(poseidon_layer(layers[-1], arity))
    return layers


def poseidon_path(layers: list[list[int]], shape: TreeShape, leaf: int) -> list[PathElement]:
    path, idx = [], leaf
    for level, arity in zip(layers[:-1], shape.arities(len(layers[0])), strict=True):
        pos = idx % arity
        start = idx - pos
        sib = tuple(level[start + j] for j in range(arity) if j != pos)
        path.append(PathElement(hashes=sib, index=pos))
        idx //= arity
    return path


@dataclass
class SealedSector:
    """A fully materialised sealed sector (all values 32-byte LE domain elements)."""

    proof_type: RegisteredSealProof
    data: bytes
    replica_id: bytes
    labels: list[list[bytes]]
    tree_d: list[list[bytes]]
    tree_c: list[list[int]]
    tree_r: list[list[int]]

    @property
    def comm_d(self) -> bytes:
        return self.tree_d[-1][0]

    @property
    def comm_c(self) -> bytes:
        return self.tree_c[-1][0].to_bytes(32, "little")

    @property
    def comm_r_last(self) -> bytes:
        return self.tree_r[-1][0].to_bytes(32, "little")

    @property
    def comm_r(self) -> bytes:
        c, r = self.tree_c[-1][0], self.tree_r[-1][0]
        return hash2(c, r).to_bytes(32, "little")

    # --- SectorOpenings ----------------------------------------------------
    def column(self, node: int) -> tuple[bytes, ...]:
        return tuple(layer[node] for layer in self.labels)

    def tree_c_path(self, node: int) -> list[PathElement]:
        return poseidon_path(self.tree_c, self.proof_type.sector.tree_shape, node)

    def tree_r_opening(self, node: int) -> tuple[bytes, list[PathElement]]:
        leaf = self.tree_r[0][node].to_bytes(32, "little")
        return leaf, poseidon_path(self.tree_r, self.proof_type.sector.tree_shape, node)

    def tree_d_opening(self, node: int) -> tuple[bytes, list[PathElement]]:
        return self.tree_d[0][node], sha256_path(self.tree_d, node)


def seal(
    proof_type: RegisteredSealProof,
    data: bytes,
    prover_id: bytes,
    sector_id: int,
    ticket: bytes,
) -> SealedSector:
    """PreCommit: labels and trees D, C, R of ``data`` (fr32-safe bytes)."""
    s = proof_type.sector
    if len(data) != s.sector_size:
        raise ValueError(f"{proof_type.name} seals {s.sector_size} bytes, got {len(data)}")
    graph = StackedGraph(s.nodes, proof_type.porep_id, proof_type.api_version)
    nodes = [data[i : i + NODE_SIZE] for i in range(0, len(data), NODE_SIZE)]
    tree_d = sha256_tree_layers(nodes)
    rid = derive.replica_id(prover_id, sector_id, ticket, tree_d[-1][0], proof_type.porep_id)
    labels = compute_labels(graph, rid, s.layers)
    columns = [tuple(layer[v] for layer in labels) for v in range(s.nodes)]
    tree_c = poseidon_tree_layers(
        [int.from_bytes(column_hash(c), "little") for c in columns], s.tree_shape
    )
    replica = [encode(labels[-1][v], nodes[v]) for v in range(s.nodes)]
    tree_r = poseidon_tree_layers([int.from_bytes(x, "little") for x in replica], s.tree_shape)
    log.info("sealed a %s sector: %d nodes, %d layers", s.name, s.nodes, s.layers)
    return SealedSector(proof_type, data, rid, labels, tree_d, tree_c, tree_r)


def commit_phase1(
    sealed: SealedSector, seed: bytes, ticket: bytes, partitions: Sequence[int] | None = None
) -> SealCommitPhase1Output:
    """SealCommitPhase1: the vanilla proofs for the seed's challenges."""
    pt = sealed.proof_type
    graph = StackedGraph(pt.sector.nodes, pt.porep_id, pt.api_version)
    challenges = challenged_nodes(pt, sealed.replica_id, seed, partitions, sealed.comm_r)
    return assemble_c1(pt, sealed, graph, sealed.comm_r, seed, ticket, challenges, column_hash)


def seal_random(
    proof_type: RegisteredSealProof, rng: random.Random, sector_id: int = 1, miner_id: int = 1000
) -> tuple[SealedSector, SealCommitPhase1Output]:
    """Seal random data with random ticket and seed; return the sector and its C1."""
    data = random_sector_data(proof_type.sector.nodes, rng)
    ticket = bytearray(rng.randbytes(32))
    ticket[31] &= 0x3F
    seed = bytearray(rng.randbytes(32))
    seed[31] &= 0x3F
    sealed = seal(proof_type, data, derive.prover_id_from_miner(miner_id), sector_id, bytes(ticket))
    return sealed, commit_phase1(sealed, bytes(seed), bytes(ticket))
