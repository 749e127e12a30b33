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

:class:`GpuPoints` is the GPU's point maker for
:class:`cuzk.groth16.setup.DevParams`, which streams the key into a device or
a ``.params`` file (``cuzk gen-params``) a chunk at a time.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from cuzk.algebra.curves import G1, G2
from cuzk.groth16.keys import ProvingKey
from cuzk.groth16.setup import DevParams, ToxicWaste
from cuzk.r1cs.system import R1CS

log = logging.getLogger(__name__)


class GpuPoints:
    """The generators' multiples made on a GPU, left there (CuPy arrays):
    :class:`cuzk.groth16.setup.DevParams` encodes them on the device too."""

    def __init__(self, engine: Any = None, xp: Any = None) -> None:
        """``engine``: an object with ``fixed_base_g1(point, scalars, to_host)`` and
        ``fixed_base_g2`` ((n, 4) uint64 scalars in, affine arrays of ``xp`` out,
        CuPy by default), by default the CUDA backend's on GPU 0
        (:meth:`cuzk.backends.base.Backend.point_maker`)."""
        if xp is None:
            import cupy as xp
        if engine is None:
            from cuzk.backends import get_backend

            engine = get_backend("cuda").point_maker()
        self.engine = engine
        self.xp = xp

    def g1(self, scalars: np.ndarray) -> Any:
        return self.engine.fixed_base_g1(G1.generator, scalars, to_host=False)

    def g2(self, scalars: np.ndarray) -> Any:
        return self.engine.fixed_base_g2(G2.generator, scalars, to_host=False)


def setup_gpu(
    r1cs: R1CS,
    seed: int | None = None,
    waste: ToxicWaste | None = None,
    engine: Any = None,
) -> ProvingKey:
    """A proving key for an R1CS, its points made on the GPU (see GpuPoints)."""
    t = time.perf_counter()
    pk = DevParams(r1cs, seed, waste, points=GpuPoints(engine)).proving_key()
    log.info("setup: key made on the GPU in %.1f s", time.perf_counter() - t)
    return pk
