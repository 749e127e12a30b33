"""Groth16's H polynomial on the GPU (six NTTs; kernels in ``hpoly.cu``).

With A_c, B_c the evaluations of a and b on the coset g·⟨ω⟩ and Z = g^m − 1
there, H = (coset_intt(A_c·B_c) − intt(c)) / Z: C's coset evaluations are
never formed, since their coset iNTT is C's coefficients, which intt(c) gives.
Steps, all on one device, in place after the first pass:

1. a, b: iNTT by DIF straight from the caller's arrays (zero-padded, reduced)
   with coefficient i scaled by g^i/m on the way out (bit-reversed), then DIT
   (natural out): coset evaluations; b's last pass also multiplies by a's
   evaluations (a Montgomery product: A·B/R, the 1/R undone in step 4);
2. c: iNTT by DIF, unscaled;
3. A·B/R: iNTT by DIF;
4. h_i = AB[rev i]·R·g^−i/(mZ) − C[rev i]/(mZ), for i < m − 1.

Memory (m the domain size, 32·m bytes a domain-sized vector; the NTT's power
and tile tables are the engine's, cached across calls, and a full power table
reserves its own share):

- the array path (a, b, c all arrays) reserves, as "h_poly", four vectors
  (a's and b's evaluations, c's coefficients, the output) plus the uploads
  of host inputs, and holds the caller's three arrays besides;
- the lean path (any of a, b, c a thunk) holds at most two vectors: see
  :meth:`HPoly.__call__` and :func:`lean_bytes`.

:func:`h_odd_coset` is snarkjs's reduction (``Backend.h_odd_coset``) from
the same building blocks: each input's step 1 with ζ (ζ² = ω) in place of g,
then A·B − C pointwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import FR_TWO_ADICITY, R
from cuzk.backends.cuda.fr import KERNEL_MODULE as FR_MODULE
from cuzk.backends.cuda.fr import (
    MONT_R,
    THREADS,
    FrKernels,
    fr_rows,
    grid_for,
    mont_limbs,
    staged,
)
from cuzk.backends.cuda.ntt import NttEngine, log2_exact, plan

# An (n, 4) Fr array (host or device), or a zero-argument callable returning one.
FrInput = Any | Callable[[], Any]

KERNEL_MODULE = "hpoly.cu"  # cuzk.backends.cuda.kernels lists what the backend loads
LEAN = "h_poly lean"  # each hold: one domain-sized vector of the lean path
LEAN_UPLOAD = "h_poly lean upload"  # a host result shorter than the domain, while copied


def lean_bytes(m: int, full_tables: bool = False) -> int:
    """Device bytes the lean path of :class:`HPoly` holds at its peak for a domain
    of m = 2^k, besides the witness and each thunk's result while the thunk makes
    it (and, for a result shorter than m, until it is copied into its vector).

    Counted: its two domain-sized vectors, 64·m, which it reserves (see
    :meth:`HPoly.__call__`), and the NTT tables it uses, which the engine keeps
    cached after the call: the power tables g^i/m and R·g^−i/(mZ), and ω's
    when the transform takes more than one pass (each 32·m bytes full, or two
    halves of 2^⌈k/2⌉ and 2^⌊k/2⌋ entries split; ``full_tables`` is the
    engine's choice for this domain), the tile tables of ω and ω⁻¹ of each tile
    size of the pass plan, and one constant. Of the tables only full power
    tables reserve budget (their own, resident); making one briefly also holds
    its split halves. A host result shorter than m also holds its upload (32
    bytes a row, reserved as ``LEAN_UPLOAD``) until copied.
    """
    k = log2_exact(m, "domain size")
    if k == 0:
        return 0
    passes = plan(k)
    power = 32 * m if full_tables else 32 * ((1 << (k + 1) // 2) + (1 << k // 2))
    powers = (3 if len(passes) > 1 else 2) * power
    tiles = 2 * sum(32 << t for t in set(passes))
    return 2 * 32 * m + powers + tiles + 32


class HPoly:
    def __init__(self, ntt: NttEngine) -> None:
        self.ntt = ntt
        self.cp = ntt.cp
        self.module = ntt.ctx.module(KERNEL_MODULE)
        self._final = self.module.get_function("hpoly_final_kernel")
        self._final_inplace = self.module.get_function("hpoly_final_inplace_kernel")
        self._reduce_fn = None

    def __call__(self, a: FrInput, b: FrInput, c: FrInput, *, rows: int = 0) -> Any:
        """H's m − 1 coefficients, a device array (see ``Backend.h_poly``); the
        domain is the smallest power of two of at least ``rows`` and every
        input's length.

        Each of a, b, c is an array or a thunk (a zero-argument callable that
        returns one). With no thunk, the caller's arrays are read as they are
        (four vectors: see the module doc). With any, the lean path holds at
        most two domain-sized vectors (:func:`lean_bytes`) and returns a view of
        the first m − 1 rows of one of them. Its thunk contract:

        - thunks are called once each, in the order a, b, c, each when its
          value is needed: a first (HPoly then holds nothing), b once a's
          evaluations are made (one vector held), c once the product A·B is
          (one vector held);
        - a thunk's result is HPoly's from then on: one of exactly m rows that
          is a C-contiguous uint64 device array is reduced mod r and
          transformed in place, so it must share no memory with anything the
          caller still reads (nor the thunk keep a reference, or it is not
          freed when HPoly drops it); any other result is copied into a fresh
          m-row vector (zero-padded, reduced) and dropped;
        - the domain is sized when a's result is known (from it, ``rows`` and
          the inputs given as arrays): b's and c's results longer than that
          raise ValueError, so a caller whose a is not its longest input
          passes ``rows``.

        An array given beside a thunk is the caller's: it is read, never
        written. The lean path reserves each of its vectors in the device
        budget (one ``LEAN`` hold each, at most two at once) from when it
        takes or makes the vector until it drops it; the result outlives its
        hold, as the array path's does.
        """
        inputs = (a, b, c)
        if any(callable(x) for x in inputs):
            return self._lean(inputs, rows)
        cp = self.cp
        n = max(
            rows,
            *(fr_rows(x, f"h_poly input {name}") for name, x in zip("abc", inputs, strict=True)),
        )
        d = EvaluationDomain.for_size(n)
        k, m = d.log_size, d.size
        if m == 1:
            return cp.zeros((0, 4), dtype=cp.uint64)
        eng = self.ntt
        with staged(eng.ctx, "h_poly", [a, b, c], 4 * m * 32) as (a, b, c):
            g_up = eng.pow_table(d.coset_generator, k, d.size_inv)
            ea = cp.empty((m, 4), dtype=cp.uint64)
            eng.dif(ea, inverse=True, src=a, post=g_up)
            eng.dit(ea, inverse=False)
            ab = cp.empty((m, 4), dtype=cp.uint64)
            eng.dif(ab, inverse=True, src=b, post=g_up)
            eng.dit(ab, inverse=False, post_mul=ea)
            del ea
            cc = cp.empty((m, 4), dtype=cp.uint64)
            eng.dif(cc, inverse=True, src=c)
            eng.dif(ab, inverse=True)
            out = cp.empty((m - 1, 4), dtype=cp.uint64)
            self._final(grid_for(m - 1), (THREADS,), (out, ab, cc, *self._final_args(d)))
        return out

    def _final_args(self, d: EvaluationDomain) -> tuple:
        """The final kernels' arguments after the buffers: count, log_n, the
        table R·g^−i/(mZ) and the constant 1/(mZ) (Montgomery form)."""
        zm = d.z_on_coset_inv * d.size_inv % R
        g_down = self.ntt.pow_table(d.coset_generator_inv, d.log_size, MONT_R * zm)
        kc = self.cp.asarray(mont_limbs([zm]))
        return (np.uint64(d.size - 1), np.uint32(d.log_size), *g_down.args(), kc)

    def _lean(self, inputs: tuple, rows: int) -> Any:
        """The thunk path (see :meth:`__call__`): two domain-sized vectors at most."""
        cp, eng = self.cp, self.ntt
        budget = eng.ctx.budget
        given = [
            fr_rows(x, f"h_poly input {name}")
            for name, x in zip("abc", inputs, strict=True)
            if not callable(x)
        ]
        x, owned = _take(inputs[0], "a")
        d = EvaluationDomain.for_size(max(rows, fr_rows(x, "h_poly input a"), *given))
        k, m = d.log_size, d.size
        if m == 1:
            del x
            for name, inp in zip("bc", inputs[1:], strict=True):
                _fit(_take(inp, name)[0], name, m)
            return cp.zeros((0, 4), dtype=cp.uint64)
        held = []
        try:
            held.append(budget.acquire(32 * m, LEAN))
            g_up = eng.pow_table(d.coset_generator, k, d.size_inv)
            ea = self._inverse_dif(x, owned, m, g_up)
            del x
            eng.dit(ea, inverse=False)
            x, owned = _take(inputs[1], "b")
            _fit(x, "b", m)
            held.append(budget.acquire(32 * m, LEAN))
            ab = self._inverse_dif(x, owned, m, g_up)
            del x
            eng.dit(ab, inverse=False, post_mul=ea)
            del ea
            held.pop(0).release()
            x, owned = _take(inputs[2], "c")
            _fit(x, "c", m)
            held.append(budget.acquire(32 * m, LEAN))
            cc = self._inverse_dif(x, owned, m, None)
            del x
            eng.dif(ab, inverse=True)
            self._final_inplace(grid_for(m - 1), (THREADS,), (ab, cc, *self._final_args(d)))
            del cc
        finally:
            for hold in held:
                hold.release()
        return ab[: m - 1]

    def _inverse_dif(self, x: Any, owned: bool, m: int, post: Any) -> Any:
        """An m-row vector holding x's iNTT by DIF (bit-reversed, scaled by
        ``post``): x itself when it is HPoly's and m rows long, else a fresh one."""
        cp, eng = self.cp, self.ntt
        if owned and fr_rows(x) == m:
            # a host result's upload, or a device one as it is (a copy only
            # where it is not contiguous uint64)
            buf = cp.ascontiguousarray(cp.asarray(x, dtype=cp.uint64))
            self._reduce()(grid_for(m), (THREADS,), (buf, buf, np.uint64(m)))
            eng.dif(buf, inverse=True, post=post)
            return buf
        with staged(eng.ctx, LEAN_UPLOAD, [x], 0) as (src,):
            buf = cp.empty((m, 4), dtype=cp.uint64)
            eng.dif(buf, inverse=True, src=src, post=post)
        return buf

    def _reduce(self) -> Any:
        """``fr_ops.cu``'s reduction mod r (in place when given one array twice):
        the in-place transform reads its input as it is."""
        if self._reduce_fn is None:
            self._reduce_fn = self.ntt.ctx.module(FR_MODULE).get_function("fr_reduce_kernel")
        return self._reduce_fn


def _take(x: FrInput, name: str) -> tuple[Any, bool]:
    """An input's array, and whether HPoly owns it (a thunk's result)."""
    if not callable(x):
        return x, False
    value = x()
    fr_rows(value, f"h_poly input {name} (a thunk's result)")
    return value, True


def _fit(x: Any, name: str, m: int) -> None:
    n = fr_rows(x, f"h_poly input {name}")
    if n > m:
        raise ValueError(
            f"h_poly input {name}: {n} rows do not fit the domain of {m} sized when a's "
            "result was known (pass rows=)"
        )


def h_odd_coset(eng: NttEngine, fr: FrKernels, a, b, c=None):
    """snarkjs's H scalars: P = A·B − C on the odd coset ζ·⟨ω⟩ (the contract's
    ``h_odd_coset``, bit for bit the CPU reference's).

    Each of a, b and c (a∘b on the domain when not given) is zero-padded and
    reduced into a domain-sized buffer, then transformed in place: iNTT by
    DIF with coefficient i scaled by ζ^i/m on the way out (bit-reversed),
    then DIT (natural out), which evaluates it at ζ·ωⁱ. Four domain-sized
    buffers at the peak (three evaluations and a product).
    """
    inputs = [a, b] if c is None else [a, b, c]
    n = max(fr_rows(x, f"h_odd_coset input {name}") for name, x in zip("abc", inputs, strict=False))
    d = EvaluationDomain.for_size(n)
    k, m = d.log_size, d.size
    if k >= FR_TWO_ADICITY:
        raise ValueError("the odd coset of a 2^32 domain needs a 2^33-th root of unity")
    zeta = EvaluationDomain(k + 1).omega
    with staged(eng.ctx, "h_odd_coset", inputs, 4 * m * 32) as staged_inputs:
        up = eng.pow_table(zeta, k, d.size_inv)
        bufs = [eng.gather(x, k, bitrev=False) for x in staged_inputs]
        del staged_inputs
        if c is None:
            bufs.append(fr.mul(bufs[0], bufs[1]))
        for buf in bufs:
            eng.dif(buf, inverse=True, post=up)
            eng.dit(buf, inverse=False)
        ea, eb, ec = bufs
        del bufs
        ab = fr.mul(ea, eb)
        del ea, eb
        return fr.sub(ab, ec)
