"""One launch each of the sparse warp kernel (synthetic PoRep-like A, 2^22 rows)
and of the NTT passes (2^24), for Nsight Compute:

    ncu --clock-control none --set full -k regex:"spmv_warp|ntt_dit_fwd" -c 4 \\
        python3 -m cuzk.bench.profile_kernels
"""

from __future__ import annotations

import cupy

from cuzk.backends.cuda.fr import FrKernels
from cuzk.backends.cuda.memory import DeviceContext
from cuzk.backends.cuda.ntt import NttEngine
from cuzk.backends.cuda.spmv import SpmvEngine
from cuzk.bench.inputs import SHAPES, synthetic_csr


def main() -> None:
    ctx = DeviceContext()
    fr = FrKernels(ctx)
    eng = SpmvEngine(ctx, fr)
    nrows = 1 << 22
    w = fr.random(nrows + 9, seed=1)
    dev, _, _ = synthetic_csr(eng, fr, SHAPES["A"], nrows, nrows + 9, seed=100)
    eng.matvec(dev, w)
    ntt = NttEngine(ctx, full_tables=True)
    x = fr.random(1 << 24, seed=2)
    ntt.ntt(x)
    cupy.cuda.Device().synchronize()


if __name__ == "__main__":
    main()
