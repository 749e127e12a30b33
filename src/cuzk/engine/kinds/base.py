"""The proof-kind interface: what the engine needs to know about a circuit.

The engine schedules, budgets and verifies; a proof kind knows its inputs and
its circuit. A kind turns a request's vanilla bytes into partitions, names
the circuit (and so the proving key) each partition is proven under, builds
that circuit's R1CS once, synthesizes one partition's witness, and joins the
partition proofs into the bytes returned to the client (concatenated, as
Filecoin's multi-partition proofs are).
"""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from cuzk.backends import memory_model
from cuzk.circuits.parameters import circuit_for_params_name, parameter_file
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.errors import InputError
from cuzk.r1cs.counts import Counts, counts_of
from cuzk.r1cs.system import R1CS
from cuzk.synthesis.cache import cache_dir, load_or_build_r1cs, r1cs_build_bytes, r1cs_path
from cuzk.synthesis.compile import CompiledCircuit
from cuzk.synthesis.static_plan import StaticPlan, load_or_build

# Host bytes a backend's prover holds for a circuit shape (num_constraints,
# num_variables), the assignment included: ``Backend.prove_host_bytes``.
ProverHostModel = Callable[[int, int], int]

# Synthesis holds the assignment ((n, 4) uint64: 32 bytes a variable) and the
# vectorised passes' lane vectors, a small fraction of the partition:
# tracemalloc's peak is 48 bytes a variable for a 2KiB PoRep partition and the
# process's RSS 37 for a 32GiB one (BENCHMARKS.md, Circuits); twice the larger
# is reserved.
SYNTHESIS_BYTES_PER_VARIABLE = 96


# A partition whose witness the device makes holds its hint table (0.86 MB at
# 32GiB PoRep: 26,933 values; the request's vanilla bytes are held by the job)
# and, while it is made, the check's temporaries and the hints as one-lane
# arrays (1.7 MB pickled at 32GiB PoRep). PoSt adds its sectors' (below).
HINTS_BYTES = 64 << 20

DEV_KEY_PREFIX = "cuzk-dev-"

T = TypeVar("T")


@dataclass(frozen=True)
class KeyFiles:
    """A circuit's key as files: the bellperson ``.params`` and ``.vk`` names,
    and, for circuits Filecoin publishes parameters for, the published
    digests (:mod:`cuzk.circuits.parameters`), which tell Filecoin's own
    files from development ones written under the same names."""

    circuit_id: str
    params: str
    vk: str
    published_params_digest: str | None = None
    published_vk_digest: str | None = None

    @property
    def published(self) -> bool:
        """Filecoin publishes parameters for this circuit (proofs are checked on chain)."""
        return self.published_vk_digest is not None

    @staticmethod
    def development(circuit_id: str) -> KeyFiles:
        """The names of a circuit no one publishes parameters for (the demo kind)."""
        stem = f"{DEV_KEY_PREFIX}{circuit_id}"
        return KeyFiles(circuit_id, f"{stem}.params", f"{stem}.vk")

    @staticmethod
    def filecoin(circuit_id: str) -> KeyFiles:
        """Filecoin's published names and digests for one of its circuits."""
        p = parameter_file(circuit_id)
        return KeyFiles(circuit_id, p.params_name, p.vk_name, p.params_digest, p.vk_digest)


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
    """A synthesized partition: the full assignment [ONE, inputs, aux] and the
    inputs; or, for a witness the device makes (:meth:`ProofKindHandler.witness_hints`),
    no assignment but the partition's hints (a few thousand values: the
    assignment is made where it is proven, from the circuit's static plan)."""

    assignment: np.ndarray | None  # (num_variables, 4) uint64, standard form
    public_inputs: tuple[int, ...]  # ONE excluded, as the verifier takes them
    hints: Any = None  # the kind's partition hints, when ``assignment`` is None


class ProofKindHandler(ABC):
    """One proof kind. Subclasses are registered with :func:`cuzk.engine.kinds.register`."""

    kind: ProofKind
    # Same-circuit requests may be collected into batches (PoRep, SnapDeals):
    batchable: bool = False
    # Development keys may be generated for this kind without the operator's
    # consent ([srs] generate_dev_keys): only for kinds no chain verifies.
    dev_keys_by_default: bool = False
    # Filecoin publishes this kind's parameters (file names and digests).
    filecoin_keys: bool = False
    # The kind's witness can be made on the proving device from hints
    # (witness_hints, witness_plan: cuzk.synthesis.static_plan).
    device_witness: bool = False
    # What a request's vanilla bytes are called in errors.
    source: str = "vanilla_proof"

    @abstractmethod
    def parse(self, request: ProofRequest) -> ParsedRequest:
        """Check a request and split it into partitions; InputError on bad input."""

    def parse_checked(self, request: ProofRequest, decoded: Any) -> ParsedRequest:
        """:meth:`parse` after the envelope check, given what the check decoded
        (:func:`cuzk.engine.kinds.envelopes.check_envelope`): a kind whose check
        decodes the whole request (PoRep's c1.json) parses from that instead
        of decoding it again. The default ignores it."""
        return self.parse(request)

    @abstractmethod
    def owns(self, circuit_id: str) -> bool:
        """Whether a circuit id (``porep-32g``, ``demo-r500-w2``) is one of this kind's."""

    @abstractmethod
    def r1cs(self, circuit_id: str) -> R1CS:
        """The circuit's constraint system (compiled once, cached by the kind)."""

    @abstractmethod
    def synthesize(self, circuit_id: str, partition: PartitionInput) -> Witness:
        """One partition's witness."""

    def forget_r1cs(self, circuit_id: str) -> None:
        """Let go of the circuit's R1CS (a device holds its matrices now): kinds
        whose matrices are mapped from the circuit cache drop the mapping, so the
        pages a key's upload read leave the process; the next :meth:`r1cs` maps
        the file again. Kinds that build the R1CS in memory keep it (default)."""
        return None

    def witness_hints(self, circuit_id: str, partition: PartitionInput) -> Witness:
        """One partition checked as :meth:`synthesize` checks it (its vanilla
        proofs), without its assignment: ``Witness(None, inputs, hints)``, for
        the device to make the assignment with :meth:`witness_plan`."""
        raise NotImplementedError(f"{self.kind.label}: no device witness")

    def witness_plan(self, circuit_id: str, hints: Any = None) -> StaticPlan:
        """The circuit's static witness plan, recorded once from any partition's
        ``hints`` (:meth:`record_witness_plan`) and kept in the circuit cache
        (without hints: the one this process holds, or the cache's)."""
        build = None
        if hints is not None:
            build = functools.partial(self.record_witness_plan, circuit_id, hints)
        return WITNESS_PLANS.get(circuit_id, build)

    def record_witness_plan(self, circuit_id: str, hints: Any) -> StaticPlan:
        """Record the circuit's static witness plan from ``hints``' shape."""
        raise NotImplementedError(f"{self.kind.label}: no device witness")

    def hint_witness(self, circuit_id: str, hints: Any, inputs: Sequence[int]) -> Witness:
        """What :meth:`witness_hints` returns: the checked partition's hint table."""
        table = self.witness_plan(circuit_id, hints).hint_table(hints)
        return Witness(assignment=None, public_inputs=tuple(inputs), hints=table)

    def hints_bytes(self, circuit_id: str) -> int:
        """Host bytes a partition holds from its check until its proof when its
        witness is made on the device: its hints and the check's temporaries."""
        return HINTS_BYTES

    def key_files(self, circuit_id: str) -> KeyFiles:
        """The file names (and published digests) of the circuit's key."""
        if self.filecoin_keys:
            return KeyFiles.filecoin(circuit_id)
        return KeyFiles.development(circuit_id)

    def circuit_for_key_file(self, params_name: str) -> str | None:
        """The circuit id of one of this kind's ``.params`` files, by its name."""
        if self.filecoin_keys:
            cid = circuit_for_params_name(params_name)
        elif params_name.startswith(DEV_KEY_PREFIX) and params_name.endswith(".params"):
            cid = params_name[len(DEV_KEY_PREFIX) : -len(".params")]
        else:
            return None
        try:
            return cid if cid is not None and self.owns(cid) else None
        except InputError:
            return None

    def r1cs_build_bytes(self, circuit_id: str) -> int:
        """Host bytes the first :meth:`r1cs` of this circuit takes to build its
        matrices (0: cached, or too small to count). The key store reserves
        them and builds each circuit once (:meth:`KeyStore.ensure_r1cs`)."""
        return 0

    def shape(self, circuit_id: str) -> tuple[int, int]:
        """(num_constraints, num_variables) of the circuit; kinds that know the
        counts without building the matrices say so."""
        r1cs = self.r1cs(circuit_id)
        return r1cs.num_constraints, r1cs.num_variables

    def query_sizes(self, circuit_id: str) -> tuple[int, int]:
        """Points of the circuit's key in its a and b queries (kinds with compiled
        circuits count them from the templates)."""
        r1cs = self.r1cs(circuit_id)
        return r1cs.num_inputs + int(r1cs.a_aux_density().sum()), int(r1cs.b.column_mask().sum())

    def counts(self, circuit_id: str) -> Counts:
        """The circuit's counts, which size its key and a proof's memory (kinds with
        compiled circuits count them from the templates, without the matrices)."""
        a_points, b_points = self.query_sizes(circuit_id)
        return counts_of(self.r1cs(circuit_id), a_points, b_points, circuit_id)

    def synthesis_bytes(self, circuit_id: str) -> int:
        """Host bytes synthesis of one partition peaks at, its assignment included."""
        return SYNTHESIS_BYTES_PER_VARIABLE * self.shape(circuit_id)[1]

    def working_bytes(self, circuit_id: str, prover: ProverHostModel | None = None) -> int:
        """Host memory one partition holds from synthesis until its proof is made.

        Synthesis' temporaries are gone before proving starts, the assignment
        (counted in both) stays: the larger of the two phases. ``prover`` is the
        proving backend's host model; the CPU reference's, which holds every
        domain-sized vector on the host, unless the engine says otherwise.
        """
        nc, nv = self.shape(circuit_id)
        prover = prover or memory_model("cpu").prove_host_bytes
        return max(self.synthesis_bytes(circuit_id), prover(nc, nv))

    def assemble(self, partition_proofs: list[bytes]) -> bytes:
        """The proof bytes returned to the client: partitions in order, concatenated."""
        return b"".join(partition_proofs)


class CompiledKind(ProofKindHandler):
    """A kind whose circuits are compiled from templates (the Filecoin kinds):
    counts and key sizes come from the templates without building a matrix,
    and the R1CS is built once and then mapped from the circuit cache
    (:data:`MATRICES`), which :meth:`forget_r1cs` lets go of."""

    @abstractmethod
    def check_circuit(self, circuit_id: str) -> None:
        """InputError unless ``circuit_id`` is one of this kind's (nothing compiled)."""

    @abstractmethod
    def compiled(self, circuit_id: str) -> CompiledCircuit:
        """The compiled partition circuit of one of this kind's ids."""

    def owns(self, circuit_id: str) -> bool:
        try:
            self.check_circuit(circuit_id)
        except InputError:
            return False
        return True

    def r1cs(self, circuit_id: str) -> R1CS:
        self.check_circuit(circuit_id)
        return MATRICES.get(self.compiled(circuit_id))

    def forget_r1cs(self, circuit_id: str) -> None:
        MATRICES.forget(self.compiled(circuit_id))

    def shape(self, circuit_id: str) -> tuple[int, int]:
        cc = self.compiled(circuit_id)
        return cc.num_constraints, cc.num_inputs + cc.num_aux

    def query_sizes(self, circuit_id: str) -> tuple[int, int]:
        return self.compiled(circuit_id).query_sizes()

    def counts(self, circuit_id: str) -> Counts:
        return self.compiled(circuit_id).counts()

    def r1cs_build_bytes(self, circuit_id: str) -> int:
        return r1cs_build_bytes(self.compiled(circuit_id))


class OnceByCircuit(Generic[T]):
    """Values by circuit id, each made once in this process: callers of one id
    wait for its maker, the other ids' go on."""

    def __init__(self) -> None:
        self._values: dict[str, T] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def once(self, circuit_id: str, make: Callable[[], T]) -> T:
        with self._lock:
            got = self._values.get(circuit_id)
            if got is not None:
                return got
            lock = self._locks.setdefault(circuit_id, threading.Lock())
        with lock:
            got = self._values.get(circuit_id)
            if got is None:
                got = make()
                with self._lock:
                    self._values[circuit_id] = got
            return got

    def drop(self, circuit_id: str) -> None:
        with self._lock:
            self._values.pop(circuit_id, None)


class R1csCache(OnceByCircuit[R1CS]):
    """Each circuit's R1CS as :func:`load_or_build_r1cs` gives it: built once,
    then mapped from the circuit cache. :meth:`forget` drops a mapped one (a
    device holds its matrices: the pages its upload read leave the process,
    and the next :meth:`get` maps the file again, untouched); one that could
    not be cached (built in memory) is kept, as rebuilding it costs minutes."""

    def get(self, cc: CompiledCircuit) -> R1CS:
        return self.once(cc.circuit_id, lambda: load_or_build_r1cs(cc))

    def forget(self, cc: CompiledCircuit) -> None:
        if r1cs_path(cc).exists():
            self.drop(cc.circuit_id)


class PlanCache(OnceByCircuit[StaticPlan]):
    """Static witness plans by circuit id, one per process: recorded from the
    first partition's hints (or loaded from the circuit cache, where a
    synthesis process that recorded it left it)."""

    def get(self, circuit_id: str, build: Callable[[], StaticPlan] | None) -> StaticPlan:
        """The plan of ``circuit_id``; ``build`` records it (None: only a cached one)."""

        def make() -> StaticPlan:
            if build is None:
                raise RuntimeError(
                    f"{circuit_id}: no static witness plan in the circuit cache "
                    f"({cache_dir()}) and no partition's hints here to record one"
                )
            return build()

        return self.once(circuit_id, lambda: load_or_build(circuit_id, make))


# Every kind's plans and matrices (circuit ids are unique across kinds).
WITNESS_PLANS = PlanCache()
MATRICES = R1csCache()


def domain_size(num_constraints: int) -> int:
    return 1 << max(0, (num_constraints - 1).bit_length())


def key_raw_bytes(num_constraints: int, num_aux: int, a_points: int, b_points: int) -> int:
    """A proving key's points as raw affine arrays (its cache files, and what a GPU
    holds): h (m − 1), l (one per aux variable), a and b_g1 in G1 at 96 bytes a
    point, b_g2 in G2 at 192 (bellperson's layout)."""
    m = domain_size(num_constraints)
    return 96 * ((m - 1) + num_aux + a_points + b_points) + 192 * b_points


def key_host_bytes(r1cs: R1CS) -> int:
    """Host bytes of a proving key for this circuit, prepared for the CPU backend."""
    return key_host_bytes_for(r1cs.num_constraints, r1cs.num_variables, r1cs.num_aux)


def key_host_bytes_for(num_constraints: int, num_variables: int, num_aux: int) -> int:
    """:func:`key_host_bytes` from the counts: a and b queries bounded by one point
    per variable, each point held twice, as raw affine limbs (96 or 192 bytes)
    and as the pairing library's object (~200 or ~300 bytes with its slot)."""
    m = domain_size(num_constraints)
    g1, g2 = (m - 1) + num_aux + 2 * num_variables, num_variables
    return g1 * (96 + 200) + g2 * (192 + 300) + (1 << 20)
