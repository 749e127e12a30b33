"""The proof-kind interface: what the engine needs to know about a circuit.

The engine schedules, budgets and verifies; a proof kind knows its inputs and
its circuit. A kind turns a request's vanilla bytes into partitions, names
the circuit (and so the proving key) each partition is proven under, builds
that circuit's R1CS once, synthesizes one partition's witness, and joins the
partition proofs into the bytes returned to the client (concatenated, as
Filecoin's multi-partition proofs are).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.r1cs.system import R1CS


@dataclass(frozen=True)
class PartitionInput:
    """One partition of a request: its index and the kind's own data for it."""

    index: int
    data: Any


@dataclass(frozen=True)
class ParsedRequest:
    circuit_id: str
    partitions: tuple[PartitionInput, ...]


@dataclass(frozen=True)
class Witness:
    """A synthesized partition: the full assignment [ONE, inputs, aux] and the inputs."""

    assignment: np.ndarray  # (num_variables, 4) uint64, standard form
    public_inputs: tuple[int, ...]  # ONE excluded, as the verifier takes them


class ProofKindHandler(ABC):
    """One proof kind. Subclasses are registered with :func:`cuzk.engine.kinds.register`."""

    kind: ProofKind
    # Same-circuit requests may be collected into batches (PoRep, SnapDeals):
    batchable: bool = False
    # Development keys may be generated for this kind without the operator's
    # consent ([srs] generate_dev_keys): only for kinds no chain verifies.
    dev_keys_by_default: bool = False

    @abstractmethod
    def parse(self, request: ProofRequest) -> ParsedRequest:
        """Check a request and split it into partitions; InputError on bad input."""

    @abstractmethod
    def owns(self, circuit_id: str) -> bool:
        """Whether a circuit id (``porep-32g``, ``demo-r500-w2``) is one of this kind's."""

    @abstractmethod
    def r1cs(self, circuit_id: str) -> R1CS:
        """The circuit's constraint system (compiled once, cached by the kind)."""

    @abstractmethod
    def synthesize(self, circuit_id: str, partition: PartitionInput) -> Witness:
        """One partition's witness."""

    def working_bytes(self, circuit_id: str) -> int:
        """Host memory one partition holds from synthesis until its proof is made.

        The default counts the assignment and the prover's temporaries from
        the circuit's shape; kinds whose synthesis needs more say so.
        """
        return prover_host_bytes(self.r1cs(circuit_id))

    def assemble(self, partition_proofs: list[bytes]) -> bytes:
        """The proof bytes returned to the client: partitions in order, concatenated."""
        return b"".join(partition_proofs)


def domain_size(num_constraints: int) -> int:
    return 1 << max(0, (num_constraints - 1).bit_length())


def prover_host_bytes(r1cs: R1CS) -> int:
    """Host bytes a partition needs with the CPU backend, from its shape.

    The CPU reference keeps Fr values as Python integers (~60 bytes each with
    their list slots) in its NTTs: a, b, c and their coset evaluations are
    six domain-sized vectors alive at once, plus the assignment (numpy and
    integer copies) and the witness builder's per-variable bookkeeping.
    Calibrated against tracemalloc in tests/engine/test_kinds.py.
    """
    return host_bytes_for_shape(r1cs.num_constraints, r1cs.num_variables)


def host_bytes_for_shape(num_constraints: int, num_variables: int) -> int:
    """:func:`prover_host_bytes` from the counts alone (no matrices needed)."""
    m = domain_size(num_constraints)
    return 8 * 60 * m + 400 * num_variables + 400 * num_constraints + (1 << 20)


def key_host_bytes(r1cs: R1CS) -> int:
    """Host bytes of a proving key for this circuit, prepared for the CPU backend.

    Point counts as in bellperson's layout: h has m − 1, l one per aux
    variable, a/b_g1/b_g2 one per dense variable (bounded here by all
    variables). Each point is held twice: as raw affine limbs (96 or 192
    bytes) and as the pairing library's object (~200 bytes with its slot).
    """
    m = domain_size(r1cs.num_constraints)
    n = r1cs.num_variables
    g1_points = (m - 1) + r1cs.num_aux + 2 * n
    g2_points = n
    return g1_points * (96 + 200) + g2_points * (192 + 300) + (1 << 20)
