"""WinningPoSt and WindowPoSt: Filecoin's fallback PoSt, served by the engine.

A request carries one bincode vanilla proof per sector (``vanilla_proofs``),
the 32-byte challenge ``randomness``, and its proof type as
``registered_proof`` (Filecoin's RegisteredPoStProof number) or, failing
that, ``sector_size``. WindowPoSt requests are per partition
(``partition_index``), as Curio sends them; each request is one partition
proof. A WinningPoSt request carries exactly one vanilla proof: the
challenged sector's, with 66 inclusion proofs, which the circuit takes as 66
one-challenge sector slots. Circuit ids are Curio's: ``winning-32g``,
``wpost-32g``, ``wpost-2k``.

The circuit, its witness and public inputs come from
:mod:`cuzk.circuits.post`; the vanilla proofs are verified (challenges,
paths, comm_r) when the partition is synthesized, so a bad one fails its job
with the reason before any proving.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.circuits.catalog import compiled_circuit
from cuzk.circuits.post.circuit import public_inputs, witness
from cuzk.circuits.post.config import (
    WINDOW,
    WINNING,
    PoStConfig,
    config_for_registered_proof,
    post_config,
)
from cuzk.circuits.post.device_witness import slot_hint_arrays
from cuzk.circuits.post.device_witness import static_plan as device_static_plan
from cuzk.circuits.post.vanilla import read_sector_proof
from cuzk.circuits.post.verify import check_sector_proof, check_sector_shape
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds.base import (
    HINTS_BYTES,
    CompiledKind,
    ParsedRequest,
    PartitionInput,
    Witness,
)
from cuzk.errors import InputError
from cuzk.synthesis.static_plan import StaticPlan

_PREFIX = {WINNING: "winning", WINDOW: "wpost"}
_SIZES = {"2k": 2 << 10, "8m": 8 << 20, "512m": 512 << 20, "32g": 32 << 30, "64g": 64 << 30}
_SIZE_NAMES = {v: k for k, v in _SIZES.items()}

log = logging.getLogger(__name__)


def post_circuit_id(config: PoStConfig) -> str:
    return f"{_PREFIX[config.kind]}-{_SIZE_NAMES[config.sector_size]}"


@functools.lru_cache(maxsize=8)
def _compiled(kind: str, size: int) -> Any:
    return compiled_circuit(kind, size)


class PoStKind(CompiledKind):
    batchable = False
    dev_keys_by_default = False
    filecoin_keys = True
    device_witness = True

    def __init__(self, kind: ProofKind) -> None:
        self.kind = kind
        self.post_kind = WINNING if kind == ProofKind.WINNING_POST else WINDOW
        self.source = f"{kind.label} request"

    # --- requests -----------------------------------------------------------------
    def _config(self, request: ProofRequest) -> PoStConfig:
        # RegisteredPoStProof 0 is Winning2KiBV1, and also proto3's "not set": with a
        # sector_size the size decides; without one, 0 is taken literally.
        literal_zero = request.registered_proof == 0 and not request.sector_size
        if request.registered_proof or literal_zero:
            cfg = config_for_registered_proof(request.registered_proof)
            if cfg.kind != self.post_kind:
                raise InputError(
                    self.source,
                    "registered_proof",
                    f"{request.registered_proof} is a {cfg.kind} proof type, not {self.post_kind}",
                )
            if request.sector_size and request.sector_size != cfg.sector_size:
                log.warning(  # as Curio's daemon: the proof type decides
                    "%s: sector_size %d disagrees with registered_proof %d (%d bytes): "
                    "proved as %d bytes",
                    self.source,
                    request.sector_size,
                    request.registered_proof,
                    cfg.sector_size,
                    cfg.sector_size,
                )
            return cfg
        return post_config(self.post_kind, request.sector_size)

    def parse(self, request: ProofRequest) -> ParsedRequest:
        cfg = self._config(request)
        if self.kind == ProofKind.WINNING_POST and request.partition_index:
            raise InputError(self.source, "partition_index", "WinningPoSt has one partition")
        proofs = tuple(
            read_sector_proof(b, f"{self.source}: vanilla_proofs[{i}]")
            for i, b in enumerate(request.vanilla_proofs)
        )
        for i, proof in enumerate(proofs):  # another size's proofs: before any key is made
            check_sector_shape(cfg, proof, f"{self.source}: vanilla_proofs[{i}]")
        if self.kind == ProofKind.WINNING_POST and len(proofs) != cfg.sector_count:
            raise InputError(
                self.source,
                "vanilla_proofs",
                f"{len(proofs)} given, WinningPoSt takes the vanilla proof of its "
                f"{cfg.sector_count} challenged sector",
            )
        if len(proofs) > cfg.sector_count:
            raise InputError(
                self.source,
                "vanilla_proofs",
                f"{len(proofs)} sectors, a {post_circuit_id(cfg)} partition holds "
                f"{cfg.sector_count}",
            )
        data = (cfg, proofs, bytes(request.randomness), request.partition_index)
        return ParsedRequest(post_circuit_id(cfg), (PartitionInput(0, data),))

    # --- circuits -------------------------------------------------------------------
    def _cid_config(self, cid: str) -> PoStConfig:
        m = re.fullmatch(rf"{_PREFIX[self.post_kind]}-(2k|8m|512m|32g|64g)", cid)
        if m is None:
            raise InputError("circuit_id", cid, f"not a {self.post_kind} circuit id")
        return post_config(self.post_kind, _SIZES[m.group(1)])

    def check_circuit(self, cid: str) -> None:
        self._cid_config(cid)

    def compiled(self, cid: str) -> Any:
        cfg = self._cid_config(cid)
        return _compiled(cfg.kind, cfg.sector_size)

    def _checked(self, partition: PartitionInput) -> tuple[PoStConfig, list, list[int]]:
        """The partition's sector proofs checked, and its public inputs."""
        cfg, proofs, randomness, pidx = partition.data
        base = pidx * cfg.sector_count
        for i, p in enumerate(proofs):
            check_sector_proof(
                cfg, randomness, p, sector_index=base + i, source=f"vanilla_proofs[{i}]"
            )
        pub = public_inputs(cfg, randomness, [(p.sector_id, p.comm_r) for p in proofs], pidx)
        return cfg, list(proofs), pub

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        cfg, proofs, pub = self._checked(partition)
        w = witness(_compiled(cfg.kind, cfg.sector_size), cfg, proofs)
        if not np.array_equal(w[1 : 1 + len(pub)], fr_to_array(pub)):
            raise InputError(
                self.source, "vanilla_proofs", "do not answer this randomness's challenges"
            )
        return Witness(assignment=w, public_inputs=tuple(pub))

    def hints_bytes(self, cid: str) -> int:
        # ~810 hint values a sector slot at 32GiB WindowPoSt (1.9 M for 2349
        # sectors): 32 bytes each in the table, ~200 as one-lane arrays while made
        return HINTS_BYTES + self._cid_config(cid).circuit_sector_count * (256 << 10)

    def witness_hints(self, cid: str, partition: PartitionInput) -> Witness:
        cfg, proofs, pub = self._checked(partition)
        if post_circuit_id(cfg) != cid:
            raise InputError(self.source, "sector_size", f"is for {post_circuit_id(cfg)}")
        return self.hint_witness(cid, slot_hint_arrays(cfg, proofs), pub)

    def record_witness_plan(self, cid: str, hints: Any) -> StaticPlan:
        return device_static_plan(self.compiled(cid), self._cid_config(cid), hints)


def register(registry: Any) -> None:
    registry.register(PoStKind(ProofKind.WINNING_POST))
    registry.register(PoStKind(ProofKind.WINDOW_POST_PARTITION))
