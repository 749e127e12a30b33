"""Native (C) kernels of the CPU backend, with numpy arrays in and out.

The extension ``_native`` is compiled by ``pip install -e .`` (setup.py) from
the C files beside this module: Fr NTTs and the fused H polynomial (4×64-bit
Montgomery), sparse mat-vec, G1/G2 multi-scalar and fixed-base
multiplication (6×64-bit Montgomery Fq, XYZZ buckets, signed-digit
Pippenger), and the setup's QAP at τ (Lagrange basis by batch inversion,
transposed sparse products, powers), multithreaded with pthreads. Every function here has a
Python-int twin in :mod:`cuzk.backends.cpu` (or :mod:`cuzk.algebra`) that
tests check it against bit for bit.

Where the extension is not built (a source tree run without installing),
:func:`available` is False and the CPU backend falls back to its Python
twins. ``CUZK_CPU_NATIVE=0`` forces that fallback; ``CUZK_THREADS=n`` sets
the kernels' thread count (default: the CPUs this process may run on);
``CUZK_NATIVE_ARITH=portable`` swaps the x86-64 MULX/ADX assembly of the
Montgomery product (used when the CPU has BMI2 and ADX) for portable C.
"""

from __future__ import annotations

import importlib
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cuzk import environment
from cuzk.algebra.curves import Affine
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import Fq2, R
from cuzk.algebra.sparse import SparseMatrix

try:
    _native = importlib.import_module("cuzk.backends.native._native")
except ImportError as e:  # not built: the pure-Python twins take over
    _native = None
    _import_error: str | None = f"{type(e).__name__}: {e}"
else:
    _import_error = None

_U64 = np.dtype("<u8")


def available() -> bool:
    """The extension is built and importable."""
    return _native is not None


def unavailable_reason() -> str | None:
    return _import_error


def enabled() -> bool:
    """Built, and not switched off with ``CUZK_CPU_NATIVE=0``."""
    return available() and environment.cpu_native()


def _default_threads() -> int:
    n = environment.threads()
    if n is not None:
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_threads(n: int) -> None:
    _lib().set_threads(n)


def threads() -> int:
    return _lib().get_threads()


def arithmetic() -> str:
    """``adx`` (x86-64 MULX/ADX assembly) or ``portable`` (C): the Montgomery product in use."""
    return _lib().get_arith()


def set_arithmetic(name: str) -> None:
    """Switch the Montgomery product (``adx`` needs a CPU with BMI2 and ADX)."""
    _lib().set_arith(name)


def adx_supported() -> bool:
    return bool(_lib().adx_supported())


def _lib():
    if _native is None:
        raise RuntimeError(
            f"cuzk's native CPU kernels are not built ({_import_error}); "
            "run `pip install -e .` in the source tree"
        )
    return _native


if _native is not None:
    _native.set_threads(_default_threads())
    if environment.portable_arithmetic():
        _native.set_arith("portable")


def _fr(a: np.ndarray, what: str) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=_U64)
    if a.ndim != 2 or a.shape[1] != 4:
        raise ValueError(f"{what}: expected an (n, 4) uint64 array, got shape {a.shape}")
    return a


def _log2_exact(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"NTT size {n} is not a power of two")
    return n.bit_length() - 1


# --- polynomials --------------------------------------------------------------


def ntt(a: np.ndarray, inverse: bool = False, coset: bool = False) -> np.ndarray:
    """(Coset) NTT or iNTT of an (n, 4) Fr array, n a power of two; a new array.

    Forward: out_k = Σ_j a_j (g·)ω^{jk}; inverse undoes it (1/n included).
    """
    out = _fr(a, "NTT input").copy()
    _lib().fr_ntt(out, _log2_exact(len(out)), inverse, coset)
    return out


def h_poly(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Groth16's H (m − 1 coefficients) from evaluations a, b, c on the domain."""
    a, b, c = _fr(a, "H input a"), _fr(b, "H input b"), _fr(c, "H input c")
    log_n = EvaluationDomain.for_size(max(len(a), len(b), len(c))).log_size
    out = np.empty(((1 << log_n) - 1, 4), dtype=_U64)
    _lib().fr_h_poly(a, b, c, out, log_n)
    return out


def h_odd_coset(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    """snarkjs's H scalars: A·B − C on the odd coset ζ·⟨ω⟩, c defaulting to a∘b
    (see :meth:`cuzk.backends.base.Backend.h_odd_coset`)."""
    a, b = _fr(a, "H input a"), _fr(b, "H input b")
    c = None if c is None else _fr(c, "H input c")
    log_n = EvaluationDomain.for_size(max(len(a), len(b), 0 if c is None else len(c))).log_size
    out = np.empty((1 << log_n, 4), dtype=_U64)
    _lib().fr_h_odd_coset(a, b, c, out, log_n)
    return out


# --- constraint evaluation ----------------------------------------------------


def spmv(m: SparseMatrix, w: np.ndarray) -> np.ndarray:
    """m·w over Fr: one value per row."""
    w = _fr(w, "witness")
    if len(w) != m.num_cols:
        raise ValueError(f"vector of {len(w)} for a matrix of {m.num_cols} columns")
    out = np.empty((m.num_rows, 4), dtype=_U64)
    _lib().fr_spmv(
        np.ascontiguousarray(m.indptr, dtype=np.int64),
        np.ascontiguousarray(m.indices, dtype=np.int64),
        _fr(m.coeffs, "CSR coefficients"),
        w,
        out,
    )
    return out


def _fr_constant(x: int) -> bytes:
    return (int(x) % R).to_bytes(32, "little")


def rmatvec(m: SparseMatrix, v: np.ndarray, density: np.ndarray | None = None) -> np.ndarray:
    """vᵀ·m over Fr: one value per column (the twin of :meth:`SparseMatrix.rmatvec`).

    ``density``, a bool array of ``m.num_cols``, receives
    :meth:`SparseMatrix.column_mask` on the way (no second pass over the entries).
    """
    v = _fr(v, "row vector")
    if len(v) != m.num_rows:
        raise ValueError(f"vector of {len(v)} for a matrix of {m.num_rows} rows")
    if density is not None and (
        density.dtype != np.bool_
        or density.shape != (m.num_cols,)
        or not density.flags.c_contiguous
    ):
        raise ValueError(f"column density: expected a contiguous bool array of {m.num_cols}")
    out = np.empty((m.num_cols, 4), dtype=_U64)
    _lib().fr_rmatvec(
        np.ascontiguousarray(m.indptr, dtype=np.int64),
        np.ascontiguousarray(m.indices, dtype=np.int64),
        _fr(m.coeffs, "CSR coefficients"),
        v,
        out,
        None if density is None else density.view(np.uint8),
    )
    return out


# --- the QAP at a point (parameter generation) --------------------------------


def lagrange_at(domain: EvaluationDomain, tau: int, n: int | None = None) -> np.ndarray:
    """L_j(tau) for the first n points of the domain (all by default), as an
    (n, 4) array: the twin of :meth:`EvaluationDomain.lagrange_at`.

    One batch inversion (Montgomery's trick) per thread; ValueError when tau
    lies in the domain.
    """
    n = domain.size if n is None else n
    if not 0 <= n <= domain.size:
        raise ValueError(f"{n} Lagrange values of a {domain.size}-point domain")
    out = np.empty((n, 4), dtype=_U64)
    _lib().fr_lagrange_at(_fr_constant(tau), domain.log_size, out)
    return out


def powers(start: int, ratio: int, n: int) -> np.ndarray:
    """start·ratio^i for i < n, as an (n, 4) array."""
    out = np.empty((n, 4), dtype=_U64)
    _lib().fr_powers(_fr_constant(start), _fr_constant(ratio), out)
    return out


def qap_combine(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    beta: int,
    alpha: int,
    scale: int,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, int | None]:
    """(β·a_j + α·b_j + c_j)·scale for each j, and the first j where that is zero.

    ``out`` (a C-contiguous (n, 4) uint64 array, which may be ``c`` itself)
    receives the result; by default a new array.
    """
    a, b, c = _fr(a, "a"), _fr(b, "b"), _fr(c, "c")
    if out is None:
        out = np.empty_like(c)
    elif out.dtype != _U64 or out.shape != c.shape or not out.flags.c_contiguous:
        raise ValueError(f"qap_combine output: expected a contiguous {c.shape} uint64 array")
    first = _lib().fr_qap_combine(
        a, b, c, _fr_constant(beta), _fr_constant(alpha), _fr_constant(scale), out
    )
    return out, (None if first < 0 else int(first))


# --- multi-scalar multiplication ---------------------------------------------


def prepare_g1(bases: np.ndarray) -> np.ndarray:
    """(n, 2, 6) standard-form affine points to the kernels' Montgomery form."""
    src = np.ascontiguousarray(bases, dtype=_U64)
    if src.ndim != 3 or src.shape[1:] != (2, 6):
        raise ValueError(f"G1 bases: expected an (n, 2, 6) uint64 array, got {src.shape}")
    out = np.empty_like(src)
    _lib().g1_prepare(src, out)
    return out


def prepare_g2(bases: np.ndarray) -> np.ndarray:
    """(n, 2, 2, 6) standard-form affine points to the kernels' Montgomery form."""
    src = np.ascontiguousarray(bases, dtype=_U64)
    if src.ndim != 4 or src.shape[1:] != (2, 2, 6):
        raise ValueError(f"G2 bases: expected an (n, 2, 2, 6) uint64 array, got {src.shape}")
    out = np.empty_like(src)
    _lib().g2_prepare(src, out)
    return out


PREPARE_NOT_CANONICAL = 1  # kernels.h: a coordinate not below q
PREPARE_OFF_CURVE = 2  # not on the curve


# Points a thread of prepare_into converts at least (fewer: one call does all).
PREPARE_SLICE = 4096
_prepare_pool: ThreadPoolExecutor | None = None
_prepare_pool_lock = threading.Lock()


def _prepare_workers() -> ThreadPoolExecutor:
    global _prepare_pool
    with _prepare_pool_lock:
        if _prepare_pool is None:
            _prepare_pool = ThreadPoolExecutor(_default_threads(), thread_name_prefix="prepare")
        return _prepare_pool


def prepare_into(bases: np.ndarray, out: np.ndarray) -> tuple[int, int]:
    """Standard-form affine points ((n, 2, 6) G1 or (n, 2, 2, 6) G2) into ``out``
    in Montgomery form, checked: (−1, 0), or the index of the first point with
    a coordinate not below q or off the curve and PREPARE_NOT_CANONICAL /
    PREPARE_OFF_CURVE (``out`` is then partly written). Slices of the points
    are converted on the kernels' threads at once (the kernel lets go of the
    interpreter); the first bad point is the lowest index any slice found."""
    src = np.ascontiguousarray(bases, dtype=_U64)
    fn = _lib().g2_prepare if src.ndim == 4 else _lib().g1_prepare
    if src.shape[1:] not in ((2, 6), (2, 2, 6)) or out.shape != src.shape:
        raise ValueError(f"bases: shapes {src.shape} in, {out.shape} out")
    if not out.flags.c_contiguous:
        raise ValueError("bases: the output must be C-contiguous")
    n = len(src)
    parts = max(1, min(threads(), n // PREPARE_SLICE))
    if parts == 1:
        bad, why = fn(src, out, True)
        return int(bad), int(why)
    cuts = [n * i // parts for i in range(parts + 1)]
    spans = list(itertools.pairwise(cuts))
    results = _prepare_workers().map(lambda s: fn(src[s[0] : s[1]], out[s[0] : s[1]], True), spans)
    for (lo, _), (bad, why) in zip(spans, list(results), strict=True):
        if bad >= 0:
            return lo + int(bad), int(why)
    return -1, 0


def _limbs_to_int(limbs: np.ndarray) -> int:
    return int.from_bytes(limbs.astype(_U64).tobytes(), "little")


def g1_affine(row: np.ndarray) -> Affine:
    """A (2, 6) standard-form row to our affine tuple (all zeros = infinity)."""
    if not row.any():
        return None
    return (_limbs_to_int(row[0]), _limbs_to_int(row[1]))


def g2_affine(row: np.ndarray) -> Affine:
    """A (2, 2, 6) standard-form row to our affine tuple (all zeros = infinity)."""
    if not row.any():
        return None
    return tuple(Fq2(_limbs_to_int(row[i, 0]), _limbs_to_int(row[i, 1])) for i in range(2))


def msm_g1(prepared: np.ndarray, scalars: np.ndarray) -> Affine:
    """Σ k_i·P_i over bases from :func:`prepare_g1` (len(scalars) ≤ len(bases))."""
    out = np.empty((2, 6), dtype=_U64)
    _lib().g1_msm(prepared, _fr(scalars, "MSM scalars"), out)
    return g1_affine(out)


def msm_g2(prepared: np.ndarray, scalars: np.ndarray) -> Affine:
    """Σ k_i·Q_i over bases from :func:`prepare_g2`."""
    out = np.empty((2, 2, 6), dtype=_U64)
    _lib().g2_msm(prepared, _fr(scalars, "MSM scalars"), out)
    return g2_affine(out)


# --- fixed-base multiples (parameter generation) ------------------------------


class FixedBaseTable:
    """Many multiples k·G of one point G, from a table of its windowed multiples.

    The table holds d·2^(cw)·G for each c-bit window w and digit 1 ≤ d ≤ 2^(c−1);
    a multiple costs one mixed addition per non-zero signed digit. ``expected``
    (how many multiples will be asked for in all) sizes the window so that
    building the table stays a small part of the work.
    """

    def __init__(
        self, group: str, base: np.ndarray, expected: int = 1 << 16, window: int | None = None
    ) -> None:
        if group not in ("G1", "G2"):
            raise ValueError(f"group {group!r}: expected G1 or G2")
        self.group = group
        shape = (2, 6) if group == "G1" else (2, 2, 6)
        self._shape = shape
        base = np.ascontiguousarray(base, dtype=_U64)
        if base.shape != shape:
            raise ValueError(f"{group} fixed base: expected a {shape} array, got {base.shape}")
        self.window = window if window is not None else self.window_for(expected)
        lib = _lib()
        size = getattr(lib, f"{group.lower()}_fixed_table_bytes")(self.window)
        self._table = np.empty(size // 8, dtype=_U64)
        getattr(lib, f"{group.lower()}_fixed_table")(base, self.window, self._table)
        self._mul = getattr(lib, f"{group.lower()}_fixed_mul")

    @staticmethod
    def window_for(expected: int) -> int:
        """The c minimising (windows)·(multiples + 3·table entries per window).

        A table entry (an XYZZ addition, then normalised) costs about three
        batched affine additions of the multiples. Capped at 14 bits: beyond,
        the table (tens of MiB) stops fitting in cache for a few percent.
        """

        def cost(c: int) -> int:
            return (255 // c + 1) * (max(expected, 1) + 3 * (1 << (c - 1)))

        return min(range(2, 15), key=cost)

    def mul_many(self, scalars: np.ndarray) -> np.ndarray:
        """k_i·G for an (m, 4) Fr array, as standard-form affine rows (m, *shape)."""
        scalars = _fr(scalars, "fixed-base scalars")
        out = np.empty((len(scalars), *self._shape), dtype=_U64)
        self._mul(self._table, self.window, scalars, out)
        return out
