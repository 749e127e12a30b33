"""Groth16's H polynomial on the GPU (six NTTs; kernels in ``hpoly.cu``).

With A_c, B_c the evaluations of a and b on the coset g·⟨ω⟩ and Z = g^m − 1
there, H = (coset_intt(A_c·B_c) − intt(c)) / Z: C's coset evaluations are
never formed, since their coset iNTT is C's coefficients, which intt(c) gives.
Steps, all on one device and in place:

1. a, b: iNTT by DIF (bit-reversed out) scaled by g^i/m at coefficient i,
   then DIT (natural out): coset evaluations;
2. c: iNTT by DIF, unscaled;
3. A ← A·B/R (Montgomery product; the 1/R is undone in step 5);
4. A: iNTT by DIF;
5. h_i = A[rev i]·R·g^−i/(mZ) − C[rev i]/(mZ), for i < m − 1.
"""

from __future__ import annotations

import numpy as np

from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.backends.cuda.fr import MONT_R, THREADS, check_fr_shape, grid_for, mont_limbs
from cuzk.backends.cuda.ntt import NttEngine


class HPoly:
    def __init__(self, ntt: NttEngine) -> None:
        self.ntt = ntt
        self.cp = ntt.cp
        self.module = ntt.ctx.module("hpoly.cu", ntt.extra)
        self._pointwise = self.module.get_function("hpoly_pointwise_kernel")
        self._final = self.module.get_function("hpoly_final_kernel")

    def __call__(self, a, b, c):
        cp = self.cp
        xs = []
        for name, x in (("a", a), ("b", b), ("c", c)):
            x = cp.ascontiguousarray(cp.asarray(x, dtype=cp.uint64))
            check_fr_shape(x, f"h_poly input {name}")
            xs.append(x)
        n = max(len(x) for x in xs)
        d = EvaluationDomain.for_size(n)
        k, m = d.log_size, d.size
        if m == 1:
            return cp.zeros((0, 4), dtype=cp.uint64)
        eng = self.ntt
        with eng.ctx.budget.reserve(4 * m * 32, "h_poly"):
            A, B, C = (eng.gather(x, k, bitrev=False) for x in xs)
            g_up = eng.pow_table(d.coset_generator, k, d.size_inv)
            for X in (A, B):
                eng.dif(X, inverse=True, post=g_up)
                eng.dit(X, inverse=False)
            eng.dif(C, inverse=True)
            self._pointwise(grid_for(m), (THREADS,), (A, B, np.uint64(m)))
            del B
            eng.dif(A, inverse=True)
            zm = d.z_on_coset_inv * d.size_inv % R
            g_down = eng.pow_table(d.coset_generator_inv, k, MONT_R * zm)
            kc = cp.asarray(mont_limbs([zm]))
            out = cp.empty((m - 1, 4), dtype=cp.uint64)
            self._final(
                grid_for(m - 1),
                (THREADS,),
                (out, A, C, np.uint64(m - 1), np.uint32(k), *g_down.args(), kc),
            )
        return out
