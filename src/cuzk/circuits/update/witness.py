"""SnapDeals partition witnesses from vanilla partition proofs, vectorised.

:func:`partition_hints` mirrors ``circuit::PrivateInputs::new`` (leaves and
sibling values of the three Merkle proofs per challenge, the apex leaves,
the partition path from the first challenge's tree D path), and
:func:`partition_witness` runs the witness plan
(:mod:`cuzk.synthesis.plan`) on the compiled circuit: every Merkle
level of every challenge is one pass, every apex-tree hash one pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cuzk.algebra.fields import R
from cuzk.circuits.porep import evaluators
from cuzk.circuits.update.circuit import ChallengeHints, PartitionHints, partition_subcircuit
from cuzk.circuits.update.params import UpdateParams, gen_randomness_constants
from cuzk.circuits.update.vanilla import PartitionProof
from cuzk.errors import InputError
from cuzk.gadgets.values import LaneValues
from cuzk.hashers.poseidon import hash_vectors
from cuzk.hashers.poseidon_constants import poseidon_constants
from cuzk.synthesis.cache import load_or_compile
from cuzk.synthesis.compile import CompiledCircuit, Compiler, compile_circuit
from cuzk.synthesis.plan import Evaluator, WitnessPlan
from cuzk.synthesis.program import TraceEvaluator, TraceValues
from cuzk.synthesis.static_plan import StaticPlan
from cuzk.synthesis.trace_evaluators import merkle_level_outputs, sha254_node


def _lane(v: int) -> np.ndarray:
    out = np.empty(1, dtype=object)
    out[0] = v
    return out


def _siblings(path) -> list[list[np.ndarray]]:
    return [[_lane(h) for h in e.hashes] for e in path]


def partition_hints(
    params: UpdateParams,
    proof: PartitionProof,
    k: int,
    h: int,
    comm_r_old: int,
    comm_d_new: int,
    comm_r_new: int,
) -> PartitionHints:
    first = proof.challenge_proofs[0]
    top = first.proof_d_new.path[params.challenge_bit_len - params.partition_bit_len :]
    height = params.apex_leafs_height
    return PartitionHints(
        k_and_h_select=_lane(params.k_and_h_select(k, h)),
        comm_r_old=_lane(comm_r_old),
        comm_d_new=_lane(comm_d_new),
        comm_r_new=_lane(comm_r_new),
        comm_c=_lane(proof.comm_c),
        root_r_old=_lane(first.proof_r_old.root),
        root_r_new=_lane(first.proof_r_new.root),
        apex_leafs=[_lane(x) for x in proof.apex_leafs],
        partition_path=[_lane(e.hashes[0]) for e in top],
        challenges=[
            ChallengeHints(
                leaf_r_old=_lane(c.proof_r_old.leaf),
                leaf_d_new=_lane(c.proof_d_new.leaf),
                path_r_old=_siblings(c.proof_r_old.path),
                path_r_new=_siblings(c.proof_r_new.path),
                path_to_apex=[_lane(e.hashes[0]) for e in c.proof_d_new.path[:height]],
            )
            for c in proof.challenge_proofs
        ],
    )


def compile_partition(params: UpdateParams, compiler: Compiler | None = None) -> CompiledCircuit:
    return compile_circuit(f"snap-{params.name}", partition_subcircuit(params), 1, compiler)


def compiled_snap(
    sector_size: int | str, cache: Path | None = None, use_cache: bool = True
) -> CompiledCircuit:
    """One partition of the SnapDeals circuit, through the compiled-circuit cache."""
    try:
        params = UpdateParams.of(sector_size)
    except ValueError as e:
        raise InputError("sector size", str(sector_size), str(e)) from None
    if not use_cache:
        return compile_partition(params)
    return load_or_compile(f"snap-{params.name}", lambda: compile_partition(params), cache)


def _por_level(V: LaneValues, ports: list, hints, hasher: str, arity: int) -> list:
    nbits = arity.bit_length() - 1
    position = np.zeros(V.lanes, dtype=np.uint64)
    for i, b in enumerate(ports[1 : 1 + nbits]):
        position |= np.asarray(b, dtype=np.uint64) << np.uint64(i)
    parent, *_ = evaluators.merkle_level(
        V, ports[:1], (position, ports[1 + nbits :]), hasher, arity
    )
    return [parent]


def _gen_hash(V: LaneValues, ports: list, hints) -> list:
    cols = [evaluators.obj(p, V.lanes) for p in ports]
    return [hash_vectors(V.F, cols, gen_randomness_constants()) % R]


def lookup(caller: str, callee: str) -> Evaluator | None:
    if callee.startswith("snap/") and callee.endswith("/challenge"):
        return evaluators.no_outputs
    if callee.startswith("por-level/"):
        _, hasher, arity = callee.split("/")
        return lambda V, ports, hints: _por_level(V, ports, hints, hasher, int(arity))
    if caller.startswith("por-level/"):
        return None  # the level's evaluator already hashed
    if callee == "poseidon-gen-randomness/2":
        return _gen_hash
    if callee == "sha256-node/2":
        return lambda V, ports, hints: [
            evaluators.sha_node([evaluators.obj(p, V.lanes) for p in ports])
        ]
    return evaluators.by_key(callee)


def _trace_por_level(V: TraceValues, ports: list, hints, hasher: str, arity: int) -> list:
    nbits = arity.bit_length() - 1
    position = V.w_from_bits(ports[1 : 1 + nbits])
    c = poseidon_constants(arity) if hasher == "poseidon" else None
    parent, *_ = merkle_level_outputs(V, ports[0], (position, ports[1 + nbits :]), hasher, arity, c)
    return [parent]


def trace_lookup(caller: str, callee: str) -> TraceEvaluator | None:
    """:func:`lookup` for recorded programs (device witness plans)."""
    if callee.startswith("snap/") and callee.endswith("/challenge"):
        return evaluators.trace_no_outputs
    if callee.startswith("por-level/"):
        _, hasher, arity = callee.split("/")
        return lambda V, ports, hints: _trace_por_level(V, ports, hints, hasher, int(arity))
    if caller.startswith("por-level/"):
        return None
    if callee == "poseidon-gen-randomness/2":
        c = gen_randomness_constants()
        return lambda V, ports, hints: [V.rec.poseidon(ports, c)]
    if callee == "sha256-node/2":
        return lambda V, ports, hints: [sha254_node(V, ports)]
    return evaluators.trace_by_key(callee)


def static_plan(
    compiled: CompiledCircuit,
    params: UpdateParams,
    hints: PartitionHints,
    compiler: Compiler | None = None,
) -> StaticPlan:
    """The partition's witness recorded once as device programs (any
    partition's hints give the shape)."""
    return StaticPlan.build(compiled, partition_subcircuit(params), hints, trace_lookup, compiler)


def partition_witness(
    compiled: CompiledCircuit, params: UpdateParams, hints: PartitionHints, compiler: Compiler
) -> WitnessPlan:
    plan = WitnessPlan(
        compiler, compiled.num_inputs, compiled.num_aux, lookup, templates=compiled.templates()
    )
    top = partition_subcircuit(params)
    plan.run(top, [], hints, 1, np.zeros(1, np.int64), np.ones(1, np.int64))
    plan.drain()
    return plan
