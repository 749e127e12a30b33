"""PoRep C2 (SealCommitPhase2): Curio's ``c1.json`` in, one proof per partition out.

A request carries Curio's ``c1.json`` in ``vanilla_proof`` (its envelope is
checked by :mod:`cuzk.engine.kinds.envelopes` before this kind sees it). The
C1 output names its registered seal proof; a 32GiB or 64GiB sector has ten
partitions, the smaller sizes one, and each partition is an independent
work item under one circuit (Curio's ids: ``porep-2k``, ``porep-8m``,
``porep-512m``, ``porep-32g``, ``porep-64g``). The returned proof is the
partition proofs concatenated in order (192 bytes each), as
``seal_commit_phase2`` returns them.

Everything about the circuit is :mod:`cuzk.circuits.porep.c2`: the request is
parsed there, and each partition's vanilla proofs are verified when it is
synthesized, so a bad one fails its job with the JSON path of the bad value
before any proving.
"""

from __future__ import annotations

from typing import Any

from cuzk.circuits.porep import c2
from cuzk.circuits.porep.types import C1Wrapper
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds.base import (
    CompiledKind,
    ParsedRequest,
    PartitionInput,
    Witness,
)
from cuzk.engine.kinds.envelopes import C1Envelope
from cuzk.errors import InputError
from cuzk.synthesis.compile import CompiledCircuit
from cuzk.synthesis.static_plan import StaticPlan

SOURCE = "c1.json"


def compiled_for(cid: str) -> CompiledCircuit:
    """The compiled partition circuit of a PoRep circuit id (InputError if not one)."""
    return c2.compiled(cid)


class PoRepKind(CompiledKind):
    kind = ProofKind.POREP_SEAL_COMMIT
    batchable = True
    dev_keys_by_default = False  # chain proofs: only with [srs] generate_dev_keys
    filecoin_keys = True
    device_witness = True
    source = SOURCE

    def parse(self, request: ProofRequest) -> ParsedRequest:
        return self._split(request, c2.parse(request.vanilla_proof, SOURCE))

    def parse_checked(self, request: ProofRequest, decoded: Any) -> ParsedRequest:
        """From the envelope check's decode (a :class:`C1Envelope`): the c1.json's
        51 MB (32GiB) is decoded once, in the synthesis process."""
        if not isinstance(decoded, C1Envelope):
            return self.parse(request)
        wrapper = C1Wrapper(decoded.sector_num, decoded.phase1_raw, decoded.sector_size)
        return self._split(request, c2.from_decoded(decoded.phase1_out, wrapper, SOURCE))

    def _split(self, request: ProofRequest, req: c2.C2Request) -> ParsedRequest:
        proof = req.proof
        # RegisteredSealProof 0 (StackedDrg2KiBV1) is also proto3's "not set": only a
        # non-zero number is compared with the C1 output's own proof type.
        if request.registered_proof and request.registered_proof != proof.proof_id:
            raise InputError(
                SOURCE,
                "registered_proof",
                f"the request says {request.registered_proof} but the C1 output is "
                f"{proof.name} ({proof.proof_id})",
            )
        per_partition = proof.sector.challenges_per_partition
        for k, challenges in enumerate(req.c1.partitions):
            if len(challenges) != per_partition:
                raise InputError(
                    SOURCE,
                    f"Phase1Out.vanilla_proofs.{req.c1.vanilla_variant}[{k}]",
                    f"{len(challenges)} challenge proofs, a {proof.name} partition has "
                    f"{per_partition}",
                )
        parts = tuple(PartitionInput(k, req.partition(k)) for k in range(req.partitions))
        return ParsedRequest(req.circuit_id, parts)

    def check_circuit(self, cid: str) -> None:
        c2.sector_size_of(cid)

    def compiled(self, cid: str) -> CompiledCircuit:
        return compiled_for(cid)

    @staticmethod
    def _request(cid: str, partition: PartitionInput) -> c2.C2Request:
        req: c2.C2Request = partition.data
        if req.circuit_id != cid:
            raise InputError(SOURCE, "registered_proof", f"is for {req.circuit_id}, not {cid}")
        return req

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        assignment, inputs = c2.synthesize(self._request(cid, partition), partition.index)
        return Witness(assignment=assignment, public_inputs=tuple(inputs))

    def witness_hints(self, cid: str, partition: PartitionInput) -> Witness:
        hints, inputs = c2.checked_hints(self._request(cid, partition), partition.index)
        return self.hint_witness(cid, hints, inputs)

    def record_witness_plan(self, cid: str, hints: Any) -> StaticPlan:
        return c2.witness_plan(cid, hints)


def register(registry: Any) -> None:
    registry.register(PoRepKind())
