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

:func:`h_odd_coset` is snarkjs's reduction (``Backend.h_odd_coset``) from
the same building blocks: each input's step 1 with ζ (ζ² = ω) in place of g,
then A·B − C pointwise.
"""

from __future__ import annotations

import numpy as np

from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import FR_TWO_ADICITY, R
from cuzk.backends.cuda.fr import (
    MONT_R,
    THREADS,
    FrKernels,
    fr_rows,
    grid_for,
    mont_limbs,
    staged,
)
from cuzk.backends.cuda.ntt import NttEngine


class HPoly:
    def __init__(self, ntt: NttEngine) -> None:
        self.ntt = ntt
        self.cp = ntt.cp
        self.module = ntt.ctx.module("hpoly.cu", ntt.extra)
        self._final = self.module.get_function("hpoly_final_kernel")

    def __call__(self, a, b, c):
        cp = self.cp
        n = max(
            fr_rows(x, f"h_poly input {name}") for name, x in zip("abc", (a, b, c), strict=True)
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
            zm = d.z_on_coset_inv * d.size_inv % R
            g_down = eng.pow_table(d.coset_generator_inv, k, MONT_R * zm)
            kc = cp.asarray(mont_limbs([zm]))
            out = cp.empty((m - 1, 4), dtype=cp.uint64)
            self._final(
                grid_for(m - 1),
                (THREADS,),
                (out, ab, cc, np.uint64(m - 1), np.uint32(k), *g_down.args(), kc),
            )
        return out


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
