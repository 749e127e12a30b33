"""The circuit side of a SnapDeals proof, shaped for the proving engine.

A request carries one bincode partition proof per partition (Curio sends
them as ``vanilla_proofs``), the registered update proof (or sector size)
and ``comm_r_old``, ``comm_d_new``, ``comm_r_new``; ``h`` is always the
sector size's default, as in filecoin-proofs. Circuit ids follow Curio's:
``snap-2k`` … ``snap-64g``.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from cuzk.circuits.update.params import UpdateParams
from cuzk.circuits.update.vanilla import UpdateVerifier, public_inputs, read_partition_proof
from cuzk.circuits.update.witness import (
    compiled_snap,
    partition_hints,
    partition_witness,
    static_plan,
)
from cuzk.errors import InputError
from cuzk.r1cs.inputs import check_public_inputs, input_rows
from cuzk.synthesis.compile import CompiledCircuit, Compiler
from cuzk.synthesis.static_plan import StaticPlan

_SHORT = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
_BY_SHORT = {v: k for k, v in _SHORT.items()}


def circuit_id(params: UpdateParams) -> str:
    return f"snap-{_SHORT[params.sector_bytes]}"


def params_of(cid: str) -> UpdateParams:
    prefix, _, short = cid.partition("-")
    if prefix != "snap" or short not in _BY_SHORT:
        raise InputError("circuit_id", cid, "not a SnapDeals circuit id (snap-2k … snap-64g)")
    return UpdateParams.of(_BY_SHORT[short])


@functools.lru_cache(maxsize=4)
def compiled(cid: str, cache: Path | None = None) -> CompiledCircuit:
    return compiled_snap(params_of(cid).sector_bytes, cache)


def synthesize(
    params: UpdateParams,
    proof_bytes: bytes,
    k: int,
    comm_r_old: int,
    comm_d_new: int,
    comm_r_new: int,
    source: str = "SnapDeals request",
    cache: Path | None = None,
) -> tuple[np.ndarray, list[int]]:
    """Partition ``k``'s full assignment and public inputs, after verifying it."""
    hints, inputs = checked_hints(
        params, proof_bytes, k, comm_r_old, comm_d_new, comm_r_new, source
    )
    cc = compiled(circuit_id(params), cache)
    plan = partition_witness(cc, params, hints, Compiler())
    check_public_inputs(input_rows(plan.W, len(inputs)), inputs, source, f"vanilla_proofs[{k}]")
    return plan.W, inputs


def checked_hints(
    params: UpdateParams,
    proof_bytes: bytes,
    k: int,
    comm_r_old: int,
    comm_d_new: int,
    comm_r_new: int,
    source: str = "SnapDeals request",
) -> tuple[object, list[int]]:
    """Partition ``k``'s proof read and verified, its witness hints and public
    inputs: what a witness made on the device (:func:`witness_plan`) needs."""
    where = f"{source}: vanilla_proofs[{k}]"
    proof = read_partition_proof(proof_bytes, where)
    h = params.h_default
    roots = (comm_r_old, comm_d_new, comm_r_new)
    UpdateVerifier(params, where).verify(proof, k, h, *roots)
    return partition_hints(params, proof, k, h, *roots), public_inputs(params, k, h, *roots)


def witness_plan(cid: str, hints: object) -> StaticPlan:
    """The static witness plan of a SnapDeals circuit, recorded from ``hints``' shape."""
    return static_plan(compiled(cid), params_of(cid), hints, Compiler())
