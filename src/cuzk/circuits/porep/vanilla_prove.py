"""Assemble vanilla PoRep proofs (C1 outputs) from a sector's trees and labels.

Both test-data sources — the real small sealer and the sparse synthetic
generator — describe a sector through a :class:`SectorOpenings`: the
columns of labels, and inclusion paths in trees D, C and R, for the nodes a
proof needs. This module turns those into the C1 structure exactly as
``StackedDrg::prove_layers`` / ``Proof::from_parts`` lay it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cuzk.circuits.porep import derive
from cuzk.circuits.porep.graph import StackedGraph
from cuzk.circuits.porep.labels import layer_parents
from cuzk.circuits.porep.params import BASE_DEGREE, RegisteredSealProof, proof_kind
from cuzk.circuits.porep.types import (
    ChallengeProof,
    Column,
    ColumnProof,
    LabelingProof,
    MerkleProof,
    PathElement,
    ReplicaColumnProof,
    SealCommitPhase1Output,
)
from cuzk.hashers.merkle import PathElement as HPathElement
from cuzk.hashers.merkle import TreeShape


class SectorOpenings(Protocol):
    """What a prover can open in a sealed sector (all values 32-byte LE)."""

    replica_id: bytes
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes

    def column(self, node: int) -> tuple[bytes, ...]: ...
    def tree_c_path(self, node: int) -> list[HPathElement]: ...
    def tree_r_opening(self, node: int) -> tuple[bytes, list[HPathElement]]: ...
    def tree_d_opening(self, node: int) -> tuple[bytes, list[HPathElement]]: ...


def _domain(v: int | bytes) -> bytes:
    return v if isinstance(v, bytes) else v.to_bytes(32, "little")


def merkle_proof(
    shape: TreeShape | None, root: int | bytes, leaf: int | bytes, path: Sequence[HPathElement]
) -> MerkleProof:
    """A C1 Merkle proof from a leaf-upwards path, split into base / sub / top
    levels as the tree's shape says (``shape=None``: a binary tree D)."""
    elements = tuple(PathElement(tuple(_domain(h) for h in e.hashes), e.index) for e in path)
    kind = "Single" if shape is None else proof_kind(shape)
    extra = {"Single": 0, "Sub": 1, "Top": 2}[kind]
    cut = len(elements) - extra
    return MerkleProof(
        kind=kind,
        root=_domain(root),
        leaf=_domain(leaf),
        base=elements[:cut],
        sub=elements[cut : cut + 1] if extra >= 1 else (),
        top=elements[cut + 1 :] if extra == 2 else (),
    )


@dataclass
class ProofAssembler:
    proof_type: RegisteredSealProof
    sector: SectorOpenings
    graph: StackedGraph

    def column_proof(self, node: int, column_hash: bytes) -> ColumnProof:
        shape = self.proof_type.sector.tree_shape
        path = self.sector.tree_c_path(node)
        return ColumnProof(
            Column(node, tuple(self.sector.column(node))),
            merkle_proof(shape, self.sector.comm_c, column_hash, path),
        )

    def challenge_proof(self, challenge: int, column_hash) -> ChallengeProof:
        """The proof of one challenged node (``column_hash(rows) -> bytes``)."""
        s = self.proof_type.sector
        parents = self.graph.parents(challenge)

        def col(node: int) -> ColumnProof:
            return self.column_proof(node, column_hash(self.sector.column(node)))

        c_x = col(challenge)
        drg = tuple(col(p) for p in parents[:BASE_DEGREE])
        exp = tuple(col(p) for p in parents[BASE_DEGREE:])
        drg_rows = [c.column.rows for c in drg]
        exp_rows = [c.column.rows for c in exp]
        labeling = tuple(
            LabelingProof(tuple(layer_parents(layer, drg_rows, exp_rows)), layer, challenge)
            for layer in range(1, s.layers + 1)
        )
        d_leaf, d_path = self.sector.tree_d_opening(challenge)
        r_leaf, r_path = self.sector.tree_r_opening(challenge)
        return ChallengeProof(
            comm_d_proofs=merkle_proof(None, self.sector.comm_d, d_leaf, d_path),
            comm_r_last_proof=merkle_proof(s.tree_shape, self.sector.comm_r_last, r_leaf, r_path),
            replica_column_proofs=ReplicaColumnProof(c_x, drg, exp),
            labeling_proofs=labeling,
            encoding_proof=labeling[-1],
        )


def challenged_nodes(
    proof_type: RegisteredSealProof,
    replica_id: bytes,
    seed: bytes,
    partitions: Sequence[int] | None = None,
    comm_r: bytes | None = None,
) -> list[list[int]]:
    """Each partition's challenges (an empty list for partitions left out);
    a synthetic proof's come from ``comm_r`` too."""
    all_challenges = derive.partition_challenges(proof_type, replica_id, seed, comm_r)
    keep = set(range(len(all_challenges)) if partitions is None else partitions)
    return [c if k in keep else [] for k, c in enumerate(all_challenges)]


def assemble_c1(
    proof_type: RegisteredSealProof,
    sector: SectorOpenings,
    graph: StackedGraph,
    comm_r: bytes,
    seed: bytes,
    ticket: bytes,
    challenges: list[list[int]],
    column_hash,
) -> SealCommitPhase1Output:
    asm = ProofAssembler(proof_type, sector, graph)
    return SealCommitPhase1Output(
        registered_proof=proof_type.name,
        vanilla_variant=proof_type.vanilla_variant,
        partitions=tuple(
            tuple(asm.challenge_proof(c, column_hash) for c in part) for part in challenges
        ),
        comm_r=comm_r,
        comm_d=sector.comm_d,
        replica_id=sector.replica_id,
        seed=seed,
        ticket=ticket,
    )
