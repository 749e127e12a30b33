"""SnapDeals (EmptySectorUpdate): one bincode partition proof per partition in,
one Groth16 proof per partition out.

A request carries, as Curio sends it, ``vanilla_proofs`` (one bincode
``PartitionProof`` per partition: 1 for 2KiB, 4 for 8MiB and 512MiB, 16 for
32GiB and 64GiB), the 32-byte little-endian commitments ``comm_r_old``,
``comm_d_new`` and ``comm_r_new``, and its type as ``registered_proof``
(RegisteredUpdateProof: 0 = 2KiB … 4 = 64GiB) or, failing that,
``sector_size``. Circuit ids are Curio's: ``snap-2k`` … ``snap-64g``. The
returned proof is the partition proofs concatenated in order.

The circuit side is :mod:`cuzk.circuits.update.c2`: partitions are read here
(a malformed one is refused at submission) and verified against the
commitments when synthesized, so a bad one fails its job with the reason.
"""

from __future__ import annotations

import logging
from typing import Any

from cuzk.circuits.update import c2
from cuzk.circuits.update.params import REGISTERED_UPDATE_PROOFS, UpdateParams
from cuzk.circuits.update.vanilla import read_partition_proof
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds.base import (
    CompiledKind,
    ParsedRequest,
    PartitionInput,
    Witness,
)
from cuzk.engine.kinds.envelopes import sector_size_name
from cuzk.errors import InputError
from cuzk.hashers.domain import fr_from_le_bytes
from cuzk.synthesis.compile import CompiledCircuit
from cuzk.synthesis.static_plan import StaticPlan

SOURCE = "snap request"
# RegisteredUpdateProof number → sector size (the enum is in size order).
_BY_NUMBER = {
    i: UpdateParams.of(name.removeprefix("StackedDrg").removesuffix("V1")).sector_bytes
    for name, i in REGISTERED_UPDATE_PROOFS.items()
}

log = logging.getLogger(__name__)


def compiled_for(cid: str) -> CompiledCircuit:
    return c2.compiled(cid)


class SnapKind(CompiledKind):
    kind = ProofKind.SNAP_DEALS_UPDATE
    batchable = True
    dev_keys_by_default = False
    filecoin_keys = True
    device_witness = True
    source = SOURCE

    def _params(self, request: ProofRequest) -> UpdateParams:
        # RegisteredUpdateProof 0 (2KiB) is also proto3's "not set": with a
        # sector_size the size decides; without one, 0 is taken literally.
        literal_zero = request.registered_proof == 0 and not request.sector_size
        if request.registered_proof or literal_zero:
            size = _BY_NUMBER.get(request.registered_proof)
            if size is None:
                raise InputError(
                    SOURCE,
                    "registered_proof",
                    f"{request.registered_proof} is not a RegisteredUpdateProof "
                    f"(0 … {len(_BY_NUMBER) - 1})",
                )
            if request.sector_size and request.sector_size != size:
                log.warning(  # as Curio's daemon: the proof type decides
                    "%s: sector_size %s disagrees with registered_proof %d (%s): proved as %s",
                    SOURCE,
                    sector_size_name(request.sector_size),
                    request.registered_proof,
                    sector_size_name(size),
                    sector_size_name(size),
                )
        else:
            size = request.sector_size
        try:
            return UpdateParams.of(size)
        except ValueError as e:
            raise InputError(SOURCE, "sector_size", str(e)) from None

    def parse(self, request: ProofRequest) -> ParsedRequest:
        params = self._params(request)
        n = len(request.vanilla_proofs)
        if n != params.partition_count:
            raise InputError(
                SOURCE,
                "vanilla_proofs",
                f"{n} given, a {params.name} SnapDeals proof has {params.partition_count} "
                f"partition(s), one vanilla proof each",
            )
        roots = tuple(
            fr_from_le_bytes(getattr(request, name), SOURCE, name)
            for name in ("comm_r_old", "comm_d_new", "comm_r_new")
        )
        for k, raw in enumerate(request.vanilla_proofs):
            read_partition_proof(raw, f"{SOURCE}: vanilla_proofs[{k}]")  # malformed: refused now
        parts = tuple(
            PartitionInput(k, (params, raw, roots)) for k, raw in enumerate(request.vanilla_proofs)
        )
        return ParsedRequest(c2.circuit_id(params), parts)

    def check_circuit(self, cid: str) -> None:
        c2.params_of(cid)

    def compiled(self, cid: str) -> CompiledCircuit:
        return compiled_for(cid)

    @staticmethod
    def _arguments(cid: str, partition: PartitionInput) -> tuple:
        """(params, the partition's proof bytes, its index, the three roots, source)."""
        params, raw, roots = partition.data
        if c2.circuit_id(params) != cid:
            raise InputError(SOURCE, "sector_size", f"is for {c2.circuit_id(params)}, not {cid}")
        return (params, raw, partition.index, *roots, SOURCE)

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        assignment, inputs = c2.synthesize(*self._arguments(cid, partition))
        return Witness(assignment=assignment, public_inputs=tuple(inputs))

    def witness_hints(self, cid: str, partition: PartitionInput) -> Witness:
        hints, inputs = c2.checked_hints(*self._arguments(cid, partition))
        return self.hint_witness(cid, hints, inputs)

    def record_witness_plan(self, cid: str, hints: Any) -> StaticPlan:
        return c2.witness_plan(cid, hints)


def register(registry: Any) -> None:
    registry.register(SnapKind())
