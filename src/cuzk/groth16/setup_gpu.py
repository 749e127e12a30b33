"""Development parameters with the point generation on the GPU.

The same single-party (INSECURE, development-only) setup as
:func:`cuzk.groth16.setup.setup`, bit for bit: the query scalars are computed
on the CPU exactly as there (:func:`cuzk.groth16.setup.query_scalars`: native
kernels handing over (n, 4) uint64 arrays, about 0.5 CPU-second per million
constraints), and only the multiples k·G1 / k·G2, which are nearly all of
the work (four to five fixed-base multiplications per constraint), run on
the GPU through the fixed-base kernels of
:class:`cuzk.backends.cuda.msm.MsmEngine`: about 40 M G1 points and 13 M G2
points per second on an H200 (see docs/device-notes/msm.md), so a
2^24-constraint key takes seconds on each side (BENCHMARKS.md).

Write the key in bellperson's ``.params`` layout with
``cuzk.formats.bellperson.write_params(path, setup_gpu(r1cs))``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import g1_from_array
from cuzk.algebra.curves import G1, G2
from cuzk.groth16.keys import ProvingKey, VerifyingKey
from cuzk.groth16.setup import ToxicWaste, query_scalars
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)


def setup_gpu(
    r1cs: R1CS,
    seed: int | None = None,
    waste: ToxicWaste | None = None,
    engine: Any = None,
) -> ProvingKey:
    """A proving key for an R1CS, its points made on the GPU.

    ``engine``: an object with ``fixed_base_g1(point, scalars)`` and
    ``fixed_base_g2(point, scalars)`` ((n, 4) uint64 scalars in, affine arrays
    out), by default an :class:`~cuzk.backends.cuda.msm.MsmEngine` on GPU 0.
    """
    t = time.perf_counter()
    q = query_scalars(r1cs, waste or ToxicWaste.draw(seed))
    log.info("setup: query scalars in %.1f s", time.perf_counter() - t)
    if engine is None:
        from cuzk.backends.cuda.memory import DeviceContext
        from cuzk.backends.cuda.msm import MsmEngine

        engine = MsmEngine(DeviceContext())

    t = time.perf_counter()

    def g1(scalars: np.ndarray) -> np.ndarray:
        if not len(scalars):
            return np.zeros((0, 2, 6), np.uint64)
        return engine.fixed_base_g1(G1.generator, scalars)

    def g2(scalars: np.ndarray) -> np.ndarray:
        if not len(scalars):
            return np.zeros((0, 2, 2, 6), np.uint64)
        return engine.fixed_base_g2(G2.generator, scalars)

    w = q.waste
    vk = VerifyingKey(
        alpha_g1=pairing.g1_mul(G1.generator, w.alpha),
        beta_g1=pairing.g1_mul(G1.generator, w.beta),
        beta_g2=pairing.g2_mul(G2.generator, w.beta),
        gamma_g2=pairing.g2_mul(G2.generator, w.gamma),
        delta_g1=pairing.g1_mul(G1.generator, w.delta),
        delta_g2=pairing.g2_mul(G2.generator, w.delta),
        ic=tuple(g1_from_array(g1(q.ic))),
    )
    pk = ProvingKey(vk=vk, h=g1(q.h), l=g1(q.l), a=g1(q.a), b_g1=g1(q.b), b_g2=g2(q.b))
    log.info(
        "setup: %d G1 and %d G2 points on the GPU in %.1f s",
        len(q.ic) + len(q.h) + len(q.l) + len(q.a) + len(q.b),
        len(q.b),
        time.perf_counter() - t,
    )
    return pk
