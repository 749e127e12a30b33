"""NTTs over Fr on the GPU: pass planning, twiddle tables and launches (``ntt.cu``).

A transform of 2^k elements runs in ⌈k/9⌉ passes over tiles of at most 2^9
elements (see ``kernels/ntt.cu``). Two in-place building blocks:

- ``dif``: natural order in, bit-reversed order out;
- ``dit``: bit-reversed order in, natural order out;

each with root ω_n or ω_n⁻¹ and an optional scaling of every output by a power
table at its natural index. The four transforms of the backend are one
gather (bit-reversal, zero padding, reduction of the inputs, optional scaling)
followed by one ``dit``; the H polynomial chains ``dif`` and ``dit`` directly.

Twiddles between passes are powers of ω_n. They come either from a full table
(every power: one 32-byte read per element) or from two half tables
(ω^e = lo[e mod 2^b]·hi[e >> b]: one product more per element); the full
table is used when it fits comfortably in the device budget.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import FR_ROOT_OF_UNITY, FR_TWO_ADICITY, R
from cuzk.backends.cuda import tuning
from cuzk.backends.cuda.fr import THREADS, fr_rows, grid_for, mont_limbs, staged

log = logging.getLogger(__name__)

MAX_TILE_BITS = 9
KERNEL_MODULE = "ntt.cu"  # cuzk.backends.cuda.kernels lists what the backend loads
KERNEL_DEFINES = tuning.flags(tuning.NTT)
# Elements a pass kernel holds in shared memory per block, and its thread cap.
BLOCK_ELEMENT_BITS = 10  # a pass block's elements (docs/device-notes/ntt.md#tuning-table)
BLOCK_THREAD_BITS = tuning.NTT["NTT_THREADS"].bit_length() - 1
NULL = np.uint64(0)
HAS_TWIDDLE, POST_SCALE, PRE_SCALE, SCALE_CONST, SRC, POST_MUL = 1, 2, 4, 8, 16, 32
NO_TABLE = (NULL, NULL, NULL, np.uint32(0))


def plan(log_n: int) -> list[int]:
    """Tile bits of each pass, first DIF pass first (as even as possible)."""
    if log_n == 0:
        return []
    passes = -(-log_n // MAX_TILE_BITS)
    base, extra = divmod(log_n, passes)
    return [base + 1] * extra + [base] * (passes - extra)


def log2_exact(n: int, what: str = "NTT size") -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{what} {n} is not a power of two")
    return n.bit_length() - 1


def root_of_unity(log_n: int) -> int:
    return pow(FR_ROOT_OF_UNITY, 1 << (FR_TWO_ADICITY - log_n), R)


def _powers(base: int, count: int, scale: int = 1) -> list[int]:
    out = [scale % R] * count
    for i in range(1, count):
        out[i] = out[i - 1] * base % R
    return out


@dataclass
class PowTable:
    """scale·base^e for e < 2^log_n on the device, full or as two halves."""

    log_n: int
    lobits: int
    lo: Any = None
    hi: Any = None
    full: Any = None
    hold: Any = None  # the budget share of a full table

    def args(self) -> tuple:
        return (
            NULL if self.full is None else self.full,
            NULL if self.lo is None else self.lo,
            NULL if self.hi is None else self.hi,
            np.uint32(self.lobits),
        )

    @property
    def nbytes(self) -> int:
        return sum(0 if a is None else int(a.nbytes) for a in (self.lo, self.hi, self.full))


class NttEngine:
    """NTTs, cosets and the building blocks of the H polynomial on one device.

    ``full_tables``: True/False forces full or split power tables; None
    chooses full ones for large domains when they take at most an eighth of
    the free budget. A pass block holds at most 2^``block_bits`` elements.
    """

    def __init__(
        self,
        ctx,
        full_tables: bool | None = None,
        block_bits: int = BLOCK_ELEMENT_BITS,
    ) -> None:
        import cupy

        self.cp = cupy
        self.ctx = ctx
        self.full_tables = full_tables
        self.block_bits = block_bits
        self.module = ctx.module(KERNEL_MODULE, KERNEL_DEFINES)
        self._fn: dict[str, Any] = {}
        self._tile: dict[tuple[int, bool], Any] = {}
        self._pow: dict[tuple[int, int, int], PowTable] = {}
        self._const: dict[int, Any] = {}
        self._smem_set: dict[str, int] = {}

    # --- tables ---------------------------------------------------------
    def fn(self, name: str):
        if name not in self._fn:
            self._fn[name] = self.module.get_function(name)
        return self._fn[name]

    def tile_table(self, t: int, inverse: bool):
        """ρ_{2^t}^i for i < 2^t (Montgomery form), ρ = ω or ω⁻¹."""
        key = (t, inverse)
        if key not in self._tile:
            w = root_of_unity(t)
            if inverse:
                w = pow(w, -1, R)
            self._tile[key] = self.cp.asarray(mont_limbs(_powers(w, 1 << t)))
        return self._tile[key]

    def _want_full(self, log_n: int) -> bool:
        if self.full_tables is not None:
            return self.full_tables
        # a full table lives as long as the engine: it takes at most a quarter of
        # what no reservation (a key, a partition) holds, so a partition's room
        # is never kept by it (an H200 proving a 32GiB PoRep keeps two of 2^27)
        budget = self.ctx.budget
        need = (1 << log_n) * 32
        return log_n >= 12 and need <= (budget.limit_bytes - budget.reserved_bytes) // 4

    def pow_table(self, base: int, log_n: int, scale: int = 1) -> PowTable:
        """scale·base^e for e < 2^log_n, cached per (base, log_n, scale)."""
        key = (base % R, log_n, scale % R)
        if key in self._pow:
            return self._pow[key]
        lobits = (log_n + 1) // 2
        lo = _powers(base, 1 << lobits)
        hi = _powers(pow(base, 1 << lobits, R), 1 << (log_n - lobits), scale)
        table = PowTable(
            log_n, lobits, self.cp.asarray(mont_limbs(lo)), self.cp.asarray(mont_limbs(hi))
        )
        if self._want_full(log_n):
            n = 1 << log_n
            hold = self.ctx.budget.acquire(n * 32, f"NTT power table 2^{log_n}", own=True)
            full = self.cp.empty((n, 4), dtype=self.cp.uint64)
            self.fn("ntt_pow_fill_kernel")(
                grid_for(n), (THREADS,), (full, np.uint64(n), table.lo, table.hi, np.uint32(lobits))
            )
            table = PowTable(log_n, lobits, full=full, hold=hold)
            # resident for the engine's life (shared by every proof of this size)
            log.info("NTT: full power table of 2^%d elements resident, %.2f GiB", log_n, n / 2**25)
        self._pow[key] = table
        return table

    def twiddles(self, log_n: int) -> PowTable:
        return self.pow_table(root_of_unity(log_n), log_n)

    def release_tables(self) -> None:
        for t in self._pow.values():
            if t.hold is not None:
                t.hold.release()
        self._pow.clear()
        self._tile.clear()

    # --- building blocks -------------------------------------------------
    def _scale(self, scale) -> tuple[tuple, int]:
        """Kernel arguments and flag for a scaling: None, a power table, or a constant."""
        if scale is None:
            return NO_TABLE, 0
        if isinstance(scale, PowTable):
            return scale.args(), 0
        c = int(scale) % R
        if c not in self._const:
            self._const[c] = self.cp.asarray(mont_limbs([c]))
        return (self._const[c], NULL, NULL, np.uint32(0)), SCALE_CONST

    def _pass(
        self,
        buf,
        log_n: int,
        log_m: int,
        t: int,
        dit: bool,
        inverse: bool,
        src=None,
        pre=None,
        post=None,
        post_mul=None,
    ) -> None:
        if pre is not None and post is not None:
            raise ValueError("one pass scales either its inputs or its outputs")
        strided = log_m > t
        avail = log_m - t if strided else log_n - t
        log_c = max(0, min(self.block_bits - t, BLOCK_THREAD_BITS - max(0, t - 3), avail))
        elems = 1 << (t + log_c)
        threads = (1 << log_c) * (1 << max(0, t - 3))
        blocks = (1 << log_n) // elems
        smem = 32 * (elems + (1 << t))
        name = f"ntt_{'dit' if dit else 'dif'}_{'inv' if inverse else 'fwd'}"
        kernel = self.fn(name)
        if self._smem_set.get(name, 0) < smem:
            kernel.max_dynamic_shared_size_bytes = max(smem, 48 * 1024)
            self._smem_set[name] = smem
        sargs, sflag = self._scale(pre if pre is not None else post)
        flags = (
            (HAS_TWIDDLE if strided else 0)
            | (PRE_SCALE if pre is not None else 0)
            | (POST_SCALE if post is not None else 0)
            | sflag
            | (SRC if src is not None else 0)
            | (POST_MUL if post_mul is not None else 0)
        )
        wargs = self.twiddles(log_n).args() if strided else NO_TABLE
        kernel(
            (blocks,),
            (threads,),
            (
                buf,
                NULL if src is None else src,
                np.uint64(0 if src is None else len(src)),
                NULL if post_mul is None else post_mul,
                self.tile_table(t, inverse),
                *wargs,
                *sargs,
                np.uint32(log_n),
                np.uint32(log_m),
                np.uint32(t),
                np.uint32(log_c),
                np.uint32(flags),
            ),
            shared_mem=smem,
        )

    def dif(self, buf, inverse: bool, post=None, src=None, pre=None, post_mul=None) -> None:
        """In place: natural order in, bit-reversed order out.

        ``src``: read the inputs from this array instead (zero-padded, reduced);
        ``pre`` / ``post``: scale every input / output by a power table at its
        natural index, or by a constant; ``post_mul``: multiply every output by
        this array's element at the same position (a Montgomery product).
        """
        log_n = log2_exact(len(buf))
        log_m = log_n
        passes = plan(log_n)
        for p, t in enumerate(passes):
            first, last = p == 0, p == len(passes) - 1
            self._pass(
                buf,
                log_n,
                log_m,
                t,
                False,
                inverse,
                src=src if first else None,
                pre=pre if first else None,
                post=post if last else None,
                post_mul=post_mul if last else None,
            )
            log_m -= t

    def dit(self, buf, inverse: bool, post=None, src=None, pre=None, post_mul=None) -> None:
        """In place: bit-reversed order in, natural order out (options as :meth:`dif`;
        ``src`` is read in bit-reversed order, so a natural-order array goes in)."""
        log_n = log2_exact(len(buf))
        passes = plan(log_n)
        sizes = [log_n - sum(passes[:p]) for p in range(len(passes))]
        for p in range(len(passes) - 1, -1, -1):
            first, last = p == len(passes) - 1, p == 0
            self._pass(
                buf,
                log_n,
                sizes[p],
                passes[p],
                True,
                inverse,
                src=src if first else None,
                pre=pre if first else None,
                post=post if last else None,
                post_mul=post_mul if last else None,
            )

    def gather(self, x, log_n: int, bitrev: bool, scale=None, out=None):
        """A fresh 2^log_n buffer: x (zero-padded, reduced mod r), optionally
        bit-reversed and scaled by a constant (int) or a power table."""
        cp = self.cp
        n = 1 << log_n
        if len(x) > n:
            raise ValueError(f"{len(x)} values do not fit a domain of {n}")
        if out is None:
            out = cp.empty((n, 4), dtype=cp.uint64)
        if isinstance(scale, PowTable):
            mode, sargs = 2, scale.args()
        elif scale is not None:
            mode, sargs = 1, (cp.asarray(mont_limbs([scale])), NULL, NULL, np.uint32(0))
        else:
            mode, sargs = 0, (NULL, NULL, NULL, np.uint32(0))
        src = x if len(x) else cp.zeros((1, 4), dtype=cp.uint64)
        self.fn("ntt_gather_kernel")(
            grid_for(n),
            (THREADS,),
            (
                out,
                src,
                np.uint64(len(x)),
                np.uint32(log_n),
                np.uint32(bitrev),
                np.uint32(mode),
                *sargs,
            ),
        )
        return out

    # --- the backend's transforms -----------------------------------------
    def _transform(self, a, what: str, inverse: bool, pre=None, post=None):
        """One DIT that reads the caller's array in bit-reversed order."""
        k = log2_exact(fr_rows(a, what))
        n = 1 << k
        with staged(self.ctx, what, [a], n * 32) as (x,):
            if k == 0:  # one element: every transform is the identity
                return self.gather(x, 0, bitrev=False)
            out = self.cp.empty((n, 4), dtype=self.cp.uint64)
            pre = pre(k) if callable(pre) else pre
            post = post(k) if callable(post) else post
            self.dit(out, inverse, src=x, pre=pre, post=post)
        return out

    def ntt(self, a):
        return self._transform(a, "ntt", False)

    def intt(self, a):
        return self._transform(a, "intt", True, pre=lambda k: pow(1 << k, -1, R))

    def coset_ntt(self, a):
        def pre(k: int) -> PowTable:
            return self.pow_table(EvaluationDomain(k).coset_generator, k)

        return self._transform(a, "coset_ntt", False, pre=pre)

    def coset_intt(self, a):
        def post(k: int) -> PowTable:
            d = EvaluationDomain(k)
            return self.pow_table(d.coset_generator_inv, k, d.size_inv)

        return self._transform(a, "coset_intt", True, post=post)
