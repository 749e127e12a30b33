"""The backend contract: where the heavy arithmetic of a proof runs.

Both backends implement every method of :class:`Backend` with its parameters
(tests/backends/test_base.py checks it); the CPU one is the reference that
the CUDA one matches bit for bit. Fr arrays cross this boundary as ``(n, 4)``
uint64 little-endian limbs in standard form (numpy on the host, or the
backend's own device arrays between calls); points as the affine arrays of
:mod:`cuzk.algebra.arrays`. Nothing above ``backends/`` knows which backend it
holds.

Everything the engine asks of a backend is here, with the CPU backend's
no-op versions of what only a GPU does (a device to make current, streams,
kernels to load, a branch beside the prover, witness and point kernels): no
caller looks a method up by name, and nothing above ``backends/`` imports a
backend's own package (``tests/test_layers.py``). A GPU is opened through
:func:`cuzk.backends.gpus` and :func:`cuzk.backends.open_gpu`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cuzk.algebra.curves import Affine
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends.compact import Compact, compact_bytes  # noqa: F401 (part of the face)

FrArray = Any  # numpy.ndarray (n, 4) uint64, or a backend's device array of that shape

# read(lo, hi, out): fill ``out``, a (hi − lo, 96 | 192) uint8 buffer, with points
# lo … hi − 1 of a stream of key points in the uncompressed zcash encoding
# (cuzk.algebra.encoding: big-endian coordinates, G2 as x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0).
PointReader = Callable[[int, int, np.ndarray], None]
# progress(points_done) after each chunk a backend has loaded
LoadProgress = Callable[[int], None]


@dataclass(frozen=True)
class Gathered:
    """A scalar set given as rows of another array, ``values[index]``, for
    :meth:`Backend.msm_g1_many` and :meth:`Backend.msm_g2_many`: a query's
    scalars gathered from the assignment by its selection (``index``, what
    :meth:`Backend.prepare_index` made; ``values``, the backend's own array).

    The backend gathers where it pays: the whole set at once beside resident
    bases, a chunk's rows at a time inside a pass over streamed ones (no
    gathered vector of the whole set: what a lean partition's side branch
    has no room for). ``shape`` is the gathered set's."""

    values: Any
    index: Any

    def __len__(self) -> int:
        return len(self.index)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.index), 4)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> Any:
        return self.values.dtype


def proof_working_bytes(num_constraints: int, num_variables: int) -> int:
    """Bytes one proof of this shape works in beyond its key, the MSMs' own
    workspace aside: the assignment, a, b, c and their coset images, the
    quotient h, with 64 MiB of slack (what the CPU backend's device budget
    counts; the CUDA backend adds its MSM step)."""
    m = 1 << max(0, (num_constraints - 1).bit_length())
    return 32 * (8 * m + 3 * num_variables) + (64 << 20)


class Backend(Protocol):
    name: str
    # What the backend's keys and proofs take of a device, from a circuit's counts
    # (cuzk.engine.keystore.residency plans by it; None: a host backend, one tier).
    memory_model: Any

    # --- memory ---------------------------------------------------------
    @staticmethod
    def prove_host_bytes(num_constraints: int, num_variables: int) -> int:
        """Host bytes one proof of this shape holds, the assignment included.

        The engine reserves them in its host budget for every partition in
        flight, so it is an upper bound; the prover's device memory, where it
        has any, is the device budget's business.
        """

    @staticmethod
    def prove_device_bytes(
        num_constraints: int, num_variables: int, fork_share: int | None = None
    ) -> int:
        """Device bytes one whole proof of this shape takes beyond its key, at its
        largest step (the engine reserves them for every partition on a device;
        every hold the backend takes while proving must fit in them), with a
        side branch of ``fork_share`` bytes where the backend forks (None: its
        default; 0: none)."""

    # --- arrays ---------------------------------------------------------
    def asarray(self, a: np.ndarray) -> FrArray:
        """A host Fr array in the backend's own array type (an upload on a GPU)."""

    def to_host(self, a: FrArray) -> np.ndarray:
        """Back to a host (n, 4) uint64 array."""

    def prepare_index(self, idx: np.ndarray) -> Any:
        """Row indices (a key's a / b query selections) made ready for :meth:`gather`
        (on a GPU: resident, owned by the caller, freed by the handle's ``close()``)."""

    def gather(self, a: FrArray, idx: Any) -> FrArray:
        """The rows ``a[idx]`` where the backend keeps ``a`` (no host round trip)."""

    def compact(self, a: FrArray, idx: Any = None, start: int = 0) -> Compact:
        """The scalars ``a[idx]`` (a prepared index), or ``a[start:]`` without
        one, as a :class:`Compact` set in host memory (pinned on a GPU),
        classified where ``a`` lives, in linear time and bounded memory: what
        outlives the assignment for a pass that serves several partitions."""

    def synchronize(self) -> None:
        """Wait for the backend's queued work (a no-op on the CPU): stage timers call it."""

    # --- constraint evaluation -----------------------------------------
    def prepare_matrix(self, m: SparseMatrix, resident: bool = True) -> Any:
        """A matrix made ready for repeated products (on a GPU: resident, or with
        ``resident=False`` kept in pinned host memory and streamed through the
        device by each product; owned by the caller, its memory given back by
        the handle's ``close()``)."""

    def spmv(self, m: SparseMatrix | Any, w: FrArray, rows: int | None = None) -> FrArray:
        """m·w over Fr: one value per row; ``m`` as given or as :meth:`prepare_matrix`
        made it; with ``rows`` (at least m's), zero-padded to that many (the H step's
        domain)."""

    # --- polynomials ----------------------------------------------------
    def ntt(self, a: FrArray) -> FrArray:
        """Evaluations on the domain ⟨ω⟩ of |a| (a power of two) from coefficients."""

    def intt(self, a: FrArray) -> FrArray:
        """Coefficients from evaluations on ⟨ω⟩."""

    def coset_ntt(self, a: FrArray) -> FrArray:
        """Evaluations on the coset g·⟨ω⟩ (g = 7) from coefficients."""

    def coset_intt(self, a: FrArray) -> FrArray:
        """Coefficients from evaluations on the coset g·⟨ω⟩."""

    def h_poly(self, a: FrArray, b: FrArray, c: FrArray) -> FrArray:
        """Groth16's H: the m − 1 coefficients of (A·B − C) / Z.

        a, b, c are evaluations on the domain of size m (shorter inputs are
        zero-padded). Steps (bellperson): iNTT each; coset NTT each;
        a·b − c; times 1 / (g^m − 1); coset iNTT; drop the top coefficient.
        Each of a, b, c may instead be a zero-argument callable returning it,
        called once, in the order a, b, c, when its value is needed: a backend
        may then hold fewer of them at once (and may take over their results).
        """

    def h_odd_coset(self, a: FrArray, b: FrArray, c: FrArray | None = None) -> FrArray:
        """snarkjs's H scalars: A·B − C evaluated on the odd coset ζ·⟨ω⟩ (m values).

        a, b, c are evaluations on the domain ⟨ω⟩ of size m, a power of two
        below 2^32 (shorter inputs are zero-padded); c defaults to the
        pointwise product a·b, because a snarkjs key carries no C matrix (for
        a satisfying witness C·w = (A·w)∘(B·w) row by row). A, B, C are the
        polynomials of degree < m through those values. ζ is the primitive
        2m-th root of unity of cuzk's root family, ``EvaluationDomain(k + 1).omega``
        for m = 2^k, so ζ² = ω and ζ·⟨ω⟩ are the odd powers of ζ.

        Returns P(ζ·ωⁱ) for i < m, P = A·B − C, in natural order. Steps:
        iNTT each of a, b, c; multiply coefficient j by ζ^j; NTT each;
        a·b − c pointwise. No division by Z: Z(x) = x^m − 1 is −2 on this
        coset and the key's H points (odd-indexed Lagrange points of the
        2m-domain at τ, over δ) absorb it, so Σ Pᵢ·Hᵢ = P(τ)/δ = H(τ)Z(τ)/δ.
        """

    # --- multi-scalar multiplication -------------------------------------
    def prepare_g1(self, bases: np.ndarray, resident: bool | None = None) -> Any:
        """Bases (n, 2, 6) made ready for repeated MSMs (uploaded, converted).

        A handle that holds device memory has ``close()`` to give it back.
        """

    def prepare_g2(self, bases: np.ndarray, resident: bool | None = None) -> Any:
        """Bases (n, 2, 2, 6) made ready for repeated MSMs."""

    def load_g1(
        self,
        count: int,
        read: PointReader,
        progress: LoadProgress | None = None,
        resident: bool | None = None,
    ) -> Any:
        """``count`` G1 bases streamed in from ``read`` (a key file, or a generator),
        made ready as :meth:`prepare_g1` makes them, without a full-size copy of
        the stream anywhere but the result. The backend owns the buffers
        ``read`` fills, a chunk at a time. Every point is checked: flag bits of
        a finite uncompressed point, coordinates below q, on the curve; the
        first bad one raises :class:`cuzk.errors.BadPoint` with its index in
        the stream, and nothing of the load stays allocated. ``resident``: True
        keeps them in device memory (a ResourceError where they do not fit),
        False in pinned host memory streamed through the device by each MSM,
        None as the backend's free memory allows.
        """

    def load_g2(
        self,
        count: int,
        read: PointReader,
        progress: LoadProgress | None = None,
        resident: bool | None = None,
    ) -> Any:
        """:meth:`load_g1` for G2 bases (192-byte points)."""

    def msm_g1(self, bases: Any, scalars: FrArray, phases: dict | None = None) -> Affine:
        """Σ s_i·P_i over prepared G1 bases; len(scalars) may be < len(bases).

        ``phases``, when given, receives milliseconds per phase of the MSM
        (scalar upload, classification, bucket accumulation, reductions …),
        where the backend can tell them apart.
        """

    def msm_g2(self, bases: Any, scalars: FrArray, phases: dict | None = None) -> Affine:
        """Σ s_i·Q_i over prepared G2 bases."""

    def msm_g1_many(self, bases: Any, scalar_sets: list, phases: dict | None = None) -> list:
        """One :meth:`msm_g1` a scalar set over the same bases, in one pass over
        them where they stream from pinned host memory (each chunk crosses to
        the device once for every set). A set is an Fr array, a
        :class:`Gathered` one (rows of the assignment by a prepared index),
        bit for bit the MSM of the gathered array, or a :class:`Compact` one
        (zeros, ones and full values in host memory, :meth:`compact`), bit for
        bit the MSM of the array it stands for."""

    def msm_g2_many(self, bases: Any, scalar_sets: list, phases: dict | None = None) -> list:
        """:meth:`msm_g1_many` in G2."""

    # --- the device the backend runs on ----------------------------------
    # (attributes: ``name``; ``memory_model``, the residency planner's figures
    # or None for one tier; ``device_budget``, the device's own budget that its
    # operations reserve from, or None where memory is the host's;
    # ``compiles_kernels``, whether load_kernels has modules to load or build)

    @staticmethod
    def prepared_key_bytes(point_bytes: int, r1cs: Any) -> int:
        """Device bytes a prepared key holds: its points (``point_bytes`` as raw
        affine limbs), the circuit's matrices as the backend stores them and
        the staging of their load."""

    def activate(self) -> AbstractContextManager[Any]:
        """Make this backend's device the calling thread's current one."""

    def free_device_bytes(self) -> int | None:
        """The device's free memory as its driver reports it (None: no device of
        its own, or it cannot say)."""

    def work_stream(self, role: str) -> AbstractContextManager[Any]:
        """The calling thread's work of ``role`` ("urgent", "prove" or
        "witness") on the device's stream for it."""

    def load_kernels(self, progress: Callable[..., None] | None = None) -> None:
        """Load (compiling what is not cached) every kernel module the backend
        proves with; ``progress(done, total, description, seconds)`` after each."""

    def fork(self, domain_size: int, num_variables: int, share: int | None = None) -> Any:
        """A branch (``start(fn)``, ``join()``) running beside the calling
        thread within ``share`` bytes, or None where the backend has no second
        line of work (the caller then runs the work itself). Where the calling
        thread sizes its work within a fixed room (a lean partition's MSMs),
        the share comes out of that room until the join."""

    def witness_device(self) -> Any:
        """Where this backend makes witnesses from static plans (the witness
        kernels on a GPU), or None: the host's interpreter."""

    def point_maker(self) -> Any:
        """An object with ``fixed_base_g1(point, scalars, to_host)`` and
        ``fixed_base_g2`` making a key's points on the device, or None."""

    def peak_bytes_by_operation(self) -> dict[str, int]:
        """The largest device reservation each operation made (empty without a
        device budget)."""
