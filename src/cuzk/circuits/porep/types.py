"""The vanilla PoRep proof of one challenge, as SealCommitPhase1 emits it.

These mirror rust-fil-proofs' serde types (``storage-proofs-core``
``merkle/proof.rs``; ``storage-proofs-porep`` ``stacked/vanilla``). Every
32-byte value (a Poseidon or SHA-256 domain element) is kept as ``bytes``:
the little-endian representation of an Fr element.
"""

from __future__ import annotations

from dataclasses import dataclass

SINGLE = "Single"
SUB = "Sub"
TOP = "Top"


@dataclass(frozen=True)
class PathElement:
    """One level of a Merkle path: the arity−1 siblings and our position."""

    hashes: tuple[bytes, ...]
    index: int


@dataclass(frozen=True)
class MerkleProof:
    """A Merkle inclusion proof: ``Single`` (one tree), ``Sub`` (a base tree
    under one sub level) or ``Top`` (base, sub and top levels)."""

    kind: str
    root: bytes
    leaf: bytes
    base: tuple[PathElement, ...]
    sub: tuple[PathElement, ...] = ()
    top: tuple[PathElement, ...] = ()

    @property
    def path(self) -> tuple[PathElement, ...]:
        """Every level, leaf to root."""
        return self.base + self.sub + self.top

    def path_index(self, arities: tuple[int, ...]) -> int:
        """The leaf index the path opens (positions read as mixed-radix digits)."""
        index, scale = 0, 1
        for element, arity in zip(self.path, arities, strict=True):
            index += element.index * scale
            scale *= arity
        return index

    def arities(self) -> tuple[int, ...]:
        """Each level's arity, as the path's own sibling counts say."""
        return tuple(len(e.hashes) + 1 for e in self.path)


@dataclass(frozen=True)
class Column:
    """The labels of one node in every layer (``rows[l-1]`` is layer l)."""

    index: int
    rows: tuple[bytes, ...]


@dataclass(frozen=True)
class ColumnProof:
    column: Column
    inclusion_proof: MerkleProof


@dataclass(frozen=True)
class LabelingProof:
    """The 37 parent labels hashed into the label of ``node`` in layer ``layer_index``."""

    parents: tuple[bytes, ...]
    layer_index: int
    node: int


@dataclass(frozen=True)
class ReplicaColumnProof:
    c_x: ColumnProof
    drg_parents: tuple[ColumnProof, ...]
    exp_parents: tuple[ColumnProof, ...]


@dataclass(frozen=True)
class ChallengeProof:
    """``stacked::Proof``: everything that proves one challenged node."""

    comm_d_proofs: MerkleProof
    comm_r_last_proof: MerkleProof
    replica_column_proofs: ReplicaColumnProof
    labeling_proofs: tuple[LabelingProof, ...]
    encoding_proof: LabelingProof  # same fields as a labeling proof (EncodingProof)

    @property
    def comm_c(self) -> bytes:
        return self.replica_column_proofs.c_x.inclusion_proof.root

    @property
    def comm_r_last(self) -> bytes:
        return self.comm_r_last_proof.root


@dataclass(frozen=True)
class SealCommitPhase1Output:
    """``SealCommitPhase1Output``: the C1 output a C2 prover consumes."""

    registered_proof: str
    vanilla_variant: str  # the VanillaSealProof enum variant, e.g. "StackedDrg32GiBV1"
    partitions: tuple[tuple[ChallengeProof, ...], ...]
    comm_r: bytes
    comm_d: bytes
    replica_id: bytes
    seed: bytes
    ticket: bytes


@dataclass(frozen=True)
class C1Wrapper:
    """Curio's ``c1.json`` envelope around the C1 output."""

    sector_num: int
    phase1_out: bytes  # the raw C1 JSON bytes
    sector_size: int
