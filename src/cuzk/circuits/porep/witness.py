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

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cuzk.circuits.porep import derive, evaluators
from cuzk.circuits.porep.circuit import (
    ChallengeHints,
    Level,
    PartitionHints,
    PoRepShape,
    partition_subcircuit,
)
from cuzk.circuits.porep.graph import StackedGraph
from cuzk.circuits.porep.params import (
    BASE_DEGREE,
    RegisteredSealProof,
    parse_size,
    sector_params,
    size_name,
)
from cuzk.circuits.porep.types import ChallengeProof, MerkleProof, SealCommitPhase1Output
from cuzk.circuits.porep.vanilla import (
    HashedValues,
    batch_column_hashes,
    batch_poseidon_levels,
)
from cuzk.errors import InputError
from cuzk.synthesis.cache import load_or_compile
from cuzk.synthesis.compile import CompiledCircuit, Compiler, compile_circuit
from cuzk.synthesis.plan import Evaluator, WitnessPlan
from cuzk.synthesis.program import TraceEvaluator
from cuzk.synthesis.static_plan import StaticPlan, WitnessDevice

log = logging.getLogger(__name__)


def _fr(b: bytes) -> int:
    return int.from_bytes(b, "little")


def _lane(v: int) -> np.ndarray:
    """One instance's Fr value as a 1-lane vector (hints are lane arrays)."""
    out = np.empty(1, dtype=object)
    out[0] = v
    return out


def _levels(proof: MerkleProof, values: Sequence[int] | None = None) -> list[Level]:
    """A path's levels as hints: (position, siblings), and with ``values`` the
    node each level hashes to (a Poseidon path: the device witness reads it
    instead of hashing the level in the challenge's own lane)."""
    return [
        (
            np.array([e.index], dtype=np.uint64),
            [_lane(_fr(h)) for h in e.hashes],
            *(() if values is None else (_lane(values[i]),)),
        )
        for i, e in enumerate(proof.path)
    ]


def _column(rows: tuple[bytes, ...]) -> list[np.ndarray]:
    return [_lane(_fr(r)) for r in rows]


def _poseidon_paths(p: ChallengeProof) -> list[MerkleProof]:
    """A challenge's tree C and tree R paths (the circuit hashes every level)."""
    rc = p.replica_column_proofs
    return [
        *(c.inclusion_proof for c in (*rc.drg_parents, *rc.exp_parents, rc.c_x)),
        p.comm_r_last_proof,
    ]


def _columns(p: ChallengeProof) -> list[tuple[bytes, ...]]:
    """A challenge's columns whose hashes the circuit computes."""
    rc = p.replica_column_proofs
    return [c.column.rows for c in (*rc.drg_parents, *rc.exp_parents, rc.c_x)]


def challenge_hints(p: ChallengeProof, hashed: HashedValues) -> ChallengeHints:
    """One challenge's hints. ``hashed`` holds the node values of its Poseidon
    paths and its columns' hashes (:func:`_poseidon_paths`, :func:`_columns`):
    values the vanilla proof implies, which a device witness reads instead of
    hashing them one after another in the challenge's lane (the deferred passes
    still hash every one with its constraints, so a wrong value only makes an
    assignment that does not satisfy the circuit)."""
    rc = p.replica_column_proofs

    def path(proof: MerkleProof) -> list[Level]:
        return _levels(proof, hashed.get(proof))

    return ChallengeHints(
        data_leaf=_lane(_fr(p.comm_d_proofs.leaf)),
        d_path=_levels(p.comm_d_proofs),
        drg_columns=[_column(c.column.rows) for c in rc.drg_parents],
        drg_paths=[path(c.inclusion_proof) for c in rc.drg_parents],
        exp_columns=[_column(c.column.rows) for c in rc.exp_parents],
        exp_paths=[path(c.inclusion_proof) for c in rc.exp_parents],
        challenge=np.array([p.labeling_proofs[0].node], dtype=np.uint64),
        r_path=path(p.comm_r_last_proof),
        c_path=path(rc.c_x.inclusion_proof),
        column_hashes=[_lane(hashed.get(rows)) for rows in _columns(p)],
    )


def partition_hints(
    c1: SealCommitPhase1Output,
    k: int,
    source: str = "c1 output",
    hashed: HashedValues | None = None,
) -> PartitionHints:
    """The witness hints of partition ``k``; ``hashed`` are the column hashes and
    path nodes a vanilla verification of it computed (the rest is hashed here)."""
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
    # what the verification did not hash, all at once (vectorised)
    hashed = hashed or HashedValues()
    todo = [q for p in proofs for q in _poseidon_paths(p) if hashed.get(q) is None]
    for q, lv in zip(todo, batch_poseidon_levels(todo) if todo else [], strict=True):
        hashed.put(q, lv)
    todo = [c for p in proofs for c in _columns(p) if hashed.get(c) is None]
    for c, h in zip(todo, batch_column_hashes(todo) if todo else [], strict=True):
        hashed.put(c, _fr(h))
    return PartitionHints(
        replica_id=_lane(_fr(c1.replica_id)),
        comm_d=_lane(_fr(c1.comm_d)),
        comm_r=_lane(_fr(c1.comm_r)),
        comm_r_last=_lane(_fr(comm_r_last)),
        comm_c=_lane(_fr(comm_c)),
        challenges=[challenge_hints(p, hashed) for p in proofs],
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
    challenges = derive.partition_challenges(proof_type, replica_id, seed, comm_r)[k]
    return public_inputs_for(graph, replica_id, comm_d, comm_r, challenges)


def c1_public_inputs(
    c1: SealCommitPhase1Output, proof_type: RegisteredSealProof, k: int
) -> list[int]:
    return public_inputs(proof_type, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, k)


# --------------------------------------------------------------------------
# The compiled circuit and its vectorised witness
# --------------------------------------------------------------------------


def compile_partition(
    shape: PoRepShape, compiler: Compiler | None = None, circuit_id: str | None = None
) -> CompiledCircuit:
    """The partition circuit compiled to templates (counts are exact; the
    CSR matrices are built only on :meth:`CompiledCircuit.to_r1cs`)."""
    return compile_circuit(circuit_id or shape.key, partition_subcircuit(shape), 1, compiler)


def compiled_porep(
    sector_size: int | str, cache: Path | None = None, use_cache: bool = True
) -> CompiledCircuit:
    """One partition of the registered PoRep circuit for a sector size, through
    the compiled-circuit cache (what ``cuzk circuit-info porep`` shows)."""
    try:
        size = parse_size(sector_size) if isinstance(sector_size, str) else sector_size
        shape = PoRepShape.of(sector_params(size))
    except ValueError as e:
        raise InputError("sector size", str(sector_size), str(e)) from None
    name = f"porep-{size_name(size)}"
    if not use_cache:
        return compile_partition(shape, circuit_id=name)
    return load_or_compile(name, lambda: compile_partition(shape, circuit_id=name), cache)


def challenge_rows(compiled: CompiledCircuit) -> list[tuple[int, int]]:
    """[start, end) rows of each challenge's block in a compiled partition."""
    out = []
    for offset, seg in compiled.top.segments:
        template = getattr(seg, "template", None)
        if template is not None and template.key.endswith("/challenge"):
            out.append((offset, offset + template.num_rows))
    return out


def lookup(caller: str, callee: str) -> Evaluator | None:
    """Which calls a PoRep witness pass defers (and how their outputs are valued)."""
    if callee.endswith("/challenge"):
        return evaluators.no_outputs  # all challenges become one pass
    if callee.startswith("poseidon/") and caller.startswith("merkle-level/"):
        return None  # the level's evaluator already hashed; synthesize inline
    return evaluators.by_key(callee)


def trace_lookup(caller: str, callee: str) -> TraceEvaluator | None:
    """:func:`lookup` for recorded programs: the same calls deferred, valued by
    the trace evaluators."""
    if callee.endswith("/challenge"):
        return evaluators.trace_no_outputs
    if callee.startswith("porep-label/layer-"):
        # a pass of its own: the challenge pass (18 lanes at 32GiB) only
        # hashes the label's value, its 3,570 bits are allocated over all
        # challenges' labels at once
        return evaluators.trace_label(int(callee.rsplit("-", 1)[1]))
    if callee.startswith("poseidon/") and caller.startswith("merkle-level/"):
        return None
    if callee.startswith("poseidon/") and caller.endswith("/challenge"):
        # a column hash: its value is a hint (ChallengeHints.column_hashes)
        return evaluators.trace_hinted_poseidon(int(callee.split("/")[1]))
    return evaluators.trace_by_key(callee)


def static_plan(
    compiled: CompiledCircuit,
    shape: PoRepShape,
    hints: PartitionHints,
    compiler: Compiler | None = None,
) -> StaticPlan:
    """The partition's witness recorded once as device programs (any
    partition's hints give the shape; keep the plan for every partition)."""
    return StaticPlan.build(compiled, partition_subcircuit(shape), hints, trace_lookup, compiler)


def device_witness(plan: StaticPlan, hints: PartitionHints, device: WitnessDevice) -> object:
    """One partition's full assignment made on ``device`` (a device array)."""
    return plan.run(device, hints)


def partition_witness(
    compiled: CompiledCircuit, shape: PoRepShape, hints: PartitionHints, compiler: Compiler
) -> WitnessPlan:
    """Compute the full assignment of one partition (``plan.W``) on the CPU."""
    plan = WitnessPlan(
        compiler, compiled.num_inputs, compiled.num_aux, lookup, templates=compiled.templates()
    )
    plan.run(
        partition_subcircuit(shape),
        [],
        hints,
        1,
        np.zeros(1, dtype=np.int64),
        np.ones(1, dtype=np.int64),
    )
    plan.drain()
    for key, passes, lanes, secs in plan.report()[:8]:
        log.debug("witness pass %s: %d passes, %d lanes, %.2f s", key, passes, lanes, secs)
    return plan
