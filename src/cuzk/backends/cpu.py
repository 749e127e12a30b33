"""The CPU backend: the reference every other backend must match bit for bit.

Two implementations of every operation, checked against each other bit for
bit (tests/backends/test_native.py):

- the native C kernels of :mod:`cuzk.backends.native` (multithreaded
  Montgomery arithmetic, Pippenger MSMs), used whenever the extension is
  built;
- their readable twins here: Fr arithmetic on Python ints, vectorised through
  numpy object arrays (one numpy call per NTT stage, not one Python call per
  butterfly), and MSMs through py-arkworks-bls12381's multiexp.

In both, MSM scalars 0 and 1 never reach a scalar multiplication: zeros are
skipped and the bases of ones are added directly.

``CpuBackend(native=False)`` or ``CUZK_CPU_NATIVE=0`` forces the Python twins
(to measure the two side by side, or where the extension is not built, which
falls back to them with a warning).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache, reduce
from operator import add
from typing import Any

import numpy as np

from cuzk import environment
from cuzk.algebra import pairing
from cuzk.algebra.arrays import (
    fr_from_array,
    fr_to_array,
    g1_from_zcash,
    g2_from_zcash,
    zcash_first_flagged,
)
from cuzk.algebra.curves import Affine
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import FR_TWO_ADICITY, R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.backends import compact as _compact
from cuzk.backends import native as native_kernels
from cuzk.backends.base import (
    Compact,
    Gathered,
    LoadProgress,
    PointReader,
    proof_working_bytes,
)
from cuzk.errors import BadPoint, EncodingError

log = logging.getLogger(__name__)
_warned_unbuilt = False
LOAD_CHUNK = 1 << 16  # points read and converted at a time while loading bases
_NATIVE_REASON = {
    native_kernels.PREPARE_NOT_CANONICAL: (
        EncodingError.NON_CANONICAL,
        "a coordinate is not below q",
    ),
    native_kernels.PREPARE_OFF_CURVE: (EncodingError.OFF_CURVE, "not on the {group} curve"),
}


def _use_native(native: bool | None) -> bool:
    """Resolve CpuBackend's ``native`` argument against the build and the environment."""
    global _warned_unbuilt
    if native is False:
        return False
    if native is None and not environment.cpu_native():
        return False
    if native_kernels.available():
        return True
    if native:
        raise RuntimeError(
            f"native CPU kernels requested but not built ({native_kernels.unavailable_reason()}); "
            "run `pip install -e .` in the source tree"
        )
    if not _warned_unbuilt:
        log.warning(
            "native CPU kernels not built (%s): the CPU backend runs its pure-Python "
            "reference, 10-100x slower; `pip install -e .` builds them",
            native_kernels.unavailable_reason(),
        )
        _warned_unbuilt = True
    return False


def _check_fr(a: np.ndarray, what: str = "Fr array") -> np.ndarray:
    if not isinstance(a, np.ndarray) or a.ndim != 2 or a.shape[1] != 4:
        raise ValueError(f"{what}: expected an (n, 4) uint64 array")
    return a


def _padded(values: np.ndarray, rows: int | None) -> np.ndarray:
    """``values`` zero-padded to ``rows`` rows (None: as they are)."""
    if rows is None or rows == len(values):
        return values
    if rows < len(values):
        raise ValueError(f"spmv: {rows} rows asked of a matrix of {len(values)}")
    out = np.zeros((rows, 4), dtype=np.uint64)
    out[: len(values)] = values
    return out


def _log2_exact(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"NTT size {n} is not a power of two")
    return n.bit_length() - 1


@lru_cache(maxsize=8)
def _bit_reverse(log_n: int) -> np.ndarray:
    n = 1 << log_n
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for b in range(log_n):
        rev |= ((idx >> b) & 1) << (log_n - 1 - b)
    return rev


@lru_cache(maxsize=16)
def _twiddles(log_n: int, inverse: bool) -> np.ndarray:
    """ω^j (or ω^−j) for j < n/2, as an object array."""
    d = EvaluationDomain(log_n)
    w = d.omega_inv if inverse else d.omega
    half = max(1, d.size // 2)
    out = [1] * half
    for j in range(1, half):
        out[j] = out[j - 1] * w % R
    return np.array(out, dtype=object)


@lru_cache(maxsize=16)
def _powers(base: int, n: int) -> np.ndarray:
    out = [1] * n
    for i in range(1, n):
        out[i] = out[i - 1] * base % R
    return np.array(out, dtype=object)


def ntt_ints(values: list[int] | np.ndarray, inverse: bool = False) -> np.ndarray:
    """Radix-2 decimation-in-time NTT over Python ints (object arrays).

    Forward: out_k = Σ_j a_j ω^{jk}. Inverse includes the 1/n factor.
    """
    n = len(values)
    log_n = _log2_exact(n)
    a = np.asarray(values, dtype=object)[_bit_reverse(log_n)]
    tw = _twiddles(log_n, inverse)
    half = 1
    while half < n:
        step = n // (2 * half)
        w = tw[::step][:half]
        blocks = a.reshape(-1, 2 * half)
        u = blocks[:, :half]
        v = blocks[:, half:] * w % R
        a = np.concatenate([(u + v) % R, (u - v) % R], axis=1).reshape(-1)
        half *= 2
    if inverse:
        a = a * EvaluationDomain(log_n).size_inv % R
    return a


def coset_scale(values: np.ndarray, g: int) -> np.ndarray:
    """a_i · g^i."""
    return values * _powers(g, len(values)) % R


@dataclass(frozen=True)
class CpuBases:
    """Bases converted once to the CPU's "resident" form: Montgomery-form limbs
    for the native kernels, or library points for the Python twin."""

    group: str  # "G1" or "G2"
    points: list | None = None
    native: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.native) if self.native is not None else len(self.points or ())


class CpuBackend:
    """The backend contract on the CPU (see the module docstring for the two paths)."""

    name = "cpu"
    memory_model = None  # keys and proofs live in host memory: one tier
    device_budget = None  # what it holds counts against the host budget
    compiles_kernels = False  # its C kernels are built with the package

    def __init__(self, native: bool | None = None) -> None:
        """native: None = the C kernels when built (unless ``CUZK_CPU_NATIVE=0``),
        False = the Python twins, True = the C kernels or a RuntimeError."""
        self.native = _use_native(native)

    # --- the device: the host itself -------------------------------------
    @staticmethod
    def prepared_key_bytes(point_bytes: int, r1cs: Any) -> int:
        """A prepared key in host memory: its points and the matrices as CSR
        (int64 row pointers and columns, 32-byte coefficients)."""
        ms = (r1cs.a, r1cs.b, r1cs.c)
        return point_bytes + sum(8 * (m.num_rows + 1) + 40 * m.nnz for m in ms)

    def activate(self) -> AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def free_device_bytes(self) -> int | None:
        return None

    def work_stream(self, role: str) -> AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def load_kernels(self, progress: Callable[..., None] | None = None) -> None:
        """Nothing to load: the C kernels are built with the package."""

    def fork(self, domain_size: int, num_variables: int, share: int | None = None) -> Any:
        return None  # one line of work: the caller runs the side's MSMs itself

    def witness_device(self) -> Any:
        return None

    def point_maker(self) -> Any:
        return None

    def peak_bytes_by_operation(self) -> dict[str, int]:
        return {}

    # --- arrays ---------------------------------------------------------
    @staticmethod
    def prove_host_bytes(num_constraints: int, num_variables: int) -> int:
        """Host bytes one proof of this shape holds beyond nothing (assignment included).

        The reference keeps Fr values as Python integers (~60 bytes each with
        their list slots) in its NTTs: a, b, c and their coset evaluations are
        six domain-sized vectors alive at once, plus the assignment (numpy and
        integer copies) and the witness builder's per-variable bookkeeping.
        Calibrated against tracemalloc in tests/engine/test_kinds.py.
        """
        m = 1 << max(0, (num_constraints - 1).bit_length())
        return 8 * 60 * m + 400 * num_variables + 400 * num_constraints + (1 << 20)

    @staticmethod
    def prove_device_bytes(
        num_constraints: int, num_variables: int, fork_share: int | None = None
    ) -> int:
        """What a stand-in device's budget counts for one proof (the CPU itself
        proves in host memory: :meth:`prove_host_bytes`; it has no side branch)."""
        return proof_working_bytes(num_constraints, num_variables)

    def asarray(self, a: np.ndarray) -> np.ndarray:
        return _check_fr(np.ascontiguousarray(a, dtype=np.uint64))

    def to_host(self, a: np.ndarray) -> np.ndarray:
        return a

    def prepare_index(self, idx: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(idx, dtype=np.int64)

    def gather(self, a: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.take(a, idx, axis=0)

    def compact(self, a: np.ndarray, idx: Any = None, start: int = 0) -> Compact:
        """The scalars ``a[idx]`` (or ``a[start:]``) classified on the host."""
        return _compact.classify(np, _check_fr(a), idx, start)

    def synchronize(self) -> None:
        pass

    # --- constraint evaluation -----------------------------------------
    def prepare_matrix(self, m: SparseMatrix, resident: bool = True) -> SparseMatrix:
        return m  # the host CSR is already what spmv reads (host memory: one tier)

    def spmv(self, m: SparseMatrix, w: np.ndarray, rows: int | None = None) -> np.ndarray:
        if self.native:
            out = native_kernels.spmv(m, _check_fr(w, "witness"))
        else:
            out = fr_to_array(m.matvec(fr_from_array(_check_fr(w, "witness"))))
        return _padded(out, rows)

    # --- polynomials ----------------------------------------------------
    def ntt(self, a: np.ndarray) -> np.ndarray:
        if self.native:
            return native_kernels.ntt(_check_fr(a))
        return fr_to_array(ntt_ints(fr_from_array(_check_fr(a))))

    def intt(self, a: np.ndarray) -> np.ndarray:
        if self.native:
            return native_kernels.ntt(_check_fr(a), inverse=True)
        return fr_to_array(ntt_ints(fr_from_array(_check_fr(a)), inverse=True))

    def coset_ntt(self, a: np.ndarray) -> np.ndarray:
        if self.native:
            return native_kernels.ntt(_check_fr(a), coset=True)
        vals = np.array(fr_from_array(_check_fr(a)), dtype=object)
        return fr_to_array(
            ntt_ints(coset_scale(vals, EvaluationDomain.for_size(len(vals)).coset_generator))
        )

    def coset_intt(self, a: np.ndarray) -> np.ndarray:
        if self.native:
            return native_kernels.ntt(_check_fr(a), inverse=True, coset=True)
        d = EvaluationDomain.for_size(len(a))
        return fr_to_array(
            coset_scale(ntt_ints(fr_from_array(_check_fr(a)), inverse=True), d.coset_generator_inv)
        )

    def h_poly(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        # thunks (see Backend.h_poly) are called in order; the CPU holds all three
        a, b, c = (x() if callable(x) else x for x in (a, b, c))
        if self.native:
            return native_kernels.h_poly(_check_fr(a), _check_fr(b), _check_fr(c))
        n = max(len(a), len(b), len(c))
        d = EvaluationDomain.for_size(n)
        evals = []
        for x in (a, b, c):
            vals = fr_from_array(_check_fr(x)) + [0] * (d.size - len(x))
            coeffs = ntt_ints(vals, inverse=True)
            evals.append(ntt_ints(coset_scale(coeffs, d.coset_generator)))
        ea, eb, ec = evals
        t = (ea * eb - ec) % R * d.z_on_coset_inv % R
        h = coset_scale(ntt_ints(t, inverse=True), d.coset_generator_inv)
        return fr_to_array(h[: d.size - 1])

    def h_odd_coset(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        if self.native:
            return native_kernels.h_odd_coset(
                _check_fr(a), _check_fr(b), None if c is None else _check_fr(c)
            )
        n = max(len(a), len(b), 0 if c is None else len(c))
        d = EvaluationDomain.for_size(n)
        if d.log_size >= FR_TWO_ADICITY:
            raise ValueError("the odd coset of a 2^32 domain needs a 2^33-th root of unity")
        zeta = EvaluationDomain(d.log_size + 1).omega

        def padded(x: np.ndarray) -> np.ndarray:
            vals = fr_from_array(_check_fr(x)) + [0] * (d.size - len(x))
            return np.array(vals, dtype=object)

        va, vb = padded(a), padded(b)
        vc = va * vb % R if c is None else padded(c)
        ea, eb, ec = (ntt_ints(coset_scale(ntt_ints(v, inverse=True), zeta)) for v in (va, vb, vc))
        return fr_to_array((ea * eb - ec) % R)

    # --- multi-scalar multiplication -------------------------------------
    def prepare_g1(self, bases: np.ndarray, resident: bool | None = None) -> CpuBases:
        if self.native:
            return CpuBases("G1", native=native_kernels.prepare_g1(bases))
        raw = np.ascontiguousarray(bases, dtype=np.uint64).tobytes()
        make = pairing.G1Point.from_xy_bytes_unchecked_le
        return CpuBases("G1", points=[make(raw[i : i + 96]) for i in range(0, len(raw), 96)])

    def prepare_g2(self, bases: np.ndarray, resident: bool | None = None) -> CpuBases:
        if self.native:
            return CpuBases("G2", native=native_kernels.prepare_g2(bases))
        raw = np.ascontiguousarray(bases, dtype=np.uint64).tobytes()
        make = pairing.G2Point.from_xy_bytes_unchecked_le
        return CpuBases("G2", points=[make(raw[i : i + 192]) for i in range(0, len(raw), 192)])

    def load_g1(
        self,
        count: int,
        read: PointReader,
        progress: LoadProgress | None = None,
        resident: bool | None = None,
    ):
        return self._load("G1", count, read, progress)

    def load_g2(
        self,
        count: int,
        read: PointReader,
        progress: LoadProgress | None = None,
        resident: bool | None = None,
    ):
        return self._load("G2", count, read, progress)

    def _load(
        self, group: str, count: int, read: PointReader, progress: LoadProgress | None
    ) -> CpuBases:
        """Bases read chunk by chunk into their resident form (see the contract):
        the only full-size array is the result itself."""
        size, decode = (96, g1_from_zcash) if group == "G1" else (192, g2_from_zcash)
        buf = np.empty((min(max(count, 1), LOAD_CHUNK), size), dtype=np.uint8)
        out = np.empty((count, 2, 6) if group == "G1" else (count, 2, 2, 6), np.uint64)
        points: list = []
        make = (pairing.G1Point if group == "G1" else pairing.G2Point).from_xy_bytes_le
        for lo in range(0, count, LOAD_CHUNK):
            hi = min(count, lo + LOAD_CHUNK)
            raw = buf[: hi - lo]
            read(lo, hi, raw)
            flagged = zcash_first_flagged(raw, size)
            if flagged is not None:
                raise BadPoint(lo + flagged[0], EncodingError.FLAGS, flagged[1])
            limbs = decode(raw)
            if self.native:
                bad, why = native_kernels.prepare_into(limbs, out[lo:hi])
                if bad >= 0:
                    reason, problem = _NATIVE_REASON[why]
                    raise BadPoint(lo + bad, reason, problem.format(group=group))
            else:
                flat = limbs.reshape(hi - lo, -1).tobytes()
                for i in range(hi - lo):
                    try:  # the library's checked constructor: curve and subgroup
                        points.append(make(flat[i * size : (i + 1) * size]))
                    except ValueError as e:
                        raise BadPoint(lo + i, EncodingError.OFF_CURVE, str(e)) from None
            if progress is not None:
                progress(hi)
        if self.native:
            return CpuBases(group, native=out)
        return CpuBases(group, points=points)

    def msm_g1(self, bases: CpuBases, scalars: np.ndarray, phases: dict | None = None) -> Affine:
        if bases.native is not None:
            return native_kernels.msm_g1(bases.native, _check_fr(scalars, "MSM scalars"))
        return pairing.g1_from_ark(self._msm(bases, scalars, pairing.G1Point))

    def msm_g2(self, bases: CpuBases, scalars: np.ndarray, phases: dict | None = None) -> Affine:
        if bases.native is not None:
            return native_kernels.msm_g2(bases.native, _check_fr(scalars, "MSM scalars"))
        return pairing.g2_from_ark(self._msm(bases, scalars, pairing.G2Point))

    def msm_g1_many(
        self, bases: CpuBases, scalar_sets: list, phases: dict | None = None
    ) -> list[Affine]:
        return [self.msm_g1(bases, self.rows(s), phases) for s in scalar_sets]

    def msm_g2_many(
        self, bases: CpuBases, scalar_sets: list, phases: dict | None = None
    ) -> list[Affine]:
        return [self.msm_g2(bases, self.rows(s), phases) for s in scalar_sets]

    def rows(self, scalars: Any) -> np.ndarray:
        """A scalar set's array: a :class:`~cuzk.backends.base.Gathered` one gathered,
        a :class:`~cuzk.backends.base.Compact` one expanded (host memory is one
        tier: the whole set at once), any other as it is."""
        if isinstance(scalars, Gathered):
            return self.gather(scalars.values, scalars.index)
        if isinstance(scalars, Compact):
            return scalars.dense()
        return scalars

    @staticmethod
    def _msm(bases: CpuBases, scalars: np.ndarray, point_type):
        scalars = _check_fr(scalars, "MSM scalars")
        if len(scalars) > len(bases):
            raise ValueError(f"MSM of {len(scalars)} scalars over {len(bases)} bases")
        ks = [k % R for k in fr_from_array(scalars)]  # any 256-bit values, as on the GPU
        pts = bases.points or []
        ones = [pts[i] for i, k in enumerate(ks) if k == 1]
        full = [i for i, k in enumerate(ks) if k > 1]
        acc = reduce(add, ones, point_type.identity())
        if full:
            acc = acc + point_type.multiexp_unchecked(
                [pts[i] for i in full], [pairing.scalar(ks[i]) for i in full]
            )
        return acc
