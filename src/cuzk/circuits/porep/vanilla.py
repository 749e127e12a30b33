"""The vanilla PoRep verifier: is a C1 output a valid proof for its public data?

It checks what rust-fil-proofs' ``verify_all_partitions`` checks — per
partition comm_r = Poseidon2(comm_c, comm_r_last) with one comm_c and one
comm_r_last for all challenges, the interactive challenges derived from
replica_id and seed, the column openings of the challenge and its 14
parents in tree C, every label of the challenged column, the encoding
``replica = key + data`` — and, unlike it, everything the circuit will later
rely on:

- every Merkle path is hashed up to its root (tree D with truncated
  SHA-256, trees C and R with Poseidon of the sector's tree shape), not only
  its leaf index compared;
- the labeling proofs' 37 parents are exactly the parents' column values
  (DRG parents in the same layer, expander parents in the layer below), and
  their ``node`` / ``layer_index`` are the challenge's;
- the encoding proof repeats the last labeling proof.

So a C1 output that passes here yields a satisfied circuit. Failures raise
:class:`~cuzk.errors.InputError` with the JSON path of the first bad value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.circuits.porep import derive
from cuzk.circuits.porep.graph import StackedGraph
from cuzk.circuits.porep.labels import create_label, encode, layer_parents
from cuzk.circuits.porep.params import (
    BASE_DEGREE,
    EXP_DEGREE,
    RegisteredSealProof,
    proof_kind,
    registered_proof,
)
from cuzk.circuits.porep.types import (
    ChallengeProof,
    ColumnProof,
    MerkleProof,
    SealCommitPhase1Output,
)
from cuzk.errors import InputError
from cuzk.hashers.poseidon import hash2, hash_ints
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.hashers.sha256 import sha254_node


def _fr(b: bytes) -> int:
    return int.from_bytes(b, "little")


def column_hash(rows: Sequence[bytes]) -> bytes:
    """Poseidon of a column's labels (arity = number of layers)."""
    v = hash_ints([_fr(r) for r in rows], poseidon_constants(len(rows)))
    return v.to_bytes(32, "little")


def poseidon_root(proof: MerkleProof) -> bytes:
    """Hash a Poseidon tree's leaf up its path (each level with its arity)."""
    cur = _fr(proof.leaf)
    for e in proof.path:
        children = [_fr(h) for h in e.hashes]
        children.insert(e.index, cur)
        cur = hash_ints(children, poseidon_constants(len(children)))
    return cur.to_bytes(32, "little")


def sha256_root(proof: MerkleProof) -> bytes:
    cur = proof.leaf
    for e in proof.path:
        (sibling,) = e.hashes
        cur = sha254_node(sibling, cur) if e.index else sha254_node(cur, sibling)
    return cur


@dataclass
class Verifier:
    """Checks C1 outputs of one registered seal proof."""

    proof_type: RegisteredSealProof
    source: str = "c1 output"

    def __post_init__(self) -> None:
        s = self.proof_type.sector
        self.sector = s
        self.graph = StackedGraph(s.nodes, self.proof_type.porep_id, self.proof_type.api_version)
        self.tree_arities = s.tree_arities
        self.tree_kind = proof_kind(s.tree_shape)
        self._parents: dict[int, list[int]] = {}

    def fail(self, path: str, problem: str) -> InputError:
        return InputError(self.source, path, problem)

    def parents(self, node: int) -> list[int]:
        if node not in self._parents:
            self._parents[node] = self.graph.parents(node)
        return self._parents[node]

    # --- Merkle proofs ---------------------------------------------------
    def check_shape(
        self, proof: MerkleProof, path: str, kind: str, arities: tuple[int, ...]
    ) -> None:
        where = f"{path}.data"
        if proof.kind != kind:
            raise self.fail(
                where, f"expected a {kind} proof for this sector size, got {proof.kind}"
            )
        if len(proof.path) != len(arities):
            raise self.fail(
                where, f"expected a path of {len(arities)} levels, got {len(proof.path)}"
            )
        for i, (e, a) in enumerate(zip(proof.path, arities, strict=True)):
            if len(e.hashes) != a - 1:
                raise self.fail(
                    f"{where}.{kind}: level {i}",
                    f"expected {a - 1} siblings (arity {a}), got {len(e.hashes)}",
                )

    def check_tree_d(self, proof: MerkleProof, path: str, challenge: int, comm_d: bytes) -> None:
        arities = (2,) * self.sector.tree_d_height
        self.check_shape(proof, path, "Single", arities)
        if proof.path_index(arities) != challenge:
            raise self.fail(
                path, f"opens leaf {proof.path_index(arities)}, not challenge {challenge}"
            )
        if proof.root != comm_d:
            raise self.fail(f"{path}.data.Single.root", "is not comm_d")
        if sha256_root(proof) != proof.root:
            raise self.fail(path, "the path does not hash to its root (tree D)")

    def check_tree(self, proof: MerkleProof, path: str, node: int, root: bytes, what: str) -> None:
        self.check_shape(proof, path, self.tree_kind, self.tree_arities)
        opened = proof.path_index(self.tree_arities)
        if opened != node:
            raise self.fail(path, f"opens leaf {opened}, not node {node}")
        if proof.root != root:
            raise self.fail(f"{path}.data.{proof.kind}.root", f"is not {what}")
        if poseidon_root(proof) != proof.root:
            raise self.fail(path, f"the path does not hash to its root ({what})")

    def check_column(self, cp: ColumnProof, path: str, node: int, comm_c: bytes) -> None:
        if cp.column.index != node:
            raise self.fail(f"{path}.column.index", f"is {cp.column.index}, expected node {node}")
        if len(cp.column.rows) != self.sector.layers:
            raise self.fail(
                f"{path}.column.rows",
                f"expected {self.sector.layers} labels, got {len(cp.column.rows)}",
            )
        if column_hash(cp.column.rows) != cp.inclusion_proof.leaf:
            raise self.fail(f"{path}.inclusion_proof", "leaf is not the column's hash")
        self.check_tree(cp.inclusion_proof, f"{path}.inclusion_proof", node, comm_c, "comm_c")

    # --- one challenge ---------------------------------------------------
    def check_challenge(
        self,
        p: ChallengeProof,
        path: str,
        challenge: int,
        c1: SealCommitPhase1Output,
        comm_c: bytes,
        comm_r_last: bytes,
    ) -> None:
        layers = self.sector.layers
        self.check_tree_d(p.comm_d_proofs, f"{path}.comm_d_proofs", challenge, c1.comm_d)
        self.check_tree(
            p.comm_r_last_proof, f"{path}.comm_r_last_proof", challenge, comm_r_last, "comm_r_last"
        )

        rc = p.replica_column_proofs
        rpath = f"{path}.replica_column_proofs"
        if len(rc.drg_parents) != BASE_DEGREE or len(rc.exp_parents) != EXP_DEGREE:
            raise self.fail(
                rpath,
                f"expected {BASE_DEGREE} DRG and {EXP_DEGREE} expander parent columns, "
                f"got {len(rc.drg_parents)} and {len(rc.exp_parents)}",
            )
        parents = self.parents(challenge)
        self.check_column(rc.c_x, f"{rpath}.c_x", challenge, comm_c)
        for i, cp in enumerate(rc.drg_parents):
            self.check_column(cp, f"{rpath}.drg_parents[{i}]", parents[i], comm_c)
        for i, cp in enumerate(rc.exp_parents):
            self.check_column(cp, f"{rpath}.exp_parents[{i}]", parents[BASE_DEGREE + i], comm_c)

        if len(p.labeling_proofs) != layers:
            raise self.fail(
                f"{path}.labeling_proofs", f"expected {layers} proofs, got {len(p.labeling_proofs)}"
            )
        drg_rows = [cp.column.rows for cp in rc.drg_parents]
        exp_rows = [cp.column.rows for cp in rc.exp_parents]
        for layer in range(1, layers + 1):
            lp = p.labeling_proofs[layer - 1]
            lpath = f"{path}.labeling_proofs[{layer - 1}]"
            if lp.layer_index != layer or lp.node != challenge:
                raise self.fail(
                    lpath,
                    f"labels node {lp.node} in layer {lp.layer_index}, expected node "
                    f"{challenge} in layer {layer}",
                )
            expected = layer_parents(layer, drg_rows, exp_rows)
            for j, (got, want) in enumerate(zip(lp.parents, expected, strict=False)):
                if got != want:
                    raise self.fail(f"{lpath}.parents[{j}]", "is not the parent column's label")
            if len(lp.parents) != len(expected):
                raise self.fail(f"{lpath}.parents", f"expected {len(expected)} parent labels")
            label = create_label(c1.replica_id, layer, challenge, expected)
            if label != rc.c_x.column.rows[layer - 1]:
                raise self.fail(
                    f"{rpath}.c_x.column.rows[{layer - 1}]",
                    f"is not the label computed from its parents (layer {layer})",
                )

        ep = p.encoding_proof
        if ep != p.labeling_proofs[-1]:
            raise self.fail(
                f"{path}.encoding_proof", "differs from the last layer's labeling proof"
            )
        key = rc.c_x.column.rows[-1]
        if encode(key, p.comm_d_proofs.leaf) != p.comm_r_last_proof.leaf:
            raise self.fail(
                f"{path}.comm_r_last_proof",
                "leaf is not the encoding of the data leaf with the last label",
            )

    # --- a whole C1 output -----------------------------------------------
    def verify(self, c1: SealCommitPhase1Output, partitions: Sequence[int] | None = None) -> None:
        """Raise InputError unless every (or every listed) partition is valid."""
        if c1.registered_proof != self.proof_type.name:
            raise self.fail(
                "registered_proof", f"is {c1.registered_proof}, expected {self.proof_type.name}"
            )
        s = self.sector
        base = f"vanilla_proofs.{c1.vanilla_variant}"
        if len(c1.partitions) != s.partitions:
            raise self.fail(base, f"expected {s.partitions} partitions, got {len(c1.partitions)}")
        challenges = derive.partition_challenges(self.proof_type, c1.replica_id, c1.seed)
        for k in partitions if partitions is not None else range(s.partitions):
            proofs = c1.partitions[k]
            kpath = f"{base}[{k}]"
            if len(proofs) != len(challenges[k]):
                raise self.fail(
                    kpath, f"expected {len(challenges[k])} challenge proofs, got {len(proofs)}"
                )
            comm_c, comm_r_last = proofs[0].comm_c, proofs[0].comm_r_last
            if hash2(_fr(comm_c), _fr(comm_r_last)).to_bytes(32, "little") != c1.comm_r:
                raise self.fail("comm_r", f"is not Poseidon(comm_c, comm_r_last) of partition {k}")
            for i, (p, c) in enumerate(zip(proofs, challenges[k], strict=True)):
                self.check_challenge(p, f"{kpath}[{i}]", c, c1, comm_c, comm_r_last)


def verify_c1(
    c1: SealCommitPhase1Output, source: str = "c1 output", partitions: Sequence[int] | None = None
) -> None:
    """Verify a C1 output against its own registered proof type."""
    Verifier(registered_proof(c1.registered_proof, source), source).verify(c1, partitions)
