"""Every CUDA kernel module the backend loads, from the code that loads it.

A module is a ``kernels/*.cu`` file with a set of compile defines; each
engine names its file where it loads it (``KERNEL_MODULE`` of ``fr``, ``ntt``,
``hpoly``, ``spmv``, ``witness`` and ``msm.engine``) and the MSM's groups add
their defines (:data:`~cuzk.backends.cuda.msm.spec.G1_SPEC`, ``G2_SPEC``).
:func:`backend_modules` gathers them: what ``cuzk kernels`` builds and what the
daemon loads before it reports ready, so that no proof waits on a compile.
:data:`VARIANTS` are the other builds the tests and benchmarks load.
"""

from __future__ import annotations

from cuzk.backends.cuda import fr, hpoly, ntt, spmv, witness
from cuzk.backends.cuda.msm import engine as msm
from cuzk.backends.cuda.msm.spec import G1_SPEC, G2_SPEC

Module = tuple[str, tuple[str, ...]]  # (file under kernels/, compile defines)

# Builds the GPU tests and the benchmarks load besides the backend's own
# (cuzk.bench.fr_ntt, cuzk.bench.msm, tests/backends/cuda).
VARIANTS: tuple[Module, ...] = (
    ("ntt.cu", ("-DNTT_BATCH=4",)),
    ("ntt.cu", ("-DNTT_BATCH=2",)),
    ("spmv.cu", ("-DSPMV_SEG_GENERAL_U=2",)),
    ("spmv.cu", ("-DSPMV_SEG_ROWS=128",)),
    ("msm.cu", ("-DCUZK_AFF_X_FIRST=1",)),
    ("msm.cu", ("-DCUZK_G2", "-DCUZK_AFF_X_FIRST=0")),
    ("msm_arith.cu", ()),
    ("msm_arith.cu", ("-DCUZK_G2",)),
    ("msm_arith.cu", ("-DCUZK_FQ_LOHI_CHAINS",)),
    ("msm_arith.cu", ("-DCUZK_FQ_U64",)),
    ("msm_arith.cu", ("-DCUZK_G2", "-DCUZK_FQ_U64")),
)


def backend_modules() -> tuple[Module, ...]:
    """The modules a CUDA backend loads to prove (each engine's default build)."""
    return (
        (fr.KERNEL_MODULE, ()),
        (ntt.KERNEL_MODULE, ()),
        (hpoly.KERNEL_MODULE, ()),  # with the NTT's defines: none by default
        (spmv.KERNEL_MODULE, ()),
        *((msm.KERNEL_MODULE, spec.defines) for spec in (G1_SPEC, G2_SPEC)),
        (witness.KERNEL_MODULE, ()),
    )


def all_modules(variants: bool = False) -> tuple[Module, ...]:
    """The backend's modules, then (``variants``) the tests' and benchmarks' builds."""
    out = list(backend_modules())
    for m in VARIANTS if variants else ():
        if m not in out:
            out.append(m)
    return tuple(out)
