"""The circuit side of PoRep C2, shaped for the proving engine.

A C2 request is Curio's ``c1.json`` (or a bare C1 output). :func:`parse`
reads it; each partition is then :func:`synthesize`\\ d into the full
assignment and the public inputs its proof is verified against, under the
circuit named by :func:`circuit_id` (Curio's ids: ``porep-2k`` … ``porep-64g``).
Groth16 itself (keys, proving, verification) is the engine's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.circuits.porep import derive
from cuzk.circuits.porep.c1 import c1_from_json, check_wrapper_size, load_c1_file
from cuzk.circuits.porep.circuit import PartitionHints, PoRepShape
from cuzk.circuits.porep.params import (
    KIB,
    SECTORS,
    RegisteredSealProof,
    registered_proof,
    sector_params,
)
from cuzk.circuits.porep.types import C1Wrapper, SealCommitPhase1Output
from cuzk.circuits.porep.vanilla import Verifier
from cuzk.circuits.porep.witness import (
    c1_public_inputs,
    compiled_porep,
    partition_hints,
    partition_witness,
    static_plan,
)
from cuzk.errors import InputError
from cuzk.r1cs.inputs import check_public_inputs, input_rows
from cuzk.synthesis.compile import CompiledCircuit, Compiler
from cuzk.synthesis.static_plan import StaticPlan

_SHORT = {2 * KIB: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
_BY_SHORT = {v: k for k, v in _SHORT.items()}


def circuit_id(proof: RegisteredSealProof) -> str:
    return f"porep-{_SHORT[proof.sector_size]}"


def sector_size_of(cid: str) -> int:
    """The sector size a PoRep circuit id names; InputError if it is not one."""
    prefix, _, short = cid.partition("-")
    if prefix != "porep" or short not in _BY_SHORT or _BY_SHORT[short] not in SECTORS:
        raise InputError("circuit_id", cid, "not a PoRep circuit id (porep-2k … porep-64g)")
    return _BY_SHORT[short]


@dataclass(frozen=True)
class C2Request:
    proof: RegisteredSealProof
    c1: SealCommitPhase1Output
    wrapper: C1Wrapper | None
    source: str

    @property
    def circuit_id(self) -> str:
        return circuit_id(self.proof)

    @property
    def partitions(self) -> int:
        return self.proof.sector.partitions

    def partition(self, k: int) -> C2Request:
        """The request as partition ``k``'s synthesis needs it: its own challenge
        proofs (the other partitions' emptied) and no envelope (the raw C1
        bytes). What crosses to a synthesis process: a tenth of a 32GiB
        request's proofs instead of all of them and the JSON they came from,
        pickled by the daemon while its GPU workers wait for the interpreter."""
        parts = tuple(p if i == k else () for i, p in enumerate(self.c1.partitions))
        return C2Request(self.proof, replace(self.c1, partitions=parts), None, self.source)


def parse(raw: bytes, source: str = "c1.json") -> C2Request:
    """Read a c1.json / C1 output: interactive and synthetic seal proofs are proven."""
    c1, wrapper = load_c1_file(raw, source)
    return _request(c1, wrapper, source)


def from_decoded(phase1: Any, wrapper: C1Wrapper, source: str = "c1.json") -> C2Request:
    """The request of a c1.json whose envelope is decoded already (``phase1``:
    Phase1Out's JSON, parsed; ``wrapper``: the envelope's fields): what
    :func:`parse` gives for the same bytes, without decoding a 51 MB document
    a second time."""
    c1 = c1_from_json(phase1, f"{source}: Phase1Out")
    check_wrapper_size(c1, wrapper, source)
    return _request(c1, wrapper, source)


def _request(c1: SealCommitPhase1Output, wrapper: C1Wrapper | None, source: str) -> C2Request:
    proof = registered_proof(c1.registered_proof, source)
    if not proof.interactive and proof.feature != derive.SYNTHETIC:
        raise InputError(
            source,
            "registered_proof",
            f"{proof.name}: non-interactive PoRep is not served (Curio does not send it); "
            "interactive and synthetic PoRep are",
        )
    if len(c1.partitions) != proof.sector.partitions:
        raise InputError(
            source,
            f"vanilla_proofs.{c1.vanilla_variant}",
            f"expected {proof.sector.partitions} partitions, got {len(c1.partitions)}",
        )
    return C2Request(proof, c1, wrapper, source)


@functools.lru_cache(maxsize=4)
def compiled(cid: str, cache: Path | None = None) -> CompiledCircuit:
    return compiled_porep(sector_size_of(cid), cache)


def synthesize(
    request: C2Request, k: int, cache: Path | None = None, verify_vanilla: bool = True
) -> tuple[np.ndarray, list[int]]:
    """Partition ``k``: its full assignment ``(n, 4)`` and its public inputs.

    The partition's vanilla proofs are verified first (a bad one is an
    InputError naming its JSON path), and the inputs the witness carries must
    equal those derived from replica_id, comm_d, comm_r and the seed.
    """
    hints, inputs = checked_hints(request, k, verify_vanilla)
    cc = compiled(request.circuit_id, cache)
    shape = PoRepShape.of(request.proof.sector)
    plan = partition_witness(cc, shape, hints, Compiler())
    check_public_inputs(input_rows(plan.W, len(inputs)), inputs, request.source, f"partition {k}")
    return plan.W, inputs


def checked_hints(
    request: C2Request, k: int, verify_vanilla: bool = True
) -> tuple[PartitionHints, list[int]]:
    """Partition ``k``'s vanilla proofs verified (InputError naming the JSON path
    of a bad one), its witness hints and its public inputs: all a witness made
    elsewhere (the GPU, from :func:`witness_plan`) needs."""
    hashed = None
    if verify_vanilla:
        verifier = Verifier(request.proof, request.source)
        verifier.verify(request.c1, [k])
        hashed = verifier.hashed  # its column hashes and path nodes are hints
    return partition_hints(request.c1, k, request.source, hashed), c1_public_inputs(
        request.c1, request.proof, k
    )


def witness_plan(cid: str, hints: PartitionHints) -> StaticPlan:
    """The static witness plan of a PoRep circuit, recorded from ``hints``' shape."""
    cc = compiled(cid)
    return static_plan(cc, PoRepShape.of(sector_params(sector_size_of(cid))), hints, Compiler())
