"""From a C1 output to the circuit's witness hints and public inputs.

:func:`partition_hints` reads what ``StackedCompound::circuit`` reads from
the vanilla proofs (``Proof::from(vanilla)``): per challenge the data leaf
and tree D path, the 14 parent columns with their tree C paths, the
challenge (from the first labeling proof), the tree R and tree C paths of
the challenged node; per partition comm_r_last and comm_c from the first
challenge (all challenges must agree). Labels of the challenged column,
tree leaves of R and C, and the labeling/encoding proofs are *recomputed* by
the circuit, not read.

:func:`public_inputs` is ``StackedCompound::generate_public_inputs``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.circuits.porep import derive
from cuzk.circuits.porep.circuit import ChallengeHints, Level, PartitionHints
from cuzk.circuits.porep.graph import StackedGraph
from cuzk.circuits.porep.params import BASE_DEGREE, RegisteredSealProof
from cuzk.circuits.porep.types import ChallengeProof, MerkleProof, SealCommitPhase1Output
from cuzk.errors import InputError


def _fr(b: bytes) -> int:
    return int.from_bytes(b, "little")


def _levels(proof: MerkleProof) -> list[Level]:
    return [(e.index, [_fr(h) for h in e.hashes]) for e in proof.path]


def challenge_hints(p: ChallengeProof) -> ChallengeHints:
    rc = p.replica_column_proofs
    return ChallengeHints(
        data_leaf=_fr(p.comm_d_proofs.leaf),
        d_path=_levels(p.comm_d_proofs),
        drg_columns=[[_fr(r) for r in c.column.rows] for c in rc.drg_parents],
        drg_paths=[_levels(c.inclusion_proof) for c in rc.drg_parents],
        exp_columns=[[_fr(r) for r in c.column.rows] for c in rc.exp_parents],
        exp_paths=[_levels(c.inclusion_proof) for c in rc.exp_parents],
        challenge=p.labeling_proofs[0].node,
        r_path=_levels(p.comm_r_last_proof),
        c_path=_levels(rc.c_x.inclusion_proof),
    )


def partition_hints(
    c1: SealCommitPhase1Output, k: int, source: str = "c1 output"
) -> PartitionHints:
    """The witness hints of partition ``k``."""
    base = f"vanilla_proofs.{c1.vanilla_variant}[{k}]"
    if not 0 <= k < len(c1.partitions) or not c1.partitions[k]:
        raise InputError(source, base, "no vanilla proofs for this partition")
    proofs = c1.partitions[k]
    comm_c, comm_r_last = proofs[0].comm_c, proofs[0].comm_r_last
    for i, p in enumerate(proofs):
        if p.comm_c != comm_c:
            raise InputError(source, f"{base}[{i}]", "inconsistent comm_c (tree C root)")
        if p.comm_r_last != comm_r_last:
            raise InputError(source, f"{base}[{i}]", "inconsistent comm_r_last (tree R root)")
    return PartitionHints(
        replica_id=_fr(c1.replica_id),
        comm_d=_fr(c1.comm_d),
        comm_r=_fr(c1.comm_r),
        comm_r_last=_fr(comm_r_last),
        comm_c=_fr(comm_c),
        challenges=[challenge_hints(p) for p in proofs],
    )


def public_inputs_for(
    graph: StackedGraph, replica_id: bytes, comm_d: bytes, comm_r: bytes, challenges: Sequence[int]
) -> list[int]:
    """The public inputs (without ONE) for these challenges."""
    out = [_fr(replica_id), _fr(comm_d), _fr(comm_r)]
    for c in challenges:
        parents = graph.parents(c)
        out.append(c)  # tree D leaf index
        out.extend(parents[:BASE_DEGREE])  # tree C indices of the DRG parents
        out.extend(parents[BASE_DEGREE:])  # ... and of the expander parents
        out.append(c)  # the challenge as a u64
        out.append(c)  # tree R leaf index
        out.append(c)  # tree C leaf index
    return out


def public_inputs(
    proof_type: RegisteredSealProof,
    replica_id: bytes,
    comm_d: bytes,
    comm_r: bytes,
    seed: bytes,
    k: int,
) -> list[int]:
    """``StackedCompound::generate_public_inputs`` for partition ``k``."""
    s = proof_type.sector
    graph = StackedGraph(s.nodes, proof_type.porep_id, proof_type.api_version)
    challenges = derive.partition_challenges(proof_type, replica_id, seed)[k]
    return public_inputs_for(graph, replica_id, comm_d, comm_r, challenges)


def c1_public_inputs(
    c1: SealCommitPhase1Output, proof_type: RegisteredSealProof, k: int
) -> list[int]:
    return public_inputs(proof_type, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, k)
