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
from typing import Any

import numpy as np

from cuzk.algebra.fields import R
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
from cuzk.hashers.field import OBJECT_FR
from cuzk.hashers.poseidon import hash2, hash_ints, hash_vectors
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.hashers.sha256 import sha254_node


def _fr(b: bytes) -> int:
    return int.from_bytes(b, "little")


def column_hash(rows: Sequence[bytes]) -> bytes:
    """Poseidon of a column's labels (arity = number of layers)."""
    v = hash_ints([_fr(r) for r in rows], poseidon_constants(len(rows)))
    return v.to_bytes(32, "little")


def batch_column_hashes(columns: Sequence[Sequence[bytes]], chunk: int = 4096) -> list[bytes]:
    """Poseidon column hashes of many columns (all of one height) at once."""
    out: list[bytes] = []
    for lo in range(0, len(columns), chunk):
        part = columns[lo : lo + chunk]
        height = len(part[0])
        cols = [_objects([_fr(c[i]) for c in part]) for i in range(height)]
        values = hash_vectors(OBJECT_FR, cols, poseidon_constants(height)) % R
        out += [int(v).to_bytes(32, "little") for v in values]
    return out


def batch_poseidon_levels(proofs: Sequence[MerkleProof], chunk: int = 4096) -> list[list[int]]:
    """Per path, the node each level of it hashes to, the root last (vectorised;
    paths of one shape): what a witness's Merkle levels output."""
    out: list[list[int]] = []
    for lo in range(0, len(proofs), chunk):
        part = proofs[lo : lo + chunk]
        cur = _objects([_fr(p.leaf) for p in part])
        levels = []
        for level in range(len(part[0].path)):
            elements = [p.path[level] for p in part]
            arity = len(elements[0].hashes) + 1
            position = np.array([e.index for e in elements], dtype=np.int64)
            siblings = [_objects([_fr(e.hashes[j]) for e in elements]) for j in range(arity - 1)]
            children = insert_lanes(cur, position, siblings)
            cur = hash_vectors(OBJECT_FR, children, poseidon_constants(arity)) % R
            levels.append(cur)
        if not levels:  # a tree of one node: no level to hash
            out += [[] for _ in part]
            continue
        out += [[int(v) for v in path] for path in zip(*levels, strict=True)]
    return out


class HashedValues:
    """Hashes a verification computed, by the object hashed: a column's rows
    (their Poseidon hash) or a Poseidon path (the node of each level). Held
    with the object, so an id is never taken for another's."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, Any]] = {}

    def put(self, obj: Any, value: Any) -> None:
        self._by_id[id(obj)] = (obj, value)

    def get(self, obj: Any) -> Any:
        got = self._by_id.get(id(obj))
        return got[1] if got is not None and got[0] is obj else None


def _objects(values: list[int]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def insert_lanes(cur: np.ndarray, position: np.ndarray, siblings: list[np.ndarray]) -> list:
    """Per lane, the siblings with ``cur`` inserted at ``position``."""
    arity = len(siblings) + 1
    out = []
    for j in range(arity):
        below = siblings[j] if j < arity - 1 else siblings[j - 1]
        above = siblings[j - 1] if j > 0 else siblings[0]
        out.append(np.where(position > j, below, np.where(position < j, above, cur)).astype(object))
    return out


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
        self._columns: list[tuple[ColumnProof, str]] = []
        self._paths: list[tuple[MerkleProof, str, str]] = []
        # what check_hashes computed, for a witness to reuse (HashedValues)
        self.hashed = HashedValues()

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
        # hashed later, with every other path of this verification, in one batch
        self._paths.append((proof, path, f"the path does not hash to its root ({what})"))

    def check_column(self, cp: ColumnProof, path: str, node: int, comm_c: bytes) -> None:
        if cp.column.index != node:
            raise self.fail(f"{path}.column.index", f"is {cp.column.index}, expected node {node}")
        if len(cp.column.rows) != self.sector.layers:
            raise self.fail(
                f"{path}.column.rows",
                f"expected {self.sector.layers} labels, got {len(cp.column.rows)}",
            )
        self._columns.append((cp, f"{path}.inclusion_proof"))
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
        """The openings: tree D, tree R, the challenged and parent columns in tree C
        (Poseidon hashes are queued for :meth:`check_hashes`)."""
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

    def check_labels(self, p: ChallengeProof, path: str, challenge: int, replica_id: bytes) -> None:
        """Labels of the challenged column from its parents' columns, and the encoding."""
        layers = self.sector.layers
        rc = p.replica_column_proofs
        rpath = f"{path}.replica_column_proofs"
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
            label = create_label(replica_id, layer, challenge, expected)
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
        challenges = derive.partition_challenges(self.proof_type, c1.replica_id, c1.seed, c1.comm_r)
        checked = list(partitions) if partitions is not None else list(range(s.partitions))
        for k in checked:
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
        self.check_hashes()
        for k in checked:
            kpath = f"{base}[{k}]"
            for i, (p, c) in enumerate(zip(c1.partitions[k], challenges[k], strict=True)):
                self.check_labels(p, f"{kpath}[{i}]", c, c1.replica_id)

    def check_hashes(self) -> None:
        """Column hashes and Poseidon paths, vectorised over the whole proof.

        Raises for the first failure in the order the checks were queued
        (each column's hash comes before its path)."""
        columns, self._columns = self._columns, []
        paths, self._paths = self._paths, []
        col_hashes = batch_column_hashes([cp.column.rows for cp, _ in columns])
        bad_column = {
            where
            for (cp, where), h in zip(columns, col_hashes, strict=True)
            if h != cp.inclusion_proof.leaf
        }
        levels = batch_poseidon_levels([proof for proof, _, _ in paths])
        for (proof, where, problem), lv in zip(paths, levels, strict=True):
            if where in bad_column:
                raise self.fail(where, "leaf is not the column's hash")
            root = lv[-1] if lv else _fr(proof.leaf)
            if root.to_bytes(32, "little") != proof.root:
                raise self.fail(where, problem)
        for (cp, _), h in zip(columns, col_hashes, strict=True):
            self.hashed.put(cp.column.rows, _fr(h))
        for (proof, _, _), lv in zip(paths, levels, strict=True):
            self.hashed.put(proof, lv)


def verify_c1(
    c1: SealCommitPhase1Output, source: str = "c1 output", partitions: Sequence[int] | None = None
) -> None:
    """Verify a C1 output against its own registered proof type."""
    Verifier(registered_proof(c1.registered_proof, source), source).verify(c1, partitions)
