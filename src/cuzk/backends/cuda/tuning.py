"""The kernels' compile-time tuning: one table per kernel family, emitted as ``-D`` flags.

A kernel file takes each of these values from its compile flags and stops
with ``#error`` when one is missing, so a value is written here and nowhere
else; the Python that launches the kernels (block sizes, row groups) reads it
from the same table. :func:`flags` turns a table into the compile defines that
the engines pass to :func:`cuzk.backends.cuda.loader.load_module`, and
:mod:`cuzk.backends.cuda.kernels` prebuilds exactly those builds.

Why each value is what it is: docs/device-notes/msm.md#tuning-table,
docs/device-notes/ntt.md#tuning-table. Builds with other values (the
comparisons those notes measured) are kept under the git tag
``kernel-variants-2026-12-04``.
"""

from __future__ import annotations

from collections.abc import Mapping

# ntt.cu: elements a pass thread loads per round trip, the pass kernels' most
# threads per block and blocks per SM (a register cap: no spill;
# docs/device-notes/ntt.md#tuning-table).
NTT: Mapping[str, int] = {"NTT_BATCH": 1, "NTT_THREADS": 256, "NTT_MIN_BLOCKS": 2}

# spmv.cu: the warp kernel's warps per block and blocks per SM; the segmented kernel's rows per
# group (<= 256: row ids are bytes), warps per block, entries per lane per step
# in its ones and general parts, blocks per SM (docs/device-notes/ntt.md#tuning-table).
SPMV: Mapping[str, int] = {
    "SPMV_WARPS": 8,
    "SPMV_MIN_BLOCKS": 4,
    "SPMV_SEG_ROWS": 256,
    "SPMV_SEG_WARPS": 4,
    "SPMV_SEG_ONES_U": 4,
    "SPMV_SEG_GENERAL_U": 4,
    "SPMV_SEG_MIN_BLOCKS": 5,
}

# Threads in a block of msm.cu's affine rounds and of its other bounded
# kernels, both groups (the pipeline launches them so).
MSM_AFF_BLOCK = 64
MSM_BLOCK = 128
# msm.cu per group: blocks per SM of the accumulation, affine-round and
# reduction kernels (register caps), the affine rounds' block, scatter
# atomics in flight per thread, the affine rounds' points in shared memory,
# and pass 1 reading x first (docs/device-notes/msm.md#tuning-table).
MSM_G1: Mapping[str, int] = {
    "CUZK_BLOCK": MSM_BLOCK,
    "CUZK_ACC_MIN_BLOCKS": 4,
    "CUZK_AFF_BLOCK": MSM_AFF_BLOCK,
    "CUZK_AFF_MIN_BLOCKS": 8,
    "CUZK_AFF_SHARED": 0,
    "CUZK_AFF_X_FIRST": 0,
    "CUZK_REDUCE_MIN_BLOCKS": 4,
    "CUZK_SCATTER_BATCH": 4,
}
MSM_G2: Mapping[str, int] = {
    "CUZK_G2": 1,
    "CUZK_BLOCK": MSM_BLOCK,
    "CUZK_ACC_MIN_BLOCKS": 1,
    "CUZK_AFF_BLOCK": MSM_AFF_BLOCK,
    "CUZK_AFF_MIN_BLOCKS": 4,
    "CUZK_AFF_SHARED": 1,
    "CUZK_AFF_X_FIRST": 1,
    "CUZK_REDUCE_MIN_BLOCKS": 1,
    "CUZK_SCATTER_BATCH": 4,
}


def flags(table: Mapping[str, int]) -> tuple[str, ...]:
    """``-DNAME=VALUE`` for each entry, in the table's order."""
    return tuple(f"-D{name}={value}" for name, value in table.items())
